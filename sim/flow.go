package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Flows in the simulation: the store wrapper injects faults into the flow
// operations SubmitFlow makes, and the workload submits small random
// graphs of every handler behaviour on the spread lane, sometimes with an
// idempotency key that a later submission repeats (finishing one a fault
// cut off). Every node of an acknowledged flow must end by the drain: a
// node left waiting for upstreams that all ended would be a lost
// resolution; the store invariants checked at each checkpoint include the
// flow ones (proptest.Observe).

var _ model.FlowStore = (*Store)(nil)

func (s *Store) flows() model.FlowStore { return s.Store.(model.FlowStore) }

// FlowCreate implements model.FlowStore.
func (s *Store) FlowCreate(ctx context.Context, p *model.FlowCreateParams) (*model.FlowCreateResult, error) {
	return call(s, "FlowCreate", p, s.flows().FlowCreate)
}

// FlowAddMember implements model.FlowStore.
func (s *Store) FlowAddMember(ctx context.Context, p *model.FlowAddMemberParams) (*model.FlowAddMemberResult, error) {
	return call(s, "FlowAddMember", p, s.flows().FlowAddMember)
}

// EdgeStage implements model.FlowStore.
func (s *Store) EdgeStage(ctx context.Context, p *model.EdgeStageParams) (*model.EdgeStageResult, error) {
	return call(s, "EdgeStage", p, s.flows().EdgeStage)
}

// EdgeGroupSet implements model.FlowStore.
func (s *Store) EdgeGroupSet(ctx context.Context, p *model.EdgeGroupSetParams) (*model.EdgeGroupSetResult, error) {
	return call(s, "EdgeGroupSet", p, s.flows().EdgeGroupSet)
}

// FlowSeal implements model.FlowStore.
func (s *Store) FlowSeal(ctx context.Context, p *model.FlowSealParams) (*model.FlowSealResult, error) {
	return call(s, "FlowSeal", p, s.flows().FlowSeal)
}

// FlowCancel implements model.FlowStore.
func (s *Store) FlowCancel(ctx context.Context, p *model.FlowCancelParams) (*model.FlowCancelResult, error) {
	return call(s, "FlowCancel", p, s.flows().FlowCancel)
}

// ExecutionAwaitChildren implements model.FlowStore.
func (s *Store) ExecutionAwaitChildren(ctx context.Context, p *model.ExecutionAwaitChildrenParams) (*model.ExecutionAwaitChildrenResult, error) {
	return call(s, "ExecutionAwaitChildren", p, s.flows().ExecutionAwaitChildren)
}

// FlowDescribe implements model.FlowStore.
func (s *Store) FlowDescribe(ctx context.Context, p *model.FlowDescribeParams) (*model.FlowSnapshot, error) {
	return call(s, "FlowDescribe", p, s.flows().FlowDescribe)
}

// FlowList implements model.FlowStore (not called by the engine).
func (s *Store) FlowList(ctx context.Context, p *model.FlowListParams) (*model.FlowListResult, error) {
	return s.flows().FlowList(ctx, p)
}

// FlowMemberList implements model.FlowStore.
func (s *Store) FlowMemberList(ctx context.Context, p *model.FlowMemberListParams) (*model.FlowMemberListResult, error) {
	return s.flows().FlowMemberList(ctx, p)
}

// EdgeDescribe implements model.FlowStore (not called by the engine).
func (s *Store) EdgeDescribe(ctx context.Context, p *model.EdgeDescribeParams) (*model.EdgeSnapshot, error) {
	return s.flows().EdgeDescribe(ctx, p)
}

// EdgeGroupDescribe implements model.FlowStore.
func (s *Store) EdgeGroupDescribe(ctx context.Context, p *model.EdgeGroupDescribeParams) (*model.EdgeGroupSnapshot, error) {
	return call(s, "EdgeGroupDescribe", p, s.flows().EdgeGroupDescribe)
}

// EdgeListOutgoing implements model.FlowStore (not called by the engine).
func (s *Store) EdgeListOutgoing(ctx context.Context, p *model.EdgeListParams) (*model.EdgeListResult, error) {
	return s.flows().EdgeListOutgoing(ctx, p)
}

// EdgeListIncoming implements model.FlowStore (not called by the engine).
func (s *Store) EdgeListIncoming(ctx context.Context, p *model.EdgeListParams) (*model.EdgeListResult, error) {
	return s.flows().EdgeListIncoming(ctx, p)
}

// simFlow is a flow the workload built, kept so that a submission with its
// key can be repeated.
type simFlow struct {
	f     *flowfabric.Flow
	key   string
	shape string
}

// buildFlow draws a small graph on the spread lane: 2–5 nodes, edges only
// from earlier nodes to later ones, sometimes a result passed on, and a
// random group policy for nodes with several upstreams.
func (w *world) buildFlow() *simFlow {
	f := flowfabric.NewFlow()
	o := &flowfabric.SubmitOpts{Lane: "s"}
	key := ""
	if w.rng.IntN(3) == 0 {
		key = fmt.Sprintf("flow%d", w.rng.IntN(1000))
	}
	var shape []string
	// an unkeyed flow (its ids are never made again) may run out its
	// retention during the run: the trimmer then deletes it whole
	if key == "" && !w.o.NoRetention && w.rng.IntN(3) == 0 {
		short := []time.Duration{30 * time.Second, 2 * time.Minute}
		o.Retention = flowfabric.Retention{Completed: pick(w, short), Failed: pick(w, short), Cancelled: pick(w, short)}
		shape = append(shape, fmt.Sprintf("keep %v/%v/%v", o.Retention.Completed, o.Retention.Failed, o.Retention.Cancelled))
	}
	n := 2 + w.rng.IntN(4)
	var nodes []*flowfabric.FlowNode
	// a budgeted flow: every node on the budget whose hard breach cancels
	// the flow's members not started, some nodes spending on it
	budgeted := !w.o.NoAdmission && w.rng.IntN(4) == 0
	if budgeted {
		o.Budgets = []model.BudgetID{w.adm.budgets[2].spec.ID}
		shape = append(shape, "budget "+w.adm.budgets[2].name)
	}
	for i := range n {
		kind := pick(w, kinds)
		if w.rng.IntN(5) == 0 {
			kind = "fanout" // grows the flow while it runs
		} else if !w.o.NoSuspend && w.rng.IntN(6) == 0 {
			kind = pick(w, suspendKinds) // waits for the outside world
		} else if budgeted && w.rng.IntN(2) == 0 {
			kind = "spend"
		}
		node := f.AddRaw(kind, []byte(`{}`), o)
		var ups []string
		for j := range i {
			if w.rng.IntN(2) == 0 {
				continue
			}
			if w.rng.IntN(4) == 0 {
				node.AfterResult(nodes[j])
			} else {
				node.After(nodes[j])
			}
			ups = append(ups, fmt.Sprint(j))
		}
		group := ""
		if len(ups) > 1 {
			sib := flowfabric.LetRun
			if w.rng.IntN(2) == 0 {
				sib = flowfabric.CancelRemaining
			}
			switch w.rng.IntN(3) {
			case 1:
				node.AnyOf(sib)
				group = " any/" + sib.String()
			case 2:
				k := 1 + w.rng.IntN(len(ups)+1) // sometimes more than the group: impossible at once
				node.Quorum(k, sib)
				group = fmt.Sprintf(" quorum%d/%s", k, sib)
			}
		}
		nodes = append(nodes, node)
		shape = append(shape, fmt.Sprintf("%d:%s<-[%s]%s", i, kind, strings.Join(ups, ","), group))
	}
	return &simFlow{f: f, key: key, shape: strings.Join(shape, " ")}
}

// submitFlow submits a new random flow through p's engine, or repeats one
// with a key (a submission a fault may have cut off).
func (w *world) submitFlow(p *process) {
	var sf *simFlow
	if len(w.keyedFlows) > 0 && w.rng.IntN(3) == 0 {
		sf = pick(w, w.keyedFlows)
	} else {
		sf = w.buildFlow()
		if sf.key != "" {
			w.keyedFlows = append(w.keyedFlows, sf)
		}
	}
	w.spawn(p, func() {
		res, err := p.engine.SubmitFlow(context.Background(), sf.f, &flowfabric.FlowOpts{IdempotencyKey: sf.key})
		if err != nil {
			w.logf("P%d submit flow %s key %q: %s", p.n, sf.shape, sf.key, errCode(err))
			return
		}
		if !slices.Contains(w.flowIDs, res.ID) {
			w.flowIDs = append(w.flowIDs, res.ID)
			if sf.key == "" {
				w.unkeyed[res.ID] = true
				w.unkeyedList = append(w.unkeyedList, res.ID)
			} else {
				w.keyed[res.ID] = true
			}
		}
		var names []string
		for _, id := range res.Executions {
			names = append(names, w.alias(id))
			w.inFlow[id] = true
			if !w.isAcked[id] {
				w.isAcked[id] = true
				w.acked = append(w.acked, id)
			}
		}
		w.logf("P%d submitted flow %s key %q: %s", p.n, sf.shape, sf.key, strings.Join(names, " "))
	})
}
