package flowfabric

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Flows: a Flow is a graph of executions submitted together. Each node is
// a submission; an edge up → down makes down wait for up; a node's group
// policy says how its incoming edges combine (every upstream must succeed
// by default, or any one, or a quorum). Engine.SubmitFlow stores the
// graph and seals it: no node runs before the whole graph is in place,
// and from then on each node's end decides its downstreams in the same
// store step (docs/ARCHITECTURE.md, "Flows").

// Flow types shared with the model package.
type (
	// FlowID identifies a flow.
	FlowID = model.FlowID
	// FlowSnapshot describes a flow (Engine.DescribeFlow).
	FlowSnapshot = model.FlowSnapshot
	// SiblingPolicy says what happens to the upstreams still running
	// when an AnyOf or Quorum group decides.
	SiblingPolicy = model.SiblingPolicy
	// EdgeGroupSnapshot describes the incoming edges of one node.
	EdgeGroupSnapshot = model.EdgeGroupSnapshot
)

// Sibling policies. A node waiting for its upstreams is
// PublicWaitingChildren; one they can no longer satisfy is PublicSkipped.
const (
	// CancelRemaining cancels the upstreams still running once the group
	// decides (their handlers' contexts end with ErrExecutionCancelled).
	CancelRemaining = model.SiblingsCancelRemaining
	// LetRun leaves them running.
	LetRun = model.SiblingsLetRun
)

// Flow errors, for errors.Is.
var (
	// ErrCycle: the flow's edges form a cycle.
	ErrCycle = model.ErrCycle
	// ErrFlowNotFound: no flow has that id.
	ErrFlowNotFound = model.ErrFlowNotFound
	// ErrFlowTooLarge: DeleteFlow of a flow with more than
	// model.MaxFlowDeleteMembers members, more than one step deletes.
	ErrFlowTooLarge = model.ErrFlowTooLarge
	// ErrFlowSealed: the flow was submitted; its graph takes nothing more.
	ErrFlowSealed = model.ErrFlowSealed
	// ErrFlowTerminal: the flow has ended (cancelled, or every node done):
	// CancelFlow refuses it.
	ErrFlowTerminal = model.ErrFlowTerminal
	// ErrIdempotencyConflict: SubmitFlow's idempotency key names a flow
	// stored with another graph.
	ErrIdempotencyConflict = model.ErrIdempotencyConflict
)

// Flow is a graph of executions to submit with Engine.SubmitFlow. Build it
// with Add and the FlowNode methods; mistakes (an edge to a node of
// another flow, a node depending on itself, an invalid group) are
// reported by SubmitFlow, which then stores nothing. A Flow is not safe
// for concurrent use while it is built.
type Flow struct {
	nodes []*FlowNode
	err   error
}

// FlowNode is one execution of a Flow.
type FlowNode struct {
	flow    *Flow
	index   int
	args    Args
	kind    Kind
	payload []byte
	opts    *SubmitOpts
	ups     []flowDep
	policy  *model.EdgeGroupPolicy
}

type flowDep struct {
	up         *FlowNode
	passResult bool
}

// NewFlow returns an empty flow.
func NewFlow() *Flow { return &Flow{} }

// Add adds a node that runs args (as Engine.Submit would) with opts (nil:
// the defaults). Its lane must be spread (LaneConfig.Spread): a flow's
// nodes live on the flow's partition, which a spread lane's workers reach.
func (f *Flow) Add(args Args, opts *SubmitOpts) *FlowNode {
	n := &FlowNode{flow: f, index: len(f.nodes), args: args, opts: opts}
	f.nodes = append(f.nodes, n)
	return n
}

// AddRaw adds a node that runs payload as kind.
func (f *Flow) AddRaw(kind Kind, payload []byte, opts *SubmitOpts) *FlowNode {
	n := &FlowNode{flow: f, index: len(f.nodes), kind: kind, payload: payload, opts: opts}
	f.nodes = append(f.nodes, n)
	return n
}

// Nodes returns the flow's nodes in the order they were added.
func (f *Flow) Nodes() []*FlowNode { return f.nodes }

func (f *Flow) fail(n *FlowNode, format string, args ...any) {
	if f.err == nil {
		f.err = &model.Error{Code: model.CodeInvalidInput, Field: "Flow.Nodes[" + strconv.Itoa(n.index) + "]",
			Detail: fmt.Sprintf(format, args...)}
	}
}

// After makes n wait for each of ups (edges up → n). By default every
// upstream must succeed (AllOf); AnyOf and Quorum change that.
func (n *FlowNode) After(ups ...*FlowNode) *FlowNode {
	for _, u := range ups {
		n.dep(u, false)
	}
	return n
}

// AfterResult makes n wait for up and run with up's result as its
// payload: a handler of n's kind decodes what up's handler stored with
// SetResult or SetResultJSON.
func (n *FlowNode) AfterResult(up *FlowNode) *FlowNode {
	n.dep(up, true)
	return n
}

func (n *FlowNode) dep(u *FlowNode, pass bool) {
	switch {
	case u == nil || u.flow != n.flow:
		n.flow.fail(n, "depends on a node of another flow")
	case u == n:
		n.flow.fail(n, "depends on itself")
	default:
		for _, d := range n.ups {
			if d.up == u {
				n.flow.fail(n, "depends on node %d twice", u.index)
				return
			}
		}
		n.ups = append(n.ups, flowDep{up: u, passResult: pass})
	}
}

// AnyOf makes n run once one of its upstreams succeeds (and be skipped
// only when all have failed); siblings says whether the others are then
// cancelled.
func (n *FlowNode) AnyOf(siblings SiblingPolicy) *FlowNode {
	n.policy = &model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: siblings}
	return n
}

// Quorum makes n run once k of its upstreams succeed (and be skipped once
// that can no longer happen); siblings says whether the others are then
// cancelled.
func (n *FlowNode) Quorum(k int, siblings SiblingPolicy) *FlowNode {
	n.policy = &model.EdgeGroupPolicy{Kind: model.GroupQuorum, Quorum: k, OnSatisfied: siblings}
	return n
}

// FlowOpts tunes SubmitFlow. The zero value is valid.
type FlowOpts struct {
	// IdempotencyKey makes the submission repeatable: another SubmitFlow
	// with the same key (in the engine's namespace) and the same graph
	// returns the same flow and executions, and finishes a submission
	// that stopped half-way (a crash, a lost connection). Until a
	// submission finishes, none of its nodes runs. The same key with
	// another graph (other nodes or kinds) is ErrIdempotencyConflict.
	IdempotencyKey string
	// Tags label the flow ("team.owner" = "build").
	Tags map[string]string
	// Budgets are attached to every node besides its own
	// (SubmitOpts.Budgets), so the flow's members share them: the token
	// budget of an agent's run.
	Budgets []BudgetID
}

// FlowResult reports a submitted flow.
type FlowResult struct {
	ID FlowID
	// Duplicate is true when FlowOpts.IdempotencyKey named a flow
	// submitted before (this call returned it, finishing it if it had
	// been cut off).
	Duplicate bool
	// Executions are the nodes' executions, in the order the nodes were
	// added.
	Executions []ExecutionID
}

// Of returns node n's execution.
func (r *FlowResult) Of(n *FlowNode) ExecutionID { return r.Executions[n.index] }

// flowStore returns the store's flow operations.
func (e *Engine) flowStore() (model.FlowStore, error) {
	fs, ok := e.store.(model.FlowStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store",
			Detail: fmt.Sprintf("%T does not implement model.FlowStore", e.store)}
	}
	return fs, nil
}

// SubmitFlow stores f and seals it. Every node is validated first (a bad
// node, a cycle or a lane that is not spread stores nothing); then the
// flow, its nodes (held), its group policies and its edges are written,
// and the seal releases the nodes without upstreams. A submission cut off
// before the seal leaves nothing runnable; repeat it with the same
// FlowOpts.IdempotencyKey to finish it.
func (e *Engine) SubmitFlow(ctx context.Context, f *Flow, opts *FlowOpts) (*FlowResult, error) {
	if opts == nil {
		opts = &FlowOpts{}
	}
	fs, err := e.flowStore()
	if err != nil {
		return nil, wrap("submit flow", err)
	}
	plan, err := e.planFlow(ctx, f, opts)
	if err != nil {
		return nil, wrap("submit flow", err)
	}
	dup, err := e.writeFlow(ctx, fs, plan)
	if err != nil {
		return nil, wrap("submit flow", err)
	}
	return &FlowResult{ID: plan.id, Executions: plan.ids, Duplicate: dup}, nil
}

// flowPlan is a validated flow with its ids.
type flowPlan struct {
	id     FlowID
	tags   map[string]string
	nodes  []*FlowNode
	params []*model.ExecutionCreateParams
	ids    []ExecutionID
	order  []int // the nodes in topological order
}

func (e *Engine) planFlow(ctx context.Context, f *Flow, opts *FlowOpts) (*flowPlan, error) {
	if f == nil || len(f.nodes) == 0 {
		return nil, model.InvalidField("Flow", "no_nodes")
	}
	if f.err != nil {
		return nil, f.err
	}
	if err := model.ValidateTags(opts.Tags); err != nil {
		return nil, err
	}
	order, err := topoOrder(f.nodes)
	if err != nil {
		return nil, err
	}
	p := &flowPlan{tags: maps.Clone(opts.Tags), nodes: f.nodes, order: order}
	if opts.IdempotencyKey != "" {
		if err := model.ValidateText("IdempotencyKey", opts.IdempotencyKey); err != nil {
			return nil, err
		}
		p.id = FlowID(derivedUUID(string(e.ns), "flow", opts.IdempotencyKey))
	} else {
		p.id = FlowID(e.newUUID())
	}
	part := e.parts.FlowPartition(p.id)
	for i, n := range f.nodes {
		field := "Flow.Nodes[" + strconv.Itoa(i) + "]"
		if n.policy != nil {
			if err := n.policy.Validate(field + ".Group"); err != nil {
				return nil, err
			}
		}
		cp, err := e.memberParams(ctx, field, n.args, n.kind, n.payload, n.opts)
		if err != nil {
			return nil, err
		}
		cp.ID = model.NewExecutionID(part, derivedUUID(p.id.String(), "node", strconv.Itoa(i)))
		cp.Flow = p.id
		for _, b := range opts.Budgets {
			if !slices.Contains(cp.Budgets, b) {
				cp.Budgets = append(slices.Clip(cp.Budgets), b)
			}
		}
		if err := cp.Validate(e.parts); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		p.params = append(p.params, cp)
		p.ids = append(p.ids, cp.ID)
	}
	return p, nil
}

// memberParams prepares a flow member (a node, or a child a handler
// awaits) as a submission of args (or of kind and payload when args is
// nil) with opts: encoded, seen by the submit hooks, on a spread lane,
// without an idempotency key of its own. field names it in errors; the
// caller sets its id.
func (e *Engine) memberParams(ctx context.Context, field string, args Args, kind Kind, payload []byte, opts *SubmitOpts) (*model.ExecutionCreateParams, error) {
	o := SubmitOpts{}.merge(opts)
	if args != nil {
		k, pl, d, err := encodeArgs(args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		kind, payload, o = k, pl, d.merge(opts)
	}
	kind, payload, o, err := e.hooked(ctx, kind, payload, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if o.IdempotencyKey != "" {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: field + ".IdempotencyKey",
			Detail: "a flow member has none of its own (a flow's FlowOpts.IdempotencyKey covers its nodes, and a retried await is replayed)"}
	}
	if o.Unique != nil {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: field + ".Unique",
			Detail: "a flow member is not unique on its own (a flow's FlowOpts.IdempotencyKey covers its nodes)"}
	}
	lane := o.Lane
	if lane == "" {
		lane = model.DefaultLane
	}
	if !e.spread(lane) {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: field + ".Lane", Got: string(lane),
			Detail: "not_spread: a flow's members run on spread lanes (RegisterLane(lane, LaneConfig{Spread: true}))"}
	}
	cp, err := e.createParams(kind, payload, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return cp, nil
}

// writeFlow writes a planned flow; every step is idempotent, so a repeated
// submission finishes a half-written one. It reports whether the flow
// existed already.
func (e *Engine) writeFlow(ctx context.Context, fs model.FlowStore, p *flowPlan) (dup bool, err error) {
	now := e.clock.Now()
	cr, err := fs.FlowCreate(ctx, &model.FlowCreateParams{Flow: p.id, Tags: p.tags, Now: now})
	if err != nil {
		return false, err
	}
	dup = cr.Outcome == model.FlowAlreadyExists
	if dup {
		snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: p.id})
		if err != nil {
			return dup, err
		}
		if err := e.sameFlow(ctx, p, snap); err != nil {
			return dup, err
		}
		if snap.Sealed {
			return dup, nil // a submission with this key finished already
		}
	}
	err = e.finishFlow(ctx, fs, p)
	if errors.Is(err, model.ErrFlowSealed) {
		// another submission with this key finished it meanwhile: it is
		// this one only if it stored the same graph (two concurrent
		// submissions of different graphs under one key: seed 5447)
		snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: p.id})
		if err != nil {
			return true, err
		}
		return true, e.sameFlow(ctx, p, snap)
	}
	return dup, err
}

// sameFlow refuses a submission whose key names a flow stored with
// another graph (ErrIdempotencyConflict): a finished one must have the
// plan's nodes (each with its kind) and edges, a half-written one no more
// than the plan has. An await's children (members added later) are
// members the plan does not name, so a flow that grew is compared on its
// nodes only.
func (e *Engine) sameFlow(ctx context.Context, p *flowPlan, snap *FlowSnapshot) error {
	edges := 0
	for _, n := range p.nodes {
		edges += len(n.ups)
	}
	conflict := func(detail string) error {
		return &model.Error{Code: model.CodeIdempotencyConflict, Field: "FlowOpts.IdempotencyKey", Detail: detail}
	}
	if snap.MemberCount < len(p.ids) && snap.Sealed || (!snap.Sealed && (snap.MemberCount > len(p.ids) || snap.EdgeCount > edges)) {
		return conflict(fmt.Sprintf("the flow stored under this key has %d nodes and %d edges; this one %d and %d",
			snap.MemberCount, snap.EdgeCount, len(p.ids), edges))
	}
	if !snap.Sealed {
		return nil
	}
	for i, id := range p.ids {
		s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
		if errors.Is(err, model.ErrNotFound) || (err == nil && (s.Flow != p.id || s.Kind != p.params[i].Kind)) {
			return conflict(fmt.Sprintf("node %d differs from the flow stored under this key", i))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// finishFlow writes the nodes, groups and edges of a created flow and
// seals it.
func (e *Engine) finishFlow(ctx context.Context, fs model.FlowStore, p *flowPlan) error {
	for _, i := range p.order {
		cp := *p.params[i]
		cp.Now = e.clock.Now()
		if _, err := e.store.ExecutionCreate(ctx, &cp); err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
	}
	for _, i := range p.order {
		n := p.nodes[i]
		if n.policy == nil {
			continue
		}
		_, err := fs.EdgeGroupSet(ctx, &model.EdgeGroupSetParams{Flow: p.id, Downstream: p.ids[i], Policy: *n.policy, Now: e.clock.Now()})
		if err != nil && !errors.Is(err, model.ErrEdgeGroupFixed) {
			return fmt.Errorf("node %d group: %w", i, err)
		}
	}
	snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: p.id})
	if err != nil {
		return err
	}
	rev := snap.GraphRevision
	// Edges into each node in topological order: a node's incoming edges
	// are staged before its outgoing ones, so no cycle check walks.
	for _, i := range p.order {
		for _, d := range p.nodes[i].ups {
			sp := &model.EdgeStageParams{
				Flow: p.id, Edge: model.EdgeID(derivedUUID(p.id.String(), "edge", strconv.Itoa(d.up.index), strconv.Itoa(i))),
				Upstream: p.ids[d.up.index], Downstream: p.ids[i], PassResult: d.passResult,
			}
			for {
				sp.ExpectedGraphRevision, sp.Now = rev, e.clock.Now()
				r, err := fs.EdgeStage(ctx, sp)
				if err == nil {
					rev = r.GraphRevision
					break
				}
				if errors.Is(err, model.ErrDependencyExists) {
					break // staged by an earlier submission
				}
				if !errors.Is(err, model.ErrStaleGraphRevision) {
					return fmt.Errorf("edge %d -> %d: %w", d.up.index, i, err)
				}
				snap, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: p.id})
				if err != nil {
					return err
				}
				rev = snap.GraphRevision
			}
		}
	}
	if _, err := fs.FlowSeal(ctx, &model.FlowSealParams{Flow: p.id, Now: e.clock.Now()}); err != nil {
		return err
	}
	for i, cp := range p.params {
		e.hint(e.deadline, p.ids[i], cp.Deadline)
	}
	return nil
}

// topoOrder orders the nodes so that every node comes after its
// upstreams, or reports ErrCycle naming a node on a cycle.
func topoOrder(nodes []*FlowNode) ([]int, error) {
	indeg := make([]int, len(nodes))
	down := make([][]int, len(nodes))
	for _, n := range nodes {
		for _, d := range n.ups {
			indeg[n.index]++
			down[d.up.index] = append(down[d.up.index], n.index)
		}
	}
	var order, queue []int
	for i, d := range indeg {
		if d == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		order = append(order, i)
		for _, j := range down[i] {
			if indeg[j]--; indeg[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	if len(order) < len(nodes) {
		for i, d := range indeg {
			if d > 0 {
				return nil, &model.Error{Code: model.CodeCycleDetected, Field: "Flow.Nodes[" + strconv.Itoa(i) + "]", Detail: "on a cycle"}
			}
		}
	}
	return order, nil
}

// derivedUUID is a version-4-shaped UUID derived from parts, so a repeated
// submission names the same flow, nodes and edges.
func derivedUUID(parts ...string) model.UUID {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var b [16]byte
	copy(b[:], h.Sum(nil))
	return model.NewUUIDv4(b)
}

// FlowCancelPolicy says which members CancelFlow cancels.
type FlowCancelPolicy = model.FlowCancelPolicy

// Flow cancel policies.
const (
	// CancelFlowOnly marks the flow cancelled and leaves its nodes be.
	CancelFlowOnly = model.CancelFlowOnly
	// CancelAll cancels every node that has not ended; running handlers
	// see their contexts end with ErrExecutionCancelled.
	CancelAll = model.CancelAll
	// CancelPending cancels the nodes that have not started and lets the
	// running ones finish.
	CancelPending = model.CancelPending
)

// CancelFlow cancels a flow and, by policy, its nodes, in one store step:
// once it returns, no node it cancelled can be claimed (there is no
// backlog to drain after a crash). It returns the cancelled nodes'
// executions. A flow already cancelled is ErrFlowTerminal.
func (e *Engine) CancelFlow(ctx context.Context, id FlowID, policy FlowCancelPolicy, reason string) ([]ExecutionID, error) {
	fs, err := e.flowStore()
	if err != nil {
		return nil, wrap("cancel flow", err)
	}
	r, err := fs.FlowCancel(ctx, &model.FlowCancelParams{Flow: id, Policy: policy, Reason: reason, Now: e.clock.Now()})
	if err != nil {
		return nil, wrap("cancel flow", err)
	}
	e.quotaRel.Hint(e.parts.FlowPartition(id), time.Time{}) // running members' quota slots free
	return r.Cancelled, nil
}

// DescribeFlow reads a flow: its state (open, completed once every node
// completed, failed once all ended and one did not complete, cancelled),
// its nodes counted by public state, its seal, cancel fields and tags. It
// reads every node, so its cost grows with the flow.
func (e *Engine) DescribeFlow(ctx context.Context, id FlowID) (*FlowSnapshot, error) {
	fs, err := e.flowStore()
	if err != nil {
		return nil, wrap("describe flow", err)
	}
	s, err := fs.FlowDescribe(ctx, &model.FlowDescribeParams{Flow: id})
	return s, wrap("describe flow", err)
}

// FlowMembers returns the ids of a flow's members in id order, reading
// them a page at a time (ErrFlowNotFound for an unknown flow). It costs
// the flow's size, whatever else shares its partition.
func (e *Engine) FlowMembers(ctx context.Context, id FlowID) ([]ExecutionID, error) {
	fs, err := e.flowStore()
	if err != nil {
		return nil, wrap("flow members", err)
	}
	var out []ExecutionID
	var after ExecutionID
	for {
		page, err := fs.FlowMemberList(ctx, &model.FlowMemberListParams{Flow: id, After: after, Limit: model.MaxPageSize})
		if err != nil {
			return nil, wrap("flow members", err)
		}
		out = append(out, page.IDs...)
		if page.Next.IsZero() {
			return out, nil
		}
		after = page.Next
	}
}

// FlowGroup reads the incoming edges of one node's execution: its policy,
// size, resolved edges and decision.
func (e *Engine) FlowGroup(ctx context.Context, flow FlowID, id ExecutionID) (*EdgeGroupSnapshot, error) {
	fs, err := e.flowStore()
	if err != nil {
		return nil, wrap("flow group", err)
	}
	g, err := fs.EdgeGroupDescribe(ctx, &model.EdgeGroupDescribeParams{Flow: flow, Downstream: id})
	return g, wrap("flow group", err)
}

// Upstream is one upstream of a flow node, as the node's handler sees it.
type Upstream struct {
	ID   ExecutionID
	Kind Kind
	// State is the upstream's public state now.
	State PublicState
	// Result is what the upstream's handler stored: nil unless it
	// completed with a result.
	Result []byte
}

// Decode unmarshals the upstream's JSON result into v (what its handler
// stored with SetResultJSON). An upstream that did not complete, or
// completed without a result, is ErrResultNotFound.
func (u Upstream) Decode(v any) error {
	if u.State != PublicCompleted || u.Result == nil {
		return fmt.Errorf("flowfabric: upstream %s (%s): %w", u.ID, u.State, model.ErrResultNotFound)
	}
	if err := json.Unmarshal(u.Result, v); err != nil {
		return fmt.Errorf("flowfabric: upstream %s: decode result: %w", u.ID, err)
	}
	return nil
}

// Upstreams returns the task's upstreams in its flow, in edge order (none
// for a task in no flow), with the result of each one that completed: a
// node reads what all its upstreams produced, beyond the one AfterResult
// passed as its payload (an AnyOf node sees which of its upstreams won).
// On a TaskInfo built by hand it returns nil.
func (t *TaskInfo) Upstreams(ctx context.Context) ([]Upstream, error) {
	if t.w == nil {
		return nil, nil
	}
	out, err := t.w.engine.incoming(ctx, t.ID, false)
	return out, wrap("upstreams", err)
}

// incoming reads the upstreams of execution id: the edges its flow was
// built with, or (children) those of its latest AwaitChildren.
func (e *Engine) incoming(ctx context.Context, id ExecutionID, children bool) ([]Upstream, error) {
	fs, err := e.flowStore()
	if err != nil {
		return nil, err
	}
	in, err := fs.EdgeListIncoming(ctx, &model.EdgeListParams{Execution: id})
	if err != nil {
		return nil, err
	}
	gen := 0
	if children {
		if in.Flow.IsZero() {
			return []Upstream{}, nil
		}
		g, err := fs.EdgeGroupDescribe(ctx, &model.EdgeGroupDescribeParams{Flow: in.Flow, Downstream: id})
		if err != nil {
			return nil, err
		}
		if gen = g.Generation; gen == 0 {
			return []Upstream{}, nil
		}
	}
	out := make([]Upstream, 0, len(in.Edges))
	for _, edge := range in.Edges {
		if edge.Generation != gen {
			continue
		}
		s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: edge.Upstream})
		if err != nil {
			return nil, err
		}
		u := Upstream{ID: s.ID, Kind: s.Kind, State: s.PublicState}
		if s.PublicState == PublicCompleted {
			r, err := e.store.ExecutionResult(ctx, &model.ExecutionResultParams{ID: s.ID})
			switch {
			case err == nil:
				u.Result = r.Result
			case !errors.Is(err, model.ErrResultNotFound):
				return nil, err
			}
		}
		out = append(out, u)
	}
	return out, nil
}
