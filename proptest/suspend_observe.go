package proptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
)

// What the machine observes and checks of suspension (model.SuspendStore,
// issue 11): each execution's suspension (SuspensionDescribe) and
// waitpoints (WaitpointList), each partition's suspended list
// (SuspendedList, in pages) and PartitionDue, and the two timer indexes
// suspension_timeout and pending_waitpoint_expiry. internal/invariant
// checks one execution (the suspended set, one open suspension iff
// suspended, no open waitpoint once terminal, pending ⇔
// pending_waitpoint_expiry); this file adds the rules that span the
// partition or two steps.

// SuspendObservation is what model.SuspendStore's reads show of one
// execution.
type SuspendObservation struct {
	// Suspension is its open or last suspension; nil when it has none
	// (ErrSuspensionNotFound).
	Suspension *model.SuspensionSnapshot
	Waitpoints []model.WaitpointSnapshot
}

// SuspendedObservation is one partition's SuspendedList, read in pages.
type SuspendedObservation struct {
	Entries []model.SuspendedEntry
	// Cursors are the pages' Next cursors, in order (the last is zero).
	Cursors []model.ExecutionID
	// Feed is the partition's signal feed (SignalFeed, read in pages)
	// and FeedLast the last seq it reported.
	Feed     []model.SignalFeedEvent
	FeedLast uint64
}

// suspendedPage is the SuspendedList page size Observe reads with, small
// so that cursors are exercised.
const suspendedPage = 2

var suspendTimerIndexes = []model.IndexKind{model.IndexSuspensionTimeout, model.IndexWaitpointExpiry}

// scannedIndexes are the timer indexes Observe scans: every one for a
// model.SuspendStore, else the four of model.Store.
func scannedIndexes(suspends bool) []model.IndexKind {
	if !suspends {
		return timerIndexes
	}
	return append(slices.Clip(timerIndexes), suspendTimerIndexes...)
}

func (so *SuspendObservation) view() *invariant.SuspendView {
	if so == nil {
		return nil
	}
	return &invariant.SuspendView{Suspension: so.Suspension, Waitpoints: so.Waitpoints}
}

// open is the open suspension, or nil.
func (so *SuspendObservation) open() *model.SuspensionSnapshot {
	if so == nil || so.Suspension == nil || !so.Suspension.ClosedAt.IsZero() {
		return nil
	}
	return so.Suspension
}

// timeoutAt is when the suspension of an execution in state v times out
// (zero: it is not suspended, or its suspension has no timeout).
func (so *SuspendObservation) timeoutAt(v model.StateVector) time.Time {
	if sp := so.open(); sp != nil && v.LifecyclePhase == model.PhaseSuspended {
		return sp.TimeoutAt
	}
	return time.Time{}
}

// earliestPending is the earliest expiry of a pending waitpoint (zero:
// none pending).
func (so *SuspendObservation) earliestPending() time.Time {
	var at time.Time
	if so == nil {
		return at
	}
	for _, w := range so.Waitpoints {
		if w.State == model.WaitpointPending && (at.IsZero() || w.ExpiresAt.Before(at)) {
			at = w.ExpiresAt
		}
	}
	return at
}

// waitpoint is the execution's waitpoint id, or nil.
func (so *SuspendObservation) waitpoint(id model.WaitpointID) *model.WaitpointSnapshot {
	if so == nil {
		return nil
	}
	for i := range so.Waitpoints {
		if so.Waitpoints[i].ID == id {
			return &so.Waitpoints[i]
		}
	}
	return nil
}

// openWaitpoints counts the pending and active waitpoints.
func (so *SuspendObservation) openWaitpoints() int {
	n := 0
	if so != nil {
		for _, w := range so.Waitpoints {
			if w.State != model.WaitpointClosed {
				n++
			}
		}
	}
	return n
}

// observeSuspend reads the suspension, the waitpoints and the suspended
// lists of a model.SuspendStore.
func observeSuspend(ctx context.Context, s model.Store, o *Observation) error {
	ss, ok := s.(model.SuspendStore)
	if !ok {
		return nil
	}
	for id, x := range o.Execs {
		so := &SuspendObservation{}
		sp, err := ss.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: id})
		switch {
		case err == nil:
			so.Suspension = sp
		case errors.Is(err, model.ErrSuspensionNotFound):
		default:
			return fmt.Errorf("SuspensionDescribe(%v): %w", id, err)
		}
		wl, err := ss.WaitpointList(ctx, &model.WaitpointListParams{ID: id})
		if err != nil {
			return fmt.Errorf("WaitpointList(%v): %w", id, err)
		}
		so.Waitpoints = wl.Waitpoints
		x.Suspend = so
	}
	o.Suspended = map[int]*SuspendedObservation{}
	for part := range o.Partitions.FlowPartitions {
		if len(o.Lists[part].ids()) == 0 && o.Partitions.FlowPartitions > 16 {
			continue
		}
		so := &SuspendedObservation{}
		var after model.ExecutionID
		for {
			r, err := ss.SuspendedList(ctx, &model.SuspendedListParams{Partition: part, After: after, Limit: suspendedPage})
			if err != nil {
				return fmt.Errorf("SuspendedList(p%d after %v): %w", part, after, err)
			}
			so.Entries = append(so.Entries, r.Entries...)
			so.Cursors = append(so.Cursors, r.Next)
			if r.Next.IsZero() {
				break
			}
			if (!after.IsZero() && r.Next.Compare(after) <= 0) || len(so.Cursors) > 100_000 {
				return fmt.Errorf("SuspendedList(p%d): cursor %v does not advance past %v", part, r.Next, after)
			}
			after = r.Next
		}
		if err := observeFeed(ctx, ss, part, so); err != nil {
			return err
		}
		o.Suspended[part] = so
	}
	return nil
}

// observeFeed reads partition part's signal feed in pages.
func observeFeed(ctx context.Context, ss model.SuspendStore, part int, so *SuspendedObservation) error {
	var after uint64
	for {
		r, err := ss.SignalFeed(ctx, &model.SignalFeedParams{Partition: part, After: after, Limit: model.MaxPageSize})
		if err != nil {
			return fmt.Errorf("SignalFeed(p%d after %d): %w", part, after, err)
		}
		so.Feed = append(so.Feed, r.Events...)
		so.FeedLast = r.Last
		if len(r.Events) < model.MaxPageSize {
			return nil
		}
		after = r.Events[len(r.Events)-1].Seq
	}
}

func (lo *ListObservation) ids() []model.ExecutionID {
	if lo == nil {
		return nil
	}
	return lo.IDs
}

// suspendViolations checks one observation of a model.SuspendStore
// across its executions and partitions:
//
//   - SuspendedList of a partition lists exactly its suspended
//     executions, in id order, each with its lane and open suspension
//     (id, reason, suspended_at, timeout), and pages end with a zero
//     cursor;
//   - PartitionDue's suspension_timeout and waitpoint_expiry are the
//     earliest open timed suspension's timeout and the earliest pending
//     waitpoint's expiry of the partition (zero for none);
//   - at most one open suspension: every active waitpoint is bound to the
//     one SuspensionDescribe shows, open;
//   - an open suspension binds its waitpoints (own first, all active and
//     listed), counts exactly their signals, and its condition is not
//     satisfied by them (it would have resumed);
//   - a closed suspension leaves no open waitpoint bound to it (its
//     waitpoints closed with it, or returned to pending when a resume
//     kept them) and no open condition: closed by a signal or at suspend
//     (satisfied) only when its signals satisfy its condition.
//
// feedViolations checks a partition's signal feed: consecutive seqs
// ending at the last one written, at most SignalFeedLen kept, each event
// of an execution of the partition.
func feedViolations(part int, so *SuspendedObservation, bad func(string, ...any)) {
	if n := len(so.Feed); n > model.SignalFeedLen || (n == 0 && so.FeedLast != 0) {
		bad("partition %d: signal feed keeps %d events, last seq %d", part, n, so.FeedLast)
	}
	for i, ev := range so.Feed {
		if want := so.FeedLast - uint64(len(so.Feed)-1-i); ev.Seq != want { //nolint:gosec // len ≥ i+1
			bad("partition %d: signal feed event %d has seq %d, want %d (consecutive, ending at %d)", part, i, ev.Seq, want, so.FeedLast)
			return
		}
		if ev.Execution.Partition() != part {
			bad("partition %d: signal feed event %d names %v of another partition", part, ev.Seq, ev.Execution)
		}
	}
}

func (o *Observation) suspendViolations() []string {
	if o.Suspended == nil {
		return nil
	}
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	type earliest struct{ timeout, pending time.Time }
	first := map[int]*earliest{}
	minTime := func(a *time.Time, t time.Time) {
		if !t.IsZero() && (a.IsZero() || t.Before(*a)) {
			*a = t
		}
	}
	suspended := map[int][]model.SuspendedEntry{}
	ids := make([]model.ExecutionID, 0, len(o.Execs))
	for id := range o.Execs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, model.ExecutionID.Compare)
	for _, id := range ids {
		x := o.Execs[id]
		so, s := x.Suspend, x.Snapshot
		if so == nil || s == nil {
			continue
		}
		e := first[id.Partition()]
		if e == nil {
			e = &earliest{}
			first[id.Partition()] = e
		}
		minTime(&e.timeout, so.timeoutAt(s.State))
		minTime(&e.pending, so.earliestPending())
		sp := so.Suspension
		if s.State.LifecyclePhase == model.PhaseSuspended && so.open() != nil {
			suspended[id.Partition()] = append(suspended[id.Partition()], model.SuspendedEntry{
				ID: id, Lane: s.Lane, Suspension: sp.ID, Reason: sp.Reason, SuspendedAt: sp.SuspendedAt, TimeoutAt: sp.TimeoutAt,
			})
		}
		for _, w := range so.Waitpoints {
			if w.State == model.WaitpointActive && (sp == nil || w.Suspension != sp.ID || so.open() == nil) {
				bad("%v: active waitpoint %v bound to %v, not to the open suspension (%v)", id, w.ID, w.Suspension, suspensionID(sp))
			}
		}
		if sp == nil {
			continue
		}
		if len(sp.Waitpoints) == 0 || sp.Waitpoints[0] != sp.Waitpoint {
			bad("%v: suspension %v binds %v, its own waitpoint %v not first", id, sp.ID, sp.Waitpoints, sp.Waitpoint)
		}
		delivered := make([]model.DeliveredSignal, len(sp.Signals))
		for i := range sp.Signals {
			delivered[i] = sp.Signals[i].Delivered()
		}
		satisfied := sp.Condition.Satisfied(sp.Waitpoint, delivered)
		if so.open() != nil {
			var held []model.SignalID
			for _, wid := range sp.Waitpoints {
				w := so.waitpoint(wid)
				if w == nil || w.State != model.WaitpointActive || w.Suspension != sp.ID {
					bad("%v: open suspension %v binds waitpoint %v, which is %+v", id, sp.ID, wid, w)
					continue
				}
				for _, r := range w.Signals {
					held = append(held, r.ID)
				}
			}
			var counted []model.SignalID
			for _, r := range sp.Signals {
				counted = append(counted, r.ID)
			}
			slices.SortFunc(held, compareSignalIDs)
			slices.SortFunc(counted, compareSignalIDs)
			if !slices.Equal(held, counted) {
				bad("%v: open suspension %v counts signals %v, its waitpoints hold %v", id, sp.ID, counted, held)
			}
			if satisfied {
				bad("%v: open suspension %v, yet its signals satisfy its condition %+v", id, sp.ID, sp.Condition)
			}
			continue
		}
		for _, w := range so.Waitpoints {
			if w.State == model.WaitpointActive && w.Suspension == sp.ID {
				bad("%v: suspension %v closed (%v), yet waitpoint %v is still active under it", id, sp.ID, sp.ClosedBy, w.ID)
			}
		}
		switch sp.ClosedBy {
		case model.ClosedBySignal, model.ClosedSatisfied:
			if !satisfied {
				bad("%v: suspension %v closed by %v, but its signals do not satisfy its condition %+v", id, sp.ID, sp.ClosedBy, sp.Condition)
			}
		}
	}
	for part, so := range o.Suspended {
		feedViolations(part, so, bad)
		if n := len(so.Cursors); n == 0 || !so.Cursors[n-1].IsZero() {
			bad("partition %d: SuspendedList pages do not end with a zero cursor", part)
		}
		for i := 1; i < len(so.Cursors); i++ {
			if i*suspendedPage > len(so.Entries) {
				bad("partition %d: SuspendedList page %d is not full but has a next cursor", part, i)
				break
			}
			if so.Cursors[i-1] != so.Entries[i*suspendedPage-1].ID {
				bad("partition %d: SuspendedList page %d ends with %v but its cursor is %v", part, i, so.Entries[i*suspendedPage-1].ID, so.Cursors[i-1])
			}
		}
		if !slices.EqualFunc(so.Entries, suspended[part], sameSuspendedEntry) {
			bad("partition %d: SuspendedList lists %+v, its suspended executions are %+v", part, so.Entries, suspended[part])
		}
		pd := o.PartitionDue[part]
		e := first[part]
		if e == nil {
			e = &earliest{}
		}
		if pd != nil && (!pd.SuspensionTimeout.Equal(e.timeout) || !pd.WaitpointExpiry.Equal(e.pending)) {
			bad("partition %d: PartitionDue says suspension timeout %v, waitpoint expiry %v; the records say %v, %v",
				part, pd.SuspensionTimeout, pd.WaitpointExpiry, e.timeout, e.pending)
		}
	}
	return out
}

// sameSignals compares signal lists field by field (nil and empty
// payloads alike; go-cmp is slow for checks after every step).
func sameSignals(a, b []model.SignalRecord) bool {
	return slices.EqualFunc(a, b, func(x, y model.SignalRecord) bool {
		return x.ID == y.ID && x.Waitpoint == y.Waitpoint && x.Name == y.Name && x.Source == y.Source &&
			bytes.Equal(x.Payload, y.Payload) && x.IdempotencyKey == y.IdempotencyKey && x.Effect == y.Effect &&
			x.IgnoredReason == y.IgnoredReason && x.DeliveredAt.Equal(y.DeliveredAt)
	})
}

func sameSuspendedEntry(a, b model.SuspendedEntry) bool {
	return a.ID == b.ID && a.Lane == b.Lane && a.Suspension == b.Suspension && a.Reason == b.Reason &&
		a.SuspendedAt.Equal(b.SuspendedAt) && a.TimeoutAt.Equal(b.TimeoutAt)
}

func compareSignalIDs(a, b model.SignalID) int { return slices.Compare(a[:], b[:]) }

func suspensionID(sp *model.SuspensionSnapshot) any {
	if sp == nil {
		return "none"
	}
	return sp.ID
}

// suspendStepViolations checks suspension between two observations of
// one store:
//
//   - an execution keeps its last suspension (it is never lost) until it
//     suspends again; a new suspension while the previous one was open
//     needs the execution resumed and claimed within the step (a lease
//     acquisition) and is stamped with Now;
//   - a closed suspension is frozen (no open condition: no signal is
//     counted after it closed, nothing reopens it);
//   - an open one keeps its identity (attempt, condition, waitpoints,
//     suspended_at, policy, timeout behaviour), its signals only grow,
//     and its reason and timeout change only when an escalation sets
//     Escalated (reason operator_review, no timeout), which never clears;
//   - a waitpoint keeps its execution, creation time and limit; a closed
//     one is frozen; only a new suspension drops waitpoints (the closed
//     ones; within a step an open one may close first); its signals only grow but when a resume consumes
//     them (active before, then pending or bound anew; or bound by the
//     step's new suspension, resumed in the same step).
func suspendStepViolations(prev, cur *Observation, acquired map[model.ExecutionID]int) []string {
	var out []string
	for id, px := range prev.Execs {
		cx := cur.Execs[id]
		if cx == nil || px.Suspend == nil || cx.Suspend == nil {
			continue
		}
		bad := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("%v: ", id)+fmt.Sprintf(format, args...))
		}
		ps, cs := px.Suspend.Suspension, cx.Suspend.Suspension
		renewed := false
		switch {
		case ps == nil:
			renewed = cs != nil
		case cs == nil:
			bad("lost its suspension %v", ps.ID)
		case ps.ID != cs.ID:
			renewed = true
			if ps.ClosedAt.IsZero() && acquired != nil && acquired[id] == 0 {
				bad("suspension %v replaced by %v while open, without a resume and claim in between", ps.ID, cs.ID)
			}
		case !ps.ClosedAt.IsZero():
			if !reflect.DeepEqual(ps, cs) && !cmpEqual(ps, cs) {
				bad("closed suspension %v changed: %+v -> %+v", ps.ID, *ps, *cs)
			}
		default:
			a, b := *ps, *cs
			if a.AttemptIndex != b.AttemptIndex || !(reflect.DeepEqual(a.Condition, b.Condition) || cmpEqual(a.Condition, b.Condition)) || a.Waitpoint != b.Waitpoint ||
				!slices.Equal(a.Waitpoints, b.Waitpoints) || !a.SuspendedAt.Equal(b.SuspendedAt) || a.Policy != b.Policy ||
				a.TimeoutBehavior != b.TimeoutBehavior || a.Execution != b.Execution {
				bad("open suspension %v changed identity: %+v -> %+v", a.ID, a, b)
			}
			if len(b.Signals) < len(a.Signals) || !sameSignals(a.Signals, b.Signals[:len(a.Signals)]) {
				bad("suspension %v: signals are not an extension of the previous ones", a.ID)
			}
			switch {
			case a.Escalated && !b.Escalated:
				bad("suspension %v: escalation cleared", a.ID)
			case !a.Escalated && b.Escalated:
				if b.Reason != model.SuspendForOperatorReview || !b.TimeoutAt.IsZero() || a.TimeoutAt.IsZero() ||
					a.TimeoutBehavior != model.TimeoutEscalate || b.TimeoutAt.After(cur.Now) {
					bad("suspension %v escalated from %v (timeout %v, %v) to %v (timeout %v)", a.ID, a.Reason, a.TimeoutAt,
						a.TimeoutBehavior, b.Reason, b.TimeoutAt)
				}
			case a.Reason != b.Reason || !a.TimeoutAt.Equal(b.TimeoutAt):
				bad("suspension %v: reason or timeout changed without an escalation: %v %v -> %v %v", a.ID, a.Reason, a.TimeoutAt, b.Reason, b.TimeoutAt)
			}
		}
		if renewed && !cs.SuspendedAt.Equal(cur.Now) {
			bad("new suspension %v suspended at %v, not now %v", cs.ID, cs.SuspendedAt, cur.Now)
		}
		for _, pw := range px.Suspend.Waitpoints {
			cw := cx.Suspend.waitpoint(pw.ID)
			if cw == nil {
				if !renewed { // (a new suspension drops the closed ones)
					bad("waitpoint %v (%v) vanished (a new suspension: %v)", pw.ID, pw.State, renewed)
				}
				continue
			}
			if cw.Execution != pw.Execution || !cw.CreatedAt.Equal(pw.CreatedAt) || cw.SignalLimit != pw.SignalLimit {
				bad("waitpoint %v changed identity: %+v -> %+v", pw.ID, pw, *cw)
			}
			if pw.State == model.WaitpointClosed {
				if !reflect.DeepEqual(pw, *cw) && !cmpEqual(pw, *cw) {
					bad("closed waitpoint %v changed: %+v -> %+v", pw.ID, pw, *cw)
				}
				continue
			}
			// (or bound by the step's new suspension, which a resume in
			// the same step may have ended: pending, active, pending)
			consumed := pw.State == model.WaitpointActive && (cw.State != model.WaitpointActive || cw.Suspension != pw.Suspension) ||
				renewed && slices.Contains(cs.Waitpoints, pw.ID)
			if !consumed && (len(cw.Signals) < len(pw.Signals) || !sameSignals(pw.Signals, cw.Signals[:len(pw.Signals)])) {
				bad("waitpoint %v: signals are not an extension of the previous ones", pw.ID)
			}
			if pw.State == model.WaitpointPending && cw.State == model.WaitpointPending && !cw.ExpiresAt.Equal(pw.ExpiresAt) {
				bad("pending waitpoint %v: expiry moved from %v to %v", pw.ID, pw.ExpiresAt, cw.ExpiresAt)
			}
		}
	}
	return out
}
