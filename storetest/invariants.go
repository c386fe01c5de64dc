package storetest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// laneSetOf is the lane index a runnable execution in eligibility state es
// belongs to.
var laneSetOf = map[model.EligibilityState]string{
	model.EligibleNow:           "eligible",
	model.NotEligibleUntilTime:  "delayed",
	model.BlockedByDependencies: "blocked:dependencies",
	model.BlockedByBudget:       "blocked:budget",
	model.BlockedByQuota:        "blocked:quota",
	model.BlockedByRoute:        "blocked:route",
	model.BlockedByOperator:     "blocked:operator",
	model.BlockedByLaneState:    "blocked:lane_state",
}

// checkInvariants checks, for every execution of the partitions the
// subtest used, the invariants of lua-semantics §6 (as adapted by
// ARCHITECTURE.md) that the Store interface can observe:
//
//   - the state vector passes StateVector.Check and the public state is the
//     derived one;
//   - the execution is in all_executions and in exactly one lane index, the
//     one of its phase (and, when runnable, of its eligibility state);
//   - leased or lease-expired ⇒ a current lease with the current epoch, in
//     lease_expiry and in exactly the lease holder's worker index; revoked
//     ⇒ no lease, in lease_expiry (re-scored to the revoke time), in no
//     worker index; not active ⇒ in neither;
//   - attempt_timeout ⇔ active with an attempt timeout; execution_deadline
//     ⇔ not terminal with a deadline;
//   - attempt indexes are contiguous from 0, their count is TotalAttempts,
//     epochs grow with the index, at most one attempt is open, and the
//     current attempt matches the attempt state;
//   - lease history sequence numbers grow;
//   - a claim grant only on an eligible execution, a reclaim grant only on
//     a reclaimable one.
func (h *harness) checkInvariants() {
	h.t.Helper()
	for _, id := range h.listAll() {
		for _, msg := range h.violations(id) {
			h.t.Errorf("invariant: %v: %s", id, msg)
		}
	}
}

func (h *harness) violations(id model.ExecutionID) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	s := h.describe(id)
	idx := h.indexes(id)
	atts := h.attempts(id)
	hist := h.history(id)
	st := s.State
	has := func(name string) bool { return slices.Contains(idx, name) }

	if msg := st.Check(); msg != "" {
		bad("state %+v: %s", st, msg)
	}
	if s.PublicState != st.PublicState() {
		bad("public state %v, derived %v", s.PublicState, st.PublicState())
	}
	if !has(ixAll) {
		bad("not in %s", ixAll)
	}

	// Exactly one lane index, the one of the phase.
	var lanes, workers []string
	for _, name := range idx {
		switch {
		case strings.HasPrefix(name, "lane:"):
			lanes = append(lanes, name)
		case strings.HasPrefix(name, "worker:"):
			workers = append(workers, name)
		case name == ixAll, name == ixLease, name == ixTimeout, name == ixDeadline:
		default:
			bad("unknown index %q", name)
		}
	}
	var wantLane string
	switch st.LifecyclePhase {
	case model.PhaseRunnable:
		wantLane = ixLane(s.Lane, laneSetOf[st.EligibilityState])
	case model.PhaseActive:
		wantLane = ixLane(s.Lane, "active")
	case model.PhaseSuspended:
		wantLane = ixLane(s.Lane, "suspended")
	case model.PhaseTerminal:
		wantLane = ixLane(s.Lane, "terminal")
	}
	if !slices.Equal(lanes, []string{wantLane}) {
		bad("lane indexes %q, want [%s]", lanes, wantLane)
	}

	// Ownership, lease and the lease indexes.
	switch st.OwnershipState {
	case model.OwnershipLeased, model.OwnershipLeaseExpiredReclaimable:
		if s.CurrentLease == nil {
			bad("%v without a current lease", st.OwnershipState)
			break
		}
		if s.CurrentLease.Epoch != s.LeaseEpoch {
			bad("lease epoch %d, execution epoch %d", s.CurrentLease.Epoch, s.LeaseEpoch)
		}
		if !slices.Equal(workers, []string{ixWorker(s.CurrentLease.WorkerInstanceID)}) {
			bad("worker indexes %q, lease held by %s", workers, s.CurrentLease.WorkerInstanceID)
		}
		if !has(ixLease) {
			bad("%v but not in %s", st.OwnershipState, ixLease)
		}
	case model.OwnershipLeaseRevoked:
		if s.CurrentLease != nil {
			bad("revoked with a current lease")
		}
		if len(workers) > 0 {
			bad("revoked but in worker indexes %q", workers)
		}
		if !has(ixLease) {
			bad("revoked but not in %s", ixLease)
		}
	default:
		if s.CurrentLease != nil {
			bad("unowned with a current lease")
		}
		if len(workers) > 0 {
			bad("unowned but in worker indexes %q", workers)
		}
		if has(ixLease) {
			bad("unowned but in %s", ixLease)
		}
	}

	// Timer indexes.
	if want := st.LifecyclePhase == model.PhaseActive && s.AttemptTimeout > 0; has(ixTimeout) != want {
		bad("in %s = %v, want %v", ixTimeout, has(ixTimeout), want)
	}
	if want := st.LifecyclePhase != model.PhaseTerminal && !s.Deadline.IsZero(); has(ixDeadline) != want {
		bad("in %s = %v, want %v", ixDeadline, has(ixDeadline), want)
	}

	// Attempts.
	if len(atts) != s.TotalAttempts {
		bad("%d attempts, total_attempts %d", len(atts), s.TotalAttempts)
	}
	open := 0
	for i, a := range atts {
		if a.Index != i {
			bad("attempt %d has index %d", i, a.Index)
		}
		if a.Status.IsOpen() {
			open++
		}
		if a.LeaseEpoch > s.LeaseEpoch {
			bad("attempt %d epoch %d > execution epoch %d", i, a.LeaseEpoch, s.LeaseEpoch)
		}
		if i > 0 && a.LeaseEpoch <= atts[i-1].LeaseEpoch {
			bad("attempt %d epoch %d not above attempt %d epoch %d", i, a.LeaseEpoch, i-1, atts[i-1].LeaseEpoch)
		}
	}
	if open > 1 {
		bad("%d open attempts", open)
	}
	var cur *model.Attempt
	switch {
	case s.CurrentAttempt == nil:
		if len(atts) > 0 {
			bad("no current attempt but %d attempts", len(atts))
		}
	case s.CurrentAttempt.Index < 0 || s.CurrentAttempt.Index >= len(atts):
		bad("current attempt index %d out of range", s.CurrentAttempt.Index)
	default:
		cur = &atts[s.CurrentAttempt.Index]
		if cur.ID != s.CurrentAttempt.ID {
			bad("current attempt id %v, attempt record %v", s.CurrentAttempt.ID, cur.ID)
		}
	}
	switch {
	case st.LifecyclePhase == model.PhaseActive:
		if cur == nil || cur.Status != model.AttemptStarted {
			bad("active without a started current attempt")
		}
	case st.LifecyclePhase == model.PhaseRunnable && st.AttemptState == model.AttemptInterrupted:
		if cur == nil || cur.Status != model.AttemptSuspended {
			bad("interrupted runnable without a suspended current attempt")
		}
	default:
		if open > 0 {
			bad("%v with an open attempt", st.LifecyclePhase)
		}
	}
	switch st.AttemptState {
	case model.AttemptPendingFirst:
		if len(atts) > 0 || s.Pending != nil {
			bad("pending_first_attempt with %d attempts, pending %+v", len(atts), s.Pending)
		}
	case model.AttemptPendingRetry:
		if s.Pending == nil || (s.Pending.Type != model.AttemptRetry && s.Pending.Type != model.AttemptReclaim) {
			bad("pending_retry_attempt with pending %+v", s.Pending)
		}
	case model.AttemptPendingReplay:
		if s.Pending == nil || s.Pending.Type != model.AttemptReplay {
			bad("pending_replay_attempt with pending %+v", s.Pending)
		}
	default:
		if s.Pending != nil {
			bad("%v with pending %+v", st.AttemptState, s.Pending)
		}
	}
	if st.LifecyclePhase == model.PhaseTerminal && s.TerminalAt.IsZero() {
		bad("terminal without terminal_at")
	}

	// Lease history.
	for i, ev := range hist {
		if ev.Seq == 0 || (i > 0 && ev.Seq <= hist[i-1].Seq) {
			bad("lease history seq %d after %d", ev.Seq, hist[max(i-1, 0)].Seq)
		}
	}

	// Grants.
	if g := s.Grant; g != nil {
		switch g.Kind {
		case model.GrantClaim:
			if st.LifecyclePhase != model.PhaseRunnable || st.EligibilityState != model.EligibleNow {
				bad("claim grant on %+v", st)
			}
		case model.GrantReclaim:
			if st.LifecyclePhase != model.PhaseActive || st.OwnershipState == model.OwnershipLeased {
				bad("reclaim grant on %+v", st)
			}
		default:
			bad("grant of kind %v", g.Kind)
		}
	}
	return out
}
