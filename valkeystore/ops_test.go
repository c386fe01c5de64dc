package valkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Targeted differential tests: each drives one group of operations through
// its success and error paths on memstore and on valkeystore (on every
// backend) and requires identical results, errors and observable state.

var bg = context.Background()

const (
	lane  model.LaneID    = "lane-a"
	lane2 model.LaneID    = "lane-b"
	ns    model.Namespace = "ns-a"
	kind  model.Kind      = "job.run"
	ttl                   = 30 * time.Second
)

func createP(id model.ExecutionID, now time.Time) *model.ExecutionCreateParams {
	return &model.ExecutionCreateParams{ID: id, Namespace: ns, Lane: lane, Kind: kind, Now: now}
}

func create(p *pair, c *model.ExecutionCreateParams) *model.ExecutionCreateResult {
	p.t.Helper()
	p.track(c.ID)
	return ok(p, "create", func(s model.Store) (*model.ExecutionCreateResult, error) {
		return s.ExecutionCreate(bg, c)
	})
}

func grantAndClaim(p *pair, id model.ExecutionID, r model.LeaseRequest, now time.Time, caps ...string) *model.ClaimResult {
	p.t.Helper()
	return ok(p, "grant_and_claim", func(s model.Store) (*model.ClaimResult, error) {
		return s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{
			ID: id, Capabilities: caps, LeaseRequest: r, Now: now})
	})
}

func TestCreate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{FlowPartitions: 8})
		var sq seq
		// every field, a future delay, a deadline, binary payload
		a := sq.exec(1)
		c := createP(a, at(0))
		c.Payload = []byte{0, 1, 2, 0xff, '\n', 0x80}
		c.Priority = 12000
		c.Tags = map[string]string{"app.owner": "ünïcode\tvalue", "app.x": ""}
		c.RequiredCapabilities = model.Capabilities{"gpu", "béta", "gpu", "{x}"}
		c.RetryPolicy = model.RetryPolicy{MaxRetries: 3, Multiplier: 1.5, InitialDelay: 250 * time.Millisecond, MaxDelay: 10 * time.Second}
		c.MaxReclaims, c.MaxReplays = 7, 2
		c.AttemptTimeout = 5 * time.Second
		c.Deadline = at(time.Hour)
		c.DelayUntil = at(time.Minute)
		c.IdempotencyKey, c.IdempotencyTTL = "key {1}", 10*time.Second
		create(p, c)
		// the same id again is a duplicate; so is the idempotency key
		create(p, createP(a, at(time.Second)))
		b1 := sq.exec(1)
		c2 := createP(b1, at(2*time.Second))
		c2.IdempotencyKey = "key {1}"
		create(p, c2)
		// the key expired: a new execution
		c3 := createP(b1, at(11*time.Second))
		c3.IdempotencyKey = "key {1}"
		c3.RetryPolicy = model.RetryPolicy{Backoff: model.BackoffFixed, Delay: 3 * time.Millisecond, MaxRetries: 1}
		create(p, c3)
		// same key, other namespace: independent
		c4 := createP(sq.exec(1), at(12*time.Second))
		c4.Namespace, c4.IdempotencyKey = "ns-b", "key {1}"
		create(p, c4)
		// a past delay is eligible now; empty payload and tags
		c5 := createP(sq.exec(1), at(13*time.Second))
		c5.DelayUntil = at(0)
		c5.Payload = []byte{}
		c5.Lane = lane2
		create(p, c5)
		// validation happens before anything is sent
		bad := createP(sq.exec(1), at(0))
		bad.Tags = map[string]string{"Bad": "x"}
		fails(p, "create bad tag", model.CodeInvalidTagKey, func(s model.Store) (*model.ExecutionCreateResult, error) {
			return s.ExecutionCreate(bg, bad)
		})
		fails(p, "create bad partition", model.CodeInvalidInput, func(s model.Store) (*model.ExecutionCreateResult, error) {
			return s.ExecutionCreate(bg, createP(sq.exec(9), at(0)))
		})
	})
}

func TestClaimPaths(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{FlowPartitions: 4})
		var sq seq
		a := sq.exec(2)
		c := createP(a, at(0))
		c.RequiredCapabilities = model.Capabilities{"gpu", "ssd"}
		c.Payload = []byte("payload")
		c.Tags = map[string]string{"t.k": "v"}
		c.AttemptTimeout = time.Minute
		create(p, c)
		grant := func(w model.WorkerInstanceID, caps []string, now time.Time) *model.ClaimGrantIssueParams {
			return &model.ClaimGrantIssueParams{ID: a, WorkerID: "w-" + model.WorkerID(w), WorkerInstanceID: w,
				Capabilities: caps, GrantTTL: 5 * time.Second, Now: now}
		}
		issue := func(g *model.ClaimGrantIssueParams) func(s model.Store) (*model.ClaimGrantIssueResult, error) {
			return func(s model.Store) (*model.ClaimGrantIssueResult, error) { return s.ClaimGrantIssue(bg, g) }
		}
		fails(p, "grant missing caps", model.CodeCapabilityMismatch, issue(grant("wi1", []string{"ssd", "zz"}, at(time.Second))))
		ok(p, "grant", issue(grant("wi1", []string{"ssd", "gpu", "x"}, at(time.Second))))
		fails(p, "grant again", model.CodeGrantAlreadyExists, issue(grant("wi2", []string{"ssd", "gpu"}, at(2*time.Second))))
		claimWith := func(caps []string, r model.LeaseRequest, now time.Time) func(s model.Store) (*model.ClaimResult, error) {
			return func(s model.Store) (*model.ClaimResult, error) {
				return s.ExecutionClaim(bg, &model.ExecutionClaimParams{ID: a, Capabilities: caps, LeaseRequest: r, Now: now})
			}
		}
		claim := func(_ model.WorkerInstanceID, r model.LeaseRequest, now time.Time) func(s model.Store) (*model.ClaimResult, error) {
			return claimWith([]string{"gpu", "ssd"}, r, now)
		}
		fails(p, "claim other worker", model.CodeInvalidClaimGrant, claim("wi2", sq.req("wi2", ttl), at(2*time.Second)))
		fails(p, "claim expired grant", model.CodeClaimGrantExpired, claim("wi1", sq.req("wi1", ttl), at(7*time.Second)))
		// an expired grant no longer blocks a new one
		ok(p, "grant after expiry", issue(grant("wi1", []string{"ssd", "gpu"}, at(8*time.Second))))
		fails(p, "claim without the caps", model.CodeCapabilityMismatch, claimWith([]string{"ssd"}, sq.req("wi1", ttl), at(9*time.Second)))
		fails(p, "claim by another instance", model.CodeInvalidClaimGrant, claimWith([]string{"gpu", "ssd"},
			model.LeaseRequest{WorkerID: "w-wi1", WorkerInstanceID: "wi1-b", LeaseID: sq.lease(), AttemptID: sq.attempt(), LeaseTTL: ttl}, at(9*time.Second)))
		r := ok(p, "claim", claim("wi1", sq.req("wi1", ttl), at(9*time.Second)))
		if r.Lease.Epoch != 1 || r.AttemptIndex != 0 || string(r.Payload) != "payload" {
			t.Fatalf("claim result %+v", r)
		}
		fails(p, "claim again", model.CodeExecutionNotLeaseable, claim("wi1", sq.req("wi1", ttl), at(10*time.Second)))
		fails(p, "grant active", model.CodeExecutionNotEligible, issue(grant("wi1", []string{"ssd", "gpu"}, at(10*time.Second))))

		// grant-and-claim paths
		g := sq.exec(2)
		create(p, createP(g, at(0)))
		ok(p, "block", func(s model.Store) (*model.ExecutionBlockResult, error) {
			return s.(model.Blocker).ExecutionBlock(bg, &model.ExecutionBlockParams{ID: g, Reason: model.WaitingForBudget, Detail: "over",
				Budget: model.BudgetID(sq.uuid()), Now: at(time.Second)})
		})
		fails(p, "gac blocked", model.CodeExecutionNotEligible, func(s model.Store) (*model.ClaimResult, error) {
			return s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: g, LeaseRequest: sq.req("wi1", ttl), Now: at(time.Second)})
		})
		fails(p, "block again", model.CodeExecutionNotEligible, func(s model.Store) (*model.ExecutionBlockResult, error) {
			return s.(model.Blocker).ExecutionBlock(bg, &model.ExecutionBlockParams{ID: g, Reason: model.WaitingForQuota, Now: at(time.Second)})
		})
		fails(p, "unblock wrong reason", model.CodeExecutionNotEligible, func(s model.Store) (*model.ExecutionUnblockResult, error) {
			return s.(model.Blocker).ExecutionUnblock(bg, &model.ExecutionUnblockParams{ID: g, ExpectedReason: model.WaitingForQuota, Now: at(2 * time.Second)})
		})
		ok(p, "unblock", func(s model.Store) (*model.ExecutionUnblockResult, error) {
			return s.(model.Blocker).ExecutionUnblock(bg, &model.ExecutionUnblockParams{ID: g, ExpectedReason: model.WaitingForBudget, Now: at(2 * time.Second)})
		})
		ok(p, "priority", func(s model.Store) (*model.ExecutionChangePriorityResult, error) {
			return s.ExecutionChangePriority(bg, &model.ExecutionChangePriorityParams{ID: g, Priority: -5, Now: at(3 * time.Second)})
		})
		gr := grantAndClaim(p, g, sq.req("wi3", ttl), at(4*time.Second))
		fails(p, "gac active", model.CodeExecutionNotEligible, func(s model.Store) (*model.ClaimResult, error) {
			return s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: g, LeaseRequest: sq.req("wi1", ttl), Now: at(5 * time.Second)})
		})
		fails(p, "block active", model.CodeExecutionNotEligible, func(s model.Store) (*model.ExecutionBlockResult, error) {
			return s.(model.Blocker).ExecutionBlock(bg, &model.ExecutionBlockParams{ID: g, Reason: model.WaitingForQuota, Now: at(5 * time.Second)})
		})
		ok(p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: g, Fence: gr.Fence(), Result: []byte("r"), Now: at(6 * time.Second)})
		})
		fails(p, "block terminal", model.CodeExecutionNotActive, func(s model.Store) (*model.ExecutionBlockResult, error) {
			return s.(model.Blocker).ExecutionBlock(bg, &model.ExecutionBlockParams{ID: g, Reason: model.WaitingForQuota, Now: at(7 * time.Second)})
		})
		fails(p, "priority terminal", model.CodeExecutionNotEligible, func(s model.Store) (*model.ExecutionChangePriorityResult, error) {
			return s.ExecutionChangePriority(bg, &model.ExecutionChangePriorityParams{ID: g, Priority: 5, Now: at(7 * time.Second)})
		})
		fails(p, "claim unknown", model.CodeExecutionNotFound, func(s model.Store) (*model.ClaimResult, error) {
			return s.ExecutionClaim(bg, &model.ExecutionClaimParams{ID: sq.exec(2), LeaseRequest: sq.req("wi1", ttl), Now: at(7 * time.Second)})
		})
	})
}

func TestClaimNext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{FlowPartitions: 2})
		var sq seq
		mk := func(prio int, now time.Time, caps ...string) model.ExecutionID {
			id := sq.exec(1)
			c := createP(id, now)
			c.Priority, c.RequiredCapabilities = prio, caps
			create(p, c)
			return id
		}
		mk(0, at(0), "gpu")
		mk(5, at(1), "tpu")
		mk(5, at(1), "tpu", "x")
		mk(1, at(2))
		plain := mk(1, at(2))
		// a granted head for another worker is skipped
		ok(p, "grant other", func(s model.Store) (*model.ClaimGrantIssueResult, error) {
			return s.ClaimGrantIssue(bg, &model.ClaimGrantIssueParams{ID: plain, WorkerID: "w-zz", WorkerInstanceID: "zz", GrantTTL: time.Second, Now: at(3)})
		})
		next := func(caps, live []string, limit int, now time.Time) func(s model.Store) (*model.ExecutionClaimNextResult, error) {
			r := sq.req("wi1", ttl)
			return func(s model.Store) (*model.ExecutionClaimNextResult, error) {
				return s.ExecutionClaimNext(bg, &model.ExecutionClaimNextParams{Partition: 1, Lane: lane,
					Capabilities: caps, LiveCapabilities: live, ScanLimit: limit, LeaseRequest: r, Now: now})
			}
		}
		ok(p, "next empty lane", func(s model.Store) (*model.ExecutionClaimNextResult, error) {
			return s.ExecutionClaimNext(bg, &model.ExecutionClaimNextParams{Partition: 0, Lane: "nothing",
				ScanLimit: 5, LeaseRequest: sq.req("wi1", ttl), Now: at(4)})
		})
		// tpu heads: no live worker has tpu → blocked; gpu head skipped (live has it)
		r := ok(p, "next blocks", next(nil, []string{"gpu"}, 2, at(4)))
		if len(r.Blocked) != 2 || r.Claimed != nil {
			t.Fatalf("next = %+v", r)
		}
		r = ok(p, "next claims", next(nil, []string{"gpu"}, 10, at(5)))
		if r.Claimed == nil {
			t.Fatalf("next = %+v", r)
		}
		ok(p, "next claims gpu", next([]string{"gpu"}, []string{"gpu"}, 10, at(6)))
		ok(p, "next claims granted after expiry", next(nil, nil, 10, at(time.Hour)))
		ok(p, "next nothing", next(nil, nil, 10, at(time.Hour)))
		// route unblock: limit and more, group order
		for i := range 3 {
			mk(0, at(time.Duration(10+i)*time.Millisecond), "tpu")
		}
		ok(p, "next blocks more", next(nil, nil, 100, at(2*time.Hour)))
		unblock := func(live []string, all bool, limit int) func(s model.Store) (*model.RouteUnblockResult, error) {
			return func(s model.Store) (*model.RouteUnblockResult, error) {
				return s.RouteUnblock(bg, &model.RouteUnblockParams{Partition: 1, Namespace: ns, Live: live, All: all, Limit: limit, Now: at(3 * time.Hour)})
			}
		}
		ok(p, "unblock none", unblock([]string{"gpu"}, false, 10))
		ok(p, "unblock some", unblock([]string{"tpu"}, false, 2))
		ok(p, "unblock exact", unblock([]string{"tpu"}, false, 2))
		ok(p, "unblock all", unblock(nil, true, 1))
		ok(p, "unblock all rest", unblock(nil, true, 10))
		ok(p, "unblock nothing left", unblock(nil, true, 10))
	})
}

func TestTerminalOps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 3}, bothFeeds)
		var sq seq
		a := sq.exec(0)
		c := createP(a, at(0))
		c.RetryPolicy = model.RetryPolicy{MaxRetries: 2, Multiplier: 1.7, InitialDelay: 333 * time.Millisecond}
		c.MaxReplays = 2
		create(p, c)
		r := grantAndClaim(p, a, sq.req("wi1", ttl), at(time.Second))
		stale := r.Fence()
		stale.LeaseEpoch++
		complete := func(f model.Fence, src model.Source, now time.Time) func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return func(s model.Store) (*model.ExecutionCompleteResult, error) {
				return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: a, Fence: f, Source: src, Now: now})
			}
		}
		fail := func(f model.Fence, src model.Source, cat model.FailureCategory, now time.Time) func(s model.Store) (*model.ExecutionFailResult, error) {
			return func(s model.Store) (*model.ExecutionFailResult, error) {
				return s.ExecutionFail(bg, &model.ExecutionFailParams{ID: a, Fence: f, Source: src, Reason: "boom", Category: cat, Now: now})
			}
		}
		fails(p, "complete stale", model.CodeStaleLease, complete(stale, "", at(2*time.Second)))
		fails(p, "complete no fence", model.CodeFenceRequired, complete(model.Fence{}, "", at(2*time.Second)))
		fails(p, "complete partial", model.CodePartialFenceTriple, complete(model.Fence{LeaseEpoch: 1}, "", at(2*time.Second)))
		fails(p, "complete expired", model.CodeLeaseExpired, complete(r.Fence(), "", at(time.Hour)))
		ok(p, "progress", func(s model.Store) (*model.ExecutionUpdateProgressResult, error) {
			return s.ExecutionUpdateProgress(bg, &model.ExecutionUpdateProgressParams{ID: a, Fence: r.Fence(), Percent: 40, Message: "half", Now: at(3 * time.Second)})
		})
		fr := ok(p, "fail retry", fail(r.Fence(), "", "", at(4*time.Second)))
		if fr.Outcome != model.FailRetryScheduled {
			t.Fatalf("fail = %+v", fr)
		}
		ok(p, "fail replayed", fail(r.Fence(), "", "", at(5*time.Second)))
		fails(p, "fail other", model.CodeExecutionNotActive, fail(stale, "", "", at(5*time.Second)))
		fails(p, "complete operator runnable", model.CodeExecutionNotActive, complete(model.Fence{}, model.SourceOperator, at(5*time.Second)))
		ok(p, "promote early", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: a, Lane: lane, Now: at(4*time.Second + 100*time.Millisecond)})
		})
		ok(p, "promote", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: a, Lane: lane, Now: at(10 * time.Second)})
		})
		ok(p, "promote again", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: a, Lane: lane, Now: at(10 * time.Second)})
		})
		r2 := grantAndClaim(p, a, sq.req("wi2", ttl), at(11*time.Second))
		// a worker delay resumes the same attempt
		ok(p, "delay", func(s model.Store) (*model.ExecutionDelayResult, error) {
			return s.ExecutionDelay(bg, &model.ExecutionDelayParams{ID: a, Fence: r2.Fence(), DelayUntil: at(20 * time.Second), Now: at(12 * time.Second)})
		})
		ok(p, "delay replayed", func(s model.Store) (*model.ExecutionDelayResult, error) {
			return s.ExecutionDelay(bg, &model.ExecutionDelayParams{ID: a, Fence: r2.Fence(), DelayUntil: at(25 * time.Second), Now: at(13 * time.Second)})
		})
		ok(p, "promote delayed", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: a, Lane: lane, Now: at(21 * time.Second)})
		})
		r3 := grantAndClaim(p, a, sq.req("wi2", ttl), at(22*time.Second))
		if !r3.Resumed {
			t.Fatalf("claim after delay = %+v", r3)
		}
		// operator fail: with a retry left, a permanent category fails terminally
		ok(p, "fail operator permanent", fail(model.Fence{}, model.SourceOperator, model.FailurePermanent, at(23*time.Second)))
		ok(p, "fail payload_invalid replay?", func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: a, Reason: "again", RequestedBy: "ops", Now: at(24 * time.Second)})
		})
		r4 := grantAndClaim(p, a, sq.req("wi3", ttl), at(25*time.Second))
		ok(p, "fail payload_invalid", fail(r4.Fence(), "", model.FailurePayloadInvalid, at(26*time.Second)))
		ok(p, "replay", func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: a, Reason: "again", RequestedBy: "ops", Now: at(27 * time.Second)})
		})
		fails(p, "replay runnable", model.CodeExecutionNotTerminal, func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: a, Now: at(28 * time.Second)})
		})
		// cancel: operator on runnable, replay, other caller
		ok(p, "cancel", func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: a, Reason: "stop", Source: model.SourceOperator, Now: at(29 * time.Second)})
		})
		ok(p, "cancel replayed", func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: a, Reason: "stop", Source: model.SourceOperator, Now: at(30 * time.Second)})
		})
		fails(p, "cancel worker", model.CodeExecutionNotActive, func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: a, Fence: r4.Fence(), Now: at(30 * time.Second)})
		})
		fails(p, "replays exhausted", model.CodeMaxReplaysExhausted, func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: a, Now: at(31 * time.Second)})
		})
		fails(p, "result not found", model.CodeResultNotFound, func(s model.Store) (*model.ExecutionResultResult, error) {
			return s.ExecutionResult(bg, &model.ExecutionResultParams{ID: a})
		})

		// worker cancel of its active execution; complete with empty result
		w := sq.exec(0)
		create(p, createP(w, at(0)))
		wr := grantAndClaim(p, w, sq.req("wi1", ttl), at(time.Second))
		ok(p, "cancel by worker", func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: w, Fence: wr.Fence(), Reason: "mine", Now: at(2 * time.Second)})
		})
		ok(p, "cancel by worker replayed", func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: w, Fence: wr.Fence(), Reason: "mine", Now: at(3 * time.Second)})
		})
		x := sq.exec(0)
		create(p, createP(x, at(0)))
		xr := grantAndClaim(p, x, sq.req("wi1", ttl), at(time.Second))
		ok(p, "complete empty", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: x, Fence: xr.Fence(), Now: at(2 * time.Second)})
		})
		ok(p, "complete replayed", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: x, Fence: xr.Fence(), Now: at(3 * time.Second)})
		})
		fails(p, "complete operator terminal", model.CodeExecutionNotActive, func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: x, Source: model.SourceOperator, Now: at(3 * time.Second)})
		})
		ok(p, "replay completed", func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: x, Now: at(4 * time.Second)})
		})
		xr2 := grantAndClaim(p, x, sq.req("wi1", ttl), at(5*time.Second))
		ok(p, "complete operator", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: x, Source: model.SourceOperator, Result: []byte("op"), Now: at(6 * time.Second)})
		})
		fails(p, "complete after operator", model.CodeExecutionNotActive, func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: x, Fence: xr2.Fence(), Now: at(7 * time.Second)})
		})
	})
}

func TestLeaseAndRecovery(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 3}, bothFeeds)
		var sq seq
		a := sq.exec(2)
		c := createP(a, at(0))
		c.MaxReclaims = 2
		c.RequiredCapabilities = model.Capabilities{"c1"}
		c.AttemptTimeout = time.Hour
		create(p, c)
		r := grantAndClaim(p, a, sq.req("wi1", ttl), at(time.Second), "c1")
		ok(p, "renew", func(s model.Store) (*model.LeaseRenewResult, error) {
			return s.LeaseRenew(bg, &model.LeaseRenewParams{ID: a, Fence: r.Fence(), LeaseTTL: 10 * time.Second, Now: at(2 * time.Second)})
		})
		mark := func(now time.Time) func(s model.Store) (*model.LeaseMarkExpiredResult, error) {
			return func(s model.Store) (*model.LeaseMarkExpiredResult, error) {
				return s.LeaseMarkExpired(bg, &model.LeaseMarkExpiredParams{ID: a, Now: now})
			}
		}
		ok(p, "mark not yet", mark(at(5*time.Second)))
		ok(p, "mark", mark(at(13*time.Second)))
		ok(p, "mark again", mark(at(14*time.Second)))
		fails(p, "renew expired", model.CodeLeaseExpired, func(s model.Store) (*model.LeaseRenewResult, error) {
			return s.LeaseRenew(bg, &model.LeaseRenewParams{ID: a, Fence: r.Fence(), LeaseTTL: 10 * time.Second, Now: at(14 * time.Second)})
		})
		ok(p, "revoke expired", func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: a, Reason: "x", Now: at(14 * time.Second)})
		})
		reclaimGrant := func(caps []string, now time.Time) func(s model.Store) (*model.ReclaimGrantIssueResult, error) {
			return func(s model.Store) (*model.ReclaimGrantIssueResult, error) {
				return s.(model.GrantReclaimer).ReclaimGrantIssue(bg, &model.ReclaimGrantIssueParams{ID: a, WorkerID: "w-wi2", WorkerInstanceID: "wi2",
					Capabilities: caps, GrantTTL: 2 * time.Second, Now: now})
			}
		}
		fails(p, "reclaim grant caps", model.CodeCapabilityMismatch, reclaimGrant(nil, at(15*time.Second)))
		ok(p, "reclaim grant", reclaimGrant([]string{"c1"}, at(15*time.Second)))
		fails(p, "reclaim grant again", model.CodeGrantAlreadyExists, reclaimGrant([]string{"c1"}, at(16*time.Second)))
		reclaimWith := func(w model.WorkerInstanceID, caps []string, now time.Time) func(s model.Store) (*model.ExecutionReclaimResult, error) {
			rq := sq.req(w, ttl)
			return func(s model.Store) (*model.ExecutionReclaimResult, error) {
				return s.(model.GrantReclaimer).ExecutionReclaim(bg, &model.ExecutionReclaimParams{ID: a, Capabilities: caps, LeaseRequest: rq, Now: now})
			}
		}
		reclaim := func(w model.WorkerInstanceID, now time.Time) func(s model.Store) (*model.ExecutionReclaimResult, error) {
			return reclaimWith(w, []string{"c1"}, now)
		}
		fails(p, "reclaim wrong worker", model.CodeInvalidClaimGrant, reclaim("wi3", at(16*time.Second)))
		fails(p, "reclaim late", model.CodeClaimGrantExpired, reclaim("wi2", at(18*time.Second)))
		ok(p, "reclaim grant 2", reclaimGrant([]string{"c1"}, at(19*time.Second)))
		fails(p, "reclaim without the caps", model.CodeCapabilityMismatch, reclaimWith("wi2", nil, at(20*time.Second)))
		rr := ok(p, "reclaim", reclaim("wi2", at(20*time.Second)))
		fails(p, "reclaim active", model.CodeExecutionNotReclaimable, reclaim("wi2", at(21*time.Second)))
		fails(p, "revoke stale", model.CodeStaleLease, func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: a, ExpectedLeaseID: r.Lease.ID, Now: at(22 * time.Second)})
		})
		ok(p, "revoke", func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: a, ExpectedLeaseID: rr.Claimed.Lease.ID, Reason: "ops", Now: at(22 * time.Second)})
		})
		ok(p, "revoke again", func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: a, Now: at(23 * time.Second)})
		})
		fails(p, "complete revoked", model.CodeLeaseRevoked, func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: a, Fence: rr.Claimed.Fence(), Now: at(23 * time.Second)})
		})
		recoverOp := func(now time.Time) func(s model.Store) (*model.ExecutionRecoverResult, error) {
			return func(s model.Store) (*model.ExecutionRecoverResult, error) {
				return s.ExecutionRecover(bg, &model.ExecutionRecoverParams{ID: a, Now: now})
			}
		}
		ok(p, "recover", recoverOp(at(24*time.Second)))
		fails(p, "recover runnable", model.CodeExecutionNotReclaimable, recoverOp(at(25*time.Second)))
		r2 := grantAndClaim(p, a, sq.req("wi1", ttl), at(26*time.Second), "c1")
		ok(p, "mark 2", mark(at(time.Minute)))
		// reclaims used up (2): the execution fails
		ok(p, "recover cap", recoverOp(at(2*time.Minute)))
		_ = r2
		fails(p, "revoke terminal", model.CodeExecutionNotActive, func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: a, Now: at(3 * time.Minute)})
		})
		ok(p, "mark terminal", mark(at(3*time.Minute)))
		ok(p, "mark unknown", func(s model.Store) (*model.LeaseMarkExpiredResult, error) {
			return s.LeaseMarkExpired(bg, &model.LeaseMarkExpiredParams{ID: sq.exec(2), Now: at(3 * time.Minute)})
		})

		// the reclaim path past the cap
		z := sq.exec(1)
		cz := createP(z, at(0))
		cz.MaxReclaims = 1
		create(p, cz)
		zr := grantAndClaim(p, z, sq.req("wi1", ttl), at(time.Second))
		ok(p, "revoke z", func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: z, ExpectedLeaseID: zr.Lease.ID, Now: at(2 * time.Second)})
		})
		ok(p, "recover z", func(s model.Store) (*model.ExecutionRecoverResult, error) {
			return s.ExecutionRecover(bg, &model.ExecutionRecoverParams{ID: z, Now: at(3 * time.Second)})
		})
		zr2 := grantAndClaim(p, z, sq.req("wi1", ttl), at(4*time.Second))
		ok(p, "revoke z2", func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: z, ExpectedLeaseID: zr2.Lease.ID, Now: at(5 * time.Second)})
		})
		ok(p, "reclaim grant z", func(s model.Store) (*model.ReclaimGrantIssueResult, error) {
			return s.(model.GrantReclaimer).ReclaimGrantIssue(bg, &model.ReclaimGrantIssueParams{ID: z, WorkerID: "w-wi2", WorkerInstanceID: "wi2", GrantTTL: time.Second, Now: at(6 * time.Second)})
		})
		ok(p, "reclaim z cap", func(s model.Store) (*model.ExecutionReclaimResult, error) {
			return s.(model.GrantReclaimer).ExecutionReclaim(bg, &model.ExecutionReclaimParams{ID: z, LeaseRequest: sq.req("wi2", ttl), Now: at(6 * time.Second)})
		})
	})
}

func TestExpire(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 3}, bothFeeds)
		var sq seq
		a := sq.exec(0)
		c := createP(a, at(0))
		c.AttemptTimeout = 10 * time.Second
		c.RetryPolicy = model.RetryPolicy{MaxRetries: 1}
		c.Deadline = at(time.Hour)
		create(p, c)
		expire := func(id model.ExecutionID, reason model.ExpireReason, now time.Time) func(s model.Store) (*model.ExecutionExpireResult, error) {
			return func(s model.Store) (*model.ExecutionExpireResult, error) {
				return s.ExecutionExpire(bg, &model.ExecutionExpireParams{ID: id, Reason: reason, Now: now})
			}
		}
		ok(p, "timeout runnable", expire(a, model.ExpireAttemptTimeout, at(time.Second)))
		grantAndClaim(p, a, sq.req("wi1", time.Minute), at(time.Second))
		ok(p, "timeout early", expire(a, model.ExpireAttemptTimeout, at(5*time.Second)))
		ok(p, "timeout retry", expire(a, model.ExpireAttemptTimeout, at(11*time.Second)))
		ok(p, "promote", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: a, Lane: lane, Now: at(20 * time.Second)})
		})
		grantAndClaim(p, a, sq.req("wi1", time.Minute), at(21*time.Second))
		ok(p, "timeout final", expire(a, model.ExpireAttemptTimeout, at(40*time.Second)))
		ok(p, "timeout terminal", expire(a, model.ExpireAttemptTimeout, at(41*time.Second)))
		ok(p, "unknown", expire(sq.exec(0), model.ExpireExecutionDeadline, at(41*time.Second)))

		d := sq.exec(0)
		cd := createP(d, at(0))
		cd.Deadline = at(time.Minute)
		create(p, cd)
		grantAndClaim(p, d, sq.req("wi1", time.Hour), at(time.Second))
		ok(p, "deadline early", expire(d, model.ExpireExecutionDeadline, at(30*time.Second)))
		ok(p, "deadline", expire(d, model.ExpireExecutionDeadline, at(61*time.Second)))
		ok(p, "replay past deadline", func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: d, Now: at(2 * time.Minute)})
		})
		ok(p, "deadline dropped", expire(d, model.ExpireExecutionDeadline, at(3*time.Minute)))

		// a runnable execution reaching its deadline
		e := sq.exec(0)
		ce := createP(e, at(0))
		ce.Deadline = at(time.Second)
		ce.DelayUntil = at(time.Hour)
		create(p, ce)
		ok(p, "deadline runnable", expire(e, model.ExpireExecutionDeadline, at(2*time.Second)))
	})
}

func TestIndexScanDue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{FlowPartitions: 2})
		var sq seq
		// delayed entries on two lanes with equal due times, so the cursor
		// falls inside runs of equal scores
		for i := range 12 {
			c := createP(sq.exec(1), at(0))
			c.DelayUntil = at(time.Duration(1+i%3) * time.Second)
			if i%2 == 1 {
				c.Lane = lane2
			}
			c.Deadline = at(time.Duration(1+i%4) * time.Minute)
			create(p, c)
		}
		scanAll := func(idx model.IndexKind, now time.Time, limit int) {
			var after *model.DueCursor
			for range 20 {
				r := ok(p, "scan "+idx.String(), func(s model.Store) (*model.IndexScanDueResult, error) {
					return s.IndexScanDue(bg, &model.IndexScanDueParams{Partition: 1, Index: idx, Now: now, After: after, Limit: limit})
				})
				if !r.More {
					return
				}
				last := r.Items[len(r.Items)-1]
				after = &model.DueCursor{DueAt: last.DueAt, ID: last.ID}
			}
			t.Fatal("scan did not end")
		}
		for _, limit := range []int{1, 2, 5, 100} {
			scanAll(model.IndexDelayed, at(2*time.Second), limit)
			scanAll(model.IndexDelayed, at(time.Hour), limit)
			scanAll(model.IndexExecutionDeadline, at(3*time.Minute), limit)
		}
		scanAll(model.IndexLeaseExpiry, at(time.Hour), 10)
		scanAll(model.IndexAttemptTimeout, at(time.Hour), 10)
		// a cursor from another partition is refused; an empty partition
		fails(p, "scan foreign cursor", model.CodeInvalidInput, func(s model.Store) (*model.IndexScanDueResult, error) {
			return s.IndexScanDue(bg, &model.IndexScanDueParams{Partition: 1, Index: model.IndexDelayed, Now: at(time.Hour),
				After: &model.DueCursor{DueAt: at(2 * time.Second), ID: sq.exec(0)}, Limit: 100})
		})
		ok(p, "scan empty", func(s model.Store) (*model.IndexScanDueResult, error) {
			return s.IndexScanDue(bg, &model.IndexScanDueParams{Partition: 0, Index: model.IndexDelayed, Now: at(time.Hour), Limit: 100})
		})
	})
}

func TestWorkers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{})
		reg := func(wi model.WorkerInstanceID, session string, now time.Time) func(s model.Store) (*model.WorkerRegisterResult, error) {
			return func(s model.Store) (*model.WorkerRegisterResult, error) {
				return s.WorkerRegister(bg, &model.WorkerRegisterParams{Namespace: ns, WorkerID: "w", WorkerInstanceID: wi,
					SessionID: session, Lanes: []model.LaneID{"b", "a", "b"}, Capabilities: model.Capabilities{"z", "a"},
					TTL: 10 * time.Second, Now: now})
			}
		}
		list := func(now time.Time) func(s model.Store) (*model.WorkerListResult, error) {
			return func(s model.Store) (*model.WorkerListResult, error) {
				return s.WorkerList(bg, &model.WorkerListParams{Namespace: ns, Now: now})
			}
		}
		ok(p, "list empty", list(at(0)))
		ok(p, "register c", reg("wi-c", "s1", at(0)))
		ok(p, "register a", reg("wi-a", "s1", at(time.Second)))
		ok(p, "register B", reg("wi-B", "s1", at(2*time.Second)))
		ok(p, "refresh a", reg("wi-a", "s1", at(3*time.Second)))
		fails(p, "duplicate a", model.CodeDuplicateWorkerInstance, reg("wi-a", "s2", at(4*time.Second)))
		ok(p, "list", list(at(5*time.Second)))
		hb := func(wi model.WorkerInstanceID, session string, now time.Time) func(s model.Store) (*model.WorkerHeartbeatResult, error) {
			return func(s model.Store) (*model.WorkerHeartbeatResult, error) {
				return s.WorkerHeartbeat(bg, &model.WorkerHeartbeatParams{Namespace: ns, WorkerInstanceID: wi, SessionID: session, TTL: 20 * time.Second, Now: now})
			}
		}
		ok(p, "heartbeat", hb("wi-a", "s1", at(6*time.Second)))
		fails(p, "heartbeat other session", model.CodeDuplicateWorkerInstance, hb("wi-a", "s2", at(6*time.Second)))
		fails(p, "heartbeat expired", model.CodeWorkerNotRegistered, hb("wi-c", "s1", at(11*time.Second)))
		fails(p, "heartbeat unknown", model.CodeWorkerNotRegistered, hb("nobody", "s1", at(11*time.Second)))
		ok(p, "list later", list(at(11*time.Second)))
		// an expired registration may be taken by a new session
		ok(p, "register c again", reg("wi-c", "s2", at(12*time.Second)))
		expire := func(limit int, now time.Time) func(s model.Store) (*model.WorkerExpireResult, error) {
			return func(s model.Store) (*model.WorkerExpireResult, error) {
				return s.WorkerExpire(bg, &model.WorkerExpireParams{Namespace: ns, Limit: limit, Now: now})
			}
		}
		ok(p, "expire none", expire(10, at(13*time.Second)))
		ok(p, "expire one", expire(1, at(time.Minute)))
		ok(p, "expire rest", expire(10, at(time.Minute)))
		ok(p, "list none", list(at(time.Minute)))
		dereg := func(wi model.WorkerInstanceID, session string) func(s model.Store) (*model.WorkerDeregisterResult, error) {
			return func(s model.Store) (*model.WorkerDeregisterResult, error) {
				return s.WorkerDeregister(bg, &model.WorkerDeregisterParams{Namespace: ns, WorkerInstanceID: wi, SessionID: session, Now: at(time.Hour)})
			}
		}
		ok(p, "register d", reg("wi-d", "s1", at(time.Hour)))
		ok(p, "deregister other session", dereg("wi-d", "s2"))
		ok(p, "deregister", dereg("wi-d", "s1"))
		ok(p, "deregister again", dereg("wi-d", "s1"))
	})
}

func TestReads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{FlowPartitions: 5})
		var sq seq
		var ids []model.ExecutionID
		for range 7 {
			id := sq.exec(3)
			ids = append(ids, id)
			create(p, createP(id, at(0)))
		}
		list := func(after model.ExecutionID, limit int) func(s model.Store) (*model.ExecutionListResult, error) {
			return func(s model.Store) (*model.ExecutionListResult, error) {
				return s.ExecutionList(bg, &model.ExecutionListParams{Partition: 3, After: after, Limit: limit})
			}
		}
		for _, limit := range []int{1, 3, 7, 8} {
			var after model.ExecutionID
			for range 10 {
				r := ok(p, "list", list(after, limit))
				if r.Next.IsZero() {
					break
				}
				after = r.Next
			}
		}
		// an unknown id of the partition is a fine cursor; one of another
		// partition is refused
		ok(p, "list unknown cursor", list(sq.exec(3), 10))
		fails(p, "list foreign cursor", model.CodeInvalidInput, list(model.NewExecutionID(1, ids[2].UUID()), 10))
		ok(p, "list empty partition", func(s model.Store) (*model.ExecutionListResult, error) {
			return s.ExecutionList(bg, &model.ExecutionListParams{Partition: 4, Limit: 10})
		})
		ok(p, "indexes unknown", func(s model.Store) (*model.ExecutionIndexesResult, error) {
			return s.(model.IndexInspector).ExecutionIndexes(bg, &model.ExecutionIndexesParams{ID: sq.exec(4)})
		})
		fails(p, "describe unknown", model.CodeExecutionNotFound, func(s model.Store) (*model.ExecutionSnapshot, error) {
			return s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: sq.exec(4)})
		})
		// lease history keeps exactly the newest DefaultLeaseHistory entries
		a := ids[0]
		n := 0
		for i := 0; n < model.DefaultLeaseHistory+10; i++ {
			now := at(time.Duration(i) * time.Second)
			// claim (acquired/resumed) and delay (released): two entries
			rq := sq.req("wi", ttl)
			for _, s := range []model.Store{p.mem, p.vk} {
				r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: a, LeaseRequest: rq, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.ExecutionDelay(bg, &model.ExecutionDelayParams{ID: a, Fence: r.Fence(), DelayUntil: now, Now: now}); err != nil {
					t.Fatal(err)
				}
			}
			n += 2
		}
		p.compareState("after history loop")
		h := ok(p, "history tail", func(s model.Store) (*model.LeaseHistoryResult, error) {
			return s.LeaseHistory(bg, &model.LeaseHistoryParams{ID: a, AfterSeq: 1005, Limit: 3})
		})
		if len(h.Events) != 3 || h.Events[0].Seq != 1006 {
			t.Fatalf("history = %+v", h.Events)
		}
		ok(p, "history past end", func(s model.Store) (*model.LeaseHistoryResult, error) {
			return s.LeaseHistory(bg, &model.LeaseHistoryParams{ID: a, AfterSeq: ^uint64(0), Limit: 3})
		})
		ok(p, "history trimmed start", func(s model.Store) (*model.LeaseHistoryResult, error) {
			return s.LeaseHistory(bg, &model.LeaseHistoryParams{ID: a, Limit: 2})
		})
		vh, _ := p.vk.LeaseHistory(bg, &model.LeaseHistoryParams{ID: a, Limit: model.MaxPageSize})
		if len(vh.Events) != model.DefaultLeaseHistory {
			t.Fatalf("history has %d entries, want %d", len(vh.Events), model.DefaultLeaseHistory)
		}
	})
}
