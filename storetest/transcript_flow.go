package storetest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// The flow commands of the transcripts (testdata/transcripts/README.md):
// flows and edges are named like executions, and every flow of a
// transcript lives in the transcript's partition, so its executions can
// be members.

// flow returns the id a transcript's flow name stands for: the first of
// the name's candidate UUIDs whose flow partition is the transcript's,
// under the store's partition count and under the default one, so that a
// store with one partition names the same flows (and lists them in the
// same order) as one with the default count.
func (r *transcriptRun) flow(name string) model.FlowID {
	if r.flows == nil {
		r.flows = map[string]model.FlowID{}
	}
	if f, ok := r.flows[name]; ok {
		return f
	}
	for k := 0; ; k++ {
		f := model.FlowID(uuidOf("flow", name+"/"+strconv.Itoa(k)))
		def := model.PartitionConfig{}
		if r.cfg.FlowPartition(f) == r.part && def.FlowPartition(f) == def.SoloPartition(laneA) {
			r.flows[name] = f
			r.addName(f.String(), name)
			return f
		}
	}
}

func (r *transcriptRun) edge(name string) model.EdgeID {
	e := model.EdgeID(uuidOf("edge", name))
	r.addName(e.String(), name)
	return e
}

// flowStore is the store's FlowStore; without one the transcript skips.
func (r *transcriptRun) flowStore() model.FlowStore {
	var s model.Store = r.s
	if p, ok := r.s.(*partialStore); ok {
		s = p.Store
	}
	fs, ok := s.(model.FlowStore)
	if !ok {
		r.t.Skipf("storetest: %T does not implement the optional model.FlowStore", s)
	}
	return fs
}

// doFlow runs a flow command; ok is false for other commands.
func (r *transcriptRun) doFlow(cmd string, a *args) (out string, ok bool, err error) {
	if cmd == "await" {
		out, err := r.await(a)
		return out, true, err
	}
	switch cmd {
	case "flow-create", "flow-add", "edge-stage", "edge-group", "flow-seal", "describe-flow", "describe-edge", "describe-group", "edges", "flows":
	default:
		return "", false, nil
	}
	fs := r.flowStore()
	want := map[string]int{"flow-create": 1, "flow-add": 2, "edge-stage": 4, "edge-group": 2, "flow-seal": 1,
		"describe-flow": 1, "describe-edge": 2, "describe-group": 2, "edges": 1, "flows": 0}[cmd]
	if len(a.pos) != want {
		return "", true, fmt.Errorf("%s takes %d names, got %q", cmd, want, a.pos)
	}
	ctx, now := r.ctx, r.now
	res := func(v any, err error) (string, bool, error) {
		if err != nil {
			return "", true, err
		}
		return r.fmtValue(reflect.ValueOf(v)), true, nil
	}
	switch cmd {
	case "flow-create":
		var tags map[string]string
		for _, kv := range a.list("tags") {
			k, v, _ := strings.Cut(kv, ":")
			if tags == nil {
				tags = map[string]string{}
			}
			tags[k] = v
		}
		out, err := fs.FlowCreate(ctx, &model.FlowCreateParams{Flow: r.flow(a.pos[0]), Tags: tags, Now: now})
		if err != nil {
			return "", true, err
		}
		return "Outcome=" + out.Outcome.String(), true, nil
	case "flow-add":
		return res(fs.FlowAddMember(ctx, &model.FlowAddMemberParams{Flow: r.flow(a.pos[0]), Execution: r.exec(a.pos[1]).id, Now: now}))
	case "edge-stage":
		f := r.flow(a.pos[0])
		rev := uint64(a.int("rev", -1))
		if !a.has("rev") {
			snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: f})
			if err != nil {
				return "", true, err
			}
			rev = snap.GraphRevision
		}
		return res(fs.EdgeStage(ctx, &model.EdgeStageParams{
			Flow: f, Edge: r.edge(a.pos[1]), Upstream: r.exec(a.pos[2]).id, Downstream: r.exec(a.pos[3]).id,
			ExpectedGraphRevision: rev, PassResult: a.str("pass-result", "") == "true",
			MaxSearchEdges: a.int("limit", 0), Now: now,
		}))
	case "edge-group":
		pol := model.EdgeGroupPolicy{Quorum: a.int("quorum", 0)}
		if k := a.str("kind", "all_of"); k != "" {
			pol.Kind, _ = model.ParseEdgeGroupKind(k)
		}
		if s := a.str("on-satisfied", ""); s != "" {
			pol.OnSatisfied, _ = model.ParseSiblingPolicy(s)
		}
		return res(fs.EdgeGroupSet(ctx, &model.EdgeGroupSetParams{Flow: r.flow(a.pos[0]), Downstream: r.exec(a.pos[1]).id, Policy: pol, Now: now}))
	case "flow-seal":
		return res(fs.FlowSeal(ctx, &model.FlowSealParams{Flow: r.flow(a.pos[0]), Now: now}))
	case "describe-flow":
		snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: r.flow(a.pos[0])})
		if err != nil {
			return "", true, err
		}
		snap.Partition = 0 // differs between partition counts
		return res(snap, nil)
	case "describe-edge":
		return res(fs.EdgeDescribe(ctx, &model.EdgeDescribeParams{Flow: r.flow(a.pos[0]), Edge: r.edge(a.pos[1])}))
	case "describe-group":
		return res(fs.EdgeGroupDescribe(ctx, &model.EdgeGroupDescribeParams{Flow: r.flow(a.pos[0]), Downstream: r.exec(a.pos[1]).id}))
	case "edges":
		id := r.exec(a.pos[0]).id
		var b strings.Builder
		for _, dir := range []string{"out", "in"} {
			list := fs.EdgeListOutgoing
			if dir == "in" {
				list = fs.EdgeListIncoming
			}
			l, err := list(ctx, &model.EdgeListParams{Execution: id})
			if err != nil {
				return "", true, err
			}
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			flow := "-"
			if !l.Flow.IsZero() {
				flow = r.fmtValue(reflect.ValueOf(l.Flow))
			}
			fmt.Fprintf(&b, "%s: flow=%s", dir, flow)
			for _, e := range l.Edges {
				fmt.Fprintf(&b, "\n  %s", r.fmtValue(reflect.ValueOf(e)))
			}
		}
		return b.String(), true, nil
	case "flows":
		return res(fs.FlowList(ctx, &model.FlowListParams{Partition: r.part, Limit: a.int("limit", 100)}))
	}
	return "", false, nil
}

// await runs ExecutionAwaitChildren: the first name is the parent (its
// fence as for a worker's operation), the others its children, created
// like "create" does by default (delay=<d> delays the first), each with
// the edge <child>-edge.
func (r *transcriptRun) await(a *args) (string, error) {
	if len(a.pos) < 2 {
		return "", fmt.Errorf("await takes a parent and its children, got %q", a.pos)
	}
	fs := r.flowStore()
	x := r.exec(a.pos[0])
	_, f := r.fence(x, a)
	p := &model.ExecutionAwaitChildrenParams{ID: x.id, Fence: f, Now: r.now}
	for i, name := range a.pos[1:] {
		c := model.ExecutionCreateParams{ID: r.exec(name).id, Namespace: nsA, Lane: laneA, Kind: kindA, Payload: []byte("payload")}
		if i == 0 && a.has("delay") {
			c.DelayUntil = r.now.Add(a.dur("delay", 0))
		}
		p.Children = append(p.Children, model.AwaitChild{Create: c, Edge: r.edge(name + "-edge")})
	}
	out, err := fs.ExecutionAwaitChildren(r.ctx, p)
	if err != nil {
		return "", err
	}
	return r.fmtValue(reflect.ValueOf(out)), nil
}
