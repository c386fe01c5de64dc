package memstore

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// The repairing index reconciler (model.IndexRepairer; valkeystore's
// lua/index_repair.lua) and its test hook (model.IndexTamperer). What an
// execution belongs in is model.ExpectedIndexes of its record (facts);
// what holds it is every index slot of its partition (slots), the ones
// ExecutionIndexes reads.

// facts are the fields of e its index membership follows from.
func (e *execution) facts() model.IndexFacts {
	f := model.IndexFacts{
		Lane: e.lane, Phase: e.lifecyclePhase, Ownership: e.ownershipState,
		Eligibility: e.eligibilityState, Outcome: e.terminalOutcome, Priority: e.priority,
		CreatedAt: e.createdAt, LastTransitionAt: e.lastTransitionAt, DelayUntil: e.delayUntil,
		TerminalAt: e.terminalAt, Deadline: e.deadline, TimeoutAt: e.timeoutAt,
		LeaseRevokedAt: e.leaseRevokedAt, Retention: e.keeps(), PendingWaitpointExpiry: e.nextPendingExpiry(),
	}
	if e.lease != nil {
		f.LeaseExpiresAt, f.LeaseInstance = e.lease.expiresAt, e.lease.workerInstanceID
	}
	if e.lifecyclePhase == model.PhaseSuspended && e.susp != nil && e.susp.open() {
		f.SuspensionTimeoutAt = e.susp.timeoutAt
	}
	return f
}

// slot is one index of a partition: a sorted set or an id set.
type slot struct {
	name string
	z    *zset
	ids  *idset
}

func (sl slot) get(id model.ExecutionID) (int64, bool) {
	if sl.z != nil {
		v, ok := sl.z.scores[id]
		return v, ok
	}
	return 0, sl.ids.has(id)
}

func (sl slot) put(id model.ExecutionID, score int64) {
	if sl.z != nil {
		sl.z.add(id, score)
		return
	}
	sl.ids.add(id)
}

func (sl slot) drop(id model.ExecutionID) {
	if sl.z != nil {
		sl.z.remove(id)
		return
	}
	sl.ids.remove(id)
}

// laneSlots are the indexes of lane l named prefix ("lane:<L>:").
func laneSlots(prefix string, l *laneIndexes, out []slot) []slot {
	out = append(out,
		slot{name: prefix + "eligible", z: l.eligible}, slot{name: prefix + "delayed", z: l.delayed},
		slot{name: prefix + "active", z: l.active}, slot{name: prefix + "terminal", z: l.terminal},
		slot{name: prefix + "suspended", z: l.suspended})
	for _, es := range blockedStates {
		out = append(out, slot{name: prefix + blockedIndex(es), z: l.blocked[es]})
	}
	return out
}

// slots lists the partition's indexes the reconciler repairs (the worker
// lease sets are the caller's).
func (p *partition) slots() []slot {
	var out []slot
	for _, name := range p.laneNames {
		out = laneSlots("lane:"+string(name)+":", p.lanes[name], out)
	}
	return append(out,
		slot{name: "lease_expiry", z: p.leaseExpiry}, slot{name: "attempt_timeout", z: p.attemptTimeout},
		slot{name: "execution_deadline", z: p.deadline}, slot{name: "suspended", ids: p.suspended},
		slot{name: model.IndexSuspensionTimeout.String(), z: p.suspTimeout},
		slot{name: model.IndexWaitpointExpiry.String(), z: p.wpExpiry},
		slot{name: model.IndexRetention.String(), z: p.retention}, slot{name: "all_executions", ids: p.all})
}

// IndexRepair implements model.IndexRepairer.
func (s *Store) IndexRepair(ctx context.Context, p *model.IndexRepairParams) (*model.IndexRepairResult, error) {
	return withLock(s, ctx, p.Validate(s.cfg), func() (*model.IndexRepairResult, error) {
		res := &model.IndexRepairResult{}
		pt := s.parts[p.Partition]
		if pt == nil {
			return res, nil
		}
		// collect the page first: repairs change all_executions
		var ids []model.ExecutionID
		more := false
		pt.all.tree.Ascend(p.Cursor, func(id model.ExecutionID) bool {
			if !p.Cursor.IsZero() && id == p.Cursor {
				return true
			}
			if len(ids) == p.Limit {
				more = true
				return false
			}
			ids = append(ids, id)
			return true
		})
		res.Examined = len(ids)
		if more {
			res.Next = ids[len(ids)-1]
		}
		slots := pt.slots()
		for _, id := range ids {
			e := s.execs[id]
			if e != nil && !p.Filter.Matches(e.namespace, e.tags) {
				continue
			}
			res.Repairs = append(res.Repairs, s.repairOne(pt, slots, id, e, p.DryRun)...)
		}
		model.SortRepairs(res.Repairs)
		return res, nil
	})
}

// repairOne repairs the index entries of id (e nil: a dangling
// all_executions member, which belongs in no index).
func (s *Store) repairOne(pt *partition, slots []slot, id model.ExecutionID, e *execution, dry bool) []model.IndexRepair {
	want := make(map[string]model.ExpectedIndex)
	if e != nil {
		for _, x := range model.ExpectedIndexes(e.facts()) {
			want[x.Index] = x
		}
	}
	all := slots
	for w, set := range pt.workerLeases {
		all = append(all, slot{name: "worker:" + string(w) + ":leases", ids: set})
	}
	var out []model.IndexRepair
	seen := make(map[string]bool, len(want))
	// a flow member's retention entry stands for its flow (FlowDelete
	// moves and drops it): the flow's to keep, not the record's
	_, inFlow := s.flowOf[id]
	inFlow = inFlow && e != nil
	for _, sl := range all {
		if inFlow && sl.z == pt.retention {
			continue
		}
		got, has := sl.get(id)
		x, ok := want[sl.name]
		seen[sl.name] = ok
		switch {
		case has && !ok:
			out = append(out, model.IndexRepair{ExecutionID: id, Index: sl.name, Action: model.RepairRemoved, OldScore: got})
			if !dry {
				sl.drop(id)
				s.dropEmptyWorkerSet(pt, sl)
			}
		case !has && ok:
			out = append(out, model.IndexRepair{ExecutionID: id, Index: sl.name, Action: model.RepairAdded, Score: x.Score})
			if !dry {
				s.file(e, sl, x.Score)
			}
		case has && x.Scored && got != x.Score:
			out = append(out, model.IndexRepair{ExecutionID: id, Index: sl.name, Action: model.RepairRescored, Score: x.Score, OldScore: got})
			if !dry {
				s.file(e, sl, x.Score)
			}
		}
	}
	// an expected index no slot stands for: the holder's lease set, gone
	if e != nil && e.lease != nil {
		name := "worker:" + string(e.lease.workerInstanceID) + ":leases"
		if !seen[name] {
			out = append(out, model.IndexRepair{ExecutionID: id, Index: name, Action: model.RepairAdded})
			if !dry {
				pt.wl(e.lease.workerInstanceID).add(id)
			}
		}
	}
	if e != nil {
		out = append(out, s.repairGroup(e, dry)...)
	}
	return out
}

// group is the blocked group e's record puts it in: its name, the group
// and whether it is in one (model.RouteGroupIndex).
func (s *Store) group(e *execution) (string, *zset, bool) {
	if e.lifecyclePhase != model.PhaseRunnable {
		return "", nil, false
	}
	_, l := s.indexesOf(e)
	switch e.eligibilityState {
	case model.BlockedByRoute:
		csv := e.requiredCaps.CSV()
		return model.RouteGroupIndex(e.lane, e.namespace, csv), l.routeGroups[routeMember(e.namespace, csv)], true
	case model.BlockedByBudget:
		// (blocked with no budget recorded: in no group, as admLeaveGroup)
		if model.UUID(e.blockedBudget).IsZero() {
			return "", nil, false
		}
		return model.BudgetGroupIndex(e.lane, e.blockedBudget), l.budgetGroups[e.blockedBudget], true
	case model.BlockedByQuota:
		if model.UUID(e.quota).IsZero() {
			return "", nil, false
		}
		return model.QuotaGroupIndex(e.lane, e.quota, e.quotaKey), l.quotaGroups[bucketOf(e)], true
	}
	return "", nil, false
}

// repairGroup files e, blocked, in its group when it is missing, as block
// does (at its last transition time); a stray member is left to the
// unblock operations, which drop it.
func (s *Store) repairGroup(e *execution, dry bool) []model.IndexRepair {
	name, g, ok := s.group(e)
	if !ok {
		return nil
	}
	if g != nil {
		if _, has := g.scores[e.id]; has {
			return nil
		}
	}
	at := e.lastTransitionAt
	if !dry {
		_, l := s.indexesOf(e)
		if e.eligibilityState == model.BlockedByRoute {
			key := routeMember(e.namespace, e.requiredCaps.CSV())
			if g == nil {
				g = newZset()
				l.routeGroups[key] = g
			}
			g.add(e.id, at)
		} else {
			l.admJoinGroup(e, e.eligibilityState, e.blockedBudget, at)
		}
	}
	return []model.IndexRepair{{ExecutionID: e.id, Index: name, Action: model.RepairAdded, Score: at}}
}

// file puts e in sl with score; the eligible index through addEligible,
// which tells the lane's waiting workers.
func (s *Store) file(e *execution, sl slot, score int64) {
	if _, l := s.indexesOf(e); sl.z == l.eligible {
		s.addEligible(e)
		return
	}
	sl.put(e.id, score)
}

// dropEmptyWorkerSet forgets a worker lease set sl emptied, as clearLease
// does.
func (s *Store) dropEmptyWorkerSet(pt *partition, sl slot) {
	if sl.ids == nil || sl.ids.len() > 0 {
		return
	}
	for w, set := range pt.workerLeases {
		if set == sl.ids {
			delete(pt.workerLeases, w)
		}
	}
}

// IndexTamper implements model.IndexTamperer, a test hook.
func (s *Store) IndexTamper(ctx context.Context, p *model.IndexTamperParams) error {
	_, err := withLock(s, ctx, p.Validate(s.cfg), func() (struct{}, error) {
		pt := s.part(p.ID.Partition())
		if lane, _, ok := model.SplitGroupIndex(p.Index); ok {
			return struct{}{}, s.tamperGroup(pt, lane, p)
		}
		var sl slot
		if lane, name, ok := model.SplitLaneIndex(p.Index); ok {
			l := pt.lanes[lane]
			if l == nil {
				return struct{}{}, model.InvalidField("Index", "unknown_lane")
			}
			for _, c := range laneSlots(string(lane), l, nil) {
				if c.name == string(lane)+name {
					sl = c
				}
			}
		} else {
			for _, c := range pt.slots() {
				if c.name == p.Index {
					sl = c
				}
			}
		}
		if p.Action == model.RepairRemoved {
			sl.drop(p.ID)
		} else {
			sl.put(p.ID, p.Score)
		}
		return struct{}{}, nil
	})
	return err
}

// tamperGroup takes p.ID out of the blocked group p.Index names, leaving
// the group listed, as index_tamper.lua does.
func (s *Store) tamperGroup(pt *partition, lane model.LaneID, p *model.IndexTamperParams) error {
	l := pt.lanes[lane]
	if l == nil {
		return model.InvalidField("Index", "unknown_lane")
	}
	for key, g := range l.routeGroups {
		if "lane:"+string(lane)+":route:"+key == p.Index {
			g.remove(p.ID)
		}
	}
	for b, g := range l.budgetGroups {
		if model.BudgetGroupIndex(lane, b) == p.Index {
			g.remove(p.ID)
		}
	}
	for k, g := range l.quotaGroups {
		if model.QuotaGroupIndex(lane, k.ID, k.Key) == p.Index {
			g.remove(p.ID)
		}
	}
	return nil
}
