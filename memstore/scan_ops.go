package memstore

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionPromoteDelayed implements model.ScanStore.
func (s *Store) ExecutionPromoteDelayed(ctx context.Context, p *model.ExecutionPromoteDelayedParams) (*model.ExecutionPromoteDelayedResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.ExecutionPromoteDelayedResult, error) {
		now := ms(p.Now)
		status := func(st model.PromoteOutcome) (*model.ExecutionPromoteDelayedResult, error) {
			return &model.ExecutionPromoteDelayedResult{Outcome: st}, nil
		}
		clean := func() {
			if pt := s.parts[p.ID.Partition()]; pt != nil {
				if l := pt.lanes[p.Lane]; l != nil {
					l.delayed.remove(p.ID)
				}
			}
		}
		e := s.execs[p.ID]
		switch {
		case e == nil:
			clean()
			return status(model.PromoteNotFoundCleaned)
		case e.lifecyclePhase != model.PhaseRunnable:
			clean()
			return status(model.PromoteNotRunnableCleaned)
		case e.eligibilityState != model.NotEligibleUntilTime:
			clean()
			return status(model.PromoteNotDelayedCleaned)
		case e.delayUntil > now && !p.Force:
			return status(model.PromoteNotYetDue)
		}
		s.removeFromLane(e)
		e.delayUntil = 0
		s.setState(e, now, model.PhaseRunnable, model.OwnershipUnowned, model.EligibleNow, model.WaitingForWorker, model.OutcomeNone, e.attemptState)
		s.addEligible(e)
		return status(model.PromotePromoted)
	})
}

// IndexScanDue implements model.ScanStore.
func (s *Store) IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.IndexScanDueResult, error) {
		now := ms(p.Now)
		res := &model.IndexScanDueResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		type source struct {
			z    *zset
			lane model.LaneID
		}
		var sources []source
		switch p.Index {
		case model.IndexLeaseExpiry:
			sources = []source{{z: pt.leaseExpiry}}
		case model.IndexAttemptTimeout:
			sources = []source{{z: pt.attemptTimeout}}
		case model.IndexExecutionDeadline:
			sources = []source{{z: pt.deadline}}
		case model.IndexSuspensionTimeout:
			sources = []source{{z: pt.suspTimeout}}
		case model.IndexWaitpointExpiry:
			sources = []source{{z: pt.wpExpiry}}
		case model.IndexRetention:
			sources = []source{{z: pt.retention}}
		case model.IndexDelayed:
			for _, name := range pt.laneNames {
				sources = append(sources, source{z: pt.lanes[name].delayed, lane: name})
			}
		}
		pivot := zitem{score: math.MinInt64}
		if p.After != nil {
			pivot = zitem{score: ms(p.After.DueAt), id: p.After.ID}
		}
		type cand struct {
			it   zitem
			lane model.LaneID
		}
		var due []cand
		next := int64(0)
		for _, src := range sources {
			n := 0
			src.z.ascend(pivot, func(it zitem) bool {
				if p.After != nil && !zless(pivot, it) {
					return true // the cursor itself is exclusive
				}
				if it.score > now {
					return false
				}
				due = append(due, cand{it, src.lane})
				n++
				return n <= p.Limit
			})
			// earliest entry not yet due, for the scanner's next wake-up
			src.z.ascend(zitem{score: now + 1}, func(it zitem) bool {
				if next == 0 || it.score < next {
					next = it.score
				}
				return false
			})
		}
		slices.SortFunc(due, func(a, b cand) int {
			if zless(a.it, b.it) {
				return -1
			}
			if zless(b.it, a.it) {
				return 1
			}
			return strings.Compare(string(a.lane), string(b.lane))
		})
		if len(due) > p.Limit {
			due = due[:p.Limit]
			res.More = true
		}
		filter := !p.Filter.IsZero()
		for _, c := range due {
			if filter {
				if e := s.execs[c.it.id]; e != nil && !p.Filter.Matches(e.namespace, e.tags) {
					continue // examined, left out: LastSeen passes it
				}
			}
			res.Items = append(res.Items, model.DueItem{ID: c.it.id, Lane: c.lane, DueAt: tm(c.it.score)})
		}
		if len(due) > 0 {
			last := due[len(due)-1].it
			res.LastSeen = &model.DueCursor{ID: last.id, DueAt: tm(last.score)}
		}
		res.NextDueAt = tm(next)
		return res, nil
	})
}

// PartitionDue implements model.ScanStore.
func (s *Store) PartitionDue(ctx context.Context, p *model.PartitionDueParams) (*model.PartitionDueResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.PartitionDueResult, error) {
		res := &model.PartitionDueResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		first := func(z *zset) int64 {
			if it, ok := z.tree.Min(); ok {
				return it.score
			}
			return 0
		}
		res.LeaseExpiry = tm(first(pt.leaseExpiry))
		res.AttemptTimeout = tm(first(pt.attemptTimeout))
		res.ExecutionDeadline = tm(first(pt.deadline))
		res.SuspensionTimeout = tm(first(pt.suspTimeout))
		res.WaitpointExpiry = tm(first(pt.wpExpiry))
		res.Retention = tm(first(pt.retention))
		var delayed int64
		for _, name := range pt.laneNames {
			l := pt.lanes[name]
			if d := first(l.delayed); d != 0 && (delayed == 0 || d < delayed) {
				delayed = d
			}
			if len(l.routeGroups) > 0 {
				res.RouteBlocked = true
			}
			if l.hasAdmissionGroups() {
				res.AdmissionBlocked = true
			}
		}
		res.Delayed = tm(delayed)
		res.QuotaReleasePending = pt.releases.len() > 0
		res.Executions = pt.all.len()
		return res, nil
	})
}

// RouteUnblock implements model.ScanStore.
func (s *Store) RouteUnblock(ctx context.Context, p *model.RouteUnblockParams) (*model.RouteUnblockResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.RouteUnblockResult, error) {
		live, _ := model.NormalizeCapabilities("live", p.Live)
		now := ms(p.Now)
		filter := !p.Filter.IsZero()
		res := &model.RouteUnblockResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		for _, name := range pt.laneNames {
			l := pt.lanes[name]
			prefix := string(p.Namespace) + ":"
			keys := make([]string, 0, len(l.routeGroups))
			for k := range l.routeGroups {
				if strings.HasPrefix(k, prefix) {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, key := range keys {
				req, _ := model.ParseCapabilityCSV("required_capabilities", key[len(prefix):])
				if !p.All && !req.SubsetOf(live) {
					continue
				}
				g := l.routeGroups[key]
				var ids []model.ExecutionID
				g.scan(func(it zitem) bool {
					if len(res.Unblocked)+len(ids) >= p.Limit {
						res.More = true
						return false
					}
					if filter {
						// an execution the filter does not match stays blocked
						// and does not count towards Limit
						if e := s.execs[it.id]; e != nil && !p.Filter.Matches(e.namespace, e.tags) {
							return true
						}
					}
					ids = append(ids, it.id)
					return true
				})
				for _, id := range ids {
					e := s.execs[id]
					if e == nil || e.lifecyclePhase != model.PhaseRunnable || e.eligibilityState != model.BlockedByRoute ||
						e.blockingReason != model.WaitingForCapableWorker {
						g.remove(id)
						l.blocked[model.BlockedByRoute].remove(id)
						continue
					}
					s.unblock(e, now)
					res.Unblocked = append(res.Unblocked, id)
				}
				if g.len() == 0 {
					delete(l.routeGroups, key)
				}
				if res.More {
					return res, nil
				}
			}
		}
		return res, nil
	})
}
