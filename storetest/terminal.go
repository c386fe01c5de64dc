package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testTerminal states the operations that end or hand back an attempt:
// complete, fail (retries), cancel, delay, change priority, replay, update
// progress and expire, with their idempotent replays.
func testTerminal(t *testing.T, newStore NewStoreFunc) {
	// Completion ends the attempt with success, stores the result, drops the
	// lease and leaves the execution only in its lane's terminal index.
	t.Run("Complete", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withDeadline(at(time.Hour)), withTimeout(time.Hour))
		before := h.describe(id)
		t1 := at(5 * time.Second)
		result := []byte{0, 'o', 'k', 0xff, 0xfe, 0}
		res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Result: result, Now: t1})).must(t)
		if res.Replayed {
			t.Fatal("first completion reported as replayed")
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stTerminal(model.OutcomeSuccess, model.AttemptTerminal), model.PublicCompleted
		want.LastMutationAt, want.LastTransitionAt, want.TerminalAt = t1, t1, t1
		want.CurrentLease = nil
		h.wantSnapshot(want)
		h.wantIndexes(id, terminalIndexes(laneA)...)
		h.wantAttempts(id, []model.Attempt{{
			Index: 0, ID: cr.AttemptID, Type: model.AttemptInitial, Status: model.AttemptEndedSuccess,
			LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
			StartedAt: at(0), EndedAt: t1,
		}})
		h.wantHistory(id, []model.LeaseEvent{
			{Kind: model.LeaseAcquired, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(0)},
			{Kind: model.LeaseReleased, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: t1, Reason: "completed"},
		})
		got := call(h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})).must(t)
		if !bytes.Equal(got.Result, result) {
			t.Fatalf("result %q, want %q", got.Result, result)
		}
	})

	// Results are stored byte for byte, up to MaxResultBytes; an empty
	// result is a result.
	t.Run("CompleteResult", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			result []byte
		}{
			{"nil", nil},
			{"empty", []byte{}},
			{"zero_bytes", []byte{0, 0, 0}},
			{"invalid_utf8", []byte{0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x90, 0x28, 0xbc}},
			{"max_size", bytes.Repeat([]byte{0xff, 0}, model.MaxResultBytes/2)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id, cr := h.active(at(0))
				call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Result: c.result, Now: at(time.Second)})).must(t)
				got := call(h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})).must(t)
				if !bytes.Equal(got.Result, c.result) {
					t.Fatalf("result of %d bytes read back as %d bytes", len(c.result), len(got.Result))
				}
			})
		}
	})

	// The same lease completing again gets Replayed and nothing changes;
	// anyone else, and any other operation, gets execution_not_active with
	// the stored outcome.
	t.Run("CompleteReplay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Result: []byte("first"), Now: at(time.Second)})).must(t)
		stored := model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeSuccess, LeaseEpoch: 1, AttemptID: cr.AttemptID}
		other := cr.Fence()
		other.LeaseID = h.leaseID()
		h.unchanged(id, func() {
			res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Result: []byte("second"), Now: at(2 * time.Second)})).must(t)
			if !res.Replayed {
				t.Fatal("replay not reported")
			}
			_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: other, Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
			_, err = h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Source: model.SourceOperator, Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
			_, err = h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Fence: cr.Fence(), Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
			_, err = h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: cr.Fence(), DelayUntil: at(time.Hour), Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
			_, err = h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: cr.Fence(), Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
			_, err = h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Source: model.SourceOperator, Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
		})
	})

	// An operator completes an active execution without a fence, whatever
	// the state of its lease; operator operations are not replayed.
	t.Run("CompleteOperator", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		h.revoke(id, at(time.Second))
		res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Source: model.SourceOperator, Result: []byte("op"), Now: at(2 * time.Second)})).must(t)
		if res.Replayed {
			t.Fatal("first completion reported as replayed")
		}
		h.wantState(id, stTerminal(model.OutcomeSuccess, model.AttemptTerminal))
		h.wantIndexes(id, terminalIndexes(laneA)...)
		h.unchanged(id, func() {
			_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Source: model.SourceOperator, Now: at(3 * time.Second)})
			wantNotActive(t, err, model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeSuccess, LeaseEpoch: 1, AttemptID: cr.AttemptID})
		})
		eligible := h.create(at(0))
		h.unchanged(eligible, func() {
			_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: eligible, Source: model.SourceOperator, Now: at(3 * time.Second)})
			wantNotActive(t, err, model.NotActiveState{LifecyclePhase: model.PhaseRunnable, TerminalOutcome: model.OutcomeNone})
		})
	})

	// A failure with retries left schedules the next attempt after the
	// policy's backoff (exact, no jitter): the execution waits delayed with
	// a pending retry, the failed attempt stays current; promoted at the
	// backoff's end, it is claimed as an attempt of type retry. Once the
	// retries are used up the failure is terminal.
	t.Run("FailRetry", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			policy model.RetryPolicy
			delays []time.Duration
		}{
			{"exponential", model.RetryPolicy{MaxRetries: 4, InitialDelay: 2 * time.Second, Multiplier: 3, MaxDelay: 10 * time.Second},
				[]time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second}},
			{"exponential_defaults", model.RetryPolicy{MaxRetries: 3},
				[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
			{"fixed", model.RetryPolicy{MaxRetries: 2, Backoff: model.BackoffFixed, Delay: 500 * time.Millisecond},
				[]time.Duration{500 * time.Millisecond, 500 * time.Millisecond}},
			{"fixed_default_delay", model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed},
				[]time.Duration{time.Second}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := h.create(at(0), withRetry(c.policy))
				now := at(0)
				var wantAtts []model.Attempt
				for i, d := range c.delays {
					cr := h.claim(id, wA, now)
					typ := model.AttemptRetry
					if i == 0 {
						typ = model.AttemptInitial
					}
					if cr.AttemptIndex != i || cr.AttemptType != typ || cr.RetryCount != i {
						t.Fatalf("claim %d: index %d type %v retry count %d", i, cr.AttemptIndex, cr.AttemptType, cr.RetryCount)
					}
					before := h.describe(id)
					t1 := now.Add(time.Second)
					res := h.fail(id, cr.Fence(), model.FailureTransient, t1)
					wantEqual(t, "fail result", model.ExecutionFailResult{Outcome: model.FailRetryScheduled, DelayUntil: t1.Add(d)}, *res)
					want := cloneSnapshot(before)
					want.State = stDelayed(model.WaitingForRetryBackoff, model.AttemptPendingRetry)
					want.PublicState = model.PublicDelayed
					want.LastMutationAt, want.LastTransitionAt = t1, t1
					want.DelayUntil = t1.Add(d)
					want.RetryCount = i + 1
					want.CurrentLease = nil
					want.Pending = &model.PendingAttempt{Type: model.AttemptRetry, Reason: "boom", PreviousIndex: i}
					h.wantSnapshot(want)
					h.wantIndexes(id, ixAll, ixLane(laneA, "delayed"))
					wantAtts = append(wantAtts, model.Attempt{
						Index: i, ID: cr.AttemptID, Type: typ, Status: model.AttemptEndedFailure,
						LeaseID: cr.Lease.ID, LeaseEpoch: uint64(i + 1), WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
						StartedAt: now, EndedAt: t1, FailureReason: "boom", FailureCategory: model.FailureTransient,
					})
					h.wantAttempts(id, wantAtts)

					if st := h.promote(id, laneA, t1.Add(d-time.Millisecond)); st != model.PromoteNotYetDue {
						t.Fatalf("promote before the backoff ended: %s", st)
					}
					now = t1.Add(d)
					if st := h.promote(id, laneA, now); st != model.PromotePromoted {
						t.Fatalf("promote at the backoff's end: %s", st)
					}
					s := h.wantState(id, stEligible(model.AttemptPendingRetry))
					if !s.DelayUntil.IsZero() || s.Pending == nil || s.Pending.Type != model.AttemptRetry {
						t.Fatalf("promoted: delay until %v, pending %+v", s.DelayUntil, s.Pending)
					}
				}
				cr := h.claim(id, wA, now)
				if res := h.fail(id, cr.Fence(), model.FailureTransient, now.Add(time.Second)); res.Outcome != model.FailTerminal {
					t.Fatalf("fail with no retries left: %+v", res)
				}
				s := h.wantState(id, stTerminal(model.OutcomeFailed, model.AttemptTerminal))
				if s.RetryCount != len(c.delays) || s.TotalAttempts != len(c.delays)+1 {
					t.Fatalf("retry count %d, attempts %d", s.RetryCount, s.TotalAttempts)
				}
				h.wantIndexes(id, terminalIndexes(laneA)...)
			})
		}
	})

	// A failure without retries left ends the execution failed with the
	// failure's reason and category.
	t.Run("FailTerminal", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withDeadline(at(time.Hour)), withTimeout(time.Hour))
		before := h.describe(id)
		t1 := at(time.Second)
		res := h.fail(id, cr.Fence(), model.FailureInfraCrash, t1)
		if res.Outcome != model.FailTerminal || !res.DelayUntil.IsZero() || res.Replayed {
			t.Fatalf("fail result %+v", res)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stTerminal(model.OutcomeFailed, model.AttemptTerminal), model.PublicFailed
		want.LastMutationAt, want.LastTransitionAt, want.TerminalAt = t1, t1, t1
		want.CurrentLease = nil
		want.FailureReason, want.FailureCategory = "boom", model.FailureInfraCrash
		h.wantSnapshot(want)
		h.wantIndexes(id, terminalIndexes(laneA)...)
		h.wantAttempts(id, []model.Attempt{{
			Index: 0, ID: cr.AttemptID, Type: model.AttemptInitial, Status: model.AttemptEndedFailure,
			LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
			StartedAt: at(0), EndedAt: t1, FailureReason: "boom", FailureCategory: model.FailureInfraCrash,
		}})
		if kinds := h.historyKinds(id); !cmp.Equal(kinds, []model.LeaseEventKind{model.LeaseAcquired, model.LeaseReleased}) {
			t.Fatalf("history %v", kinds)
		}
		_, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})
		wantErr(t, err, model.ErrResultNotFound)
	})

	// Permanent, cancelled, payload_invalid and invalid_outcome failures are terminal
	// whatever the policy; every other category, an unknown one or none
	// (recorded as transient) retries.
	t.Run("FailCategory", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			cat      model.FailureCategory
			recorded model.FailureCategory
			outcome  model.FailOutcome
		}{
			{"", model.FailureTransient, model.FailRetryScheduled},
			{model.FailureTransient, model.FailureTransient, model.FailRetryScheduled},
			{model.FailureInfraCrash, model.FailureInfraCrash, model.FailRetryScheduled},
			{model.FailureTimeout, model.FailureTimeout, model.FailRetryScheduled},
			{model.FailurePanic, model.FailurePanic, model.FailRetryScheduled},
			{model.FailureUnknownKind, model.FailureUnknownKind, model.FailRetryScheduled},
			{"brand_new_category_2", "brand_new_category_2", model.FailRetryScheduled},
			{model.FailurePermanent, model.FailurePermanent, model.FailTerminal},
			{model.FailureCancelled, model.FailureCancelled, model.FailTerminal},
			{model.FailurePayloadInvalid, model.FailurePayloadInvalid, model.FailTerminal},
			{model.FailureInvalidOutcome, model.FailureInvalidOutcome, model.FailTerminal},
		}
		for _, c := range cases {
			t.Run("category_"+string(c.cat), func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id, cr := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 5}))
				if res := h.fail(id, cr.Fence(), c.cat, at(time.Second)); res.Outcome != c.outcome {
					t.Fatalf("outcome %q, want %q", res.Outcome, c.outcome)
				}
				if a := h.attempts(id)[0]; a.FailureCategory != c.recorded {
					t.Fatalf("attempt category %q, want %q", a.FailureCategory, c.recorded)
				}
				if c.outcome == model.FailTerminal {
					if s := h.describe(id); s.FailureCategory != c.recorded {
						t.Fatalf("execution category %q, want %q", s.FailureCategory, c.recorded)
					}
				}
			})
		}
	})

	// The same lease failing again gets the stored outcome with Replayed;
	// another lease gets execution_not_active.
	t.Run("FailReplay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1}))
		h.fail(id, cr.Fence(), model.FailureTransient, at(time.Second))
		other := cr.Fence()
		other.LeaseEpoch++
		h.unchanged(id, func() {
			res := call(h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Fence: cr.Fence(), Reason: "again", Now: at(1500 * time.Millisecond)})).must(t)
			if !res.Replayed || res.Outcome != model.FailRetryScheduled || !res.DelayUntil.Equal(at(2*time.Second)) {
				t.Fatalf("replayed fail %+v", res)
			}
			_, err := h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Fence: other, Now: at(1500 * time.Millisecond)})
			wantNotActive(t, err, model.NotActiveState{LifecyclePhase: model.PhaseRunnable, TerminalOutcome: model.OutcomeNone, LeaseEpoch: 1, AttemptID: cr.AttemptID})
		})
		h.promote(id, laneA, at(2*time.Second))
		cr2 := h.claim(id, wA, at(2*time.Second))
		h.fail(id, cr2.Fence(), model.FailurePermanent, at(3*time.Second))
		h.unchanged(id, func() {
			res := call(h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Fence: cr2.Fence(), Now: at(4 * time.Second)})).must(t)
			if !res.Replayed || res.Outcome != model.FailTerminal {
				t.Fatalf("replayed terminal fail %+v", res)
			}
		})
	})

	// An operator fails an active execution without a fence; the policy
	// still decides between retry and terminal failure.
	t.Run("FailOperator", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, _ := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1}))
		h.markExpired(id, at(leaseTTL))
		res := call(h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Source: model.SourceOperator, Reason: "stuck", Now: at(leaseTTL)})).must(t)
		if res.Outcome != model.FailRetryScheduled || !res.DelayUntil.Equal(at(leaseTTL+time.Second)) {
			t.Fatalf("operator fail %+v", res)
		}
		h.wantState(id, stDelayed(model.WaitingForRetryBackoff, model.AttemptPendingRetry))
		h.wantIndexes(id, ixAll, ixLane(laneA, "delayed"))
	})

	// Cancel ends a non-terminal execution from any phase: the open attempt
	// (running or paused) ends cancelled, every live index entry goes.
	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			setup  func(h *harness) (model.ExecutionID, *model.ClaimResult)
			src    model.Source
			prior  model.LifecyclePhase
			as     model.AttemptState
			status model.AttemptStatus // of the last attempt, when there is one
			by     string
		}{
			{"eligible", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				return h.create(at(0), withDeadline(at(time.Hour))), nil
			},
				model.SourceOperator, model.PhaseRunnable, model.AttemptNone, 0, "operator_override"},
			{"delayed", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				return h.create(at(0), withDeadline(at(time.Hour)), withDelay(at(time.Minute))), nil
			}, model.SourceOperator, model.PhaseRunnable, model.AttemptNone, 0, "operator_override"},
			{"route_blocked", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				id := h.create(at(0), withDeadline(at(time.Hour)), withCaps("tpu"))
				h.block(id, model.WaitingForCapableWorker, at(0))
				return id, nil
			}, model.SourceOperator, model.PhaseRunnable, model.AttemptNone, 0, "operator_override"},
			{"pending_retry", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				id, cr := h.active(at(0), withDeadline(at(time.Hour)), withRetry(model.RetryPolicy{MaxRetries: 1}))
				h.fail(id, cr.Fence(), model.FailureTransient, at(0))
				return id, nil
			}, model.SourceOperator, model.PhaseRunnable, model.AttemptTerminal, model.AttemptEndedFailure, "operator_override"},
			{"worker_delayed", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				id, cr := h.active(at(0), withDeadline(at(time.Hour)))
				h.delay(id, cr.Fence(), at(time.Minute), at(0))
				return id, nil
			}, model.SourceOperator, model.PhaseRunnable, model.AttemptTerminal, model.AttemptEndedCancelled, "operator_override"},
			{"active_operator", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				id, _ := h.active(at(0), withDeadline(at(time.Hour)), withTimeout(time.Hour))
				return id, nil
			}, model.SourceOperator, model.PhaseActive, model.AttemptTerminal, model.AttemptEndedCancelled, "operator_override"},
			{"active_revoked_operator", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				id, _ := h.active(at(0), withDeadline(at(time.Hour)), withTimeout(time.Hour))
				h.revoke(id, at(0))
				return id, nil
			}, model.SourceOperator, model.PhaseActive, model.AttemptTerminal, model.AttemptEndedCancelled, "operator_override"},
			{"active_worker", func(h *harness) (model.ExecutionID, *model.ClaimResult) {
				return h.active(at(0), withDeadline(at(time.Hour)), withTimeout(time.Hour))
			}, model.SourceWorker, model.PhaseActive, model.AttemptTerminal, model.AttemptEndedCancelled, "worker"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id, cr := c.setup(h)
				p := &model.ExecutionCancelParams{ID: id, Reason: "no longer needed", Source: c.src, Now: at(time.Second)}
				if cr != nil {
					p.Fence = cr.Fence()
				}
				before := h.describe(id)
				res := call(h.s.ExecutionCancel(h.ctx, p)).must(t)
				if *res != (model.ExecutionCancelResult{PriorPhase: c.prior}) {
					t.Fatalf("cancel result %+v", res)
				}
				want := cloneSnapshot(before)
				want.State, want.PublicState = stTerminal(model.OutcomeCancelled, c.as), model.PublicCancelled
				want.LastMutationAt, want.LastTransitionAt, want.TerminalAt = at(time.Second), at(time.Second), at(time.Second)
				want.DelayUntil = time.Time{}
				want.CurrentLease, want.Pending, want.Grant = nil, nil, nil
				want.CancellationReason, want.CancelledBy = "no longer needed", c.by
				h.wantSnapshot(want)
				h.wantIndexes(id, terminalIndexes(laneA)...)
				if atts := h.attempts(id); len(atts) > 0 {
					if last := atts[len(atts)-1]; last.Status != c.status {
						t.Fatalf("last attempt %v, want %v", last.Status, c.status)
					}
				}
				if c.prior == model.PhaseActive {
					hist := h.history(id)
					if last := hist[len(hist)-1]; last.Kind != model.LeaseCancelled || last.Reason != "no longer needed" {
						t.Fatalf("last history event %+v", last)
					}
				}
			})
		}
	})

	// The same caller cancelling again gets Replayed with the prior phase
	// it reported first; anyone else gets execution_not_active.
	t.Run("CancelReplay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		byOperator := h.create(at(0))
		h.cancelOp(byOperator, at(time.Second))
		h.unchanged(byOperator, func() {
			res := h.cancelOp(byOperator, at(2*time.Second))
			if *res != (model.ExecutionCancelResult{PriorPhase: model.PhaseRunnable, Replayed: true}) {
				t.Fatalf("operator cancel replay %+v", res)
			}
		})

		byWorker, cr := h.active(at(0))
		cancel := func(f model.Fence, src model.Source) (*model.ExecutionCancelResult, error) {
			return h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: byWorker, Fence: f, Source: src, Now: at(2 * time.Second)})
		}
		call(cancel(cr.Fence(), model.SourceWorker)).must(t)
		stored := model.NotActiveState{LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeCancelled, LeaseEpoch: 1, AttemptID: cr.AttemptID}
		h.unchanged(byWorker, func() {
			res := call(cancel(cr.Fence(), model.SourceWorker)).must(t)
			if *res != (model.ExecutionCancelResult{PriorPhase: model.PhaseActive, Replayed: true}) {
				t.Fatalf("worker cancel replay %+v", res)
			}
			_, err := cancel(model.Fence{}, model.SourceOperator)
			wantNotActive(t, err, stored)
			other := cr.Fence()
			other.AttemptID = h.attemptID()
			_, err = cancel(other, model.SourceWorker)
			wantNotActive(t, err, stored)
			_, err = h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: byWorker, Fence: cr.Fence(), Now: at(2 * time.Second)})
			wantNotActive(t, err, stored)
		})
	})

	// A worker's cancel needs a valid fence; without an active lease there
	// is nothing for a worker to cancel.
	t.Run("CancelWorker", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		stale := cr.Fence()
		stale.LeaseID = h.leaseID()
		h.unchanged(id, func() {
			_, err := h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: stale, Now: at(time.Second)})
			wantErr(t, err, model.ErrStaleLease)
		})
		eligible := h.create(at(0))
		h.unchanged(eligible, func() {
			_, err := h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: eligible, Fence: cr.Fence(), Now: at(time.Second)})
			wantNotActive(t, err, model.NotActiveState{LifecyclePhase: model.PhaseRunnable, TerminalOutcome: model.OutcomeNone})
		})
	})

	// A worker delay hands the execution back until DelayUntil with its
	// attempt paused; the same lease asking again gets Replayed.
	t.Run("Delay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withTimeout(time.Hour))
		before := h.describe(id)
		t1 := at(time.Second)
		res := call(h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: cr.Fence(), DelayUntil: at(time.Minute), Now: t1})).must(t)
		if res.Replayed || !res.DelayUntil.Equal(at(time.Minute)) {
			t.Fatalf("delay result %+v", res)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stDelayed(model.WaitingForDelay, model.AttemptInterrupted), model.PublicDelayed
		want.LastMutationAt, want.LastTransitionAt = t1, t1
		want.DelayUntil = at(time.Minute)
		want.CurrentLease = nil
		h.wantSnapshot(want)
		h.wantIndexes(id, ixAll, ixLane(laneA, "delayed"))
		h.wantAttempts(id, []model.Attempt{{
			Index: 0, ID: cr.AttemptID, Type: model.AttemptInitial, Status: model.AttemptSuspended,
			LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance, StartedAt: at(0),
		}})
		h.wantHistory(id, []model.LeaseEvent{
			{Kind: model.LeaseAcquired, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: at(0)},
			{Kind: model.LeaseReleased, LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerInstanceID: wA.Instance, At: t1, Reason: "worker_delay"},
		})
		other := cr.Fence()
		other.LeaseEpoch = 9
		h.unchanged(id, func() {
			res := call(h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: cr.Fence(), DelayUntil: at(2 * time.Minute), Now: at(2 * time.Second)})).must(t)
			if !res.Replayed || !res.DelayUntil.Equal(at(time.Minute)) {
				t.Fatalf("replayed delay %+v", res)
			}
			_, err := h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: other, DelayUntil: at(2 * time.Minute), Now: at(2 * time.Second)})
			wantNotActive(t, err, model.NotActiveState{LifecyclePhase: model.PhaseRunnable, TerminalOutcome: model.OutcomeNone, LeaseEpoch: 1, AttemptID: cr.AttemptID})
		})
	})

	// A delay to a time not after Now makes the execution eligible at once,
	// still with its paused attempt; an operator may delay too.
	t.Run("DelayNow", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		h.delay(id, cr.Fence(), at(time.Second), at(time.Second))
		s := h.wantState(id, stEligible(model.AttemptInterrupted))
		if !s.DelayUntil.IsZero() {
			t.Fatalf("delay until %v", s.DelayUntil)
		}
		h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"))

		op, _ := h.active(at(0))
		res := call(h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: op, Source: model.SourceOperator, DelayUntil: at(time.Hour), Now: at(time.Second)})).must(t)
		if res.Replayed || !res.DelayUntil.Equal(at(time.Hour)) {
			t.Fatalf("operator delay %+v", res)
		}
		h.wantState(op, stDelayed(model.WaitingForDelay, model.AttemptInterrupted))
		h.unchanged(op, func() {
			_, err := h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: op, Source: model.SourceOperator, DelayUntil: at(time.Hour), Now: at(2 * time.Second)})
			wantErr(t, err, model.ErrNotActive)
		})
	})

	// Priority changes apply to any non-terminal execution (clamped); an
	// eligible one is re-ordered at once, a delayed one when promoted.
	t.Run("ChangePriority", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		first := h.create(at(0))
		second := h.create(at(time.Millisecond))
		before := h.describe(second)
		change := func(id model.ExecutionID, p int, now time.Time) *model.ExecutionChangePriorityResult {
			return call(h.s.ExecutionChangePriority(h.ctx, &model.ExecutionChangePriorityParams{ID: id, Priority: p, Now: now})).must(t)
		}
		if res := change(second, 5, at(time.Second)); *res != (model.ExecutionChangePriorityResult{Old: 0, New: 5}) {
			t.Fatalf("change priority %+v", res)
		}
		want := cloneSnapshot(before)
		want.Priority, want.LastMutationAt = 5, at(time.Second)
		h.wantSnapshot(want)
		h.wantIndexes(second, ixAll, ixLane(laneA, "eligible"))
		if res := change(first, 10_000, at(time.Second)); *res != (model.ExecutionChangePriorityResult{Old: 0, New: 9000}) {
			t.Fatalf("clamp high %+v", res)
		}
		if res := change(first, -1, at(time.Second)); *res != (model.ExecutionChangePriorityResult{Old: 9000, New: 0}) {
			t.Fatalf("clamp low %+v", res)
		}
		delayed := h.create(at(2*time.Millisecond), withDelay(at(time.Minute)))
		change(delayed, 7, at(time.Second))
		h.promote(delayed, laneA, at(time.Minute))
		for _, id := range []model.ExecutionID{delayed, second, first} {
			res := h.claimNext(wA, nil, 1, at(time.Minute))
			if res.Claimed == nil || res.Claimed.ID != id {
				t.Fatalf("claim order: got %+v, want %v", res.Claimed, id)
			}
		}
		if res := change(first, 3, at(2*time.Minute)); res.New != 3 || h.describe(first).Priority != 3 {
			t.Fatalf("active execution: %+v", res)
		}
		h.cancelOp(second, at(2*time.Minute))
		h.unchanged(second, func() {
			_, err := h.s.ExecutionChangePriority(h.ctx, &model.ExecutionChangePriorityParams{ID: second, Priority: 1, Now: at(3 * time.Minute)})
			wantErr(t, err, model.ErrNotEligible)
		})
	})

	// Replay makes a terminal execution runnable again with a pending
	// attempt of type replay; the run's counters and outcome are reset.
	t.Run("Replay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withDeadline(at(time.Hour)), withRetry(model.RetryPolicy{MaxRetries: 1}), withMaxReclaims(5))
		h.fail(id, cr.Fence(), model.FailureTransient, at(time.Second))
		h.promote(id, laneA, at(2*time.Second))
		h.claim(id, wA, at(2*time.Second))
		h.markExpired(id, at(2*time.Second+leaseTTL))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(2*time.Second + leaseTTL)})).must(t)
		cr = h.claim(id, wA, at(time.Minute))
		h.complete(id, cr.Fence(), at(time.Minute+time.Second))
		before := h.describe(id)
		if before.RetryCount != 1 || before.ReclaimCount != 1 {
			t.Fatalf("before the replay: retries %d, reclaims %d", before.RetryCount, before.ReclaimCount)
		}
		t1 := at(2 * time.Minute)
		res := call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "re-run", RequestedBy: "alice", Now: t1})).must(t)
		if res.PublicState != model.PublicWaiting {
			t.Fatalf("replay result %+v", res)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stEligible(model.AttemptPendingReplay), model.PublicWaiting
		want.LastMutationAt, want.LastTransitionAt = t1, t1
		want.TerminalAt = time.Time{}
		want.ReplayCount, want.RetryCount, want.ReclaimCount = 1, 0, 0
		want.Pending = &model.PendingAttempt{Type: model.AttemptReplay, Reason: "re-run", RequestedBy: "alice", PreviousIndex: 2}
		h.wantSnapshot(want)
		h.wantIndexes(id, ixAll, ixLane(laneA, "eligible"), ixDeadline)
		_, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})
		wantErr(t, err, model.ErrResultNotFound)
		hist := h.history(id)
		if last := hist[len(hist)-1]; last.Kind != model.LeaseReplayed || last.Reason != "re-run" || !last.At.Equal(t1) ||
			last.LeaseEpoch != 3 || last.AttemptIndex != 2 {
			t.Fatalf("last history event %+v", last)
		}
		cr = h.claim(id, wB, t1)
		if cr.AttemptType != model.AttemptReplay || cr.AttemptIndex != 3 || cr.Lease.Epoch != 4 || cr.RetryCount != 0 {
			t.Fatalf("claim after replay %+v", cr)
		}
	})

	// Replay needs a terminal execution and replays left.
	t.Run("ReplayErrors", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		eligible := h.create(at(0))
		active, _ := h.active(at(0))
		for _, id := range []model.ExecutionID{eligible, active} {
			h.unchanged(id, func() {
				_, err := h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Now: at(time.Second)})
				wantErr(t, err, model.ErrNotTerminal)
			})
		}
		once := h.create(at(0), withMaxReplays(1))
		h.cancelOp(once, at(0))
		call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: once, Now: at(time.Second)})).must(t)
		h.cancelOp(once, at(2*time.Second))
		h.unchanged(once, func() {
			_, err := h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: once, Now: at(3 * time.Second)})
			wantErr(t, err, model.ErrMaxReplaysExhausted)
		})
	})

	// A replayed execution keeps a deadline still ahead and drops one
	// already passed.
	t.Run("ReplayDeadline", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		ahead := h.create(at(0), withDeadline(at(time.Hour)))
		h.cancelOp(ahead, at(time.Second))
		call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: ahead, Now: at(2 * time.Second)})).must(t)
		if s := h.describe(ahead); !s.Deadline.Equal(at(time.Hour)) {
			t.Fatalf("deadline %v", s.Deadline)
		}
		h.wantIndexes(ahead, ixAll, ixLane(laneA, "eligible"), ixDeadline)

		passed := h.create(at(0), withDeadline(at(time.Minute)))
		call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: passed, Reason: model.ExpireExecutionDeadline, Now: at(time.Minute)})).must(t)
		call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: passed, Now: at(2 * time.Minute)})).must(t)
		if s := h.describe(passed); !s.Deadline.IsZero() {
			t.Fatalf("deadline %v kept", s.Deadline)
		}
		h.wantIndexes(passed, ixAll, ixLane(laneA, "eligible"))
	})

	// A replay of an execution that never ran still starts an attempt of
	// type replay.
	t.Run("ReplayNeverRan", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0))
		h.cancelOp(id, at(time.Second))
		call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "again", Now: at(2 * time.Second)})).must(t)
		s := h.wantState(id, stEligible(model.AttemptPendingReplay))
		if s.Pending == nil || s.Pending.Type != model.AttemptReplay || s.Pending.Reason != "again" || s.CancellationReason != "" || s.CancelledBy != "" {
			t.Fatalf("after replay: pending %+v, cancellation %q by %q", s.Pending, s.CancellationReason, s.CancelledBy)
		}
		if cr := h.claim(id, wA, at(3*time.Second)); cr.AttemptType != model.AttemptReplay || cr.AttemptIndex != 0 {
			t.Fatalf("claim after replay %+v", cr)
		}
	})

	// Progress updates record percent, message and time on the running
	// execution.
	t.Run("UpdateProgress", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0))
		before := h.describe(id)
		for _, u := range []struct {
			pct int
			msg string
			now time.Time
		}{{42, "working ✓", at(time.Second)}, {100, "", at(2 * time.Second)}, {0, "restarted", at(3 * time.Second)}} {
			call(h.s.ExecutionUpdateProgress(h.ctx, &model.ExecutionUpdateProgressParams{ID: id, Fence: cr.Fence(), Percent: u.pct, Message: u.msg, Now: u.now})).must(t)
			want := cloneSnapshot(before)
			want.ProgressPercent, want.ProgressMessage, want.ProgressUpdatedAt = u.pct, u.msg, u.now
			want.LastMutationAt = u.now
			h.wantSnapshot(want)
		}
	})

	// An attempt timeout is a failure of category timeout: it retries while
	// the policy allows and expires the execution otherwise. It does nothing
	// before the timeout and to an execution that is not active.
	t.Run("ExpireAttemptTimeout", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withTimeout(10*time.Second), withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: 3 * time.Second}))
		expire := func(now time.Time) *model.ExecutionExpireResult {
			return call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: now})).must(t)
		}
		h.unchanged(id, func() {
			wantEqual(t, "before the timeout", model.ExecutionExpireResult{Outcome: model.ExpireNotYetDue, PriorPhase: model.PhaseActive}, *expire(at(10*time.Second - time.Millisecond)))
		})
		before := h.describe(id)
		t1 := at(10 * time.Second)
		res := expire(t1)
		if res.Outcome != model.ExpireRetryScheduled || res.PriorPhase != model.PhaseActive || !res.DelayUntil.Equal(at(13*time.Second)) {
			t.Fatalf("timeout with a retry left: %+v", res)
		}
		want := cloneSnapshot(before)
		want.State, want.PublicState = stDelayed(model.WaitingForRetryBackoff, model.AttemptPendingRetry), model.PublicDelayed
		want.LastMutationAt, want.LastTransitionAt = t1, t1
		want.DelayUntil = at(13 * time.Second)
		want.RetryCount = 1
		want.CurrentLease = nil
		want.Pending = &model.PendingAttempt{Type: model.AttemptRetry, Reason: "attempt_timeout", PreviousIndex: 0}
		h.wantSnapshot(want)
		h.wantIndexes(id, ixAll, ixLane(laneA, "delayed"))
		h.wantAttempts(id, []model.Attempt{{
			Index: 0, ID: cr.AttemptID, Type: model.AttemptInitial, Status: model.AttemptEndedFailure,
			LeaseID: cr.Lease.ID, LeaseEpoch: 1, WorkerID: wA.ID, WorkerInstanceID: wA.Instance,
			StartedAt: at(0), EndedAt: t1, FailureReason: "attempt_timeout", FailureCategory: model.FailureTimeout,
		}})
		hist := h.history(id)
		if last := hist[len(hist)-1]; last.Kind != model.LeaseReleased || last.Reason != "attempt_timeout" {
			t.Fatalf("last history event %+v", last)
		}
		h.unchanged(id, func() {
			wantEqual(t, "runnable", model.ExecutionExpireResult{Outcome: model.ExpireNotActiveCleaned, PriorPhase: model.PhaseRunnable}, *expire(at(time.Minute)))
		})

		h.promote(id, laneA, at(13*time.Second))
		h.claim(id, wA, at(13*time.Second))
		t2 := at(23 * time.Second)
		wantEqual(t, "timeout with no retry left", model.ExecutionExpireResult{Outcome: model.ExpireExpired, PriorPhase: model.PhaseActive}, *expire(t2))
		s := h.wantState(id, stTerminal(model.OutcomeExpired, model.AttemptTerminal))
		if s.FailureReason != "attempt_timeout" || s.FailureCategory != model.FailureTimeout || !s.TerminalAt.Equal(t2) {
			t.Fatalf("expired: reason %q category %q at %v", s.FailureReason, s.FailureCategory, s.TerminalAt)
		}
		h.wantIndexes(id, terminalIndexes(laneA)...)
		h.unchanged(id, func() {
			wantEqual(t, "terminal", model.ExecutionExpireResult{Outcome: model.ExpireAlreadyTerminal, PriorPhase: model.PhaseTerminal}, *expire(at(time.Hour)))
		})
		res = call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: h.newID(h.p0), Reason: model.ExpireAttemptTimeout, Now: at(time.Hour)})).must(t)
		if res.Outcome != model.ExpireNotFoundCleaned {
			t.Fatalf("unknown execution: %+v", res)
		}
	})

	// An execution deadline expires the execution from any phase, at the
	// deadline itself, closing whatever attempt is open.
	t.Run("ExpireDeadline", func(t *testing.T) {
		t.Parallel()
		deadline := at(time.Minute)
		cases := []struct {
			name  string
			setup func(h *harness) model.ExecutionID
			prior model.LifecyclePhase
			as    model.AttemptState
		}{
			{"eligible", func(h *harness) model.ExecutionID { return h.create(at(0), withDeadline(deadline)) }, model.PhaseRunnable, model.AttemptNone},
			{"delayed", func(h *harness) model.ExecutionID {
				return h.create(at(0), withDeadline(deadline), withDelay(at(time.Hour)))
			}, model.PhaseRunnable, model.AttemptNone},
			{"blocked", func(h *harness) model.ExecutionID {
				id := h.create(at(0), withDeadline(deadline))
				h.block(id, model.WaitingForBudget, at(0))
				return id
			}, model.PhaseRunnable, model.AttemptNone},
			{"worker_delayed", func(h *harness) model.ExecutionID {
				id, cr := h.active(at(0), withDeadline(deadline))
				h.delay(id, cr.Fence(), at(time.Hour), at(time.Second))
				return id
			}, model.PhaseRunnable, model.AttemptTerminal},
			{"active", func(h *harness) model.ExecutionID {
				id, _ := h.active(at(0), withDeadline(deadline), withTimeout(time.Hour))
				return id
			}, model.PhaseActive, model.AttemptTerminal},
			{"active_revoked", func(h *harness) model.ExecutionID {
				id, _ := h.active(at(0), withDeadline(deadline))
				h.revoke(id, at(time.Second))
				return id
			}, model.PhaseActive, model.AttemptTerminal},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := c.setup(h)
				expire := func(now time.Time) *model.ExecutionExpireResult {
					return call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireExecutionDeadline, Now: now})).must(t)
				}
				h.unchanged(id, func() {
					wantEqual(t, "before the deadline", model.ExecutionExpireResult{Outcome: model.ExpireNotYetDue, PriorPhase: c.prior}, *expire(deadline.Add(-time.Millisecond)))
				})
				before := h.describe(id)
				wantEqual(t, "at the deadline", model.ExecutionExpireResult{Outcome: model.ExpireExpired, PriorPhase: c.prior}, *expire(deadline))
				want := cloneSnapshot(before)
				want.State, want.PublicState = stTerminal(model.OutcomeExpired, c.as), model.PublicExpired
				want.LastMutationAt, want.LastTransitionAt, want.TerminalAt = deadline, deadline, deadline
				want.DelayUntil = time.Time{}
				want.CurrentLease, want.Pending = nil, nil
				want.FailureReason, want.FailureCategory = "execution_deadline", model.FailureTimeout
				h.wantSnapshot(want)
				h.wantIndexes(id, terminalIndexes(laneA)...)
				for _, a := range h.attempts(id) {
					if a.Status.IsOpen() {
						t.Fatalf("attempt %d still %v", a.Index, a.Status)
					}
				}
			})
		}
	})

	// Expiring by deadline an execution without one does nothing.
	t.Run("ExpireNoDeadline", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0))
		h.unchanged(id, func() {
			res := call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireExecutionDeadline, Now: at(time.Hour)})).must(t)
			wantEqual(t, "no deadline", model.ExecutionExpireResult{Outcome: model.ExpireNotActiveCleaned, PriorPhase: model.PhaseRunnable}, *res)
		})
	})
}
