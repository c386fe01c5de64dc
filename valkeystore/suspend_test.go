package valkeystore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Differential tests of model.SuspendStore: suspension, waitpoints and
// signals run on memstore and valkeystore (every backend) with identical
// results, errors and observable state, the suspension reads and indexes
// included.

// sus runs a SuspendStore operation on both stores of p and compares
// the suspension state of ids afterwards.
func sus[R any](p *pair, name string, code model.Code, ids []model.ExecutionID, op func(s model.SuspendStore) (R, error)) R {
	p.t.Helper()
	r, err := do(p, name, func(s model.Store) (R, error) { return op(s.(model.SuspendStore)) })
	if model.CodeOf(err) != code {
		p.t.Fatalf("step %d %s: error %v, want code %q", p.steps, name, err, code)
	}
	compareSuspension(p, name, ids)
	return r
}

// compareSuspension compares what SuspendStore's reads and the two timer
// indexes say about ids and their partitions.
func compareSuspension(p *pair, label string, ids []model.ExecutionID) {
	p.t.Helper()
	ctx := context.Background()
	check := func(what string, f func(s model.SuspendStore) (any, error)) {
		p.t.Helper()
		mr, merr := f(model.SuspendStore(p.mem))
		vr, verr := f(p.vk)
		if d := errDiff(merr, verr); d != "" {
			p.t.Fatalf("%s: %s: errors differ: %s", label, what, d)
		}
		if d := cmp.Diff(mr, vr, cmpOpts); d != "" {
			p.t.Fatalf("%s: %s differs (-memstore +valkeystore):\n%s", label, what, d)
		}
	}
	parts := map[int]bool{}
	for _, id := range ids {
		parts[id.Partition()] = true
		check("suspension "+id.String(), func(s model.SuspendStore) (any, error) {
			return s.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: id})
		})
		check("waitpoints "+id.String(), func(s model.SuspendStore) (any, error) {
			return s.WaitpointList(ctx, &model.WaitpointListParams{ID: id})
		})
	}
	for part := range parts {
		check(fmt.Sprintf("suspended %d", part), func(s model.SuspendStore) (any, error) {
			return s.SuspendedList(ctx, &model.SuspendedListParams{Partition: part, Limit: model.MaxPageSize})
		})
		for _, idx := range []model.IndexKind{model.IndexSuspensionTimeout, model.IndexWaitpointExpiry} {
			check(fmt.Sprintf("index %s of %d", idx, part), func(s model.SuspendStore) (any, error) {
				return s.(model.Store).IndexScanDue(ctx, &model.IndexScanDueParams{Partition: part, Index: idx,
					Now: endOfTime, Limit: model.MaxPageSize})
			})
		}
		check(fmt.Sprintf("due %d", part), func(s model.SuspendStore) (any, error) {
			return s.(model.Store).PartitionDue(ctx, &model.PartitionDueParams{Partition: part})
		})
	}
}

// suspEnv is one execution of a differential suspension test.
type suspEnv struct {
	p   *pair
	sq  *seq
	id  model.ExecutionID
	ids []model.ExecutionID
	r   *model.ClaimResult
}

func newSuspEnv(p *pair, sq *seq, c func(*model.ExecutionCreateParams)) *suspEnv {
	e := &suspEnv{p: p, sq: sq, id: sq.exec(1)}
	e.ids = []model.ExecutionID{e.id}
	cp := createP(e.id, at(0))
	if c != nil {
		c(cp)
	}
	create(p, cp)
	return e
}

func (e *suspEnv) claim(now time.Time) *model.ClaimResult {
	e.p.t.Helper()
	e.r = grantAndClaim(e.p, e.id, e.sq.req("wi1", time.Hour), now)
	return e.r
}

func (e *suspEnv) wp() model.WaitpointID    { return model.WaitpointID(e.sq.uuid()) }
func (e *suspEnv) susp() model.SuspensionID { return model.SuspensionID(e.sq.uuid()) }
func (e *suspEnv) signal() model.SignalID   { return model.SignalID(e.sq.uuid()) }

func (e *suspEnv) create(name string, code model.Code, w model.WaitpointID, exp time.Time, now time.Time) *model.WaitpointCreateResult {
	e.p.t.Helper()
	return sus(e.p, name, code, e.ids, func(s model.SuspendStore) (*model.WaitpointCreateResult, error) {
		return s.WaitpointCreate(bg, &model.WaitpointCreateParams{ID: e.id, Fence: e.r.Fence(), Waitpoint: w, ExpiresAt: exp, SignalLimit: 3, Now: now})
	})
}

func (e *suspEnv) suspend(name string, code model.Code, p model.ExecutionSuspendParams) *model.ExecutionSuspendResult {
	e.p.t.Helper()
	p.ID, p.Fence = e.id, e.r.Fence()
	if p.Reason == 0 {
		p.Reason = model.SuspendForApproval
	}
	return sus(e.p, name, code, e.ids, func(s model.SuspendStore) (*model.ExecutionSuspendResult, error) {
		return s.ExecutionSuspend(bg, &p)
	})
}

func (e *suspEnv) deliver(name string, code model.Code, w model.WaitpointID, created time.Time, sig model.SignalID, sigName, source, idem string, now time.Time) *model.SignalDeliverResult {
	e.p.t.Helper()
	return sus(e.p, name, code, e.ids, func(s model.SuspendStore) (*model.SignalDeliverResult, error) {
		return s.SignalDeliver(bg, &model.SignalDeliverParams{Execution: e.id, Waitpoint: w, WaitpointCreatedAt: created,
			Signal: sig, Name: sigName, Source: source, Payload: []byte("p:" + sigName + "\x00\xff"), IdempotencyKey: idem, Now: now})
	})
}

func (e *suspEnv) expire(name string, now time.Time) *model.SuspensionExpireResult {
	e.p.t.Helper()
	return sus(e.p, name, "", e.ids, func(s model.SuspendStore) (*model.SuspensionExpireResult, error) {
		return s.SuspensionExpire(bg, &model.SuspensionExpireParams{ID: e.id, Now: now})
	})
}

// TestSuspendSignals: pending waitpoints buffer, a suspension binds them
// and counts their signals first, signals are ignored, accepted,
// deduplicated and resume; the resumed attempt is claimed again and
// completes, closing what was left open.
func TestSuspendSignals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 4}, bothFeeds)
		var sq seq
		e := newSuspEnv(p, &sq, nil)
		e.claim(at(time.Second))
		a, bw, c := e.wp(), e.wp(), e.wp()
		ca := e.create("create a", "", a, at(time.Hour), at(2*time.Second))
		e.create("create a again", "", a, at(time.Hour), at(3*time.Second))
		cb := e.create("create b", "", bw, at(30*time.Minute), at(3*time.Second))
		e.create("create c", "", c, at(2*time.Hour), at(4*time.Second))
		e.deliver("buffer a", "", a, ca.CreatedAt, e.signal(), "approve", "approver:alice", "k1", at(5*time.Second))
		s1 := e.signal()
		e.deliver("buffer b", "", bw, cb.CreatedAt, s1, "approve", "approver:alice", "k1", at(6*time.Second))
		e.deliver("dup b", "", bw, cb.CreatedAt, e.signal(), "approve", "approver:bob", "k1", at(7*time.Second))
		e.deliver("bad token", model.CodeInvalidToken, bw, cb.CreatedAt.Add(time.Millisecond), e.signal(), "x", "", "", at(7*time.Second))
		e.deliver("unknown wp", model.CodeWaitpointNotFound, e.wp(), cb.CreatedAt, e.signal(), "x", "", "", at(7*time.Second))
		own := e.wp()
		sp := e.susp()
		cond := model.ResumeCondition{Kind: model.CondAllOf, Of: []model.ResumeCondition{
			{Kind: model.CondCount, N: 2, Distinct: model.DistinctSources, Name: "approve", Waitpoints: []model.WaitpointID{a, bw, own}},
			model.SignalFor("go"),
		}}
		e.suspend("suspend bad pending", model.CodeWaitpointNotFound, model.ExecutionSuspendParams{Suspension: sp, Waitpoint: e.wp(), UsePending: true, Condition: cond, Now: at(8 * time.Second)})
		e.suspend("suspend exists", model.CodeInvalidInput, model.ExecutionSuspendParams{Suspension: sp, Waitpoint: c, Condition: cond, Now: at(8 * time.Second)})
		r := e.suspend("suspend", "", model.ExecutionSuspendParams{Suspension: sp, Waitpoint: own, Condition: cond,
			TimeoutAt: at(time.Hour), TimeoutBehavior: model.TimeoutAutoResume, Now: at(8 * time.Second)})
		if r.Outcome != model.Suspended {
			t.Fatalf("suspend = %+v", r)
		}
		e.suspend("suspend replay", "", model.ExecutionSuspendParams{Suspension: sp, Waitpoint: own, Condition: cond, Now: at(9 * time.Second)})
		e.deliver("ignored", "", own, r.CreatedAt, e.signal(), "other", "", "", at(10*time.Second))
		e.deliver("pending c", "", c, at(4*time.Second), e.signal(), "go", "", "", at(10*time.Second))
		e.deliver("go", "", own, r.CreatedAt, e.signal(), "go", "", "", at(11*time.Second))
		e.deliver("approve bob", "", a, ca.CreatedAt, e.signal(), "approve", "approver:bob", "", at(12*time.Second))
		e.deliver("closed", model.CodeWaitpointClosed, a, ca.CreatedAt, e.signal(), "approve", "approver:bob", "", at(13*time.Second))
		e.deliver("dup after close", "", bw, cb.CreatedAt, e.signal(), "approve", "approver:bob", "k1", at(13*time.Second))
		cr := e.claim(at(14 * time.Second))
		if !cr.Resumed {
			t.Fatalf("claim after resume: %+v", cr)
		}
		e.deliver("limit 1", "", c, at(4*time.Second), e.signal(), "", "", "", at(15*time.Second))
		e.deliver("limit 2", "", c, at(4*time.Second), e.signal(), "", "", "", at(15*time.Second))
		e.deliver("limit", model.CodeSignalLimit, c, at(4*time.Second), e.signal(), "", "", "", at(15*time.Second))
		// already satisfied by c's buffered signals: the attempt goes on
		r2 := e.suspend("satisfied", "", model.ExecutionSuspendParams{Suspension: e.susp(), Waitpoint: c, UsePending: true,
			Condition: model.ResumeCondition{Kind: model.CondCount, N: 3, Distinct: model.DistinctSignals}, Now: at(16 * time.Second)})
		if r2.Outcome != model.SuspendAlreadySatisfied || len(r2.Signals) != 3 {
			t.Fatalf("satisfied = %+v", r2)
		}
		d := e.wp()
		e.create("create d", "", d, at(time.Hour), at(17*time.Second))
		ok(p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: e.id, Fence: e.r.Fence(), Now: at(18 * time.Second)})
		})
		compareSuspension(p, "complete", e.ids)
	})
}

// TestSuspendTimeouts: every timeout behaviour, the policy's delay and
// kept waitpoints, the operator's resume and cancel, the deadline, the
// waitpoint expiry, and the listing of suspended executions.
func TestSuspendTimeouts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 4}, bothFeeds)
		var sq seq
		var all []model.ExecutionID
		for i, beh := range []model.TimeoutBehavior{model.TimeoutFail, model.TimeoutCancel, model.TimeoutExpire,
			model.TimeoutAutoResume, model.TimeoutEscalate} {
			e := newSuspEnv(p, &sq, func(c *model.ExecutionCreateParams) { c.Deadline = at(10 * time.Hour) })
			all = append(all, e.id)
			e.claim(at(time.Second))
			pend := e.wp()
			e.create("pending", "", pend, at(3*time.Hour), at(2*time.Second))
			own := e.wp()
			r := e.suspend(fmt.Sprintf("suspend %s", beh), "", model.ExecutionSuspendParams{Suspension: e.susp(), Waitpoint: own,
				Reason: model.SuspendReason(i%5 + 1), Condition: model.SignalFor("ok"), TimeoutAt: at(time.Hour), TimeoutBehavior: beh,
				Policy: model.ResumePolicy{Delay: time.Minute, KeepWaitpoints: true, KeepSignals: i%2 == 0}, Now: at(3 * time.Second)})
			e.deliver("counted", "", own, r.CreatedAt, e.signal(), "nope", "", "", at(4*time.Second))
			e.expire("early", at(30*time.Minute))
			e.expire("due", at(time.Hour))
			e.expire("again", at(2*time.Hour))
			if beh == model.TimeoutEscalate {
				e.deliver("resume escalated", "", own, r.CreatedAt, e.signal(), "ok", "", "", at(2*time.Hour))
			}
			sus(p, "waitpoint expiry early", "", e.ids, func(s model.SuspendStore) (*model.WaitpointExpireResult, error) {
				return s.WaitpointExpire(bg, &model.WaitpointExpireParams{ID: e.id, Now: at(2 * time.Hour)})
			})
			sus(p, "waitpoint expiry", "", e.ids, func(s model.SuspendStore) (*model.WaitpointExpireResult, error) {
				return s.WaitpointExpire(bg, &model.WaitpointExpireParams{ID: e.id, Now: at(3 * time.Hour)})
			})
		}
		// an operator resumes one and cancels another; a deadline ends a third
		var ops []*suspEnv
		for range 3 {
			e := newSuspEnv(p, &sq, func(c *model.ExecutionCreateParams) { c.Deadline = at(10 * time.Hour) })
			all = append(all, e.id)
			e.claim(at(time.Second))
			e.suspend("suspend", "", model.ExecutionSuspendParams{Suspension: e.susp(), Waitpoint: e.wp(),
				Condition: model.ResumeCondition{Kind: model.CondOperator}, Now: at(2 * time.Second)})
			ops = append(ops, e)
		}
		sus(p, "resume", "", ops[0].ids, func(s model.SuspendStore) (*model.ExecutionResumeResult, error) {
			return s.ExecutionResume(bg, &model.ExecutionResumeParams{ID: ops[0].id, Now: at(time.Minute)})
		})
		sus(p, "resume again", model.CodeExecutionNotSuspended, ops[0].ids, func(s model.SuspendStore) (*model.ExecutionResumeResult, error) {
			return s.ExecutionResume(bg, &model.ExecutionResumeParams{ID: ops[0].id, Now: at(time.Minute)})
		})
		ok(p, "cancel", func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: ops[1].id, Source: model.SourceOperator, Reason: "stop", Now: at(time.Minute)})
		})
		ok(p, "deadline", func(s model.Store) (*model.ExecutionExpireResult, error) {
			return s.ExecutionExpire(bg, &model.ExecutionExpireParams{ID: ops[2].id, Reason: model.ExpireExecutionDeadline, Now: at(11 * time.Hour)})
		})
		compareSuspension(p, "end", all)
		none := newSuspEnv(p, &sq, nil)
		sus(p, "describe none", model.CodeSuspensionNotFound, nil, func(s model.SuspendStore) (*model.SuspensionSnapshot, error) {
			return s.SuspensionDescribe(bg, &model.SuspensionDescribeParams{ID: none.id})
		})
	})
}
