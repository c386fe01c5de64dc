package proptest

import (
	"context"
	"slices"
	"strconv"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Awaiting children (model.FlowStore.ExecutionAwaitChildren,
// model/flow_await.go): a running member of a sealed flow (the parent)
// creates children in its flow in one fenced step and is held, its lease
// released and its attempt paused, until they have all ended; its group
// opens a new generation for their edges. actAwaitChildren makes the call
// for a parent the machine holds the fence of, built on purpose when there
// is none (the single actions rarely line up a claimed member of a sealed
// flow), sometimes drives the children to their ends and the parent on
// (resumed, awaiting again, completed and replayed) in the same step, and
// makes the refusals: a retry that replays, a parent in no flow, in an
// unsealed or a cancelled flow, a stale fence, an existing child or edge
// id, and invalid children. The children are executions like any other:
// later steps claim, complete, fail, cancel, expire and replay them. The
// observation after the step checks the groups' generations (flow.go).

// maxAwaitExecutions bounds, as a multiple of Options.MaxExecutions, the
// executions a sequence holds before awaits stop creating children.
const maxAwaitExecutions = 5

func (m *machine) actAwaitChildren(t *rapid.T) {
	switch k := rapid.IntRange(0, 19).Draw(t, "await_case"); {
	case k < 11:
		m.awaitFromMember(t)
	case k < 13:
		m.awaitRetry(t)
	case k < 15:
		m.awaitNotInFlow(t)
	case k < 17:
		m.awaitUnfit(t)
	default:
		m.awaitAny(t)
	}
}

// awaitRoom reports whether an await may still create children.
func (m *machine) awaitRoom() bool {
	return len(m.execs) < maxAwaitExecutions*m.opts.MaxExecutions
}

// leasedNow is s when it is active under a live lease (a fenced call with
// its current fence passes), else nil.
func (m *machine) leasedNow(s *model.ExecutionSnapshot) *model.ExecutionSnapshot {
	if l := liveLease(s); l == nil || !l.ExpiresAt.After(m.now()) {
		return nil
	}
	return s
}

// leasedWhere lists the executions under a live lease that want accepts.
func (m *machine) leasedWhere(want func(*model.ExecutionSnapshot) bool) []model.ExecutionID {
	var out []model.ExecutionID
	for _, r := range m.execs {
		if s := m.leasedNow(m.snap(r.id)); s != nil && want(s) {
			out = append(out, r.id)
		}
	}
	return out
}

// awaitsFit reports whether s is in a sealed flow that is not cancelled
// (where an await with its current fence succeeds).
func (m *machine) awaitsFit(s *model.ExecutionSnapshot) bool {
	if s.Flow.IsZero() {
		return false
	}
	fo := m.flowObs(s.Flow)
	return fo != nil && fo.Snapshot.Sealed && fo.Snapshot.State != model.FlowCancelled
}

// awaitFromMember: a claimed member of a sealed flow awaits 1–3 children
// with its current fence (sometimes another drawn fence, an existing child
// or edge id, or invalid children); a success is sometimes retried at once
// (it must replay) and sometimes driven on.
func (m *machine) awaitFromMember(t *rapid.T) {
	parents := m.leasedWhere(m.awaitsFit)
	var parent model.ExecutionID
	switch {
	case m.awaitRoom() && (len(parents) == 0 || chance(t, 30, "await_build")):
		parent = m.buildAwaitParent(t)
	case len(parents) > 0:
		parent = drawFrom(t, parents, "await_parent")
	default:
		m.awaitAny(t)
		return
	}
	s := m.snap(parent)
	f := currentFence(s)
	if chance(t, 15, "await_other_fence") {
		f = m.drawFence(t, parent)
	}
	p := m.awaitParams(t, parent, f)
	if fo := m.flowObs(s.Flow); fo != nil && chance(t, 8, "await_existing_child") {
		// an execution of the parent's partition (often a member: an
		// earlier child), or the parent itself (a self edge)
		var ids []model.ExecutionID
		for _, r := range m.execs {
			if r.id.Partition() == parent.Partition() {
				ids = append(ids, r.id)
			}
		}
		p.Children[drawIndex(t, len(p.Children), "existing_child_at")].Create.ID = drawFrom(t, ids, "existing_child")
	} else if r := m.refFlow(s.Flow); r != nil && len(r.edges) > 0 && chance(t, 8, "await_existing_edge") {
		p.Children[drawIndex(t, len(p.Children), "existing_edge_at")].Edge = drawFrom(t, r.edges, "existing_edge")
	}
	bad := m.corruptAwait(t, p)
	res, err := m.await(t, p, bad)
	if err != nil || res.Replayed {
		return
	}
	if chance(t, 30, "await_retry_now") {
		q := *p
		r, err := m.await(t, &q, -1)
		m.expect(t, err == nil && r.Replayed && r.Generation == res.Generation && r.Flow == res.Flow,
			"ExecutionAwaitChildren retried at once: %+v %v, want a replay of %+v", r, err, res)
	}
	if chance(t, 35, "await_drive") {
		m.driveAwait(t, p)
	}
}

// awaitParams draws an await of 1–3 fresh children of parent (one
// sometimes delayed), with fresh edge ids.
func (m *machine) awaitParams(t *rapid.T, parent model.ExecutionID, f model.Fence) *model.ExecutionAwaitChildrenParams {
	p := &model.ExecutionAwaitChildrenParams{ID: parent, Fence: f, Now: m.now()}
	n := rapid.IntRange(1, 3).Draw(t, "await_children")
	delayed := -1
	if chance(t, 30, "await_delayed") {
		delayed = drawIndex(t, n, "await_delayed_child")
	}
	for i := range n {
		p.Children = append(p.Children, m.awaitChild(t, parent.Partition(), i == delayed))
	}
	return p
}

// awaitChild draws one child of a parent of partition part: a lane the
// machine knows (mostly one whose solo partition is part, so claim-next
// reaches it), and the create fields actCreate draws but for the flow,
// the idempotency key and Now, which an await leaves zero.
func (m *machine) awaitChild(t *rapid.T, part int, delayed bool) model.AwaitChild {
	var near []model.LaneID
	for _, l := range lanes {
		if m.cfg.SoloPartition(l) == part {
			near = append(near, l)
		}
	}
	lane := drawFrom(t, lanes, "child_lane")
	if len(near) > 0 && !chance(t, 25, "child_far_lane") {
		lane = drawFrom(t, near, "child_near_lane")
	}
	c := model.ExecutionCreateParams{
		ID:                   model.NewExecutionID(part, m.nextUUID(t, "id_order")),
		Namespace:            drawFrom(t, namespaces, "child_namespace"),
		Lane:                 lane,
		Kind:                 drawFrom(t, kinds, "child_kind"),
		Priority:             drawFrom(t, priorities, "child_priority"),
		RequiredCapabilities: drawCaps(t, "child_required", 25),
		RetryPolicy:          drawRetryPolicy(t),
		MaxReclaims:          drawFrom(t, smallInts, "child_max_reclaims"),
		MaxReplays:           drawFrom(t, smallInts, "child_max_replays"),
		Deadline:             m.drawOffset(t, "child_deadline", 15, -5_000, 120_000),
		Tags:                 drawFrom(t, tagSets, "child_tags"),
		Metadata:             drawFrom(t, metaSets, "child_metadata"),
		Payload:              drawFrom(t, payloads, "child_payload"),
		Retention:            drawRetention(t),
	}
	if delayed {
		c.DelayUntil = m.now().Add(ms(rapid.Int64Range(-1_000, 30_000).Draw(t, "child_delay_ms")))
	}
	if chance(t, 30, "child_attempt_timeout") {
		c.AttemptTimeout = ms(rapid.Int64Range(1, 8_000).Draw(t, "child_attempt_timeout_ms"))
	}
	return model.AwaitChild{Create: c, Edge: model.EdgeID(m.nextUUID(t, "edge_order"))}
}

// corruptAwait makes p invalid 1 time in 20 (Validate's refusals) and
// returns which way, -1 for none.
func (m *machine) corruptAwait(t *rapid.T, p *model.ExecutionAwaitChildrenParams) int {
	bad := invalid(t, 8)
	c := &p.Children[0]
	switch bad {
	case 0:
		p.Children = nil
	case 1:
		c.Create.Lane = "bad lane"
	case 2:
		c.Create.Flow = model.FlowID(m.nextUUID(t, ""))
	case 3:
		c.Create.IdempotencyKey = "k1"
	case 4:
		c.Create.ID = model.NewExecutionID((p.ID.Partition()+1)%m.cfg.FlowPartitions, c.Create.ID.UUID())
		if m.cfg.FlowPartitions == 1 {
			c.Create.ID = p.ID // the parent as its own child
		}
	case 5:
		c.Create.ID = p.ID // the parent as its own child
	case 6:
		c.Edge = model.EdgeID{}
	case 7:
		// two children with one id, or one edge id
		d := *c
		d.Edge = model.EdgeID(m.nextUUID(t, ""))
		if genBool.Draw(t, "duplicate_edge") {
			d.Create.ID, d.Edge = model.NewExecutionID(p.ID.Partition(), m.nextUUID(t, "")), c.Edge
		}
		p.Children = append(p.Children, d)
	}
	return bad
}

// await calls ExecutionAwaitChildren and checks its answer against the
// state before it: a replay is the retry of the parent's latest await
// (same fence, its latest generation); otherwise the fence checks of a
// fenced operation, then the parent's flow (none, cancelled, unsealed),
// then each child's id and edge id in order (existing ones are refused),
// and a success opens generation awaits+1. A success is checked at once
// (observing store A) and the machine learns the children.
func (m *machine) await(t *rapid.T, p *model.ExecutionAwaitChildrenParams, bad int) (*model.ExecutionAwaitChildrenResult, error) {
	t.Helper()
	const op = "ExecutionAwaitChildren"
	prev := m.snap(p.ID)
	ref := m.byID[p.ID]
	res, err := call(m, t, op, p, flowOp(model.FlowStore.ExecutionAwaitChildren))
	q := *p
	if verr := q.Validate(m.cfg); verr != nil || bad >= 0 {
		// refused exactly as Validate says, before anything is read
		m.expectValidation(t, op, err)
		m.expect(t, cmpEqual(ViewError(err), ViewError(verr)), "%s with invalid input: %v, Validate says %v", op, err, verr)
		return res, err
	}
	if err == nil && res.Replayed {
		m.expect(t, prev != nil && ref != nil && ref.awaits > 0 && p.Fence == ref.awaitFence &&
			res.Generation == ref.awaits && res.Flow == prev.Flow,
			"%s replayed %+v with fence %+v; the parent's latest await (of %d) had fence %+v, its flow is %v",
			op, res, p.Fence, refAwaits(ref), refAwaitFence(ref), flowOf(prev))
		return res, err
	}
	if m.predictFenced(prev, p.Fence) != nil {
		m.checkFenced(t, op, prev, model.SourceWorker, p.Fence, false, false, err)
		return res, err
	}
	want := m.predictAwait(p, prev)
	if want != nil {
		got := ViewError(err)
		m.expect(t, got != nil && got.Code == want.Code && got.Field == want.Field && (want.Detail == "" || got.Detail == want.Detail),
			"%s of %v (flow %v): %v, want %+v", op, p.ID, prev.Flow, err, *want)
		return res, err
	}
	m.expect(t, err == nil && ref != nil, "%s of a leased member of a sealed flow with its fence failed: %v", op, err)
	m.expect(t, res.Flow == prev.Flow && res.Generation == ref.awaits+1,
		"%s: %+v, want flow %v generation %d", op, res, prev.Flow, ref.awaits+1)
	before := m.flowObs(prev.Flow)
	m.awaited(p, res)
	m.observeQuiet(t)
	m.checkAwaited(t, p, res, before)
	return res, err
}

func refAwaits(r *refExec) int {
	if r == nil {
		return 0
	}
	return r.awaits
}

func refAwaitFence(r *refExec) model.Fence {
	if r == nil {
		return model.Fence{}
	}
	return r.awaitFence
}

func flowOf(s *model.ExecutionSnapshot) model.FlowID {
	if s == nil {
		return model.FlowID{}
	}
	return s.Flow
}

// predictAwait predicts the refusal of an await whose fence checks pass
// (prev is active under that fence), nil for a success.
func (m *machine) predictAwait(p *model.ExecutionAwaitChildrenParams, prev *model.ExecutionSnapshot) *ErrorView {
	if prev.Flow.IsZero() {
		return &ErrorView{Code: model.CodeExecutionNotInFlow, Field: "ID"}
	}
	fo := m.flowObs(prev.Flow)
	if fo == nil {
		return &ErrorView{Text: "the parent's flow " + prev.Flow.String() + " was not observed"}
	}
	switch {
	case fo.Snapshot.State == model.FlowCancelled:
		return &ErrorView{Code: model.CodeFlowAlreadyTerminal, Detail: "cancelled"}
	case !fo.Snapshot.Sealed:
		return &ErrorView{Code: model.CodeFlowNotSealed}
	}
	edges := map[model.EdgeID]bool{}
	for _, es := range fo.Out {
		for _, e := range es {
			edges[e.ID] = true
		}
	}
	for i, c := range p.Children {
		pre := "Children[" + strconv.Itoa(i) + "]."
		if m.obs[0].Execs[c.Create.ID] != nil {
			return &ErrorView{Code: model.CodeInvalidInput, Field: pre + "Create.ID", Detail: "exists"}
		}
		if edges[c.Edge] {
			return &ErrorView{Code: model.CodeDependencyExists, Field: pre + "Edge"}
		}
	}
	return nil
}

// awaited records an accepted await: the parent's generation and fence,
// the children, and their edges.
func (m *machine) awaited(p *model.ExecutionAwaitChildrenParams, res *model.ExecutionAwaitChildrenResult) {
	ref := m.byID[p.ID]
	ref.awaits, ref.awaitFence, ref.awaitCall = res.Generation, p.Fence, p
	rf := m.refFlow(res.Flow)
	if rf == nil {
		rf = &refFlow{id: res.Flow}
		m.flows = append(m.flows, rf)
	}
	for _, c := range p.Children {
		m.learn(c.Create.ID, c.Create.Lane)
		rf.edges = append(rf.edges, c.Edge)
	}
}

// checkAwaited checks store A right after an accepted await: the parent
// is held, unleased, with its attempt paused; its group is at the new
// generation, waiting on exactly the children's edges (pending, without
// pass_result); each child is a member, eligible or delayed until its
// DelayUntil, with no attempt yet; the flow grew by the children and
// their edges.
func (m *machine) checkAwaited(t *rapid.T, p *model.ExecutionAwaitChildrenParams, res *model.ExecutionAwaitChildrenResult, before *FlowObservation) {
	t.Helper()
	s := m.snap(p.ID)
	fo := m.flowObs(res.Flow)
	if s == nil || fo == nil {
		m.fatalf(t, "after an await: parent %v or flow %v not observed", p.ID, res.Flow)
		return
	}
	st := s.State
	m.expect(t, st.LifecyclePhase == model.PhaseRunnable && st.EligibilityState == model.BlockedByDependencies &&
		st.BlockingReason == model.WaitingForChildren && st.AttemptState == model.AttemptInterrupted && s.CurrentLease == nil,
		"after an await the parent is %+v with lease %+v, want held with its attempt paused and no lease", st, s.CurrentLease)
	g := fo.Groups[p.ID]
	m.expect(t, g != nil && g.Generation == res.Generation && g.Size == len(p.Children) && g.Succeeded == 0 &&
		g.Impossible == 0 && g.State == model.GroupWaiting,
		"after an await of %d children the parent's group is %+v, want generation %d waiting", len(p.Children), g, res.Generation)
	var gen []model.EdgeSnapshot
	for _, e := range fo.In[p.ID] {
		if e.Generation == res.Generation {
			gen = append(gen, e)
		}
	}
	m.expect(t, len(gen) == len(p.Children), "after an await of %d children the parent has %d edges of generation %d",
		len(p.Children), len(gen), res.Generation)
	for _, c := range p.Children {
		i := slices.IndexFunc(gen, func(e model.EdgeSnapshot) bool { return e.ID == c.Edge })
		m.expect(t, i >= 0 && gen[i].Upstream == c.Create.ID && gen[i].State == model.EdgePending && !gen[i].PassResult,
			"after an await, the edge %v of child %v: %+v", c.Edge, c.Create.ID, gen)
		cs := m.snap(c.Create.ID)
		m.expect(t, cs != nil && cs.Flow == res.Flow && cs.Lane == c.Create.Lane && cs.TotalAttempts == 0,
			"after an await, child %v: %+v", c.Create.ID, cs)
		want := model.PublicWaiting
		if c.Create.DelayUntil.After(m.now()) {
			want = model.PublicDelayed
		}
		m.expect(t, cs.PublicState == want && cs.State.AttemptState == model.AttemptPendingFirst,
			"after an await, child %v (delay until %v) is %v %+v, want %v", c.Create.ID, c.Create.DelayUntil, cs.PublicState, cs.State, want)
	}
	if before != nil {
		b, a, n := before.Snapshot, fo.Snapshot, len(p.Children)
		m.expect(t, a.MemberCount == b.MemberCount+n && a.EdgeCount == b.EdgeCount+n && a.GraphRevision == b.GraphRevision+uint64(2*n),
			"an await of %d children: members %d -> %d, edges %d -> %d, revision %d -> %d",
			n, b.MemberCount, a.MemberCount, b.EdgeCount, a.EdgeCount, b.GraphRevision, a.GraphRevision)
	}
}

// awaitRetry sends a parent's latest accepted await again, later: it
// replays while that await is the parent's latest fenced operation, and
// otherwise fails its fence checks (the parent gave that lease up).
func (m *machine) awaitRetry(t *rapid.T) {
	var refs []*refExec
	for _, r := range m.execs {
		if r.awaitCall != nil {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		m.awaitFromMember(t)
		return
	}
	q := *drawFrom(t, refs, "await_retry").awaitCall
	q.Now = m.now()
	_, _ = m.await(t, &q, -1)
}

// awaitNotInFlow: a leased execution in no flow awaits (refused), claimed
// for the purpose when there is none.
func (m *machine) awaitNotInFlow(t *rapid.T) {
	ids := m.leasedWhere(func(s *model.ExecutionSnapshot) bool { return s.Flow.IsZero() })
	var id model.ExecutionID
	if len(ids) == 0 || chance(t, 30, "await_build_plain") {
		lane := drawFrom(t, lanes, "await_lane")
		id = m.createPlain(t, lane, m.cfg.SoloPartition(lane), model.FlowID{})
		m.claimNow(t, id)
	} else {
		id = drawFrom(t, ids, "await_plain")
	}
	_, _ = m.await(t, m.awaitParams(t, id, currentFence(m.snap(id))), -1)
}

// awaitUnfit: a leased member of a flow that is not sealed, or was
// cancelled, awaits (refused); built when there is none: a claimed
// execution joins a new flow (running), which is sometimes sealed and
// cancelled (members stay running under CancelFlowOnly).
func (m *machine) awaitUnfit(t *rapid.T) {
	ids := m.leasedWhere(func(s *model.ExecutionSnapshot) bool { return !s.Flow.IsZero() && !m.awaitsFit(s) })
	var id model.ExecutionID
	if len(ids) == 0 || chance(t, 40, "await_build_unfit") {
		lane := drawFrom(t, lanes, "await_lane")
		part := m.cfg.SoloPartition(lane)
		id = m.createPlain(t, lane, part, model.FlowID{})
		m.claimNow(t, id)
		f := m.newFlowIn(t, part)
		mustCall(m, t, "FlowCreate", &model.FlowCreateParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowCreate))
		m.flows = append(m.flows, &refFlow{id: f})
		mustCall(m, t, "FlowAddMember", &model.FlowAddMemberParams{Flow: f, Execution: id, Now: m.now()}, flowOp(model.FlowStore.FlowAddMember))
		if chance(t, 50, "await_cancelled_flow") {
			if genBool.Draw(t, "await_seal_first") {
				mustCall(m, t, "FlowSeal", &model.FlowSealParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowSeal))
			}
			mustCall(m, t, "FlowCancel", &model.FlowCancelParams{Flow: f, Policy: model.CancelFlowOnly, Reason: "stop", Now: m.now()},
				flowOp(model.FlowStore.FlowCancel))
		}
		m.observeQuiet(t)
	} else {
		id = drawFrom(t, ids, "await_unfit")
	}
	_, _ = m.await(t, m.awaitParams(t, id, currentFence(m.snap(id))), -1)
}

// awaitAny: any execution (mostly an active one) awaits with a drawn
// fence.
func (m *machine) awaitAny(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	p := m.awaitParams(t, id, m.drawFence(t, id))
	_, _ = m.await(t, p, m.corruptAwait(t, p))
}

// mustCall makes a call whose preconditions the caller set up: any error
// fails the sequence.
func mustCall[P, R any](m *machine, t *rapid.T, op string, p *P, f func(model.Store, context.Context, *P) (R, error)) R {
	t.Helper()
	r, err := call(m, t, op, p, f)
	if err != nil {
		m.fatalf(t, "%s %+v: %v", op, *p, err)
	}
	return r
}

// learn adds an execution the await actions made to the machine's model
// (not counted by Options.MaxExecutions).
func (m *machine) learn(id model.ExecutionID, lane model.LaneID) {
	r := &refExec{id: id, lane: lane}
	m.execs = append(m.execs, r)
	m.byID[id] = r
	m.awaitMade++
}

// createPlain creates an execution of lane on partition part, in no flow
// (flow: none) or into flow (born held).
func (m *machine) createPlain(t *rapid.T, lane model.LaneID, part int, flow model.FlowID) model.ExecutionID {
	id := model.NewExecutionID(part, m.nextUUID(t, "id_order"))
	mustCall(m, t, "ExecutionCreate", &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lane,
		Kind: kinds[0], Flow: flow, Now: m.now()}, model.Store.ExecutionCreate)
	m.learn(id, lane)
	return id
}

// claimNow grants and claims the eligible execution id for a pool worker
// (with every capability), checks the claim and observes store A.
func (m *machine) claimNow(t *rapid.T, id model.ExecutionID) *model.ClaimResult {
	t.Helper()
	m.observeQuiet(t)
	prev := m.snap(id)
	m.expect(t, prev != nil && isEligible(prev) && !m.liveGrant(prev), "claiming %v for an await: it is %+v", id, prev)
	m.openLane(t, prev.Lane)
	w := drawFrom(t, workerPool, "await_worker")
	p := &model.ExecutionGrantAndClaimParams{ID: id, Capabilities: capUniverse, AdmissionToken: m.freshToken(), LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	res := mustCall(m, t, "ExecutionGrantAndClaim", p, model.Store.ExecutionGrantAndClaim)
	m.acquire(t, "ExecutionGrantAndClaim", prev, w, p.LeaseRequest, res)
	m.observeQuiet(t)
	return res
}

// buildAwaitParent builds a claimed member of a new sealed flow: either
// a claimed execution that joined the flow running, or a member created
// into the flow with 0–2 upstreams (sometimes under another group
// policy), the flow sealed and the upstreams run to success until the
// member is released, then claimed.
func (m *machine) buildAwaitParent(t *rapid.T) model.ExecutionID {
	t.Helper()
	lane := drawFrom(t, lanes, "await_lane")
	part := m.cfg.SoloPartition(lane)
	f := m.newFlowIn(t, part)
	mustCall(m, t, "FlowCreate", &model.FlowCreateParams{Flow: f, Now: m.now()}, flowOp(model.FlowStore.FlowCreate))
	rf := &refFlow{id: f}
	m.flows = append(m.flows, rf)
	seal := &model.FlowSealParams{Flow: f, Now: m.now()}
	if chance(t, 25, "await_joined_running") {
		id := m.createPlain(t, lane, part, model.FlowID{})
		m.claimNow(t, id)
		mustCall(m, t, "FlowAddMember", &model.FlowAddMemberParams{Flow: f, Execution: id, Now: m.now()}, flowOp(model.FlowStore.FlowAddMember))
		mustCall(m, t, "FlowSeal", seal, flowOp(model.FlowStore.FlowSeal))
		m.observeQuiet(t)
		return id
	}
	parent := m.createPlain(t, lane, part, f)
	ups := make([]model.ExecutionID, rapid.IntRange(0, 2).Draw(t, "await_upstreams"))
	for i := range ups {
		ups[i] = m.createPlain(t, lane, part, f)
	}
	if chance(t, 35, "await_parent_policy") {
		// (an await's generation decides as AllOf whatever the policy)
		pols := []model.EdgeGroupPolicy{groupPolicies[1], groupPolicies[2], groupPolicies[4]}
		if len(ups) != 1 {
			pols = append(pols, groupPolicies[3]) // quorum 2: of two upstreams, or of none
		}
		mustCall(m, t, "EdgeGroupSet", &model.EdgeGroupSetParams{Flow: f, Downstream: parent, Policy: drawFrom(t, pols, "await_policy"), Now: m.now()},
			flowOp(model.FlowStore.EdgeGroupSet))
	}
	rev := uint64(1 + len(ups))
	for _, u := range ups {
		e := model.EdgeID(m.nextUUID(t, "edge_order"))
		r := mustCall(m, t, "EdgeStage", &model.EdgeStageParams{Flow: f, Edge: e, Upstream: u, Downstream: parent,
			PassResult: genBool.Draw(t, "await_pass_result"), ExpectedGraphRevision: rev, Now: m.now()}, flowOp(model.FlowStore.EdgeStage))
		rev = r.GraphRevision
		rf.edges = append(rf.edges, e)
	}
	mustCall(m, t, "FlowSeal", seal, flowOp(model.FlowStore.FlowSeal))
	m.observeQuiet(t)
	for _, u := range ups {
		if isEligible(m.snap(parent)) {
			break
		}
		if s := m.snap(u); s == nil || !isEligible(s) {
			continue // cancelled as a sibling
		}
		c := m.claimNow(t, u)
		mustCall(m, t, "ExecutionComplete", &model.ExecutionCompleteParams{ID: u, Fence: c.Fence(), Source: model.SourceWorker,
			Result: []byte("up"), Now: m.now()}, model.Store.ExecutionComplete)
		m.observeQuiet(t)
	}
	m.claimNow(t, parent)
	return parent
}

// driveAwait runs what follows an accepted await p in the same step:
// sometimes the parent is cancelled first; each child is completed,
// failed, cancelled or left running. A parent cancelled meanwhile is
// replayed (its group back at generation 0) and sometimes claimed and
// awaits again while its earlier children still run; a released parent
// is claimed (its attempt resumes), then awaits again, or completes and is
// replayed, and sometimes claimed and awaits once more (a generation above
// every earlier one). Then the upstreams of the parent's older
// generations still running (children left running, upstreams its policy
// did not wait for) sometimes end, and an ended child is sometimes
// replayed: edges of older generations resolve, and re-open, without
// counting.
func (m *machine) driveAwait(t *rapid.T, p *model.ExecutionAwaitChildrenParams) {
	t.Helper()
	parent := p.ID
	now := m.now()
	if chance(t, 25, "drive_cancel_parent") {
		mustCall(m, t, "ExecutionCancel", &model.ExecutionCancelParams{ID: parent, Source: model.SourceOperator, Reason: "stop", Now: now},
			model.Store.ExecutionCancel)
	}
	var children []model.ExecutionID
	for _, c := range p.Children {
		children = append(children, c.Create.ID)
	}
	m.endChildren(t, children, true)
	m.observeQuiet(t)
	s := m.snap(parent)
	switch {
	case s == nil:
	case s.State.LifecyclePhase == model.PhaseTerminal:
		m.replayNow(t, parent)
		m.observeQuiet(t)
		if s := m.snap(parent); s != nil && isEligible(s) && m.awaitRoom() && genBool.Draw(t, "drive_await_again") {
			cr := m.claimNow(t, parent)
			_, _ = m.await(t, m.awaitParams(t, parent, cr.Fence()), -1)
		}
	case isEligible(s) && !chance(t, 30, "drive_leave_parent"):
		cr := m.claimNow(t, parent)
		switch rapid.IntRange(0, 2).Draw(t, "drive_parent") {
		case 0:
			if m.awaitRoom() {
				_, _ = m.await(t, m.awaitParams(t, parent, cr.Fence()), -1)
			}
		case 1:
			mustCall(m, t, "ExecutionComplete", &model.ExecutionCompleteParams{ID: parent, Fence: cr.Fence(), Source: model.SourceWorker,
				Result: []byte("parent"), Now: now}, model.Store.ExecutionComplete)
			m.replayNow(t, parent)
			m.observeQuiet(t)
			if s := m.snap(parent); s != nil && isEligible(s) && m.awaitRoom() && genBool.Draw(t, "drive_await_again") {
				cr := m.claimNow(t, parent)
				_, _ = m.await(t, m.awaitParams(t, parent, cr.Fence()), -1)
			}
		}
	}
	m.observeQuiet(t)
	s = m.snap(parent)
	fo := m.flowObs(flowOf(s))
	if fo == nil {
		return
	}
	g := fo.Groups[parent]
	var older, ended []model.ExecutionID
	for _, e := range fo.In[parent] {
		if g == nil || e.Generation == g.Generation {
			continue
		}
		if u := m.snap(e.Upstream); u != nil && u.State.LifecyclePhase != model.PhaseTerminal {
			older = append(older, e.Upstream)
		} else if u != nil && e.Generation > 0 {
			ended = append(ended, e.Upstream)
		}
	}
	if len(older) > 0 && chance(t, 60, "drive_end_older") {
		m.endChildren(t, older, false)
	}
	if len(ended) > 0 && chance(t, 25, "drive_replay_child") {
		m.replayNow(t, drawFrom(t, ended, "drive_replayed_child"))
	}
}

// endChildren ends each of ids that has not ended (completed or failed
// when it is eligible, else cancelled by an operator), or, when mayLeave,
// sometimes leaves it running.
func (m *machine) endChildren(t *rapid.T, ids []model.ExecutionID, mayLeave bool) {
	t.Helper()
	now := m.now()
	for _, id := range ids {
		m.observeQuiet(t)
		s := m.snap(id)
		if s == nil || s.State.LifecyclePhase == model.PhaseTerminal {
			continue
		}
		k := rapid.IntRange(0, 4).Draw(t, "drive_child")
		if k == 0 && mayLeave {
			continue // left running
		}
		if k == 4 || !isEligible(s) || m.liveGrant(s) {
			mustCall(m, t, "ExecutionCancel", &model.ExecutionCancelParams{ID: id, Source: model.SourceOperator, Reason: "enough", Now: now},
				model.Store.ExecutionCancel)
			continue
		}
		cr := m.claimNow(t, id)
		if k == 3 {
			mustCall(m, t, "ExecutionFail", &model.ExecutionFailParams{ID: id, Fence: cr.Fence(), Source: model.SourceWorker,
				Reason: "boom", Category: model.FailurePermanent, Now: now}, model.Store.ExecutionFail)
		} else {
			mustCall(m, t, "ExecutionComplete", &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Source: model.SourceWorker,
				Result: []byte("child"), Now: now}, model.Store.ExecutionComplete)
		}
	}
}

// replayNow replays the terminal execution id when its replays allow.
func (m *machine) replayNow(t *rapid.T, id model.ExecutionID) {
	t.Helper()
	m.observeQuiet(t)
	if s := m.snap(id); s == nil || s.State.LifecyclePhase != model.PhaseTerminal || s.ReplayCount >= s.MaxReplays {
		return
	}
	mustCall(m, t, "ExecutionReplay", &model.ExecutionReplayParams{ID: id, Reason: "again", Now: m.now()}, model.Store.ExecutionReplay)
}
