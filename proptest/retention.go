package proptest

import (
	"errors"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Retention and delete (model.RetentionStore): creates draw a retention,
// an operator deletes any execution, and the trimmer's step deletes the
// due entries of a partition. A deleted execution leaves the machine's
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
	m.deleted(t, id, prev, res)
}

// actRetentionTrim is the retention trimmer's visit of one partition: the
// due entries of its retention index are deleted, a flow member's
// dropped.
func (m *machine) actRetentionTrim(t *rapid.T) {
	part := m.drawPartition(t, isPhase(model.PhaseTerminal))
	scan := &model.IndexScanDueParams{Partition: part, Index: model.IndexRetention, Now: m.now(), Limit: rapid.IntRange(1, 4).Draw(t, "limit")}
	r, err := call(m, t, "IndexScanDue", scan, model.Store.IndexScanDue)
	m.expect(t, err == nil, "IndexScanDue(retention): %v", err)
	if err != nil {
		return
	}
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
		case prev == nil:
			want = model.DeleteNotFoundCleaned
		case prev.State.LifecyclePhase != model.PhaseTerminal:
			want = model.DeleteNotTerminalCleaned
		case !prev.Flow.IsZero():
			want = model.DeleteInFlow
		}
		m.expect(t, res.Outcome == want, "ExecutionDelete(due) of %v: %v, want %v", it.ID, res.Outcome, want)
		if res.Outcome == model.DeleteDeleted {
			m.deleted(t, it.ID, prev, res)
		}
	}
}

// deleted checks a delete's report, forgets the deleted execution's
// budget ledgers as the engine does, and takes it out of the model.
func (m *machine) deleted(t *rapid.T, id model.ExecutionID, prev *model.ExecutionSnapshot, res *model.ExecutionDeleteResult) {
	var budgets []model.BudgetID
	if prev != nil {
		budgets = prev.Budgets
	}
	m.expect(t, slices.Equal(res.Budgets, budgets), "ExecutionDelete of %v reports budgets %v, the record has %v", id, res.Budgets, budgets)
	for _, b := range res.Budgets {
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
