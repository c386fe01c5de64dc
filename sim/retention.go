package sim

import (
	"context"
	"slices"
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
// A third of the flows submitted without an idempotency key carry a
// short retention too, so the trimmer deletes them whole once all their
// members' retentions ran out, and an operator deletes such flows at
// random (Engine.DeleteFlow). The wrapper faults FlowDelete like any call.
//
// Checked: a delete applies only to a terminal execution that belongs to
// no flow; the trimmer's delete (Due) only once the execution's retention
// for its outcome has run out since it ended; a flow delete only to a
// sealed or cancelled flow whose members are all terminal, and with Due
// only once every member's retention has run out, reporting exactly its
// members; a deleted execution stays gone (nothing reads it again: its id
// is never reused). Deleted executions leave the acknowledged set the
// invariants and the drain check.

var (
	_ model.RetentionStore = (*Store)(nil)
	_ model.FlowDeleter    = (*Store)(nil)
)

// ExecutionDelete implements model.RetentionStore.
func (s *Store) ExecutionDelete(ctx context.Context, p *model.ExecutionDeleteParams) (*model.ExecutionDeleteResult, error) {
	return call(s, "Delete", p, s.Store.(model.RetentionStore).ExecutionDelete)
}

// FlowDelete implements model.FlowDeleter.
func (s *Store) FlowDelete(ctx context.Context, p *model.FlowDeleteParams) (*model.FlowDeleteResult, error) {
	return call(s, "FlowDelete", p, s.Store.(model.FlowDeleter).FlowDelete)
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

// beforeDelete reads the execution a delete is about to remove, or the
// flow and members a flow delete is.
func (w *world) beforeDelete(op string, p any) {
	if op == "FlowDelete" {
		w.beforeFlowDelete(p.(*model.FlowDeleteParams))
		return
	}
	if op != "Delete" {
		return
	}
	dp := p.(*model.ExecutionDeleteParams)
	w.preDelete = nil
	if s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: dp.ID}); err == nil {
		w.preDelete = s
	}
}

// afterDelete checks a delete that applied, and notes a deleted execution
// made again: a late duplicate of its create (a request the network held
// back) arriving after the delete makes a new execution with the same id
// (a store keeps no tombstones, and an idempotency key frees with its
// execution), which runs as a new one.
func (w *world) afterDelete(op string, p any, r any, err error) {
	if cp, ok := p.(*model.ExecutionCreateParams); ok && op == "Create" && err == nil && w.deleted[cp.ID] {
		if res, _ := r.(*model.ExecutionCreateResult); res != nil && !res.Duplicate {
			w.logf("%s made again after its delete (a late create)", w.alias(cp.ID))
			delete(w.deleted, cp.ID)
			w.completes[cp.ID] = 0
		}
		return
	}
	if op == "FlowDelete" && err == nil {
		w.afterFlowDelete(p.(*model.FlowDeleteParams), r)
		return
	}
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

// beforeFlowDelete reads the flow and its members (the executions of its
// partition that name it).
func (w *world) beforeFlowDelete(p *model.FlowDeleteParams) {
	ctx := context.Background()
	w.preFlow, w.preMembers = nil, nil
	snap, err := w.raw.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: p.Flow})
	if err != nil {
		return
	}
	w.preFlow = snap
	var after model.ExecutionID
	for {
		page, err := w.raw.ExecutionList(ctx, &model.ExecutionListParams{Partition: snap.Partition, After: after, Limit: model.MaxPageSize})
		if err != nil {
			w.violate("list partition %d: %v", snap.Partition, err)
			return
		}
		for _, id := range page.IDs {
			if s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id}); err == nil && s.Flow == p.Flow {
				w.preMembers = append(w.preMembers, s)
			}
		}
		if page.Next.IsZero() {
			return
		}
		after = page.Next
	}
}

// afterFlowDelete checks a flow delete that applied.
func (w *world) afterFlowDelete(p *model.FlowDeleteParams, r any) {
	res, _ := r.(*model.FlowDeleteResult)
	if res == nil || res.Outcome != model.DeleteDeleted {
		return
	}
	pre := w.preFlow
	if pre == nil {
		w.violate("flow %v deleted, but it did not exist", p.Flow)
		return
	}
	if !pre.Sealed && pre.State != model.FlowCancelled {
		w.violate("flow %v deleted while open", p.Flow)
	}
	// a keyed flow never has a short retention. An unkeyed one may have
	// one although its submission failed (the seal applied, its reply was
	// lost: seed 1405 with inline admission's schedule), so the check
	// names the keyed flows rather than trusting the unkeyed list
	if w.keyed[p.Flow] {
		w.violate("flow %v deleted, but it was submitted with a key (never given a short retention)", p.Flow)
	}
	var reported []model.ExecutionID
	for _, m := range res.Members {
		reported = append(reported, m.ID)
	}
	var members []model.ExecutionID
	for _, s := range w.preMembers {
		members = append(members, s.ID)
		name := w.alias(s.ID)
		if s.State.LifecyclePhase != model.PhaseTerminal {
			w.violate("%s deleted with flow %v while %s", name, p.Flow, s.State.LifecyclePhase)
		}
		if keep := s.Retention.For(s.State.TerminalOutcome); p.Due && (keep == 0 || p.Now.Before(s.TerminalAt.Add(keep))) {
			w.violate("%s trimmed with flow %v at %v: it ended %s at %v with a retention of %v", name, p.Flow,
				p.Now.Sub(start), s.State.TerminalOutcome, s.TerminalAt.Sub(start), keep)
		}
		if w.deleted[s.ID] {
			w.violate("%s deleted twice", name)
		}
		w.deleted[s.ID] = true
		w.stats.Deleted++
		if p.Due {
			w.stats.Trimmed++
		}
	}
	if !slices.Equal(reported, members) {
		w.violate("flow %v delete reports members %v, it had %v", p.Flow, reported, members)
	}
	w.stats.Flows++
	if p.Due {
		w.stats.FlowsTrimmed++
	}
}
