package memstore

import (
	"slices"

	"github.com/flowfabric/flowfabric/model"
)

// Deleting terminal executions and finished flows, and the retention
// entries a flow's members stand for (valkeystore's lua/lib/retention.lua;
// the operations are in retention_ops.go).

// deleteExec removes terminal e and everything it owns from the store:
// its record (attempts, history, streams, suspension and signals are
// fields of it), its waitpoints and every index entry.
func (s *Store) deleteExec(pt *partition, e *execution) {
	from := e.counted()
	s.countMove(e, from, 0)
	ep := s.part(e.id.Partition())
	_, kept := ep.counts[countKey{e.namespace, e.lane, e.kind, from}]
	s.removeFromLane(e)
	pt.retention.remove(e.id)
	pt.all.remove(e.id)
	pt.wpExpiry.remove(e.id)
	pt.suspTimeout.remove(e.id)
	pt.suspended.remove(e.id)
	for _, w := range e.waitpoints {
		delete(pt.waitpoints, w.id)
	}
	if e.idemKey != "" {
		ik := idemKey{e.id.Partition(), e.namespace, e.idemKey}
		if ent, ok := s.idem[ik]; ok && ent.id == e.id {
			delete(s.idem, ik)
			s.idemGC.tree.Delete(idemItem{ent.expiresAt, ik})
		}
	}
	delete(s.execs, e.id)
	s.execs = shrink(s.execs, &s.execPeak)
	// the last execution of its counter may be the lane's last
	if from != 0 && !kept {
		ep.releaseLane(e.lane)
	}
}

// releaseLane forgets lane l of p once p holds no execution of it, as
// lane_release (valkeystore/lua/lib/retention.lua) drops it from I:lanes:
// no counter names it, its indexes are empty and none of its blocked groups
// is listed. The scanners walk p's lanes, so a lane whose executions are
// all deleted stops costing their passes anything; the next create lists
// it again.
func (p *partition) releaseLane(l model.LaneID) {
	li := p.lanes[l]
	if li == nil {
		return
	}
	for k := range p.counts {
		if k.lane == l {
			return
		}
	}
	for _, z := range []*zset{li.eligible, li.delayed, li.terminal, li.suspended} {
		if z.len() > 0 {
			return
		}
	}
	for _, z := range li.blocked {
		if z.len() > 0 {
			return
		}
	}
	if len(li.routeGroups) > 0 || len(li.budgetGroups) > 0 || len(li.quotaGroups) > 0 {
		return
	}
	delete(p.lanes, l)
	if i, ok := slices.BinarySearch(p.laneNames, l); ok {
		p.laneNames = slices.Delete(p.laneNames, i, i+1)
	}
}

// flowUnfinished names what keeps f from being deleted: "open" when it is
// neither sealed nor cancelled, else its first member that is not
// terminal ("": f is finished).
func (s *Store) flowUnfinished(f *flowRec) string {
	if !f.sealed && f.state != model.FlowCancelled {
		return "open"
	}
	live := ""
	f.members.each(func(id model.ExecutionID) {
		if e := s.execs[id]; live == "" && e != nil && e.lifecyclePhase != model.PhaseTerminal {
			live = id.String()
		}
	})
	return live
}

// flowDue is when finished flow f's retention runs out: the latest of its
// members' terminal times plus their retentions (keep: a member is kept
// for good, and so is f).
func (s *Store) flowDue(f *flowRec) (at int64, keep bool) {
	f.members.each(func(id model.ExecutionID) {
		e := s.execs[id]
		if e == nil {
			return
		}
		d := e.keeps().For(e.terminalOutcome)
		if d == 0 {
			keep = true
		}
		at = max(at, e.terminalAt+d.Milliseconds())
	})
	return at, keep
}

// flowRefile replaces f's members' retention entries by one on its first
// member, due at (none when keep).
func (s *Store) flowRefile(f *flowRec, at int64, keep bool) {
	pt := s.part(s.cfg.FlowPartition(f.id))
	first, found := model.ExecutionID{}, false
	f.members.each(func(id model.ExecutionID) {
		pt.retention.remove(id)
		if !found {
			first, found = id, true
		}
	})
	if !keep && found {
		pt.retention.add(first, at)
	}
}

// flowFinishedRefile files finished f's one retention entry (FlowSeal and
// FlowCancel, which can finish a flow without a member ending).
func (s *Store) flowFinishedRefile(f *flowRec) {
	if s.flowUnfinished(f) == "" {
		at, keep := s.flowDue(f)
		s.flowRefile(f, at, keep)
	}
}
