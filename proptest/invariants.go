package proptest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
)

// CheckInvariants observes s at now and fails t (a *testing.T or a
// *rapid.T) with every violated invariant of lua-semantics §6 that applies
// to the operations of model.Store. known lists executions that must still
// exist (none lost).
func CheckInvariants(t rapid.TB, s model.Store, known []model.ExecutionID, now time.Time) {
	t.Helper()
	o, err := Observe(contextOf(t), s, now, ObserveOptions{})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	if v := o.Violations(known); len(v) > 0 {
		t.Fatalf("%d invariant violation(s):\n  %s", len(v), strings.Join(v, "\n  "))
	}
}

// Checker checks the invariants of each observation and the monotonic
// properties between consecutive observations of one store.
type Checker struct {
	prev *Observation
	// renewals are the successful LeaseRenew calls since prev (the
	// machine sets them before each Check; renewalsKnown false: not
	// known, the feeds' renewed events are then not counted).
	renewals      []feedRenewal
	renewalsKnown bool
	// deleted are the executions deleted since prev (the machine sets
	// them before each Check): they are not lost.
	deleted map[model.ExecutionID]bool
	// deletedFlows are the flows deleted since prev, likewise.
	deletedFlows map[model.FlowID]bool
}

// Check returns the violations of cur on its own and relative to the
// previous observation passed to Check. acquired counts, per execution, the
// lease acquisitions (claims, resumes, reclaims) since then; nil means
// unknown, and only monotonicity of epochs is checked.
func (c *Checker) Check(cur *Observation, known []model.ExecutionID, acquired map[model.ExecutionID]int) []string {
	v := cur.Violations(known)
	if prev := c.prev.without(c.deleted, c.deletedFlows); prev != nil {
		v = append(v, StepViolations(prev, cur, acquired)...)
		v = append(v, flowStepViolations(prev, cur)...)
		v = append(v, suspendStepViolations(prev, cur, acquired)...)
		v = append(v, streamStepViolations(prev, cur)...)
		v = append(v, laneStepViolations(prev, cur)...)
		rens := c.renewals
		if c.renewalsKnown && rens == nil {
			rens = []feedRenewal{}
		}
		v = append(v, feedStepViolations(prev, cur, rens)...)
	}
	c.prev = cur
	return v
}

// without returns o less the deleted executions and flows (o itself when
// there are none), for the checks between two observations.
func (o *Observation) without(deleted map[model.ExecutionID]bool, flows map[model.FlowID]bool) *Observation {
	if o == nil || len(deleted)+len(flows) == 0 {
		return o
	}
	c := *o
	if len(flows) > 0 && o.Flows != nil {
		c.Flows = make(map[model.FlowID]*FlowObservation, len(o.Flows))
		for id, f := range o.Flows {
			if !flows[id] {
				c.Flows[id] = f
			}
		}
	}
	c.Execs = make(map[model.ExecutionID]*ExecObservation, len(o.Execs))
	for id, x := range o.Execs {
		if !deleted[id] {
			c.Execs[id] = x
		}
	}
	return &c
}

// Violations checks one observation: the listing, every listed execution
// on its own (internal/invariant's rules), the timer indexes against the
// records, and the live workers.
func (o *Observation) Violations(known []model.ExecutionID) []string {
	out := o.listViolations(known)
	ids := make([]model.ExecutionID, 0, len(o.Execs))
	for id := range o.Execs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, model.ExecutionID.Compare)
	for _, id := range ids {
		for _, msg := range o.execViolations(id, o.Execs[id]) {
			out = append(out, fmt.Sprintf("%v: %s", id, msg))
		}
	}
	out = append(out, o.dueViolations()...)
	out = append(out, o.suspendViolations()...)
	out = append(out, o.flowViolations()...)
	out = append(out, o.laneViolations()...)
	out = append(out, o.countViolations()...)
	out = append(out, o.admissionViolations()...)
	out = append(out, o.streamViolations()...)
	out = append(out, o.feedViolations(known)...)
	return append(out, o.workerViolations()...)
}

// listViolations checks the listing, which reads all_executions (§6.3: an
// execution is never lost from its indexes): sorted, no duplicates, each id
// in its own partition, nothing known is lost.
func (o *Observation) listViolations(known []model.ExecutionID) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	listed := map[model.ExecutionID]int{}
	for part, lo := range o.Lists {
		for i, id := range lo.IDs {
			if id.Partition() != part {
				bad("%v listed in partition %d", id, part)
			}
			if i > 0 && lo.IDs[i-1].Compare(id) >= 0 {
				bad("partition %d listing not strictly ordered: %v then %v", part, lo.IDs[i-1], id)
			}
			listed[id]++
		}
		if n := len(lo.Cursors); n == 0 || !lo.Cursors[n-1].IsZero() {
			bad("partition %d listing does not end with a zero cursor", part)
		}
	}
	for id, n := range listed {
		if n > 1 {
			bad("%v listed %d times", id, n)
		}
	}
	for _, id := range known {
		if listed[id] == 0 {
			bad("%v lost: not listed by ExecutionList", id)
		}
	}
	return out
}

// workerViolations checks the worker registry (no §6 rule; lua-semantics
// worker registration): each namespace's live workers are ordered by
// instance, unexpired at Now, and of that namespace.
func (o *Observation) workerViolations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for ns, ws := range o.Workers {
		for i, w := range ws {
			if i > 0 && ws[i-1].WorkerInstanceID >= w.WorkerInstanceID {
				bad("workers of %s not strictly ordered by instance: %s then %s", ns, ws[i-1].WorkerInstanceID, w.WorkerInstanceID)
			}
			if !w.ExpiresAt.After(o.Now) {
				bad("worker %s/%s listed as live but expires at %v (now %v)", ns, w.WorkerInstanceID, w.ExpiresAt, o.Now)
			}
			if w.Namespace != ns {
				bad("worker %s listed under namespace %s has namespace %s", w.WorkerInstanceID, ns, w.Namespace)
			}
		}
	}
	return out
}

// execViolations applies internal/invariant's rules (lua-semantics §6.1–9
// on one execution) to x.
func (o *Observation) execViolations(id model.ExecutionID, x *ExecObservation) []string {
	return invariant.Violations(&invariant.Exec{
		ID:        id,
		Snapshot:  x.Snapshot,
		Indexes:   x.Indexes,
		Attempts:  x.Attempts,
		History:   x.History,
		HasResult: &x.HasResult,
		Suspend:   x.Suspend.view(),
	})
}

// dueViolations is §6.4–5 and §6.9 on the timer indexes' scores: an
// entry is due at Now exactly when the time in the record has come (lease
// expiry or revoke time, attempt timeout, delay_until, deadline), its score
// is that time, and an execution the rules keep out of an index is never
// returned by its scan.
func (o *Observation) dueViolations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	type entry struct {
		at   time.Time
		lane model.LaneID
	}
	due := map[model.IndexKind]map[model.ExecutionID]entry{}
	for _, k := range scannedIndexes(true) {
		due[k] = map[model.ExecutionID]entry{}
	}
	for k, r := range o.Due {
		if r.More {
			bad("%v: more than %d due entries", k, model.MaxPageSize)
		}
		if !r.NextDueAt.IsZero() && !r.NextDueAt.After(o.Now) {
			bad("%v: next due at %v is not after now %v", k, r.NextDueAt, o.Now)
		}
		for i, it := range r.Items {
			if it.DueAt.After(o.Now) {
				bad("%v: %v due at %v after now %v", k, it.ID, it.DueAt, o.Now)
			}
			if i > 0 {
				p := r.Items[i-1]
				if p.DueAt.After(it.DueAt) || (p.DueAt.Equal(it.DueAt) && p.ID.Compare(it.ID) >= 0) {
					bad("%v: items not in (due, id) order: %v@%v then %v@%v", k, p.ID, p.DueAt, it.ID, it.DueAt)
				}
			}
			if it.ID.Partition() != k.Partition {
				bad("%v: item %v of another partition", k, it.ID)
			}
			if _, dup := due[k.Index][it.ID]; dup {
				bad("%v: %v returned twice", k, it.ID)
			}
			due[k.Index][it.ID] = entry{it.DueAt, it.Lane}
			x := o.Execs[it.ID]
			if x == nil {
				bad("%v: stale entry for unlisted %v", k, it.ID)
				continue
			}
			name := k.Index.String()
			if k.Index == model.IndexDelayed {
				name = "lane:" + string(it.Lane) + ":delayed"
			} else if it.Lane != "" {
				bad("%v: %v has lane %q outside the delayed index", k, it.ID, it.Lane)
			}
			if !slices.Contains(x.Indexes, name) {
				bad("%v: scan returns %v but its indexes %q lack %s", k, it.ID, x.Indexes, name)
			}
		}
	}
	for id, x := range o.Execs {
		s := x.Snapshot
		if s == nil {
			continue
		}
		if _, scanned := o.Due[DueKey{id.Partition(), model.IndexLeaseExpiry}]; !scanned {
			continue
		}
		v := s.State
		expect := func(k model.IndexKind, at time.Time, lane model.LaneID, what string) {
			e, ok := due[k][id]
			isDue := !at.After(o.Now)
			switch {
			case isDue && !ok:
				bad("%v: %s %v has come (now %v) but %s does not return it", id, what, at, o.Now, k)
			case !isDue && ok:
				bad("%v: %s %v has not come (now %v) but %s returns it", id, what, at, o.Now, k)
			case ok && (!e.at.Equal(at) || e.lane != lane):
				bad("%v: %s entry due at %v lane %q, record says %v lane %q", id, k, e.at, e.lane, at, lane)
			}
		}
		never := func(k model.IndexKind, why string) {
			if _, ok := due[k][id]; ok {
				bad("%v: %s returns it although %s", id, k, why)
			}
		}
		switch v.OwnershipState {
		case model.OwnershipLeased, model.OwnershipLeaseExpiredReclaimable:
			if l := s.CurrentLease; l != nil {
				expect(model.IndexLeaseExpiry, l.ExpiresAt, "", "lease expiry")
				if s.AttemptTimeout > 0 {
					expect(model.IndexAttemptTimeout, l.AcquiredAt.Add(s.AttemptTimeout), "", "attempt timeout")
				}
			}
		case model.OwnershipLeaseRevoked:
			expect(model.IndexLeaseExpiry, s.LeaseRevokedAt, "", "lease revocation")
		default:
			never(model.IndexLeaseExpiry, "it holds no lease")
			never(model.IndexAttemptTimeout, "it is not active")
		}
		if v.LifecyclePhase == model.PhaseRunnable && v.EligibilityState == model.NotEligibleUntilTime {
			expect(model.IndexDelayed, s.DelayUntil, s.Lane, "delay_until")
		} else {
			never(model.IndexDelayed, "it is not delayed")
		}
		if v.LifecyclePhase != model.PhaseTerminal && !s.Deadline.IsZero() {
			expect(model.IndexExecutionDeadline, s.Deadline, "", "deadline")
		} else {
			never(model.IndexExecutionDeadline, "it has no live deadline")
		}
		// retention holds a terminal execution with a retention for its
		// outcome, due that long after it ended; a flow member's entry
		// may have been dropped or moved later, to its flow's due time
		// (its flow decides)
		keep := s.Retention.For(v.TerminalOutcome)
		ent, listed := due[model.IndexRetention][id]
		switch {
		case v.LifecyclePhase != model.PhaseTerminal || keep == 0:
			never(model.IndexRetention, "it has no retention running")
		case s.Flow.IsZero():
			expect(model.IndexRetention, s.TerminalAt.Add(keep), "", "retention")
		case listed && ent.at.Before(s.TerminalAt.Add(keep)):
			bad("%v: member's retention entry due at %v, before its own retention runs out at %v", id, ent.at, s.TerminalAt.Add(keep))
		}
		if _, scanned := o.Due[DueKey{id.Partition(), model.IndexSuspensionTimeout}]; !scanned || x.Suspend == nil {
			continue
		}
		// issue 11: suspension_timeout holds a suspended execution whose
		// open suspension has a timeout, scored by it;
		// pending_waitpoint_expiry one with a pending waitpoint, scored by
		// the earliest pending expiry
		if at := x.Suspend.timeoutAt(v); !at.IsZero() {
			expect(model.IndexSuspensionTimeout, at, "", "suspension timeout")
		} else {
			never(model.IndexSuspensionTimeout, "it has no open suspension with a timeout")
		}
		if at := x.Suspend.earliestPending(); !at.IsZero() {
			expect(model.IndexWaitpointExpiry, at, "", "earliest pending waitpoint expiry")
		} else {
			never(model.IndexWaitpointExpiry, "it has no pending waitpoint")
		}
	}
	return out
}

// StepViolations checks what must hold between two consecutive
// observations of one store: nothing is lost, immutable fields stay,
// epochs only rise, by exactly one per acquisition (§6.6), attempts and
// history only grow (§6.6), terminal records are frozen and the terminal
// phase is left only by a replay (§6.12), and every write stamps the time
// (§6.1).
func StepViolations(prev, cur *Observation, acquired map[model.ExecutionID]int) []string {
	var out []string
	bad := func(id model.ExecutionID, format string, args ...any) {
		out = append(out, fmt.Sprintf("%v: ", id)+fmt.Sprintf(format, args...))
	}
	if cur.Now.Before(prev.Now) {
		out = append(out, fmt.Sprintf("time went backwards: %v after %v", cur.Now, prev.Now))
	}
	for id, px := range prev.Execs {
		cx := cur.Execs[id]
		if cx == nil {
			bad(id, "lost: listed before, not now")
			continue
		}
		p, c := px.Snapshot, cx.Snapshot
		if p == nil || c == nil {
			continue
		}
		if p.Namespace != c.Namespace || p.Lane != c.Lane || p.Kind != c.Kind || !p.CreatedAt.Equal(c.CreatedAt) ||
			!slices.Equal(p.RequiredCapabilities, c.RequiredCapabilities) || p.RetryPolicy != c.RetryPolicy ||
			p.MaxReclaims != c.MaxReclaims || p.MaxReplays != c.MaxReplays || p.AttemptTimeout != c.AttemptTimeout {
			bad(id, "an immutable field changed")
		}
		switch {
		case c.LeaseEpoch < p.LeaseEpoch:
			bad(id, "lease epoch fell from %d to %d", p.LeaseEpoch, c.LeaseEpoch)
		case acquired == nil:
		case c.LeaseEpoch != p.LeaseEpoch+uint64(acquired[id]):
			bad(id, "%d lease acquisition(s) but the epoch went from %d to %d", acquired[id], p.LeaseEpoch, c.LeaseEpoch)
		}
		if len(cx.Attempts) < len(px.Attempts) {
			bad(id, "attempts shrank from %d to %d", len(px.Attempts), len(cx.Attempts))
		} else {
			for i, pa := range px.Attempts {
				ca := cx.Attempts[i]
				if pa.ID != ca.ID || pa.Type != ca.Type || !pa.StartedAt.Equal(ca.StartedAt) {
					bad(id, "attempt %d changed identity: %+v -> %+v", i, pa, ca)
				}
				if !pa.Status.IsOpen() && !reflect.DeepEqual(pa, ca) {
					bad(id, "ended attempt %d changed: %+v -> %+v", i, pa, ca)
				}
			}
		}
		if len(px.History) < model.DefaultLeaseHistory {
			if len(cx.History) < len(px.History) ||
				(len(px.History) > 0 && !reflect.DeepEqual(px.History, cx.History[:len(px.History)])) {
				bad(id, "lease history is not an extension of the previous one")
			}
		}
		replayed := c.ReplayCount > p.ReplayCount
		if c.ReplayCount < p.ReplayCount {
			bad(id, "replay count fell from %d to %d", p.ReplayCount, c.ReplayCount)
		}
		if !replayed && (c.RetryCount < p.RetryCount || c.ReclaimCount < p.ReclaimCount) {
			bad(id, "retry/reclaim count fell without a replay: %d/%d -> %d/%d", p.RetryCount, p.ReclaimCount, c.RetryCount, c.ReclaimCount)
		}
		pt := p.State.LifecyclePhase == model.PhaseTerminal
		if pt && !replayed && !reflect.DeepEqual(px.frozen(), cx.frozenSince(px)) {
			bad(id, "terminal record changed without a replay")
		}
		if pt && c.State.LifecyclePhase != model.PhaseTerminal && !replayed {
			bad(id, "left the terminal phase without a replay")
		}
		if c.LastMutationAt.Before(p.LastMutationAt) || c.LastTransitionAt.Before(p.LastTransitionAt) {
			bad(id, "mutation/transition time went backwards")
		}
		if c.State != p.State && !c.LastTransitionAt.Equal(cur.Now) {
			bad(id, "state changed %+v -> %+v but last_transition_at %v is not now %v", p.State, c.State, c.LastTransitionAt, cur.Now)
		}
		pc, cc := *p, *c
		pc.LastMutationAt, cc.LastMutationAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(pc, cc) && !c.LastMutationAt.Equal(cur.Now) {
			bad(id, "record changed but last_mutation_at %v is not now %v", c.LastMutationAt, cur.Now)
		}
	}
	return out
}
