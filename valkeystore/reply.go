package valkeystore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// reply decodes what every script returns: a flat array of name/value pairs
// whose values are strings, lists, or nested pairs. Accessors read fields by
// name; the first problem (a missing field, a malformed value) is kept and
// reported by err, wrapping model.ErrCorrupt, and later reads return zero
// values.
type reply struct {
	op     string
	fields map[string]valkey.ValkeyMessage
	root   *reply // the reply holding the sticky error
	first  error
}

// decodeReply reads a top-level reply of script op.
func decodeReply(op string, m valkey.ValkeyMessage) *reply {
	r := &reply{op: op}
	r.root = r
	r.fill(m)
	return r
}

func (r *reply) fill(m valkey.ValkeyMessage) {
	arr, err := m.ToArray()
	if err != nil {
		r.fail("reply is not an array: %v", err)
		return
	}
	if len(arr)%2 != 0 {
		r.fail("reply has an odd number of elements")
		return
	}
	r.fields = make(map[string]valkey.ValkeyMessage, len(arr)/2)
	for i := 0; i < len(arr); i += 2 {
		name, err := arr[i].ToString()
		if err != nil {
			r.fail("field name %d: %v", i/2, err)
			return
		}
		r.fields[name] = arr[i+1]
	}
}

// fail records the first decoding problem.
func (r *reply) fail(format string, a ...any) {
	if r.root.first == nil {
		r.root.first = fmt.Errorf("valkeystore: %s: %w: %s", r.root.op, model.ErrCorrupt, fmt.Sprintf(format, a...))
	}
}

// err returns the first decoding problem, or nil.
func (r *reply) err() error { return r.root.first }

func (r *reply) has(name string) bool {
	_, ok := r.fields[name]
	return ok
}

func (r *reply) get(name string) (valkey.ValkeyMessage, bool) {
	if r.root.first != nil {
		return valkey.ValkeyMessage{}, false
	}
	m, ok := r.fields[name]
	if !ok {
		r.fail("missing field %q", name)
	}
	return m, ok
}

// str reads a string field; an integer reply (a Lua number) reads as its
// decimal text.
func (r *reply) str(name string) string {
	m, ok := r.get(name)
	if !ok {
		return ""
	}
	s, err := text(m)
	if err != nil {
		r.fail("field %q: %v", name, err)
	}
	return s
}

// text reads a string or integer message as text.
func text(m valkey.ValkeyMessage) (string, error) {
	if m.IsInt64() {
		v, _ := m.AsInt64()
		return strconv.FormatInt(v, 10), nil
	}
	return m.ToString()
}

// bytes returns a binary field; empty is nil.
func (r *reply) bytes(name string) []byte {
	s := r.str(name)
	if s == "" {
		return nil
	}
	return []byte(s)
}

func (r *reply) i64(name string) int64 {
	s := r.str(name)
	if r.root.first != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.fail("field %q: not an integer: %q", name, s)
	}
	return v
}

func (r *reply) int(name string) int { return int(r.i64(name)) }

func (r *reply) u64(name string) uint64 {
	s := r.str(name)
	if r.root.first != nil {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		r.fail("field %q: not an unsigned integer: %q", name, s)
	}
	return v
}

func (r *reply) bool(name string) bool {
	switch s := r.str(name); s {
	case "1":
		return true
	case "0", "":
		return false
	default:
		r.fail("field %q: not a boolean: %q", name, s)
		return false
	}
}

// time reads Unix milliseconds; 0 is the zero time.
func (r *reply) time(name string) time.Time { return model.FromMillis(r.i64(name)) }

// optTime reads Unix milliseconds where "" means none (the zero time).
func (r *reply) optTime(name string) time.Time {
	if r.str(name) == "" {
		return time.Time{}
	}
	return r.time(name)
}

// ms reads a duration in milliseconds.
func (r *reply) ms(name string) time.Duration { return time.Duration(r.i64(name)) * time.Millisecond }

// list returns the elements of an array field.
func (r *reply) list(name string) []valkey.ValkeyMessage {
	m, ok := r.get(name)
	if !ok {
		return nil
	}
	arr, err := m.ToArray()
	if err != nil {
		r.fail("field %q: not an array: %v", name, err)
	}
	return arr
}

// strs returns an array field of strings; empty is nil.
func (r *reply) strs(name string) []string {
	arr := r.list(name)
	var out []string
	for i, m := range arr {
		s, err := text(m)
		if err != nil {
			r.fail("field %q[%d]: %v", name, i, err)
			return nil
		}
		out = append(out, s)
	}
	return out
}

// nested decodes m as name/value pairs sharing r's sticky error.
func (r *reply) nested(m valkey.ValkeyMessage) *reply {
	n := &reply{op: r.op, root: r.root}
	n.fill(m)
	return n
}

// obj returns a field holding name/value pairs.
func (r *reply) obj(name string) *reply {
	m, ok := r.get(name)
	if !ok {
		return &reply{op: r.op, root: r.root}
	}
	return r.nested(m)
}

// objs returns an array field whose elements hold name/value pairs.
func (r *reply) objs(name string) []*reply {
	arr := r.list(name)
	out := make([]*reply, 0, len(arr))
	for _, m := range arr {
		out = append(out, r.nested(m))
	}
	return out
}

// strMap returns a field of name/value pairs as a map (never nil).
func (r *reply) strMap(name string) map[string]string {
	o := r.obj(name)
	out := make(map[string]string, len(o.fields))
	for k := range o.fields {
		out[k] = o.str(k)
	}
	return out
}

// enum reads a spec name with parse; "" is the zero value when optional.
func enum[T any](r *reply, name string, optional bool, parse func(string) (T, bool)) T {
	var zero T
	s := r.str(name)
	if r.root.first != nil || (optional && s == "") {
		return zero
	}
	v, ok := parse(s)
	if !ok {
		r.fail("field %q: unknown value %q", name, s)
	}
	return v
}

// caps reads a capability CSV; empty is nil.
func (r *reply) caps(name string) model.Capabilities {
	s := r.str(name)
	if s == "" {
		return nil
	}
	c, err := model.ParseCapabilityCSV(name, s)
	if err != nil {
		r.fail("field %q: %v", name, err)
	}
	return c
}

// execIDs reads a field holding a list of execution ids (nil when it is
// empty); an id that does not parse fails the reply.
func (r *reply) execIDs(name string) []model.ExecutionID {
	var out []model.ExecutionID
	for _, id := range r.strs(name) {
		eid, err := model.ParseExecutionID(id)
		if err != nil {
			r.fail("%s: %v", name, err)
			break
		}
		out = append(out, eid)
	}
	return out
}

func (r *reply) execID(name string) model.ExecutionID {
	s := r.str(name)
	if r.root.first != nil || s == "" {
		return model.ExecutionID{}
	}
	id, err := model.ParseExecutionID(s)
	if err != nil {
		r.fail("field %q: %v", name, err)
	}
	return id
}

func (r *reply) uuid(name string) model.UUID {
	s := r.str(name)
	if r.root.first != nil || s == "" {
		return model.UUID{}
	}
	u, err := model.ParseUUID(s)
	if err != nil {
		r.fail("field %q: malformed uuid %q", name, s)
	}
	return u
}

// ---- script errors --------------------------------------------------------

// sentinels are returned for errors that carry nothing but their code, as
// memstore does, so callers comparing with == or errors.Is see one value.
var sentinels = func() map[model.Code]*model.Error {
	m := make(map[model.Code]*model.Error)
	for _, e := range []*model.Error{
		model.ErrInvalidInput, model.ErrInvalidCapabilities, model.ErrInvalidPolicy,
		model.ErrInvalidTagKey, model.ErrFenceRequired, model.ErrPartialFenceTriple,
		model.ErrNotFound, model.ErrNotActive, model.ErrNotTerminal, model.ErrStaleLease,
		model.ErrLeaseExpired, model.ErrLeaseRevoked, model.ErrMaxReplaysExhausted,
		model.ErrMaxRetriesExhausted, model.ErrInvalidBlockingReason, model.ErrNotLeaseable,
		model.ErrLeaseConflict, model.ErrInvalidClaimGrant, model.ErrClaimGrantExpired,
		model.ErrCapabilityMismatch, model.ErrNotEligible, model.ErrNotInEligibleSet,
		model.ErrGrantAlreadyExists, model.ErrNotReclaimable, model.ErrNoActiveLease,
		model.ErrActiveAttemptExists, model.ErrDuplicateWorker, model.ErrWorkerNotRegistered,
		model.ErrCorrupt, model.ErrResultNotFound, model.ErrFlowNotFound, model.ErrEdgeNotFound,
		model.ErrInvalidToken, model.ErrNotSuspended, model.ErrSuspensionNotFound, model.ErrWaitpointNotFound,
		model.ErrWaitpointClosed, model.ErrWaitpointNotPending, model.ErrWaitpointLimit, model.ErrSignalLimit,
		model.ErrIdempotencyConflict, model.ErrBudgetNotFound, model.ErrQuotaNotFound, model.ErrBudgetExceeded,
		model.ErrAdmissionRequired, model.ErrStreamClosed, model.ErrSummaryConflict, model.ErrAttemptNotFound,
		model.ErrFeedDisabled, model.ErrInFlow, model.ErrLanePaused,
	} {
		m[e.Code] = e
	}
	return m
}()

// scriptError maps an error a script returned ({err, detail, field[,
// state]}) to the *model.Error memstore would return; nil when the reply is
// not an error. This is the only place script errors are interpreted.
func (r *reply) scriptError() error {
	if !r.has("err") {
		return nil
	}
	code := model.Code(r.str("err"))
	detail, field := r.str("detail"), r.str("field")
	var st *model.NotActiveState
	if r.has("state") {
		s := r.obj("state")
		st = &model.NotActiveState{
			LifecyclePhase:  enum(s, "lifecycle_phase", false, model.ParseLifecyclePhase),
			TerminalOutcome: enum(s, "terminal_outcome", false, model.ParseTerminalOutcome),
			LeaseEpoch:      s.u64("lease_epoch"),
			AttemptID:       model.AttemptID(s.uuid("attempt_id")),
		}
	}
	if err := r.err(); err != nil {
		return err
	}
	if code == "" {
		return fmt.Errorf("valkeystore: %s: %w: empty error code", r.op, model.ErrCorrupt)
	}
	if field == "" && detail == "" && st == nil {
		if s, ok := sentinels[code]; ok {
			return s
		}
	}
	return &model.Error{Code: code, Field: field, Detail: detail, State: st}
}

// transportError wraps an error of the client or the server (a script that
// failed to run) for op.
func transportError(op string, err error) error {
	if strings.Contains(err.Error(), "valkeystore: record layout version") {
		// load_exec refused a record of another layout (record.go)
		return fmt.Errorf("valkeystore: %s: %w", op, &model.Error{Code: model.CodeCorruption, Detail: err.Error()})
	}
	return fmt.Errorf("valkeystore: %s: %w", op, err)
}

func (r *reply) float(name string) float64 {
	s := r.str(name)
	if r.root.first != nil {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.fail("field %q: not a number: %q", name, s)
	}
	return v
}

// rows returns a list field of strings cut into rows of n (a script
// returns rows flat: nested tables cost the server more to send).
func (r *reply) rows(name string, n int) [][]string {
	flat := r.strs(name)
	if len(flat)%n != 0 {
		r.fail("field %q: %d strings, not rows of %d", name, len(flat), n)
		return nil
	}
	var out [][]string
	for i := 0; i < len(flat); i += n {
		out = append(out, flat[i:i+n:i+n])
	}
	return out
}
