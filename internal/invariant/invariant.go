// Package invariant owns the invariants of lua-semantics §6 that a store's
// read methods can observe on one execution, one function per rule. Both
// test suites use it: storetest checks every execution a conformance test
// touched when the test ends, proptest checks every execution after every
// step of a state machine (and adds the rules that span executions or
// steps: the listing, the due timers, StepViolations).
//
// Each rule returns its violations as readable sentences (the values
// involved included), without the execution id; callers prefix it. A rule
// adds the check to the function of the §6 number it belongs to; a new
// rule (a wave-2 feature's) is a new function here, added to Rules.
package invariant

import (
	"fmt"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// Exec is what the read methods show of one execution.
type Exec struct {
	// ID is the id the execution was listed or created under.
	ID model.ExecutionID
	// Snapshot is ExecutionDescribe's answer.
	Snapshot *model.ExecutionSnapshot
	// Indexes is ExecutionIndexes' answer (sorted, distinct).
	Indexes []string
	// Attempts is AttemptList's answer.
	Attempts []model.Attempt
	// History is LeaseHistory's answer.
	History []model.LeaseEvent
	// HasResult says whether ExecutionResult found a result; nil when the
	// caller did not read it.
	HasResult *bool
	// Suspend is what model.SuspendStore's reads show of the execution;
	// nil when the store lacks the interface (or the caller did not read
	// it), and the suspension rules are then skipped.
	Suspend *SuspendView
}

// SuspendView is what model.SuspendStore's reads show of one execution.
type SuspendView struct {
	// Suspension is SuspensionDescribe's answer: the open suspension or
	// the last one; nil for ErrSuspensionNotFound.
	Suspension *model.SuspensionSnapshot
	// Waitpoints is WaitpointList's answer.
	Waitpoints []model.WaitpointSnapshot
}

// A Rule checks one invariant of x (whose Snapshot is not nil).
type Rule func(x *Exec) []string

// Rules are every per-execution rule, in the order Violations applies
// them.
var Rules = []Rule{
	StateVector,
	BlockingReason,
	RecordFields,
	LaneIndex,
	Lease,
	TimerIndexes,
	Grant,
	Attempts,
	LeaseHistory,
	Suspension,
	Waitpoints,
	Admission,
}

// Violations applies every rule to x.
func Violations(x *Exec) []string {
	if x.Snapshot == nil {
		return []string{"no snapshot"}
	}
	var out []string
	for _, r := range Rules {
		out = append(out, r(x)...)
	}
	return out
}

type report []string

func (r *report) bad(format string, args ...any) { *r = append(*r, fmt.Sprintf(format, args...)) }

// StateVector is §6.1–2 and the first half of §6.7 on the vector alone:
// every dimension is set and consistent (model.StateVector.Check), and the
// stored public state is the derived one. It also checks that describe
// answered for the id asked.
func StateVector(x *Exec) []string {
	var r report
	s := x.Snapshot
	v := s.State
	if s.ID != x.ID {
		r.bad("describe returned id %v", s.ID)
	}
	if msg := v.Check(); msg != "" {
		r.bad("state vector %+v: %s", v, msg)
	}
	if want := model.DerivePublicState(v.LifecyclePhase, v.EligibilityState, v.TerminalOutcome); s.PublicState != want {
		r.bad("public state %v, derived %v", s.PublicState, want)
	}
	return r
}

// BlockingReason is §6.1 (each transition writes all seven dimensions):
// the blocking reason is the one each transition macro (RUN/ACT/TERM,
// mark_expired, revoke, block) writes for the phase, eligibility and
// ownership it writes.
func BlockingReason(x *Exec) []string {
	var r report
	s := x.Snapshot
	v := s.State
	switch v.LifecyclePhase {
	case model.PhaseRunnable:
		switch es := v.EligibilityState; es {
		case model.EligibleNow:
			if v.BlockingReason != model.WaitingForWorker {
				r.bad("eligible_now with blocking reason %v", v.BlockingReason)
			}
		case model.NotEligibleUntilTime:
			switch v.BlockingReason {
			case model.WaitingForDelay, model.WaitingForRetryBackoff, model.WaitingForResumeDelay:
			default:
				r.bad("not_eligible_until_time with blocking reason %v", v.BlockingReason)
			}
			if s.DelayUntil.IsZero() {
				r.bad("not_eligible_until_time without delay_until")
			}
		case model.BlockedByDependencies:
			// a flow member held for its dependencies (not an admission
			// block: ExecutionBlock and ExecutionUnblock refuse it)
			if v.BlockingReason != model.WaitingForChildren {
				r.bad("%v with blocking reason %v", es, v.BlockingReason)
			}
		default:
			if want, ok := model.BlockedEligibility(v.BlockingReason); !ok || want != es {
				r.bad("%v with blocking reason %v", es, v.BlockingReason)
			}
		}
	case model.PhaseActive:
		want := model.BlockingNone
		if v.OwnershipState != model.OwnershipLeased {
			want = model.WaitingForWorker
		}
		if v.BlockingReason != want {
			r.bad("active/%v with blocking reason %v, want %v", v.OwnershipState, v.BlockingReason, want)
		}
	case model.PhaseSuspended:
		// what a suspension waits for (model.SuspendReason.BlockingReason)
		switch v.BlockingReason {
		case model.WaitingForSignal, model.WaitingForApproval, model.WaitingForCallback,
			model.WaitingForToolResult, model.PausedByOperator:
		default:
			r.bad("suspended with blocking reason %v", v.BlockingReason)
		}
	case model.PhaseTerminal:
		if v.BlockingReason != model.BlockingNone {
			r.bad("terminal with blocking reason %v", v.BlockingReason)
		}
	}
	return r
}

// RecordFields is §6.2 (terminal ⇔ outcome) carried to the record's
// fields: terminal_at is set exactly in the terminal phase, a result exists
// exactly for a completed execution (when the caller read it), and the
// priority is in range.
func RecordFields(x *Exec) []string {
	var r report
	s := x.Snapshot
	lp := s.State.LifecyclePhase
	if (lp == model.PhaseTerminal) != !s.TerminalAt.IsZero() {
		r.bad("phase %v with terminal_at %v", lp, s.TerminalAt)
	}
	if x.HasResult != nil && *x.HasResult != (s.PublicState == model.PublicCompleted) {
		r.bad("has result %v in public state %v", *x.HasResult, s.PublicState)
	}
	if s.Priority < model.MinPriority || s.Priority > model.MaxPriority {
		r.bad("priority %d out of range", s.Priority)
	}
	return r
}

// partitionIndexes are the per-partition indexes ExecutionIndexes names.
var partitionIndexes = map[string]bool{
	"all_executions": true, "lease_expiry": true, "attempt_timeout": true, "execution_deadline": true,
	"suspended": true, "suspension_timeout": true, "pending_waitpoint_expiry": true,
	"retention": true,
}

func lanesAndWorkers(x *Exec, r *report) (lanes, workers []string) {
	for _, name := range x.Indexes {
		switch {
		case strings.HasPrefix(name, "lane:"):
			lanes = append(lanes, name)
		case strings.HasPrefix(name, "worker:") && strings.HasSuffix(name, ":leases"):
			workers = append(workers, name)
		case !partitionIndexes[name] && r != nil:
			r.bad("unknown index %q", name)
		}
	}
	return lanes, workers
}

func has(x *Exec, name string) bool {
	for _, n := range x.Indexes {
		if n == name {
			return true
		}
	}
	return false
}

// LaneIndex is §6.3 and the lane part of §6.9: the execution is in
// all_executions and in exactly one lane index, the one model.LaneIndexFor
// names for its state (runnable: its eligibility state's; suspended,
// active, terminal: the phase's), never in two; every index name is known
// and the list is sorted and distinct.
func LaneIndex(x *Exec) []string {
	var r report
	s := x.Snapshot
	v := s.State
	for i, name := range x.Indexes {
		if i > 0 && x.Indexes[i-1] >= name {
			r.bad("indexes not sorted and distinct: %q then %q", x.Indexes[i-1], name)
		}
	}
	lanes, _ := lanesAndWorkers(x, &r)
	want := "lane:" + string(s.Lane) + ":" + model.LaneIndexFor(v)
	if len(lanes) != 1 || lanes[0] != want {
		r.bad("%v/%v is in lane indexes %q, want exactly [%s]", v.LifecyclePhase, v.EligibilityState, lanes, want)
	}
	if !has(x, "all_executions") {
		r.bad("not in all_executions")
	}
	return r
}

// Lease is §6.4–5 as ARCHITECTURE adapts them: leased or lease-expired ⇒
// a current lease with a non-empty id and the current (non-zero) epoch, in
// lease_expiry and in exactly the holder's worker index (an expired one
// sets lease_expired_at); revoked ⇒ no current lease, in lease_expiry
// (re-scored to the revoke time, so the scanner recovers it), in no worker
// index, lease_revoked_at set; unowned ⇒ no lease, in neither. lease_expiry
// holds exactly the active executions.
func Lease(x *Exec) []string {
	var r report
	s := x.Snapshot
	lp, os := s.State.LifecyclePhase, s.State.OwnershipState
	_, workers := lanesAndWorkers(x, nil)
	if inLX := has(x, "lease_expiry"); inLX != (lp == model.PhaseActive) || inLX != (os != model.OwnershipUnowned) {
		r.bad("phase %v/%v but in lease_expiry = %v", lp, os, inLX)
	}
	l := s.CurrentLease
	switch os {
	case model.OwnershipLeased, model.OwnershipLeaseExpiredReclaimable:
		if l == nil {
			r.bad("%v without a current lease", os)
			break
		}
		if l.ID.IsZero() {
			r.bad("%v with an empty lease id", os)
		}
		if l.Epoch != s.LeaseEpoch || s.LeaseEpoch == 0 {
			r.bad("lease epoch %d, execution epoch %d", l.Epoch, s.LeaseEpoch)
		}
		if want := "worker:" + string(l.WorkerInstanceID) + ":leases"; len(workers) != 1 || workers[0] != want {
			r.bad("%v by %s but in worker indexes %q", os, l.WorkerInstanceID, workers)
		}
		if os == model.OwnershipLeaseExpiredReclaimable && s.LeaseExpiredAt.IsZero() {
			r.bad("lease_expired_reclaimable without lease_expired_at")
		}
	case model.OwnershipLeaseRevoked:
		if l != nil {
			r.bad("lease_revoked but a current lease remains")
		}
		if len(workers) != 0 {
			r.bad("lease_revoked but in worker indexes %q", workers)
		}
		if s.LeaseRevokedAt.IsZero() {
			r.bad("lease_revoked without lease_revoked_at")
		}
	default:
		if l != nil {
			r.bad("%v but a current lease remains", os)
		}
		if len(workers) != 0 {
			r.bad("%v but in worker indexes %q", os, workers)
		}
	}
	return r
}

// TimerIndexes is the timer part of §6.9: attempt_timeout holds exactly
// the active executions with an attempt timeout, execution_deadline
// exactly the non-terminal ones with a deadline, retention exactly the
// terminal ones with a retention for their outcome (a flow member's entry
// may have been dropped: its flow decides). (proptest also ties each
// entry's due time to the record.)
func TimerIndexes(x *Exec) []string {
	var r report
	s := x.Snapshot
	lp := s.State.LifecyclePhase
	if want := lp == model.PhaseActive && s.AttemptTimeout > 0; has(x, "attempt_timeout") != want {
		r.bad("phase %v, attempt timeout %v, but in attempt_timeout = %v", lp, s.AttemptTimeout, !want)
	}
	if want := lp != model.PhaseTerminal && !s.Deadline.IsZero(); has(x, "execution_deadline") != want {
		r.bad("phase %v, deadline %v, but in execution_deadline = %v", lp, s.Deadline, !want)
	}
	keep := lp == model.PhaseTerminal && s.Retention.For(s.State.TerminalOutcome) > 0
	if in := has(x, "retention"); in != keep && (in || s.Flow.IsZero()) {
		r.bad("phase %v, retention %+v, but in retention = %v", lp, s.Retention, in)
	}
	return r
}

// Grant is the grant part of §6.8: at most one grant (one field), of the
// kind its state allows: a claim grant on an eligible runnable execution, a
// reclaim grant on an active one whose lease expired or was revoked.
func Grant(x *Exec) []string {
	var r report
	s := x.Snapshot
	v := s.State
	lp, os := v.LifecyclePhase, v.OwnershipState
	if g := s.Grant; g != nil {
		switch g.Kind {
		case model.GrantClaim:
			if lp != model.PhaseRunnable || v.EligibilityState != model.EligibleNow {
				r.bad("claim grant (for %s) on a %v/%v execution", g.WorkerID, lp, v.EligibilityState)
			}
		case model.GrantReclaim:
			if lp != model.PhaseActive || (os != model.OwnershipLeaseExpiredReclaimable && os != model.OwnershipLeaseRevoked) {
				r.bad("reclaim grant (for %s) on a %v/%v/%v execution", g.WorkerID, lp, v.EligibilityState, os)
			}
		default:
			r.bad("grant of unknown kind %d", g.Kind)
		}
	}
	return r
}

// Attempts is §6.6–7 on the attempt records: indexes contiguous from 0,
// their count is total_attempts, ids distinct, epochs non-zero, rising with
// the index and not above the execution's; at most one open attempt, the
// last, which is the current attempt; ended attempts have ended_at. Active
// ⇒ the current attempt is started and, when leased, holds the current
// lease (running_attempt ⇔ active∧leased); runnable ⇒ an open (suspended)
// attempt exactly when attempt_interrupted (only the resume path may claim
// it); terminal ⇒ none open. The attempt state agrees with the records and
// the pending next-attempt lineage.
func Attempts(x *Exec) []string {
	var r report
	s, atts := x.Snapshot, x.Attempts
	v := s.State
	lp, as := v.LifecyclePhase, v.AttemptState
	if len(atts) != s.TotalAttempts {
		r.bad("%d attempt records, total_attempts %d", len(atts), s.TotalAttempts)
	}
	open := -1
	seen := map[model.AttemptID]bool{}
	for i, a := range atts {
		if a.Index != i {
			r.bad("attempt %d has index %d (not contiguous from 0)", i, a.Index)
		}
		if a.ID.IsZero() || seen[a.ID] {
			r.bad("attempt %d id %v empty or repeated", i, a.ID)
		}
		seen[a.ID] = true
		if a.LeaseEpoch == 0 || a.LeaseEpoch > s.LeaseEpoch {
			r.bad("attempt %d epoch %d (execution epoch %d)", i, a.LeaseEpoch, s.LeaseEpoch)
		}
		if i > 0 && a.LeaseEpoch <= atts[i-1].LeaseEpoch {
			r.bad("attempt %d epoch %d not above attempt %d's %d", i, a.LeaseEpoch, i-1, atts[i-1].LeaseEpoch)
		}
		if a.Status.IsOpen() {
			if open >= 0 {
				r.bad("attempts %d and %d both open", open, i)
			}
			open = i
		} else if a.EndedAt.IsZero() {
			r.bad("attempt %d %v without ended_at", i, a.Status)
		}
	}
	last := len(atts) - 1
	cur := s.CurrentAttempt
	switch {
	case len(atts) == 0 && cur != nil:
		r.bad("current attempt %+v but no attempts", *cur)
	case len(atts) > 0 && cur == nil:
		r.bad("%d attempts but no current attempt", len(atts))
	case cur != nil && (cur.Index != last || atts[last].ID != cur.ID):
		r.bad("current attempt %+v is not the last attempt (%d, %v)", *cur, last, atts[last].ID)
	}
	if open >= 0 && open != last {
		r.bad("open attempt %d is not the last", open)
	}
	switch lp {
	case model.PhaseActive:
		if open != last || last < 0 || atts[last].Status != model.AttemptStarted {
			r.bad("active without a started current attempt")
		} else if l := s.CurrentLease; v.OwnershipState == model.OwnershipLeased && l != nil {
			a := atts[last]
			if a.LeaseID != l.ID || a.LeaseEpoch != s.LeaseEpoch || a.WorkerInstanceID != l.WorkerInstanceID {
				r.bad("running attempt has lease %v/%d/%s, current lease %v/%d/%s",
					a.LeaseID, a.LeaseEpoch, a.WorkerInstanceID, l.ID, s.LeaseEpoch, l.WorkerInstanceID)
			}
		}
	case model.PhaseRunnable:
		if (open >= 0) != (as == model.AttemptInterrupted) {
			r.bad("runnable with attempt state %v but open attempt = %v", as, open >= 0)
		}
		if open >= 0 && atts[open].Status != model.AttemptSuspended {
			r.bad("runnable with an open attempt in status %v", atts[open].Status)
		}
	case model.PhaseTerminal:
		if open >= 0 {
			r.bad("terminal with open attempt %d (%v)", open, atts[open].Status)
		}
		want := model.AttemptTerminal
		if len(atts) == 0 {
			want = model.AttemptNone
		}
		if as != want {
			r.bad("terminal with %d attempts in attempt state %v, want %v", len(atts), as, want)
		}
	case model.PhaseSuspended:
		// issue 11: the suspended attempt is paused, not ended
		if open < 0 || open != last || atts[open].Status != model.AttemptSuspended {
			r.bad("suspended without a paused (suspended) current attempt")
		}
		if as != model.AttemptInterrupted {
			r.bad("suspended with attempt state %v, want attempt_interrupted", as)
		}
	default:
		if open >= 0 {
			r.bad("%v with open attempt %d (%v)", lp, open, atts[open].Status)
		}
	}
	if as == model.AttemptPendingFirst && (len(atts) != 0 || lp != model.PhaseRunnable) {
		r.bad("pending_first_attempt with %d attempts in phase %v", len(atts), lp)
	}
	if len(atts) == 0 && as != model.AttemptPendingFirst && as != model.AttemptPendingReplay && as != model.AttemptNone {
		r.bad("no attempts but attempt state %v", as)
	}
	p := s.Pending
	switch as {
	case model.AttemptPendingRetry:
		if p == nil || (p.Type != model.AttemptRetry && p.Type != model.AttemptReclaim) {
			r.bad("pending_retry_attempt with pending %+v", p)
		}
	case model.AttemptPendingReplay:
		if p == nil || p.Type != model.AttemptReplay {
			r.bad("pending_replay_attempt with pending %+v", p)
		}
	default:
		if p != nil {
			r.bad("attempt state %v with pending %+v", as, *p)
		}
	}
	if p != nil && p.PreviousIndex != last {
		r.bad("pending attempt follows %d, last attempt is %d", p.PreviousIndex, last)
	}
	return r
}

// LeaseHistory is §6.6 on the lease history: sequence numbers start above
// zero and rise, epochs never fall and never pass the execution's.
func LeaseHistory(x *Exec) []string {
	var r report
	s, hist := x.Snapshot, x.History
	for i, ev := range hist {
		if ev.Seq == 0 {
			r.bad("history entry %d has seq 0", i)
		}
		if i > 0 && ev.Seq <= hist[i-1].Seq {
			r.bad("history seq %d after %d", ev.Seq, hist[i-1].Seq)
		}
		if i > 0 && ev.LeaseEpoch < hist[i-1].LeaseEpoch {
			r.bad("history epoch %d after %d", ev.LeaseEpoch, hist[i-1].LeaseEpoch)
		}
		if ev.LeaseEpoch > s.LeaseEpoch {
			r.bad("history epoch %d above the execution's %d", ev.LeaseEpoch, s.LeaseEpoch)
		}
	}
	return r
}

// Suspension is the suspension part of §6.8 (issue 11, model.SuspendStore):
// a suspended execution is in the partition's "suspended" set (and, by
// LaneIndex, in its lane's suspended index and no other lane index), any
// other is in neither; it has an open suspension (SuspensionDescribe's
// ClosedAt zero) exactly when it is suspended, the one it describes, with
// the blocking reason of its reason, pausing its current attempt; it is
// in suspension_timeout exactly when that suspension has a timeout.
// Skipped when the store lacks model.SuspendStore.
func Suspension(x *Exec) []string {
	if x.Suspend == nil {
		return nil
	}
	var r report
	s, sp := x.Snapshot, x.Suspend.Suspension
	suspended := s.State.LifecyclePhase == model.PhaseSuspended
	if in := has(x, "suspended"); in != suspended {
		r.bad("phase %v but in the partition's suspended set = %v", s.State.LifecyclePhase, in)
	}
	open := sp != nil && sp.ClosedAt.IsZero()
	if open != suspended {
		r.bad("phase %v but an open suspension = %v", s.State.LifecyclePhase, open)
	}
	if sp != nil && sp.Execution != x.ID {
		r.bad("its suspension %v names execution %v", sp.ID, sp.Execution)
	}
	if sp != nil && !sp.ClosedAt.IsZero() && sp.ClosedBy == 0 {
		r.bad("suspension %v closed at %v without a close reason", sp.ID, sp.ClosedAt)
	}
	timed := open && suspended && !sp.TimeoutAt.IsZero()
	if in := has(x, "suspension_timeout"); in != timed {
		r.bad("phase %v, open suspension with a timeout = %v, but in suspension_timeout = %v", s.State.LifecyclePhase, timed, in)
	}
	if open && suspended {
		if want := sp.Reason.BlockingReason(); s.State.BlockingReason != want {
			r.bad("suspended for %v with blocking reason %v, want %v", sp.Reason, s.State.BlockingReason, want)
		}
		if c := s.CurrentAttempt; c == nil || c.Index != sp.AttemptIndex {
			r.bad("suspension %v pauses attempt %d, current attempt %+v", sp.ID, sp.AttemptIndex, c)
		}
	}
	return r
}

// Waitpoints is the waitpoint part of §6.8 (issue 11, model.SuspendStore):
// a terminal execution has no open (pending or active) waitpoint; it has a
// pending waitpoint exactly when it is in pending_waitpoint_expiry; an
// active waitpoint is bound by its open suspension; a closed one says when
// and why; at most model.MaxOpenWaitpoints are open. Skipped when the
// store lacks model.SuspendStore.
func Waitpoints(x *Exec) []string {
	if x.Suspend == nil {
		return nil
	}
	var r report
	s, sp := x.Snapshot, x.Suspend.Suspension
	pending, open := 0, 0
	for _, w := range x.Suspend.Waitpoints {
		if w.Execution != x.ID {
			r.bad("waitpoint %v names execution %v", w.ID, w.Execution)
		}
		switch w.State {
		case model.WaitpointPending:
			pending++
			open++
			if w.ExpiresAt.IsZero() {
				r.bad("pending waitpoint %v without an expiry", w.ID)
			}
		case model.WaitpointActive:
			open++
			if sp == nil || !sp.ClosedAt.IsZero() || w.Suspension != sp.ID {
				r.bad("active waitpoint %v not bound by an open suspension", w.ID)
			}
		case model.WaitpointClosed:
			if w.ClosedAt.IsZero() || w.ClosedBy == 0 {
				r.bad("closed waitpoint %v without closed_at or close reason", w.ID)
			}
		default:
			r.bad("waitpoint %v in unknown state %d", w.ID, w.State)
		}
	}
	if s.State.LifecyclePhase == model.PhaseTerminal && open > 0 {
		r.bad("terminal with %d open waitpoints", open)
	}
	if in := has(x, "pending_waitpoint_expiry"); in != (pending > 0) {
		r.bad("%d pending waitpoints but in pending_waitpoint_expiry = %v", pending, in)
	}
	if open > model.MaxOpenWaitpoints {
		r.bad("%d open waitpoints, more than %d", open, model.MaxOpenWaitpoints)
	}
	return r
}

// Admission is issue 12 on one execution (model.AdmissionStore): its
// record holds an admission token only while it is active (a lease end
// moves the token to the quota release outbox in the same step) and only
// with a quota (a claim ignores the token of an execution without one);
// a bucket key only with a quota; a quota block only with a quota; at
// most model.MaxExecutionBudgets budgets, distinct. (proptest ties the
// blocked groups, the outbox and the buckets together.)
func Admission(x *Exec) []string {
	var r report
	s := x.Snapshot
	noQuota := model.UUID(s.Quota).IsZero()
	if s.AdmissionToken != "" && (s.State.LifecyclePhase != model.PhaseActive || noQuota) {
		r.bad("holds admission token %q in phase %v with quota %v", s.AdmissionToken, s.State.LifecyclePhase, s.Quota)
	}
	if noQuota && s.QuotaKey != "" {
		r.bad("quota key %q without a quota", s.QuotaKey)
	}
	if s.State.LifecyclePhase == model.PhaseRunnable && s.State.EligibilityState == model.BlockedByQuota && noQuota {
		r.bad("blocked on a quota without one")
	}
	if len(s.Budgets) > model.MaxExecutionBudgets {
		r.bad("%d budgets", len(s.Budgets))
	}
	for i, b := range s.Budgets {
		for _, c := range s.Budgets[:i] {
			if b == c {
				r.bad("budget %v attached twice", b)
			}
		}
	}
	return r
}
