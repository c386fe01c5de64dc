package valkeystore

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

var (
	randomSeed  = flag.Uint64("valkeystore.seed", 0, "run only this seed of TestRandomDifferential")
	randomSteps = flag.Int("valkeystore.steps", 150, "steps per seed of TestRandomDifferential")
)

// TestRandomDifferential applies seeded random sequences of every operation
// (valid and invalid: stale fences, wrong workers, early and late times) to
// memstore and valkeystore and requires identical results, errors and
// observable state after every step. A failure names its seed; rerun it with
// -valkeystore.seed=N.
func TestRandomDifferential(t *testing.T) {
	seeds := map[string]int{"miniredis": 8, "standalone": 3, "cluster": 2}
	if raceEnabled {
		seeds = map[string]int{"miniredis": 2, "standalone": 1, "cluster": 1}
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		n := seeds[b.name]
		for i := range n {
			seed := uint64(i + 1)
			if *randomSeed != 0 {
				if i > 0 {
					break
				}
				seed = *randomSeed
			}
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				runRandom(t, b, seed, *randomSteps)
			})
		}
	})
}

type randomRun struct {
	t      *testing.T
	p      *pair
	rng    *rand.Rand
	sq     seq
	now    time.Time
	ids    []model.ExecutionID
	fences map[model.ExecutionID]model.Fence
	caps   []string
	lanes  []model.LaneID
	wis    []model.WorkerInstanceID
}

func runRandom(t *testing.T, b backend, seed uint64, steps int) {
	r := &randomRun{
		t:      t,
		p:      newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 2}, randomFeeds(seed)),
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		now:    t0,
		fences: make(map[model.ExecutionID]model.Fence),
		caps:   []string{"a", "b", "c"},
		lanes:  []model.LaneID{lane, lane2},
		wis:    []model.WorkerInstanceID{"wi1", "wi2", "wi3"},
	}
	r.p.trackNS(ns)
	ops := []struct {
		weight int
		f      func()
	}{
		{6, r.create}, {3, r.grant}, {3, r.claim}, {5, r.grantAndClaim}, {4, r.claimNext},
		{3, r.complete}, {4, r.fail}, {2, r.delay}, {2, r.cancel}, {2, r.renew},
		{3, r.markExpired}, {2, r.revoke}, {2, r.reclaimGrant}, {2, r.reclaim}, {3, r.recover},
		{3, r.expire}, {4, r.promote}, {3, r.scan}, {2, r.routeUnblock}, {2, r.block},
		{2, r.unblock}, {1, r.priority}, {2, r.replay}, {1, r.progress}, {3, r.workers},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	for range steps {
		r.now = r.now.Add(time.Duration(r.rng.IntN(8000)) * time.Millisecond)
		k := r.rng.IntN(total)
		for _, o := range ops {
			if k < o.weight {
				o.f()
				break
			}
			k -= o.weight
		}
	}
}

// randomFeeds are the feeds of seed's stores: none for odd seeds (the
// default store), both for even ones, keeping 7 events when the seed is a
// multiple of 4 (so reads meet trimmed feeds).
func randomFeeds(seed uint64) model.Feeds {
	switch {
	case seed%4 == 0:
		return model.Feeds{Completions: true, Leases: true, Len: 7}
	case seed%2 == 0:
		return bothFeeds
	}
	return model.Feeds{}
}

func (r *randomRun) pick() model.ExecutionID {
	if len(r.ids) == 0 || r.rng.IntN(20) == 0 {
		return r.sq.exec(r.rng.IntN(2)) // unknown
	}
	return r.ids[r.rng.IntN(len(r.ids))]
}

func (r *randomRun) someCaps() model.Capabilities {
	var c model.Capabilities
	for _, x := range r.caps {
		if r.rng.IntN(3) == 0 {
			c = append(c, x)
		}
	}
	return c
}

func (r *randomRun) later(max time.Duration) time.Time {
	return r.now.Add(time.Duration(r.rng.Int64N(int64(max/time.Millisecond)+1)) * time.Millisecond)
}

func (r *randomRun) wi() model.WorkerInstanceID { return r.wis[r.rng.IntN(len(r.wis))] }

// fence returns the execution's last fence, sometimes spoiled.
func (r *randomRun) fence(id model.ExecutionID) model.Fence {
	f := r.fences[id]
	switch r.rng.IntN(12) {
	case 0:
		f.LeaseEpoch++
	case 1:
		f.AttemptID = r.sq.attempt()
	case 2:
		f.LeaseID = r.sq.lease()
	}
	if f.IsZero() {
		f = model.Fence{LeaseID: r.sq.lease(), LeaseEpoch: 1, AttemptID: r.sq.attempt()}
	}
	return f
}

func (r *randomRun) source() model.Source {
	if r.rng.IntN(5) == 0 {
		return model.SourceOperator
	}
	return model.SourceWorker
}

func (r *randomRun) noteClaim(c *model.ClaimResult) {
	if c != nil {
		r.fences[c.ID] = c.Fence()
	}
}

func (r *randomRun) create() {
	id := r.sq.exec(r.rng.IntN(2))
	c := createP(id, r.now)
	c.Lane = r.lanes[r.rng.IntN(2)]
	c.Priority = r.rng.IntN(4) * 100
	c.RequiredCapabilities = r.someCaps()
	if r.rng.IntN(3) == 0 {
		c.DelayUntil = r.later(20 * time.Second)
	}
	if r.rng.IntN(3) == 0 {
		c.Deadline = r.later(2 * time.Minute)
	}
	if r.rng.IntN(3) == 0 {
		c.AttemptTimeout = time.Duration(1+r.rng.IntN(30)) * time.Second
	}
	if r.rng.IntN(2) == 0 {
		c.RetryPolicy = model.RetryPolicy{MaxRetries: r.rng.IntN(4), Multiplier: 1 + float64(r.rng.IntN(300))/97,
			InitialDelay: time.Duration(1+r.rng.IntN(3000)) * time.Millisecond}
		if r.rng.IntN(3) == 0 {
			c.RetryPolicy.Backoff = model.BackoffFixed
			c.RetryPolicy.Delay = time.Duration(r.rng.IntN(5000)) * time.Millisecond
		}
	}
	c.MaxReclaims = r.rng.IntN(3)
	c.MaxReplays = r.rng.IntN(3)
	if r.rng.IntN(3) == 0 {
		c.IdempotencyKey = fmt.Sprintf("k%d", r.rng.IntN(3))
		c.IdempotencyTTL = time.Duration(1+r.rng.IntN(60)) * time.Second
	}
	if r.rng.IntN(2) == 0 {
		c.Payload = []byte{byte(r.rng.IntN(256)), 0, 'x'}
	}
	r.p.track(id)
	res, err := do(r.p, "create", func(s model.Store) (*model.ExecutionCreateResult, error) { return s.ExecutionCreate(bg, c) })
	if err == nil && !res.Duplicate {
		r.ids = append(r.ids, id)
	}
}

func (r *randomRun) grant() {
	p := &model.ClaimGrantIssueParams{ID: r.pick(), WorkerID: "w", WorkerInstanceID: r.wi(),
		Capabilities: r.someCaps(), GrantTTL: time.Duration(1+r.rng.IntN(10)) * time.Second, Now: r.now}
	if r.rng.IntN(2) == 0 {
		p.WorkerID = "w2"
	}
	_, _ = do(r.p, "grant", func(s model.Store) (*model.ClaimGrantIssueResult, error) { return s.ClaimGrantIssue(bg, p) })
}

func (r *randomRun) leaseReq() model.LeaseRequest {
	q := r.sq.req(r.wi(), time.Duration(1+r.rng.IntN(40))*time.Second)
	q.WorkerID = "w"
	if r.rng.IntN(4) == 0 {
		q.WorkerID = "w2"
	}
	return q
}

func (r *randomRun) claim() {
	p := &model.ExecutionClaimParams{ID: r.pick(), Capabilities: r.someCaps(), LeaseRequest: r.leaseReq(), Now: r.now}
	c, _ := do(r.p, "claim", func(s model.Store) (*model.ClaimResult, error) { return s.ExecutionClaim(bg, p) })
	r.noteClaim(c)
}

func (r *randomRun) grantAndClaim() {
	p := &model.ExecutionGrantAndClaimParams{ID: r.pick(), Capabilities: r.someCaps(), LeaseRequest: r.leaseReq(), Now: r.now}
	c, _ := do(r.p, "grant_and_claim", func(s model.Store) (*model.ClaimResult, error) { return s.ExecutionGrantAndClaim(bg, p) })
	r.noteClaim(c)
}

func (r *randomRun) claimNext() {
	p := &model.ExecutionClaimNextParams{Partition: r.rng.IntN(2), Lane: r.lanes[r.rng.IntN(2)],
		Capabilities: r.someCaps(), LiveCapabilities: r.someCaps(), ScanLimit: 1 + r.rng.IntN(5),
		LeaseRequest: r.leaseReq(), Now: r.now}
	res, err := do(r.p, "claim_next", func(s model.Store) (*model.ExecutionClaimNextResult, error) { return s.ExecutionClaimNext(bg, p) })
	if err == nil {
		r.noteClaim(res.Claimed)
	}
}

func (r *randomRun) complete() {
	id := r.pick()
	p := &model.ExecutionCompleteParams{ID: id, Source: r.source(), Result: []byte(fmt.Sprint(r.rng.IntN(3))), Now: r.now}
	if p.Source == model.SourceWorker {
		p.Fence = r.fence(id)
	}
	_, _ = do(r.p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) { return s.ExecutionComplete(bg, p) })
}

func (r *randomRun) fail() {
	id := r.pick()
	cats := []model.FailureCategory{"", model.FailureTransient, model.FailurePermanent, model.FailureTimeout,
		model.FailureCancelled, model.FailurePayloadInvalid, "made_up"}
	p := &model.ExecutionFailParams{ID: id, Source: r.source(), Reason: "r", Category: cats[r.rng.IntN(len(cats))], Now: r.now}
	if p.Source == model.SourceWorker {
		p.Fence = r.fence(id)
	}
	_, _ = do(r.p, "fail", func(s model.Store) (*model.ExecutionFailResult, error) { return s.ExecutionFail(bg, p) })
}

func (r *randomRun) delay() {
	id := r.pick()
	p := &model.ExecutionDelayParams{ID: id, Source: r.source(), DelayUntil: r.later(10 * time.Second), Now: r.now}
	if p.Source == model.SourceWorker {
		p.Fence = r.fence(id)
	}
	_, _ = do(r.p, "delay", func(s model.Store) (*model.ExecutionDelayResult, error) { return s.ExecutionDelay(bg, p) })
}

func (r *randomRun) cancel() {
	id := r.pick()
	p := &model.ExecutionCancelParams{ID: id, Source: r.source(), Reason: "c", Now: r.now}
	if p.Source == model.SourceWorker {
		p.Fence = r.fence(id)
	}
	_, _ = do(r.p, "cancel", func(s model.Store) (*model.ExecutionCancelResult, error) { return s.ExecutionCancel(bg, p) })
}

func (r *randomRun) renew() {
	id := r.pick()
	p := &model.LeaseRenewParams{ID: id, Fence: r.fence(id), LeaseTTL: time.Duration(1+r.rng.IntN(40)) * time.Second, Now: r.now}
	_, _ = do(r.p, "renew", func(s model.Store) (*model.LeaseRenewResult, error) { return s.LeaseRenew(bg, p) })
}

func (r *randomRun) markExpired() {
	p := &model.LeaseMarkExpiredParams{ID: r.pick(), Now: r.now}
	_, _ = do(r.p, "mark_expired", func(s model.Store) (*model.LeaseMarkExpiredResult, error) { return s.LeaseMarkExpired(bg, p) })
}

func (r *randomRun) revoke() {
	id := r.pick()
	p := &model.LeaseRevokeParams{ID: id, Reason: "rv", Now: r.now}
	if r.rng.IntN(2) == 0 {
		p.ExpectedLeaseID = r.fence(id).LeaseID
	}
	_, _ = do(r.p, "revoke", func(s model.Store) (*model.LeaseRevokeResult, error) { return s.LeaseRevoke(bg, p) })
}

func (r *randomRun) reclaimGrant() {
	p := &model.ReclaimGrantIssueParams{ID: r.pick(), WorkerID: "w", WorkerInstanceID: r.wi(),
		Capabilities: r.someCaps(), GrantTTL: time.Duration(1+r.rng.IntN(10)) * time.Second, Now: r.now}
	_, _ = do(r.p, "reclaim_grant", func(s model.Store) (*model.ReclaimGrantIssueResult, error) {
		return s.(model.GrantReclaimer).ReclaimGrantIssue(bg, p)
	})
}

func (r *randomRun) reclaim() {
	p := &model.ExecutionReclaimParams{ID: r.pick(), Capabilities: r.someCaps(), LeaseRequest: r.leaseReq(), Now: r.now}
	res, err := do(r.p, "reclaim", func(s model.Store) (*model.ExecutionReclaimResult, error) {
		return s.(model.GrantReclaimer).ExecutionReclaim(bg, p)
	})
	if err == nil {
		r.noteClaim(res.Claimed)
	}
}

func (r *randomRun) recover() {
	p := &model.ExecutionRecoverParams{ID: r.pick(), Now: r.now}
	_, _ = do(r.p, "recover", func(s model.Store) (*model.ExecutionRecoverResult, error) { return s.ExecutionRecover(bg, p) })
}

func (r *randomRun) expire() {
	p := &model.ExecutionExpireParams{ID: r.pick(), Reason: model.ExpireReason(1 + r.rng.IntN(2)), Now: r.now}
	_, _ = do(r.p, "expire", func(s model.Store) (*model.ExecutionExpireResult, error) { return s.ExecutionExpire(bg, p) })
}

func (r *randomRun) promote() {
	p := &model.ExecutionPromoteDelayedParams{ID: r.pick(), Lane: r.lanes[r.rng.IntN(2)], Now: r.now}
	_, _ = do(r.p, "promote", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
		return s.ExecutionPromoteDelayed(bg, p)
	})
}

func (r *randomRun) scan() {
	part := r.rng.IntN(2)
	p := &model.IndexScanDueParams{Partition: part, Index: model.IndexKind(1 + r.rng.IntN(4)), Now: r.now, Limit: 1 + r.rng.IntN(4)}
	for range 10 {
		res, err := do(r.p, "scan", func(s model.Store) (*model.IndexScanDueResult, error) { return s.IndexScanDue(bg, p) })
		if err != nil || !res.More {
			return
		}
		last := res.Items[len(res.Items)-1]
		p.After = &model.DueCursor{DueAt: last.DueAt, ID: last.ID}
	}
}

func (r *randomRun) routeUnblock() {
	p := &model.RouteUnblockParams{Partition: r.rng.IntN(2), Namespace: ns, Live: r.someCaps(), All: r.rng.IntN(4) == 0,
		Limit: 1 + r.rng.IntN(3), Now: r.now}
	_, _ = do(r.p, "route_unblock", func(s model.Store) (*model.RouteUnblockResult, error) { return s.RouteUnblock(bg, p) })
}

// randomBudget is the budget a random budget block names.
var randomBudget = model.BudgetID(model.UUID{15: 1})

var blockReasons = []model.BlockingReason{model.WaitingForBudget, model.WaitingForQuota,
	model.WaitingForCapableWorker, model.PausedByOperator, model.PausedByPolicy}

func (r *randomRun) block() {
	p := &model.ExecutionBlockParams{ID: r.pick(), Reason: blockReasons[r.rng.IntN(len(blockReasons))], Detail: "d", Now: r.now}
	if p.Reason == model.WaitingForBudget {
		p.Budget = randomBudget
	}
	_, _ = do(r.p, "block", func(s model.Store) (*model.ExecutionBlockResult, error) {
		return s.(model.Blocker).ExecutionBlock(bg, p)
	})
}

func (r *randomRun) unblock() {
	p := &model.ExecutionUnblockParams{ID: r.pick(), ExpectedReason: blockReasons[r.rng.IntN(len(blockReasons))], Now: r.now}
	_, _ = do(r.p, "unblock", func(s model.Store) (*model.ExecutionUnblockResult, error) {
		return s.(model.Blocker).ExecutionUnblock(bg, p)
	})
}

func (r *randomRun) priority() {
	p := &model.ExecutionChangePriorityParams{ID: r.pick(), Priority: r.rng.IntN(10000) - 500, Now: r.now}
	_, _ = do(r.p, "priority", func(s model.Store) (*model.ExecutionChangePriorityResult, error) {
		return s.ExecutionChangePriority(bg, p)
	})
}

func (r *randomRun) replay() {
	p := &model.ExecutionReplayParams{ID: r.pick(), Reason: "again", RequestedBy: "op", Now: r.now}
	_, _ = do(r.p, "replay", func(s model.Store) (*model.ExecutionReplayResult, error) { return s.ExecutionReplay(bg, p) })
}

func (r *randomRun) progress() {
	id := r.pick()
	p := &model.ExecutionUpdateProgressParams{ID: id, Fence: r.fence(id), Percent: r.rng.IntN(101), Message: "m", Now: r.now}
	_, _ = do(r.p, "progress", func(s model.Store) (*model.ExecutionUpdateProgressResult, error) {
		return s.ExecutionUpdateProgress(bg, p)
	})
}

func (r *randomRun) workers() {
	wi := r.wi()
	session := fmt.Sprintf("s%d", r.rng.IntN(2))
	ttl := time.Duration(1+r.rng.IntN(20)) * time.Second
	switch r.rng.IntN(5) {
	case 0:
		p := &model.WorkerRegisterParams{Namespace: ns, WorkerID: "w", WorkerInstanceID: wi, SessionID: session,
			Lanes: r.lanes[:1+r.rng.IntN(2)], Capabilities: r.someCaps(), TTL: ttl, Now: r.now}
		_, _ = do(r.p, "worker_register", func(s model.Store) (*model.WorkerRegisterResult, error) { return s.WorkerRegister(bg, p) })
	case 1:
		p := &model.WorkerHeartbeatParams{Namespace: ns, WorkerInstanceID: wi, SessionID: session, TTL: ttl, Now: r.now}
		_, _ = do(r.p, "worker_heartbeat", func(s model.Store) (*model.WorkerHeartbeatResult, error) { return s.WorkerHeartbeat(bg, p) })
	case 2:
		p := &model.WorkerDeregisterParams{Namespace: ns, WorkerInstanceID: wi, SessionID: session, Now: r.now}
		_, _ = do(r.p, "worker_deregister", func(s model.Store) (*model.WorkerDeregisterResult, error) { return s.WorkerDeregister(bg, p) })
	case 3:
		p := &model.WorkerExpireParams{Namespace: ns, Limit: 1 + r.rng.IntN(3), Now: r.now}
		_, _ = do(r.p, "worker_expire", func(s model.Store) (*model.WorkerExpireResult, error) { return s.WorkerExpire(bg, p) })
	default:
		p := &model.WorkerListParams{Namespace: ns, Now: r.now}
		_, _ = do(r.p, "worker_list", func(s model.Store) (*model.WorkerListResult, error) { return s.WorkerList(bg, p) })
	}
}
