package sim

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

var (
	execIDType  = reflect.TypeFor[model.ExecutionID]()
	fenceType   = reflect.TypeFor[model.Fence]()
	claimResTyp = reflect.TypeFor[*model.ClaimResult]()
	timeType    = reflect.TypeFor[time.Time]()
)

// fieldCache holds, per struct type and field name, the field's index
// (nil: no such field): reflect's FieldByName is slow.
var fieldCache = struct {
	sync.Mutex
	m map[fieldKey][]int
}{m: map[fieldKey][]int{}}

type fieldKey struct {
	t    reflect.Type
	name string
}

// field is v.FieldByName(name), cached by type.
func field(v reflect.Value, name string) reflect.Value {
	k := fieldKey{v.Type(), name}
	fieldCache.Lock()
	idx, ok := fieldCache.m[k]
	if !ok {
		if f, found := v.Type().FieldByName(name); found {
			idx = f.Index
		}
		fieldCache.m[k] = idx
	}
	fieldCache.Unlock()
	if idx == nil {
		return reflect.Value{}
	}
	return v.FieldByIndex(idx)
}

// describeParams summarises a call's parameters for the event log: the
// execution (by its alias), the fence's epoch, the source when it is the
// operator, the partition or lane when there is no execution.
func describeParams(w *world, p any) string {
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "nil"
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	if d := describeAdmissionParams(w, p); d != "" {
		return d
	}
	if d := describeStreamParams(w, p); d != "" {
		return d
	}
	var b []string
	if f := field(v, "ID"); f.IsValid() && f.Type() == execIDType {
		b = append(b, w.alias(f.Interface().(model.ExecutionID)))
	}
	if sp, ok := p.(*model.SignalDeliverParams); ok {
		b = append(b, w.alias(sp.Execution), fmt.Sprintf("%q from %q key %q", sp.Name, sp.Source, sp.IdempotencyKey))
	}
	if f := field(v, "Fence"); f.IsValid() && f.Type() == fenceType {
		if fe := f.Interface().(model.Fence); !fe.IsZero() {
			b = append(b, fmt.Sprintf("e%d", fe.LeaseEpoch))
		}
	}
	if f := field(v, "Source"); f.IsValid() && f.Interface() == any(model.SourceOperator) {
		b = append(b, "operator")
	}
	for _, name := range []string{"Partition", "Lane", "Index", "WorkerInstanceID"} {
		if f := field(v, name); f.IsValid() && !f.IsZero() {
			b = append(b, fmt.Sprintf("%s=%v", strings.ToLower(name[:1])+name[1:], f.Interface()))
		}
	}
	if f := field(v, "Next"); f.IsValid() && !f.IsNil() {
		b = append(b, "+next")
	}
	return strings.Join(b, " ")
}

// describeResult summarises a call's outcome: the error code, or a few
// telling fields of the result.
func describeResult(w *world, r any, err error) string {
	if err != nil {
		var me *model.Error
		if errors.As(err, &me) {
			return "err " + string(me.Code)
		}
		return "err " + err.Error()
	}
	v := reflect.ValueOf(r)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "ok"
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "ok"
	}
	if d := describeAdmissionResult(w, r); d != "" {
		return d
	}
	if d := describeStreamResult(r); d != "" {
		return d
	}
	if v.Type() == claimResTyp.Elem() {
		c := v.Addr().Interface().(*model.ClaimResult)
		return fmt.Sprintf("claimed %s e%d", w.alias(c.ID), c.Lease.Epoch)
	}
	b := []string{"ok"}
	for _, name := range []string{"Replayed", "Duplicate", "Outcome", "Effect", "IgnoredReason", "Status", "Acted", "Promoted", "Expired", "Unblocked", "Closed"} {
		f := field(v, name)
		if !f.IsValid() || f.IsZero() {
			continue
		}
		switch f.Kind() {
		case reflect.Bool:
			b = append(b, strings.ToLower(name))
		case reflect.Slice:
			b = append(b, fmt.Sprintf("%s=%d", strings.ToLower(name), f.Len()))
		default:
			b = append(b, fmt.Sprintf("%v", f.Interface()))
		}
	}
	if f := field(v, "Claimed"); f.IsValid() && f.Type() == claimResTyp && !f.IsNil() {
		c := f.Interface().(*model.ClaimResult)
		b = append(b, fmt.Sprintf("claimed %s e%d", w.alias(c.ID), c.Lease.Epoch))
	}
	if f := field(v, "Next"); f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() {
		if c := field(f.Elem(), "Claimed"); c.IsValid() && c.Type() == claimResTyp && !c.IsNil() {
			cr := c.Interface().(*model.ClaimResult)
			b = append(b, fmt.Sprintf("next %s e%d", w.alias(cr.ID), cr.Lease.Epoch))
		} else {
			b = append(b, "next none")
		}
	}
	if f := field(v, "ID"); f.IsValid() && f.Type() == execIDType {
		b = append(b, w.alias(f.Interface().(model.ExecutionID)))
	}
	return strings.Join(b, " ")
}
