package proptest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Retention and delete (model.RetentionStore, model.FlowDeleter): creates
// draw a retention, an operator deletes any execution or flow, and the
// trimmer's step deletes the due entries of a partition, whole flows
// included. A deleted execution leaves the machine's
// model (forget) and every observation; invariants.go ties the retention
// index to the records.

var retentions = []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second}

// drawRetention draws a create's retention (often none).
func drawRetention(t *rapid.T) model.Retention {
	if !chance(t, 40, "retention") {
		return model.Retention{}
	}
	return model.Retention{
		Completed: drawFrom(t, retentions, "retention_completed"),
		Failed:    drawFrom(t, retentions, "retention_failed"),
		Cancelled: drawFrom(t, retentions, "retention_cancelled"),
	}
}

// actDelete is an operator delete of any execution: a terminal one that
// is no flow member goes; the others are refused.
func (m *machine) actDelete(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseTerminal))
	p := &model.ExecutionDeleteParams{ID: id, Now: m.now()}
	if invalid(t, 1) == 0 {
		p.Now = time.Time{}
		_, err := call(m, t, "ExecutionDelete", p, optional(model.RetentionStore.ExecutionDelete))
		m.expectValidation(t, "ExecutionDelete", err)
		return
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionDelete", p, optional(model.RetentionStore.ExecutionDelete))
	var want *model.Error
	switch {
	case prev == nil:
		want = model.ErrNotFound
	case prev.State.LifecyclePhase != model.PhaseTerminal:
		want = model.ErrNotTerminal
	case !prev.Flow.IsZero():
		want = model.ErrInFlow
	}
	if want != nil {
		m.expect(t, errors.Is(err, want), "ExecutionDelete of %v: %v, want %s", prev, err, want.Code)
		return
	}
	m.expect(t, err == nil && res.Outcome == model.DeleteDeleted, "ExecutionDelete of a terminal execution: %+v %v", res, err)
	m.deleted(t, id, prev, res.Budgets)
}

// actRetentionTrim is the retention trimmer's visit of one partition: the
// due entries of its retention index are deleted; a flow member's entry
// names its flow, which FlowDelete{Due} deletes when it is due (or files
// at its due time). Later entries of a flow handled in this visit find
// their member gone (deleted) or their entry gone (filed again).
func (m *machine) actRetentionTrim(t *rapid.T) {
	part := m.drawPartition(t, isPhase(model.PhaseTerminal))
	// often where a flow member's entry is due: its flow's partition
	var flowParts []int
	for k, r := range m.obs[0].Due {
		if k.Index != model.IndexRetention {
			continue
		}
		for _, it := range r.Items {
			if s := m.snap(it.ID); s != nil && !s.Flow.IsZero() {
				flowParts = append(flowParts, k.Partition)
				break
			}
		}
	}
	if len(flowParts) > 0 && chance(t, 50, "trim_flow_partition") {
		slices.Sort(flowParts)
		part = drawFrom(t, flowParts, "trim_flow_part")
	}
	m.trimPartition(t, part)
}

// trimPartition is the trimmer's visit of partition part.
func (m *machine) trimPartition(t *rapid.T, part int) {
	scan := &model.IndexScanDueParams{Partition: part, Index: model.IndexRetention, Now: m.now(), Limit: rapid.IntRange(1, 4).Draw(t, "limit")}
	r, err := call(m, t, "IndexScanDue", scan, model.Store.IndexScanDue)
	m.expect(t, err == nil, "IndexScanDue(retention): %v", err)
	if err != nil {
		return
	}
	handled := map[model.FlowID]bool{}
	for _, it := range r.Items {
		prev := m.snap(it.ID)
		p := &model.ExecutionDeleteParams{ID: it.ID, Due: true, Now: m.now()}
		res, err := call(m, t, "ExecutionDelete", p, optional(model.RetentionStore.ExecutionDelete))
		m.expect(t, err == nil, "ExecutionDelete(due) of %v: %v", it.ID, err)
		if err != nil {
			return
		}
		want := model.DeleteDeleted
		switch {
		case prev == nil || m.gone[it.ID]:
			want = model.DeleteNotFoundCleaned
		case prev.State.LifecyclePhase != model.PhaseTerminal:
			want = model.DeleteNotTerminalCleaned
		case handled[prev.Flow]:
			want = model.DeleteNotYetDue // its entry went with the flow's
		case !prev.Flow.IsZero():
			want = model.DeleteInFlow
		}
		m.expect(t, res.Outcome == want, "ExecutionDelete(due) of %v: %v, want %v", it.ID, res.Outcome, want)
		switch res.Outcome {
		case model.DeleteDeleted:
			m.deleted(t, it.ID, prev, res.Budgets)
		case model.DeleteInFlow:
			m.expect(t, res.Flow == prev.Flow, "ExecutionDelete(due) of %v names flow %v, its flow is %v", it.ID, res.Flow, prev.Flow)
			handled[res.Flow] = true
			m.flowDelete(t, res.Flow, true)
		}
	}
}

// actFlowDelete deletes a flow, as an operator or as the trimmer (Due): a
// finished one goes with its members (when due), the others are refused
// or cleaned.
func (m *machine) actFlowDelete(t *rapid.T) {
	f := m.pickFlow(t, 10)
	due := chance(t, 15, "flow_delete_due") // mostly the trimmer's, after a member's entry came due
	if invalid(t, 1) == 0 {
		p := &model.FlowDeleteParams{Flow: f, Due: due}
		_, err := call(m, t, "FlowDelete", p, optional(model.FlowDeleter.FlowDelete))
		m.expectValidation(t, "FlowDelete", err)
		return
	}
	m.flowDelete(t, f, due)
}

// flowDelete calls FlowDelete of f and checks its answer against the
// observation before the step: the flow is finished when sealed or
// cancelled with every member terminal, and due at the latest of its
// members' terminal times plus their retentions (kept for good when one
// member is).
func (m *machine) flowDelete(t *rapid.T, f model.FlowID, due bool) {
	p := &model.FlowDeleteParams{Flow: f, Due: due, Now: m.now()}
	res, err := call(m, t, "FlowDelete", p, optional(model.FlowDeleter.FlowDelete))
	fo := m.flowObs(f)
	if fo == nil {
		if due {
			m.expect(t, err == nil && res.Outcome == model.DeleteNotFoundCleaned, "FlowDelete(due) of an unknown flow: %+v %v", res, err)
		} else {
			m.expect(t, errors.Is(err, model.ErrFlowNotFound), "FlowDelete of an unknown flow: %v", err)
		}
		return
	}
	live := ""
	if !fo.Snapshot.Sealed && fo.Snapshot.State != model.FlowCancelled {
		live = "open"
	}
	var dueAt time.Time
	keep := false
	for _, id := range fo.Members {
		s := m.snap(id)
		if live == "" && s.State.LifecyclePhase != model.PhaseTerminal {
			live = id.String()
		}
		d := s.Retention.For(s.State.TerminalOutcome)
		keep = keep || d == 0
		if at := s.TerminalAt.Add(d); at.After(dueAt) {
			dueAt = at
		}
	}
	switch {
	case live != "" && due:
		m.expect(t, err == nil && res.Outcome == model.DeleteNotTerminalCleaned, "FlowDelete(due) of a live flow (%s): %+v %v", live, res, err)
		return
	case live != "":
		var e *model.Error
		m.expect(t, errors.As(err, &e) && e.Code == model.CodeExecutionNotTerminal && e.Field == "Flow" && e.Detail == live,
			"FlowDelete of a live flow (%s): %v", live, err)
		return
	case due && (keep || dueAt.After(p.Now)):
		if keep {
			dueAt = time.Time{}
		}
		m.expect(t, err == nil && res.Outcome == model.DeleteNotYetDue && res.DueAt.Equal(dueAt),
			"FlowDelete(due) of a flow due at %v (kept for good %v): %+v %v", dueAt, keep, res, err)
		return
	}
	m.expect(t, err == nil && res.Outcome == model.DeleteDeleted && len(res.Members) == len(fo.Members),
		"FlowDelete of a finished flow of %d members: %+v %v", len(fo.Members), res, err)
	if err != nil {
		return
	}
	for i, dm := range res.Members {
		m.expect(t, dm.ID == fo.Members[i], "FlowDelete reports member %d %v, the flow has %v", i, dm.ID, fo.Members[i])
		m.deleted(t, dm.ID, m.snap(dm.ID), dm.Budgets)
	}
	m.flows = slices.DeleteFunc(m.flows, func(r *refFlow) bool { return r.id == f })
	m.goneFlows[f] = true
}

// deleted checks a delete's report, forgets the deleted execution's
// budget ledgers as the engine does, and takes it out of the model.
func (m *machine) deleted(t *rapid.T, id model.ExecutionID, prev *model.ExecutionSnapshot, got []model.BudgetID) {
	var budgets []model.BudgetID
	if prev != nil {
		budgets = prev.Budgets
	}
	m.expect(t, slices.Equal(got, budgets), "the delete of %v reports budgets %v, the record has %v", id, got, budgets)
	for _, b := range got {
		p := &model.BudgetReleaseParams{ID: b, Execution: id, Forget: true, Now: m.now()}
		_, err := call(m, t, "BudgetRelease", p, optional(model.AdmissionStore.BudgetRelease))
		m.expect(t, err == nil || errors.Is(err, model.ErrBudgetNotFound), "BudgetRelease(forget) of %v: %v", id, err)
	}
	m.forget(id)
}

// forget takes a deleted execution out of the machine's model.
func (m *machine) forget(id model.ExecutionID) {
	m.execs = slices.DeleteFunc(m.execs, func(r *refExec) bool { return r.id == id })
	delete(m.byID, id)
	for k, v := range m.idem {
		if v.id == id {
			delete(m.idem, k)
		}
	}
	for k := range m.strm.streams {
		if k.id == id {
			delete(m.strm.streams, k)
		}
	}
	delete(m.susp.suspend, id)
	for k := range m.susp.dedup {
		if k.exec == id {
			delete(m.susp.dedup, k)
		}
	}
	m.gone[id] = true
}

// actFlowRetire runs a small flow to its end in one step, so that flows
// whose members all have retentions finish often enough to be trimmed: a
// new flow of one to three members created into it (held), sealed, then
// cancelled with them (their cancelled-class retention mostly positive),
// and time advanced by up to twice the longest retention (the trimmer's
// action then often visits its partition); sometimes the trimmer's delete
// of the flow comes before the clock moves.
func (m *machine) actFlowRetire(t *rapid.T) {
	lane := drawFrom(t, lanes, "retire_lane")
	f := m.newFlowIn(t, m.cfg.SoloPartition(lane))
	if _, err := call(m, t, "FlowCreate", &model.FlowCreateParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowCreate)); err != nil {
		m.fatalf(t, "FlowCreate: %v", err)
	}
	m.flows = append(m.flows, &refFlow{id: f})
	for range rapid.IntRange(1, 3).Draw(t, "retire_members") {
		id := model.NewExecutionID(m.cfg.FlowPartition(f), m.nextUUID(t, ""))
		keep := drawFrom(t, retentions[1:], "retire_keep")
		if chance(t, 10, "retire_keep_forever") {
			keep = 0
		}
		p := &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lane, Kind: kinds[0], Flow: f,
			Retention: model.Retention{Cancelled: keep}, Now: m.now()}
		if _, err := call(m, t, "ExecutionCreate", p, model.Store.ExecutionCreate); err != nil {
			m.fatalf(t, "ExecutionCreate into a flow: %v", err)
		}
		r := &refExec{id: id, lane: lane}
		m.execs = append(m.execs, r)
		m.byID[id] = r
	}
	if chance(t, 70, "retire_seal") {
		if _, err := call(m, t, "FlowSeal", &model.FlowSealParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowSeal)); err != nil {
			m.fatalf(t, "FlowSeal: %v", err)
		}
	}
	cp := &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Reason: "retire", Now: m.now()}
	if _, err := call(m, t, "FlowCancel", cp, flowOp(model.FlowStore.FlowCancel)); err != nil {
		m.fatalf(t, "FlowCancel: %v", err)
	}
	if chance(t, 20, "retire_trim_early") {
		// The trimmer's FlowDelete{Due} of the finished flow before its
		// members' retentions have run out: not yet due (a flow is due
		// once every member is), and the flow stays.
		m.observeQuiet(t)
		m.flowDelete(t, f, true)
	}
	m.clock.Advance(ms(rapid.Int64Range(0, 60_000).Draw(t, "retire_advance_ms")))
}

// briefLane is a lane only actLaneRelease creates executions of, and each
// visit deletes every one it made.
const briefLane model.LaneID = "brief"

// actLaneRelease creates one to three executions of briefLane, cancels
// and deletes them: deleting the last one releases the lane in its
// partition, alike on every store (the scanners stop walking it).
// IndexTamper, the one operation that names a lane's index without an
// execution of it, takes the lane while an execution of it is left and
// refuses it (unknown_lane) after the last delete.
func (m *machine) actLaneRelease(t *rapid.T) {
	part := m.cfg.SoloPartition(briefLane)
	ids := make([]model.ExecutionID, rapid.IntRange(1, 3).Draw(t, "brief_count"))
	for i := range ids {
		ids[i] = m.createPlain(t, briefLane, part, model.FlowID{})
	}
	m.observeQuiet(t)
	probe := func(listed bool, when string) {
		p := &model.IndexTamperParams{ID: ids[0], Index: "lane:" + string(briefLane) + ":delayed", Action: model.RepairRemoved}
		_, err := call(m, t, "IndexTamper", p, tamperOn)
		var me *model.Error
		if listed {
			m.expect(t, err == nil, "IndexTamper of lane %s %s: %v", briefLane, when, err)
		} else {
			m.expect(t, errors.As(err, &me) && me.Code == model.CodeInvalidInput && me.Detail == "unknown_lane",
				"IndexTamper of lane %s %s: %v, want unknown_lane", briefLane, when, err)
		}
	}
	for _, id := range ids {
		mustCall(m, t, "ExecutionCancel", &model.ExecutionCancelParams{ID: id, Reason: "brief", Source: model.SourceOperator, Now: m.now()},
			model.Store.ExecutionCancel)
	}
	m.observeQuiet(t)
	for i, id := range ids {
		probe(true, fmt.Sprintf("with %d of its executions left", len(ids)-i))
		prev := m.snap(id)
		res := mustCall(m, t, "ExecutionDelete", &model.ExecutionDeleteParams{ID: id, Now: m.now()}, optional(model.RetentionStore.ExecutionDelete))
		m.expect(t, res.Outcome == model.DeleteDeleted, "ExecutionDelete of a cancelled execution: %+v", res)
		m.deleted(t, id, prev, res.Budgets)
	}
	probe(false, "after its last execution was deleted")
	m.observeQuiet(t)
}
