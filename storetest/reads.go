package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testReads states the reads: listing with a cursor, attempts, lease
// history with paging, results, and unknown executions.
func testReads(t *testing.T, newStore NewStoreFunc) {
	// ExecutionList pages through one partition in id text order with an
	// exclusive cursor; Next is set while more remain.
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		list := func(after model.ExecutionID, limit int) *model.ExecutionListResult {
			return call(h.s.ExecutionList(h.ctx, &model.ExecutionListParams{Partition: h.p0, After: after, Limit: limit})).must(t)
		}
		wantEqual(t, "empty partition", model.ExecutionListResult{}, *list(model.ExecutionID{}, 10))
		var ids []model.ExecutionID
		for i := range 7 {
			ids = append(ids, h.create(at(time.Duration(7-i)*time.Second)))
			h.uuid() // leave a gap for cursorBetween
		}
		if h.p1 != h.p0 {
			h.create(at(0), inPartition(h, h.p1))
			h.create(at(0), inPartition(h, h.p1))
		}
		slices.SortFunc(ids, model.ExecutionID.Compare)
		wantEqual(t, "page 1", model.ExecutionListResult{IDs: ids[:3], Next: ids[2], Examined: 3}, *list(model.ExecutionID{}, 3))
		wantEqual(t, "page 2", model.ExecutionListResult{IDs: ids[3:6], Next: ids[5], Examined: 3}, *list(ids[2], 3))
		wantEqual(t, "page 3", model.ExecutionListResult{IDs: ids[6:], Examined: 1}, *list(ids[5], 3))
		wantEqual(t, "exact page", model.ExecutionListResult{IDs: ids, Examined: 7}, *list(model.ExecutionID{}, 7))
		wantEqual(t, "large page", model.ExecutionListResult{IDs: ids, Examined: 7}, *list(model.ExecutionID{}, model.MaxPageSize))
		wantEqual(t, "after the last", model.ExecutionListResult{}, *list(ids[6], 10))
		wantEqual(t, "after an unknown id", model.ExecutionListResult{IDs: ids[4:], Examined: 3}, *list(cursorBetween(ids[3], ids[4]), 10))
	})

	// A filtered list examines Limit executions in id order and lists
	// those matching every set field; Next is the last examined while
	// more remain, so a page may be empty and still go on.
	t.Run("ListFilter", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		tag := func(v string) createOpt {
			return func(p *model.ExecutionCreateParams) { p.Tags = map[string]string{"app.team": v} }
		}
		kind := func(k model.Kind) createOpt { return func(p *model.ExecutionCreateParams) { p.Kind = k } }
		waiting := h.create(at(0), tag("a"))                                    // 1
		delayed := h.create(at(0), withDelay(at(time.Hour)), tag("b"))          // 2
		active, _ := h.active(at(0), kind("report.build"), withNamespace(nsB))  // 3
		done, dc := h.active(at(0), tag("a"), withLane(laneB))                  // 4
		failed, fc := h.active(at(0), withRetry(model.RetryPolicy{}), tag("b")) // 5
		h.complete(done, dc.Fence(), at(time.Second))
		h.fail(failed, fc.Fence(), model.FailurePermanent, at(time.Second))
		all := []model.ExecutionID{waiting, delayed, active, done, failed}
		slices.SortFunc(all, model.ExecutionID.Compare)
		list := func(f model.ListFilter, after model.ExecutionID, limit int) model.ExecutionListResult {
			return *call(h.s.ExecutionList(h.ctx, &model.ExecutionListParams{Partition: h.p0, After: after, Limit: limit, Filter: f})).must(t)
		}
		sorted := func(ids ...model.ExecutionID) []model.ExecutionID {
			slices.SortFunc(ids, model.ExecutionID.Compare)
			return ids
		}
		for _, c := range []struct {
			name string
			f    model.ListFilter
			want []model.ExecutionID
		}{
			{"state", model.ListFilter{States: []model.PublicState{model.PublicWaiting}}, sorted(waiting)},
			{"states", model.ListFilter{States: []model.PublicState{model.PublicCompleted, model.PublicFailed}}, sorted(done, failed)},
			{"active", model.ListFilter{States: []model.PublicState{model.PublicActive}}, sorted(active)},
			{"delayed", model.ListFilter{States: []model.PublicState{model.PublicDelayed}}, sorted(delayed)},
			{"lane", model.ListFilter{Lane: laneB}, sorted(done)},
			{"kind", model.ListFilter{Kind: "report.build"}, sorted(active)},
			{"namespace", model.ListFilter{ScannerFilter: model.ScannerFilter{Namespace: nsB}}, sorted(active)},
			{"tag", model.ListFilter{ScannerFilter: model.ScannerFilter{TagKey: "app.team", TagValue: "a"}}, sorted(waiting, done)},
			{"tag and state", model.ListFilter{ScannerFilter: model.ScannerFilter{TagKey: "app.team", TagValue: "b"},
				States: []model.PublicState{model.PublicFailed}}, sorted(failed)},
			{"no match", model.ListFilter{Lane: "nowhere"}, nil},
		} {
			wantEqual(t, c.name, model.ExecutionListResult{IDs: c.want, Examined: len(all)}, list(c.f, model.ExecutionID{}, 10))
		}
		// pages: Limit bounds what is examined
		f := model.ListFilter{States: []model.PublicState{model.PublicCompleted, model.PublicFailed}}
		var got []model.ExecutionID
		var after model.ExecutionID
		pages := 0
		for {
			r := list(f, after, 2)
			pages++
			if len(r.IDs) > 2 {
				t.Fatalf("page of %d from 2 examined", len(r.IDs))
			}
			got = append(got, r.IDs...)
			if r.Next.IsZero() {
				break
			}
			if r.Next.Compare(after) <= 0 && !after.IsZero() {
				t.Fatalf("cursor did not advance: %v after %v", r.Next, after)
			}
			after = r.Next
		}
		wantEqual(t, "paged", sorted(done, failed), got)
		if pages != 3 {
			t.Fatalf("%d pages of 2 over 5 executions, want 3", pages)
		}
	})

	// Attempts are numbered from 0 and record how each one started and
	// ended; the lease history records every lease event, oldest first,
	// and pages by sequence number.
	t.Run("AttemptsAndHistory", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id, cr := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1}))
		h.fail(id, cr.Fence(), model.FailureTransient, at(time.Second))
		h.promote(id, laneA, at(2*time.Second))
		h.claim(id, wB, at(2*time.Second))
		h.markExpired(id, at(2*time.Second+leaseTTL))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(time.Minute)})).must(t)
		cr = h.claim(id, wA, at(time.Minute))
		h.complete(id, cr.Fence(), at(time.Minute+time.Second))
		call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "again", RequestedBy: "ops", Now: at(2 * time.Minute)})).must(t)
		cr = h.claim(id, wB, at(2*time.Minute))
		h.delay(id, cr.Fence(), at(3*time.Minute), at(2*time.Minute+time.Second))
		h.promote(id, laneA, at(3*time.Minute))
		cr = h.claim(id, wA, at(3*time.Minute))
		h.complete(id, cr.Fence(), at(3*time.Minute+time.Second))

		type row struct {
			typ    model.AttemptType
			status model.AttemptStatus
			epoch  uint64
			worker model.WorkerInstanceID
		}
		want := []row{
			{model.AttemptInitial, model.AttemptEndedFailure, 1, wA.Instance},
			{model.AttemptRetry, model.AttemptInterruptedReclaimed, 2, wB.Instance},
			{model.AttemptReclaim, model.AttemptEndedSuccess, 3, wA.Instance},
			{model.AttemptReplay, model.AttemptEndedSuccess, 5, wA.Instance},
		}
		var got []row
		for i, a := range h.attempts(id) {
			if a.Index != i {
				t.Fatalf("attempt %d has index %d", i, a.Index)
			}
			got = append(got, row{a.Type, a.Status, a.LeaseEpoch, a.WorkerInstanceID})
		}
		if d := cmp.Diff(want, got, cmp.AllowUnexported(row{})); d != "" {
			t.Fatalf("attempts (-want +got):\n%s", d)
		}

		wantKinds := []model.LeaseEventKind{
			model.LeaseAcquired, model.LeaseReleased, // attempt 0 failed
			model.LeaseAcquired, model.LeaseExpired, model.LeaseRecovered, // attempt 1 lost its lease
			model.LeaseAcquired, model.LeaseReleased, // attempt 2 completed
			model.LeaseReplayed,
			model.LeaseAcquired, model.LeaseReleased, model.LeaseResumed, model.LeaseReleased, // attempt 3 delayed, resumed, completed
		}
		all := h.history(id)
		if got := h.historyKinds(id); !cmp.Equal(got, wantKinds) {
			t.Fatalf("history %v, want %v", got, wantKinds)
		}
		var paged []model.LeaseEvent
		var after uint64
		for range len(all) {
			page := call(h.s.LeaseHistory(h.ctx, &model.LeaseHistoryParams{ID: id, AfterSeq: after, Limit: 5})).must(t).Events
			if len(page) == 0 {
				break
			}
			if len(page) > 5 {
				t.Fatalf("page of %d events with limit 5", len(page))
			}
			paged = append(paged, page...)
			after = page[len(page)-1].Seq
		}
		wantEqual(t, "paged history", all, paged)
		mid := call(h.s.LeaseHistory(h.ctx, &model.LeaseHistoryParams{ID: id, AfterSeq: all[6].Seq, Limit: 2})).must(t).Events
		wantEqual(t, "history after seq", all[7:9], mid)
	})

	// A result exists only once the execution completed.
	t.Run("ResultNotFound", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		eligible := h.create(at(0))
		active, _ := h.active(at(0))
		failed, fcr := h.active(at(0))
		h.fail(failed, fcr.Fence(), model.FailurePermanent, at(time.Second))
		cancelled := h.create(at(0))
		h.cancelOp(cancelled, at(time.Second))
		for _, id := range []model.ExecutionID{eligible, active, failed, cancelled} {
			_, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})
			wantErr(t, err, model.ErrResultNotFound)
		}
	})

	// Every operation on an execution that does not exist reports
	// execution_not_found (the scanners' operations a cleanup status; the
	// index probe an empty list) and creates nothing.
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.newID(h.p0)
		now := at(time.Second)
		f := model.Fence{LeaseID: h.leaseID(), LeaseEpoch: 1, AttemptID: h.attemptID()}
		ops := []struct {
			name string
			do   func() error
		}{
			{"ExecutionDescribe", func() error {
				_, err := h.s.ExecutionDescribe(h.ctx, &model.ExecutionDescribeParams{ID: id})
				return err
			}},
			{"AttemptList", func() error {
				_, err := h.s.AttemptList(h.ctx, &model.AttemptListParams{ID: id})
				return err
			}},
			{"ExecutionResult", func() error {
				_, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})
				return err
			}},
			{"ExecutionPayload", func() error {
				_, err := h.s.ExecutionPayload(h.ctx, &model.ExecutionPayloadParams{ID: id})
				return err
			}},
			{"LeaseHistory", func() error {
				_, err := h.s.LeaseHistory(h.ctx, &model.LeaseHistoryParams{ID: id, Limit: 10})
				return err
			}},
			{"ExecutionCancel", func() error {
				_, err := h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Source: model.SourceOperator, Now: now})
				return err
			}},
			{"ExecutionChangePriority", func() error {
				_, err := h.s.ExecutionChangePriority(h.ctx, &model.ExecutionChangePriorityParams{ID: id, Priority: 1, Now: now})
				return err
			}},
			{"ExecutionComplete", func() error {
				_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: f, Now: now})
				return err
			}},
			{"ExecutionDelay", func() error {
				_, err := h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: f, DelayUntil: at(time.Hour), Now: now})
				return err
			}},
			{"ExecutionFail", func() error {
				_, err := h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{ID: id, Fence: f, Now: now})
				return err
			}},
			{"ExecutionReplay", func() error {
				_, err := h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Now: now})
				return err
			}},
			{"ExecutionUpdateProgress", func() error {
				_, err := h.s.ExecutionUpdateProgress(h.ctx, &model.ExecutionUpdateProgressParams{ID: id, Fence: f, Now: now})
				return err
			}},
			{"ClaimGrantIssue", func() error {
				_, err := h.s.ClaimGrantIssue(h.ctx, &model.ClaimGrantIssueParams{ID: id, WorkerID: wA.ID, WorkerInstanceID: wA.Instance, GrantTTL: grantTTL, Now: now})
				return err
			}},
			{"ExecutionBlock", func() error {
				_, err := h.s.ExecutionBlock(h.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForBudget, Budget: heldBudget, Now: now})
				return err
			}},
			{"ExecutionClaim", func() error {
				_, err := h.s.ExecutionClaim(h.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: now})
				return err
			}},
			{"ExecutionGrantAndClaim", func() error {
				_, err := h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: now})
				return err
			}},
			{"ExecutionUnblock", func() error {
				_, err := h.s.ExecutionUnblock(h.ctx, &model.ExecutionUnblockParams{ID: id, ExpectedReason: model.WaitingForBudget, Now: now})
				return err
			}},
			{"LeaseRenew", func() error {
				_, err := h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: f, LeaseTTL: leaseTTL, Now: now})
				return err
			}},
			{"LeaseRevoke", func() error {
				_, err := h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: id, Now: now})
				return err
			}},
			{"ReclaimGrantIssue", func() error {
				_, err := h.s.ReclaimGrantIssue(h.ctx, &model.ReclaimGrantIssueParams{ID: id, WorkerID: wA.ID, WorkerInstanceID: wA.Instance, GrantTTL: grantTTL, Now: now})
				return err
			}},
			{"ExecutionReclaim", func() error {
				_, err := h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wA, leaseTTL), Now: now})
				return err
			}},
			{"ExecutionRecover", func() error {
				_, err := h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: now})
				return err
			}},
		}
		for _, op := range ops {
			wantErr(t, op.do(), model.ErrNotFound)
		}
		if st := call(h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: now})).must(t).Outcome; st != model.MarkExpiredNotFoundCleaned {
			t.Fatalf("mark expired: %q", st)
		}
		if st := h.promote(id, laneA, now); st != model.PromoteNotFoundCleaned {
			t.Fatalf("promote: %q", st)
		}
		for _, r := range []model.ExpireReason{model.ExpireAttemptTimeout, model.ExpireExecutionDeadline} {
			res := call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: r, Now: now})).must(t)
			if res.Outcome != model.ExpireNotFoundCleaned {
				t.Fatalf("expire %v: %+v", r, res)
			}
		}
		if idx := h.indexes(id); len(idx) != 0 {
			t.Fatalf("indexes of an unknown execution: %v", idx)
		}
		if ids := h.listAll(); len(ids) != 0 {
			t.Fatalf("executions appeared: %v", ids)
		}
	})
}

// cursorBetween returns an id of a's partition that sorts after a and
// before b.
func cursorBetween(a, b model.ExecutionID) model.ExecutionID {
	u := a.UUID()
	u[15]++
	id := model.NewExecutionID(a.Partition(), u)
	if id.Compare(a) <= 0 || id.Compare(b) >= 0 {
		panic("storetest: no id between " + a.String() + " and " + b.String())
	}
	return id
}
