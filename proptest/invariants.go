package proptest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

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
}

// Check returns the violations of cur on its own and relative to the
// previous observation passed to Check. acquired counts, per execution, the
// lease acquisitions (claims, resumes, reclaims) since then; nil means
// unknown, and only monotonicity of epochs is checked.
func (c *Checker) Check(cur *Observation, known []model.ExecutionID, acquired map[model.ExecutionID]int) []string {
	v := cur.Violations(known)
	if c.prev != nil {
		v = append(v, StepViolations(c.prev, cur, acquired)...)
	}
	c.prev = cur
	return v
}

// laneSetName is the lane index a snapshot's state puts it in.
func laneSetName(v model.StateVector) string {
	switch v.LifecyclePhase {
	case model.PhaseActive:
		return "active"
	case model.PhaseSuspended:
		return "suspended"
	case model.PhaseTerminal:
		return "terminal"
	case model.PhaseRunnable:
		switch v.EligibilityState {
		case model.EligibleNow:
			return "eligible"
		case model.NotEligibleUntilTime:
			return "delayed"
		case model.BlockedByDependencies:
			return "blocked:dependencies"
		case model.BlockedByBudget:
			return "blocked:budget"
		case model.BlockedByQuota:
			return "blocked:quota"
		case model.BlockedByRoute:
			return "blocked:route"
		case model.BlockedByOperator:
			return "blocked:operator"
		case model.BlockedByLaneState:
			return "blocked:lane_state"
		}
	}
	return "?"
}

// Violations checks one observation: every listed execution on its own,
// the listing, and the timer indexes against the records.
func (o *Observation) Violations(known []model.ExecutionID) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	// Listing: sorted, no duplicates, each id in its own partition, nothing
	// known is lost.
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

	ids := make([]model.ExecutionID, 0, len(o.Execs))
	for id := range o.Execs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, model.ExecutionID.Compare)
	for _, id := range ids {
		for _, msg := range o.execViolations(id, o.Execs[id]) {
			bad("%v: %s", id, msg)
		}
	}
	out = append(out, o.dueViolations()...)
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

var knownPartitionIndexes = map[string]bool{
	"all_executions": true, "lease_expiry": true, "attempt_timeout": true, "execution_deadline": true,
}

func (o *Observation) execViolations(id model.ExecutionID, x *ExecObservation) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	s := x.Snapshot
	if s == nil {
		return []string{"no snapshot"}
	}
	v := s.State
	lp, os := v.LifecyclePhase, v.OwnershipState
	if s.ID != id {
		bad("describe returned id %v", s.ID)
	}

	// §6.1–2, 7: the vector on its own; the public state is derived.
	if msg := v.Check(); msg != "" {
		bad("state vector %+v: %s", v, msg)
	}
	if want := model.DerivePublicState(lp, v.EligibilityState, v.TerminalOutcome); s.PublicState != want {
		bad("public state %v, derived %v", s.PublicState, want)
	}
	// The blocking reason each transition macro (RUN/ACT/TERM, mark_expired,
	// revoke, block) writes.
	switch lp {
	case model.PhaseRunnable:
		switch es := v.EligibilityState; es {
		case model.EligibleNow:
			if v.BlockingReason != model.WaitingForWorker {
				bad("eligible_now with blocking reason %v", v.BlockingReason)
			}
		case model.NotEligibleUntilTime:
			if v.BlockingReason != model.WaitingForDelay && v.BlockingReason != model.WaitingForRetryBackoff {
				bad("not_eligible_until_time with blocking reason %v", v.BlockingReason)
			}
			if s.DelayUntil.IsZero() {
				bad("not_eligible_until_time without delay_until")
			}
		default:
			if want, ok := model.BlockedEligibility(v.BlockingReason); !ok || want != es {
				bad("%v with blocking reason %v", es, v.BlockingReason)
			}
		}
	case model.PhaseActive:
		want := model.BlockingNone
		if os != model.OwnershipLeased {
			want = model.WaitingForWorker
		}
		if v.BlockingReason != want {
			bad("active/%v with blocking reason %v, want %v", os, v.BlockingReason, want)
		}
	case model.PhaseTerminal:
		if v.BlockingReason != model.BlockingNone {
			bad("terminal with blocking reason %v", v.BlockingReason)
		}
	}
	if s.Priority < model.MinPriority || s.Priority > model.MaxPriority {
		bad("priority %d out of range", s.Priority)
	}
	if (lp == model.PhaseTerminal) != !s.TerminalAt.IsZero() {
		bad("phase %v with terminal_at %v", lp, s.TerminalAt)
	}
	if x.HasResult != (s.PublicState == model.PublicCompleted) {
		bad("has result %v in public state %v", x.HasResult, s.PublicState)
	}

	// §6.3, 9: index membership.
	idx := map[string]bool{}
	var lanes, workers []string
	for i, name := range x.Indexes {
		if i > 0 && x.Indexes[i-1] >= name {
			bad("indexes not sorted and distinct: %q then %q", x.Indexes[i-1], name)
		}
		idx[name] = true
		switch {
		case strings.HasPrefix(name, "lane:"):
			lanes = append(lanes, name)
		case strings.HasPrefix(name, "worker:") && strings.HasSuffix(name, ":leases"):
			workers = append(workers, name)
		case !knownPartitionIndexes[name]:
			bad("unknown index %q", name)
		}
	}
	if want := "lane:" + string(s.Lane) + ":" + laneSetName(v); len(lanes) != 1 || lanes[0] != want {
		bad("%v/%v is in lane indexes %q, want exactly [%s]", lp, v.EligibilityState, lanes, want)
	}
	if !idx["all_executions"] {
		bad("not in all_executions")
	}
	if idx["lease_expiry"] != (lp == model.PhaseActive) {
		bad("phase %v/%v but in lease_expiry = %v", lp, os, idx["lease_expiry"])
	}
	if want := lp == model.PhaseActive && s.AttemptTimeout > 0; idx["attempt_timeout"] != want {
		bad("phase %v, attempt timeout %v, but in attempt_timeout = %v", lp, s.AttemptTimeout, idx["attempt_timeout"])
	}
	if want := lp != model.PhaseTerminal && !s.Deadline.IsZero(); idx["execution_deadline"] != want {
		bad("phase %v, deadline %v, but in execution_deadline = %v", lp, s.Deadline, idx["execution_deadline"])
	}

	// §6.4–5: ownership, the lease record and the worker index.
	l := s.CurrentLease
	switch os {
	case model.OwnershipLeased, model.OwnershipLeaseExpiredReclaimable:
		if l == nil {
			bad("%v without a current lease", os)
			break
		}
		if l.ID.IsZero() {
			bad("%v with an empty lease id", os)
		}
		if l.Epoch != s.LeaseEpoch || s.LeaseEpoch == 0 {
			bad("lease epoch %d, execution epoch %d", l.Epoch, s.LeaseEpoch)
		}
		if want := "worker:" + string(l.WorkerInstanceID) + ":leases"; len(workers) != 1 || workers[0] != want {
			bad("%v by %s but in worker indexes %q", os, l.WorkerInstanceID, workers)
		}
		if os == model.OwnershipLeaseExpiredReclaimable && s.LeaseExpiredAt.IsZero() {
			bad("lease_expired_reclaimable without lease_expired_at")
		}
	case model.OwnershipLeaseRevoked:
		if l != nil {
			bad("lease_revoked but a current lease remains")
		}
		if len(workers) != 0 {
			bad("lease_revoked but in worker indexes %q", workers)
		}
		if s.LeaseRevokedAt.IsZero() {
			bad("lease_revoked without lease_revoked_at")
		}
	default:
		if l != nil {
			bad("%v but a current lease remains", os)
		}
		if len(workers) != 0 {
			bad("%v but in worker indexes %q", os, workers)
		}
	}

	// §6.8: at most one grant (one field), of the kind its phase allows.
	if g := s.Grant; g != nil {
		switch g.Kind {
		case model.GrantClaim:
			if lp != model.PhaseRunnable || v.EligibilityState != model.EligibleNow {
				bad("claim grant (for %s) on a %v/%v execution", g.WorkerID, lp, v.EligibilityState)
			}
		case model.GrantReclaim:
			if lp != model.PhaseActive || (os != model.OwnershipLeaseExpiredReclaimable && os != model.OwnershipLeaseRevoked) {
				bad("reclaim grant (for %s) on a %v/%v/%v execution", g.WorkerID, lp, v.EligibilityState, os)
			}
		default:
			bad("grant of unknown kind %d", g.Kind)
		}
	}

	out = append(out, attemptViolations(s, x.Attempts)...)

	// Lease history: sequence numbers rise, epochs never fall.
	for i, ev := range x.History {
		if i > 0 && ev.Seq <= x.History[i-1].Seq {
			bad("history seq %d after %d", ev.Seq, x.History[i-1].Seq)
		}
		if i > 0 && ev.LeaseEpoch < x.History[i-1].LeaseEpoch {
			bad("history epoch %d after %d", ev.LeaseEpoch, x.History[i-1].LeaseEpoch)
		}
		if ev.LeaseEpoch > s.LeaseEpoch {
			bad("history epoch %d above the execution's %d", ev.LeaseEpoch, s.LeaseEpoch)
		}
	}
	return out
}

// attemptViolations checks §6.6–7 on the attempt records.
func attemptViolations(s *model.ExecutionSnapshot, atts []model.Attempt) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	v := s.State
	lp, as := v.LifecyclePhase, v.AttemptState
	if len(atts) != s.TotalAttempts {
		bad("%d attempt records, total_attempts %d", len(atts), s.TotalAttempts)
	}
	open := -1
	seen := map[model.AttemptID]bool{}
	for i, a := range atts {
		if a.Index != i {
			bad("attempt %d has index %d (not contiguous from 0)", i, a.Index)
		}
		if a.ID.IsZero() || seen[a.ID] {
			bad("attempt %d id %v empty or repeated", i, a.ID)
		}
		seen[a.ID] = true
		if a.LeaseEpoch == 0 || a.LeaseEpoch > s.LeaseEpoch {
			bad("attempt %d epoch %d (execution epoch %d)", i, a.LeaseEpoch, s.LeaseEpoch)
		}
		if i > 0 && a.LeaseEpoch <= atts[i-1].LeaseEpoch {
			bad("attempt %d epoch %d not above attempt %d's %d", i, a.LeaseEpoch, i-1, atts[i-1].LeaseEpoch)
		}
		if a.Status.IsOpen() {
			if open >= 0 {
				bad("attempts %d and %d both open", open, i)
			}
			open = i
		} else if a.EndedAt.IsZero() {
			bad("attempt %d %v without ended_at", i, a.Status)
		}
	}
	last := len(atts) - 1
	cur := s.CurrentAttempt
	switch {
	case len(atts) == 0 && cur != nil:
		bad("current attempt %+v but no attempts", *cur)
	case len(atts) > 0 && cur == nil:
		bad("%d attempts but no current attempt", len(atts))
	case cur != nil && (cur.Index != last || atts[last].ID != cur.ID):
		bad("current attempt %+v is not the last attempt (%d, %v)", *cur, last, atts[last].ID)
	}
	if open >= 0 && open != last {
		bad("open attempt %d is not the last", open)
	}
	switch lp {
	case model.PhaseActive:
		if open != last || last < 0 || atts[last].Status != model.AttemptStarted {
			bad("active without a started current attempt")
		} else if l := s.CurrentLease; v.OwnershipState == model.OwnershipLeased && l != nil {
			a := atts[last]
			if a.LeaseID != l.ID || a.LeaseEpoch != s.LeaseEpoch || a.WorkerInstanceID != l.WorkerInstanceID {
				bad("running attempt has lease %v/%d/%s, current lease %v/%d/%s",
					a.LeaseID, a.LeaseEpoch, a.WorkerInstanceID, l.ID, s.LeaseEpoch, l.WorkerInstanceID)
			}
		}
	case model.PhaseRunnable:
		if (open >= 0) != (as == model.AttemptInterrupted) {
			bad("runnable with attempt state %v but open attempt = %v", as, open >= 0)
		}
		if open >= 0 && atts[open].Status != model.AttemptSuspended {
			bad("runnable with an open attempt in status %v", atts[open].Status)
		}
	case model.PhaseTerminal:
		if open >= 0 {
			bad("terminal with open attempt %d (%v)", open, atts[open].Status)
		}
		want := model.AttemptTerminal
		if len(atts) == 0 {
			want = model.AttemptNone
		}
		if as != want {
			bad("terminal with %d attempts in attempt state %v, want %v", len(atts), as, want)
		}
	}
	if as == model.AttemptPendingFirst && (len(atts) != 0 || lp != model.PhaseRunnable) {
		bad("pending_first_attempt with %d attempts in phase %v", len(atts), lp)
	}
	if len(atts) == 0 && as != model.AttemptPendingFirst && as != model.AttemptPendingReplay && as != model.AttemptNone {
		bad("no attempts but attempt state %v", as)
	}
	p := s.Pending
	switch as {
	case model.AttemptPendingRetry:
		if p == nil || (p.Type != model.AttemptRetry && p.Type != model.AttemptReclaim) {
			bad("pending_retry_attempt with pending %+v", p)
		}
	case model.AttemptPendingReplay:
		if p == nil || p.Type != model.AttemptReplay {
			bad("pending_replay_attempt with pending %+v", p)
		}
	default:
		if p != nil {
			bad("attempt state %v with pending %+v", as, *p)
		}
	}
	if p != nil && p.PreviousIndex != last {
		bad("pending attempt follows %d, last attempt is %d", p.PreviousIndex, last)
	}
	return out
}

// dueViolations ties the timer indexes to the records: an entry is due at
// Now exactly when the time in the record has come, and its score is that
// time.
func (o *Observation) dueViolations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	type entry struct {
		at   time.Time
		lane model.LaneID
	}
	due := map[model.IndexKind]map[model.ExecutionID]entry{}
	for _, k := range timerIndexes {
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
	}
	return out
}

// StepViolations checks what must hold between two consecutive
// observations of one store: nothing is lost, immutable fields stay,
// epochs only rise (by exactly one per acquisition), attempts and history
// only grow, terminal records are frozen until replayed, and every write
// stamps the time.
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
		if pt && !replayed && !reflect.DeepEqual(px, cx) {
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
