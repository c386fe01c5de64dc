package proptest

import (
	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// drawPartition draws a partition: often that of an execution want
// accepts, else a lane's, sometimes any.
func (m *machine) drawPartition(t *rapid.T, want func(*model.ExecutionSnapshot) bool) int {
	if want != nil && !chance(t, 30, "untargeted_partition") {
		var parts []int
		for _, r := range m.execs {
			if s := m.snap(r.id); s != nil && want(s) {
				parts = append(parts, r.id.Partition())
			}
		}
		if len(parts) > 0 {
			return drawFrom(t, parts, "partition")
		}
	}
	if chance(t, 20, "any_partition") {
		return drawIndex(t, m.cfg.FlowPartitions, "partition")
	}
	return m.cfg.SoloPartition(drawFrom(t, lanes, "lane"))
}

func isRouteBlocked(s *model.ExecutionSnapshot) bool {
	return s.State.LifecyclePhase == model.PhaseRunnable && s.State.EligibilityState == model.BlockedByRoute
}

// hasTimer reports whether s has an entry in a timer index.
func hasTimer(s *model.ExecutionSnapshot) bool {
	v := s.State
	return v.LifecyclePhase == model.PhaseActive || v.EligibilityState == model.NotEligibleUntilTime || v.LifecyclePhase == model.PhaseSuspended ||
		(v.LifecyclePhase != model.PhaseTerminal && !s.Deadline.IsZero())
}

func (m *machine) actRouteUnblock(t *rapid.T) {
	p := &model.RouteUnblockParams{
		Partition: m.drawPartition(t, isRouteBlocked), Namespace: drawFrom(t, namespaces, "namespace"),
		Live:  drawCaps(t, "live", 70),
		Limit: rapid.IntRange(1, 3).Draw(t, "limit"), Now: m.now(),
	}
	if chance(t, 40, "live_all") {
		p.Live = capUniverse
	}
	if chance(t, 10, "all") {
		p.All, p.Live = true, nil
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Limit = 0
	case 1:
		p.Partition = -1
	case 2:
		p.Live = model.Capabilities{""}
	case 3:
		p.Namespace = ""
	}
	res, err := call(m, t, "RouteUnblock", p, model.Store.RouteUnblock)
	if bad >= 0 {
		m.expectValidation(t, "RouteUnblock", err)
		return
	}
	m.expect(t, err == nil, "RouteUnblock with valid input failed: %v", err)
	m.expect(t, len(res.Unblocked) <= p.Limit, "RouteUnblock unblocked %d, limit %d", len(res.Unblocked), p.Limit)
	for _, id := range res.Unblocked {
		prev := m.snap(id)
		m.expect(t, prev != nil && id.Partition() == p.Partition && prev.State.LifecyclePhase == model.PhaseRunnable &&
			prev.State.EligibilityState == model.BlockedByRoute && (p.All || prev.RequiredCapabilities.SubsetOf(p.Live)) &&
			prev.Namespace == p.Namespace,
			"RouteUnblock of %s unblocked %v (%+v, required %v, live %v)", p.Namespace, id, prev, prev.RequiredCapabilities, p.Live)
	}
}

func (m *machine) actPartitionDue(t *rapid.T) {
	p := &model.PartitionDueParams{Partition: drawIndex(t, m.cfg.FlowPartitions, "partition")}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Partition = m.cfg.FlowPartitions
	}
	res, err := call(m, t, "PartitionDue", p, model.Store.PartitionDue)
	if bad >= 0 {
		m.expectValidation(t, "PartitionDue", err)
		return
	}
	m.expect(t, err == nil, "PartitionDue failed: %v", err)
	if err != nil {
		return
	}
	n, routed := 0, false
	for id, x := range m.obs[0].Execs {
		if id.Partition() != p.Partition {
			continue
		}
		n++
		if x.Snapshot.State.LifecyclePhase == model.PhaseRunnable && x.Snapshot.State.EligibilityState == model.BlockedByRoute {
			routed = true
		}
	}
	m.expect(t, res.Executions == n && res.RouteBlocked == routed,
		"PartitionDue(p%d): %d executions, route blocked %v; the store lists %d, %v", p.Partition, res.Executions, res.RouteBlocked, n, routed)
}

func (m *machine) actPromote(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return s.State.EligibilityState == model.NotEligibleUntilTime
	})
	lane := drawFrom(t, lanes, "lane")
	if s := m.snap(id); s != nil && !chance(t, 10, "other_lane") {
		lane = s.Lane
	}
	p := &model.ExecutionPromoteDelayedParams{ID: id, Lane: lane, Force: chance(t, 30, "force"), Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Lane = "{fp:1}"
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionPromoteDelayed", p, model.Store.ExecutionPromoteDelayed)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionPromoteDelayed", err)
		return
	}
	m.expect(t, err == nil, "ExecutionPromoteDelayed failed: %v", err)
	m.checkPromote(t, prev, res, p.Force)
}

// checkPromote checks a promotion's outcome against the execution before
// it; a forced one (retry now) does not wait for the execution's time.
func (m *machine) checkPromote(t *rapid.T, prev *model.ExecutionSnapshot, res *model.ExecutionPromoteDelayedResult, force bool) {
	t.Helper()
	var want model.PromoteOutcome
	switch {
	case prev == nil:
		want = model.PromoteNotFoundCleaned
	case prev.State.LifecyclePhase != model.PhaseRunnable:
		want = model.PromoteNotRunnableCleaned
	case prev.State.EligibilityState != model.NotEligibleUntilTime:
		want = model.PromoteNotDelayedCleaned
	case prev.DelayUntil.After(m.now()) && !force:
		want = model.PromoteNotYetDue
	default:
		want = model.PromotePromoted
	}
	m.expect(t, res.Outcome == want, "ExecutionPromoteDelayed: %s, want %s", res.Outcome, want)
}

// actScanner does what the scanners do: it pages through the entries of one
// timer index due now (checking that the pages add up to the whole) and
// handles each as its scanner would.
func (m *machine) actScanner(t *rapid.T) {
	part := m.drawPartition(t, hasTimer)
	kind := drawFrom(t, scannedIndexes(true), "index")
	limit := rapid.IntRange(1, 3).Draw(t, "limit")
	var items []model.DueItem
	var after *model.DueCursor
	for page := 0; ; page++ {
		p := &model.IndexScanDueParams{Partition: part, Index: kind, Now: m.now(), After: after, Limit: limit}
		res, err := call(m, t, "IndexScanDue", p, model.Store.IndexScanDue)
		m.expect(t, err == nil, "IndexScanDue failed: %v", err)
		m.expect(t, len(res.Items) <= limit, "IndexScanDue returned %d items, limit %d", len(res.Items), limit)
		items = append(items, res.Items...)
		if !res.More || len(res.Items) == 0 || page > 100 {
			m.expect(t, !res.More || len(res.Items) > 0, "IndexScanDue: More without items")
			break
		}
		last := res.Items[len(res.Items)-1]
		after = &model.DueCursor{DueAt: last.DueAt, ID: last.ID}
	}
	if full := m.obs[0].Due[DueKey{part, kind}]; full != nil {
		m.expect(t, cmpEqual(items, full.Items), "IndexScanDue pages of %d add up to %+v, one scan gives %+v", limit, items, full.Items)
	}
	if len(items) > 0 {
		items = items[:1+drawIndex(t, len(items), "handle")]
	}
	for _, it := range items {
		prev := m.snap(it.ID)
		switch kind {
		case model.IndexLeaseExpiry:
			r, err := call(m, t, "LeaseMarkExpired", &model.LeaseMarkExpiredParams{ID: it.ID, Now: m.now()}, model.Store.LeaseMarkExpired)
			m.expect(t, err == nil, "LeaseMarkExpired failed: %v", err)
			if (r.Outcome == model.MarkExpiredMarked || r.Outcome == model.MarkExpiredAlreadyExpired ||
				r.Outcome == model.MarkExpiredAlreadyRevoked) && genBool.Draw(t, "recover") {
				m.observeQuiet(t)
				prev = m.snap(it.ID)
				rr, err := call(m, t, "ExecutionRecover", &model.ExecutionRecoverParams{ID: it.ID, Now: m.now()}, model.Store.ExecutionRecover)
				m.recovered(t, prev, rr, err)
			}
		case model.IndexAttemptTimeout, model.IndexExecutionDeadline:
			reason := model.ExpireAttemptTimeout
			if kind == model.IndexExecutionDeadline {
				reason = model.ExpireExecutionDeadline
			}
			r, err := call(m, t, "ExecutionExpire", &model.ExecutionExpireParams{ID: it.ID, Reason: reason, Now: m.now()}, model.Store.ExecutionExpire)
			m.expect(t, err == nil, "ExecutionExpire failed: %v", err)
			m.checkExpire(t, prev, reason, r)
		case model.IndexSuspensionTimeout:
			m.suspensionExpire(t, it.ID)
		case model.IndexWaitpointExpiry:
			m.waitpointExpire(t, it.ID)
		case model.IndexDelayed:
			r, err := call(m, t, "ExecutionPromoteDelayed", &model.ExecutionPromoteDelayedParams{ID: it.ID, Lane: it.Lane, Now: m.now()}, model.Store.ExecutionPromoteDelayed)
			m.expect(t, err == nil, "ExecutionPromoteDelayed failed: %v", err)
			m.checkPromote(t, prev, r, false)
		}
		m.observeQuiet(t)
	}
}
