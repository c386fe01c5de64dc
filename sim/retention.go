package sim

import (
	"context"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// The retention workload (issue 14): a quarter of the submissions of the
// plain kinds carry a short retention (30 s or 2 min per outcome class),
// so the engines' retention trimmers delete them during the run, and an
// operator deletes acknowledged executions at random (Engine.Delete). The
// wrapper faults ExecutionDelete like any call.
//
// Checked: a delete applies only to a terminal execution that belongs to
// no flow; the trimmer's delete (Due) only once the execution's retention
// for its outcome has run out since it ended; a deleted execution stays
// gone (nothing reads it again: its id is never reused). Deleted
// executions leave the acknowledged set the invariants and the drain
// check.

var _ model.RetentionStore = (*Store)(nil)

// ExecutionDelete implements model.RetentionStore.
func (s *Store) ExecutionDelete(ctx context.Context, p *model.ExecutionDeleteParams) (*model.ExecutionDeleteResult, error) {
	return call(s, "Delete", p, s.Store.(model.RetentionStore).ExecutionDelete)
}

// retentionOpts gives a quarter of the plain kinds' submissions a short
// retention.
func (w *world) retentionOpts(o *flowfabric.SubmitOpts, kind model.Kind) {
	if w.o.NoRetention || !plainKind(kind) || w.rng.IntN(4) != 0 {
		return
	}
	short := []time.Duration{0, 30 * time.Second, 2 * time.Minute}
	o.Retention = flowfabric.Retention{Completed: pick(w, short), Failed: pick(w, short), Cancelled: pick(w, short)}
}

func plainKind(k model.Kind) bool {
	for _, p := range kinds {
		if p == k {
			return true
		}
	}
	return false
}

// beforeDelete reads the execution a delete is about to remove.
func (w *world) beforeDelete(op string, p any) {
	if op != "Delete" {
		return
	}
	dp := p.(*model.ExecutionDeleteParams)
	w.preDelete = nil
	if s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: dp.ID}); err == nil {
		w.preDelete = s
	}
}

// afterDelete checks a delete that applied.
func (w *world) afterDelete(op string, p any, r any, err error) {
	if op != "Delete" || err != nil {
		return
	}
	dp := p.(*model.ExecutionDeleteParams)
	res, _ := r.(*model.ExecutionDeleteResult)
	if res == nil || res.Outcome != model.DeleteDeleted {
		return
	}
	pre, name := w.preDelete, w.alias(dp.ID)
	switch {
	case pre == nil:
		w.violate("%s deleted, but it did not exist", name)
	case pre.State.LifecyclePhase != model.PhaseTerminal:
		w.violate("%s deleted while %s", name, pre.State.LifecyclePhase)
	case !pre.Flow.IsZero():
		w.violate("%s deleted on its own while a member of flow %v", name, pre.Flow)
	case dp.Due:
		keep := pre.Retention.For(pre.State.TerminalOutcome)
		if keep == 0 || dp.Now.Before(pre.TerminalAt.Add(keep)) {
			w.violate("%s trimmed at %v: it ended %s at %v with a retention of %v", name, dp.Now.Sub(start),
				pre.State.TerminalOutcome, pre.TerminalAt.Sub(start), keep)
		}
	}
	if w.deleted[dp.ID] {
		w.violate("%s deleted twice", name)
	}
	w.deleted[dp.ID] = true
	w.stats.Deleted++
	if dp.Due {
		w.stats.Trimmed++
	}
}

// liveAcked are the acknowledged executions not deleted.
func (w *world) liveAcked() []model.ExecutionID {
	out := make([]model.ExecutionID, 0, len(w.acked))
	for _, id := range w.acked {
		if !w.deleted[id] {
			out = append(out, id)
		}
	}
	return out
}
