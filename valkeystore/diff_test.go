package valkeystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// pair drives memstore and a valkeystore with the same operations and
// fails the test at the first difference: in results, in errors (code,
// field, detail, state), and in everything observable about the executions
// the operations touched (describe, indexes, attempts, lease history,
// result, payload, and the listing of their partitions; with feeds, their
// partitions' feeds, feed_test.go).
type pair struct {
	t     testing.TB
	mem   *memstore.Store
	vk    *Store
	feeds model.Feeds
	ids   []model.ExecutionID
	parts []int
	nss   []model.Namespace
	steps int
}

func newPair(t testing.TB, b backend, cfg model.PartitionConfig) *pair {
	return newFeedPair(t, b, cfg, model.Feeds{})
}

// newFeedPair is newPair with both stores keeping feeds.
func newFeedPair(t testing.TB, b backend, cfg model.PartitionConfig, feeds model.Feeds) *pair {
	return &pair{
		t:     t,
		mem:   memstore.New(&memstore.Options{Partitions: cfg, Feeds: feeds}),
		vk:    newStore(t, b, &Options{Partitions: cfg, Feeds: feeds}),
		feeds: feeds,
	}
}

var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b model.ExecutionID) bool { return a == b }),
}

// track makes the pair compare id's observable state after every step.
func (p *pair) track(id model.ExecutionID) {
	if !slices.Contains(p.ids, id) {
		p.ids = append(p.ids, id)
	}
	if !slices.Contains(p.parts, id.Partition()) {
		p.parts = append(p.parts, id.Partition())
	}
}

func (p *pair) trackNS(ns model.Namespace) {
	if !slices.Contains(p.nss, ns) {
		p.nss = append(p.nss, ns)
	}
}

// do runs op on both stores, compares, then compares the tracked state. It
// returns valkeystore's result and error.
func do[R any](p *pair, name string, op func(s model.Store) (R, error)) (R, error) {
	p.t.Helper()
	p.steps++
	mr, merr := op(p.mem)
	vr, verr := op(p.vk)
	label := fmt.Sprintf("step %d %s", p.steps, name)
	if d := errDiff(merr, verr); d != "" {
		p.t.Fatalf("%s: errors differ: %s", label, d)
	}
	if merr == nil {
		if d := cmp.Diff(mr, vr, cmpOpts); d != "" {
			p.t.Fatalf("%s: results differ (-memstore +valkeystore):\n%s", label, d)
		}
	}
	p.compareState(label)
	return vr, verr
}

// ok is do for steps that must succeed.
func ok[R any](p *pair, name string, op func(s model.Store) (R, error)) R {
	p.t.Helper()
	r, err := do(p, name, op)
	if err != nil {
		p.t.Fatalf("step %d %s: %v", p.steps, name, err)
	}
	return r
}

// fails is do for steps that must fail with code.
func fails[R any](p *pair, name string, code model.Code, op func(s model.Store) (R, error)) {
	p.t.Helper()
	_, err := do(p, name, op)
	if model.CodeOf(err) != code {
		p.t.Fatalf("step %d %s: error %v, want code %s", p.steps, name, err, code)
	}
}

// errDiff describes how two errors differ, or returns "".
func errDiff(a, b error) string {
	if a == nil && b == nil {
		return ""
	}
	if a == nil || b == nil {
		return fmt.Sprintf("memstore %v, valkeystore %v", a, b)
	}
	var ea, eb *model.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		if a.Error() == b.Error() {
			return ""
		}
		return fmt.Sprintf("memstore %v, valkeystore %v", a, b)
	}
	if d := cmp.Diff(ea, eb); d != "" {
		return fmt.Sprintf("(-memstore +valkeystore)\n%s", d)
	}
	return ""
}

func (p *pair) compareState(label string) {
	p.t.Helper()
	ctx := context.Background()
	check := func(what string, f func(s model.Store) (any, error)) {
		p.t.Helper()
		mr, merr := f(p.mem)
		vr, verr := f(p.vk)
		if d := errDiff(merr, verr); d != "" {
			p.t.Fatalf("%s: %s: errors differ: %s", label, what, d)
		}
		if d := cmp.Diff(mr, vr, cmpOpts); d != "" {
			p.t.Fatalf("%s: %s differs (-memstore +valkeystore):\n%s", label, what, d)
		}
	}
	for _, id := range p.ids {
		check("describe "+id.String(), func(s model.Store) (any, error) {
			return s.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
		})
		check("indexes "+id.String(), func(s model.Store) (any, error) {
			return s.(model.IndexInspector).ExecutionIndexes(ctx, &model.ExecutionIndexesParams{ID: id})
		})
		check("attempts "+id.String(), func(s model.Store) (any, error) {
			return s.AttemptList(ctx, &model.AttemptListParams{ID: id})
		})
		check("history "+id.String(), func(s model.Store) (any, error) {
			return s.LeaseHistory(ctx, &model.LeaseHistoryParams{ID: id, Limit: model.MaxPageSize})
		})
		check("result "+id.String(), func(s model.Store) (any, error) {
			return s.ExecutionResult(ctx, &model.ExecutionResultParams{ID: id})
		})
		check("payload "+id.String(), func(s model.Store) (any, error) {
			return s.ExecutionPayload(ctx, &model.ExecutionPayloadParams{ID: id})
		})
	}
	for _, part := range p.parts {
		check(fmt.Sprintf("list %d", part), func(s model.Store) (any, error) {
			return s.ExecutionList(ctx, &model.ExecutionListParams{Partition: part, Limit: model.MaxPageSize})
		})
		// every timer index in full, scores included
		for idx := model.IndexLeaseExpiry; idx <= model.IndexDelayed; idx++ {
			check(fmt.Sprintf("index %s of %d", idx, part), func(s model.Store) (any, error) {
				return s.IndexScanDue(ctx, &model.IndexScanDueParams{Partition: part, Index: idx,
					Now: endOfTime, Limit: model.MaxPageSize})
			})
		}
	}
	if p.feeds != (model.Feeds{}) {
		p.compareFeeds(label)
	}
	for _, ns := range p.nss {
		// at t0 every registration made since is alive: the whole registry
		check("workers "+string(ns), func(s model.Store) (any, error) {
			return s.WorkerList(ctx, &model.WorkerListParams{Namespace: ns, Now: t0})
		})
	}
}

// endOfTime is the latest Now the model accepts.
var endOfTime = time.UnixMilli(253402300799999)

// ---- fixtures -------------------------------------------------------------

var t0 = time.UnixMilli(1_700_000_000_000).UTC()

func at(d time.Duration) time.Time { return t0.Add(d) }

// seq builds deterministic UUIDs.
type seq struct{ n uint32 }

func (s *seq) uuid() model.UUID {
	s.n++
	var b [16]byte
	b[0], b[1], b[2], b[3] = byte(s.n>>24), byte(s.n>>16), byte(s.n>>8), byte(s.n)
	b[15] = 0x5a
	return model.NewUUIDv4(b)
}

func (s *seq) exec(part int) model.ExecutionID { return model.NewExecutionID(part, s.uuid()) }
func (s *seq) lease() model.LeaseID            { return model.LeaseID(s.uuid()) }
func (s *seq) attempt() model.AttemptID        { return model.AttemptID(s.uuid()) }

func (s *seq) req(w model.WorkerInstanceID, ttl time.Duration) model.LeaseRequest {
	return model.LeaseRequest{
		WorkerID: "w-" + model.WorkerID(w), WorkerInstanceID: w,
		LeaseID: s.lease(), AttemptID: s.attempt(), LeaseTTL: ttl,
	}
}
