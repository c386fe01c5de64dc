package model

import (
	"strconv"
	"time"
)

// Flows: a flow groups executions (its members) into a graph of dependency
// edges, upstream → downstream. This file holds the flow's types; the
// operations are in flow_ops.go. docs/ARCHITECTURE.md ("Flows") says where
// a flow lives and why every flow operation is one atomic step on one slot.

// EdgeID identifies one dependency edge. The caller chooses it, as it
// chooses execution ids, so stores stay deterministic.
type EdgeID uuidID

func (id EdgeID) String() string { return UUID(id).String() }

// IsZero reports whether the id is unset.
func (id EdgeID) IsZero() bool { return UUID(id).IsZero() }

// MarshalText implements encoding.TextMarshaler.
func (id EdgeID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// MarshalText implements encoding.TextMarshaler.
func (id FlowID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// ParseEdgeID parses a canonical UUID.
func ParseEdgeID(s string) (EdgeID, error) {
	u, err := parseUUIDField("edge_id", s)
	return EdgeID(u), err
}

// FlowState is a flow's state; its String is the wire name. A flow is
// created open. FlowCancel makes it cancelled; a sealed flow whose members
// have all ended is completed when every one completed, failed otherwise
// (derived when it is read: see DeriveFlowState). A terminal flow takes
// no member, edge, group policy, seal or cancel.
type FlowState uint8

// Flow states.
const (
	FlowOpen      FlowState = iota + 1 // "open"
	FlowCompleted                      // "completed"
	FlowFailed                         // "failed"
	FlowCancelled                      // "cancelled"
)

var flowStateNames = enumNames{"open", "completed", "failed", "cancelled"}

func (v FlowState) String() string { return flowStateNames.name(uint8(v)) }

// Terminal reports whether the flow takes no more members, edges or group
// policies.
func (v FlowState) Terminal() bool { return v != FlowOpen }

// DeriveFlowState is a flow's state from its stored state (open or
// cancelled), whether it is sealed, and its members' public states.
func DeriveFlowState(stored FlowState, sealed bool, counts map[PublicState]int) FlowState {
	if stored != FlowOpen || !sealed {
		return stored
	}
	failed := false
	for ps, n := range counts {
		if n == 0 {
			continue
		}
		if !ps.IsTerminal() {
			return FlowOpen
		}
		if ps != PublicCompleted {
			failed = true
		}
	}
	if failed {
		return FlowFailed
	}
	return FlowCompleted
}

// ParseFlowState parses a wire name.
func ParseFlowState(s string) (FlowState, bool) {
	v, ok := flowStateNames.parse(s)
	return FlowState(v), ok
}

// EdgeState is an edge's resolution; its String is the wire name. An edge
// is staged pending; its upstream's terminal transition (or its staging,
// when the upstream has already ended) makes it satisfied (the upstream
// completed) or impossible (any other terminal outcome). Replaying the
// upstream returns it to pending while its downstream's group waits.
type EdgeState uint8

// Edge states.
const (
	EdgePending    EdgeState = iota + 1 // "pending"
	EdgeSatisfied                       // "satisfied"
	EdgeImpossible                      // "impossible"
)

var edgeStateNames = enumNames{"pending", "satisfied", "impossible"}

func (v EdgeState) String() string { return edgeStateNames.name(uint8(v)) }

// ParseEdgeState parses a wire name.
func ParseEdgeState(s string) (EdgeState, bool) {
	v, ok := edgeStateNames.parse(s)
	return EdgeState(v), ok
}

// EdgeGroupKind says how a downstream's incoming edges combine; its String
// is the wire name.
type EdgeGroupKind uint8

// Edge group kinds.
const (
	// GroupAllOf: every upstream must succeed (the default).
	GroupAllOf EdgeGroupKind = iota + 1 // "all_of"
	// GroupAnyOf: one successful upstream suffices.
	GroupAnyOf // "any_of"
	// GroupQuorum: Quorum successful upstreams suffice.
	GroupQuorum // "quorum"
)

var edgeGroupKindNames = enumNames{"all_of", "any_of", "quorum"}

func (v EdgeGroupKind) String() string { return edgeGroupKindNames.name(uint8(v)) }

// ParseEdgeGroupKind parses a wire name.
func ParseEdgeGroupKind(s string) (EdgeGroupKind, bool) {
	v, ok := edgeGroupKindNames.parse(s)
	return EdgeGroupKind(v), ok
}

// SiblingPolicy says what happens to the upstreams still running when an
// AnyOf or Quorum group fires; its String is the wire name.
type SiblingPolicy uint8

// Sibling policies.
const (
	// SiblingsCancelRemaining cancels them (reason
	// sibling_quorum_satisfied or sibling_quorum_impossible).
	SiblingsCancelRemaining SiblingPolicy = iota + 1 // "cancel_remaining"
	// SiblingsLetRun leaves them running.
	SiblingsLetRun // "let_run"
)

var siblingPolicyNames = enumNames{"cancel_remaining", "let_run"}

func (v SiblingPolicy) String() string { return siblingPolicyNames.name(uint8(v)) }

// ParseSiblingPolicy parses a wire name.
func ParseSiblingPolicy(s string) (SiblingPolicy, bool) {
	v, ok := siblingPolicyNames.parse(s)
	return SiblingPolicy(v), ok
}

// The cancellation of an upstream that a group with
// SiblingsCancelRemaining no longer needs: ExecutionSnapshot's
// CancellationReason is one of the reasons, CancelledBy is CancelledByFlow.
const (
	ReasonSiblingSatisfied  = "sibling_quorum_satisfied"
	ReasonSiblingImpossible = "sibling_quorum_impossible"
	CancelledByFlow         = "flow"
	// ReasonDependencyImpossible ends the open attempt of a member that is
	// skipped.
	ReasonDependencyImpossible = "dependency_impossible"
)

// FlowCancelPolicy says what FlowCancel does to a flow's members; its
// String is the wire name.
type FlowCancelPolicy uint8

// Flow cancel policies.
const (
	// CancelFlowOnly marks the flow cancelled and leaves its members as
	// they are: they run, resolve and are skipped as before.
	CancelFlowOnly FlowCancelPolicy = iota + 1 // "flow_only"
	// CancelAll cancels every member that has not ended, running ones
	// too (their holders are told).
	CancelAll // "cancel_all"
	// CancelPending cancels the members that have not started (held,
	// waiting, delayed or blocked) and lets the running ones finish.
	CancelPending // "cancel_pending"
)

var flowCancelPolicyNames = enumNames{"flow_only", "cancel_all", "cancel_pending"}

func (v FlowCancelPolicy) String() string { return flowCancelPolicyNames.name(uint8(v)) }

// ParseFlowCancelPolicy parses a wire name.
func ParseFlowCancelPolicy(s string) (FlowCancelPolicy, bool) {
	v, ok := flowCancelPolicyNames.parse(s)
	return FlowCancelPolicy(v), ok
}

// GroupState is the decision of a downstream's edge group; its String is
// the wire name. A group decides once, and only in a sealed flow.
type GroupState uint8

// Group states.
const (
	// GroupWaiting: undecided; the downstream is held.
	GroupWaiting GroupState = iota + 1 // "waiting"
	// GroupSatisfied: enough upstreams succeeded; the downstream was
	// released to run.
	GroupSatisfied // "satisfied"
	// GroupImpossible: too many upstreams ended otherwise; the downstream
	// was skipped (terminal, outcome skipped).
	GroupImpossible // "impossible"
)

var groupStateNames = enumNames{"waiting", "satisfied", "impossible"}

func (v GroupState) String() string { return groupStateNames.name(uint8(v)) }

// ParseGroupState parses a wire name.
func ParseGroupState(s string) (GroupState, bool) {
	v, ok := groupStateNames.parse(s)
	return GroupState(v), ok
}

// Need is how many successful upstreams a group of size n needs: n for
// AllOf, 1 for AnyOf, Quorum for GroupQuorum.
func (g EdgeGroupPolicy) Need(n int) int {
	switch g.Kind {
	case GroupAnyOf:
		return 1
	case GroupQuorum:
		return g.Quorum
	}
	return n
}

// Decide is a group's decision from its size and its resolved edges: it is
// satisfied once succeeded reaches Need(size), impossible once more than
// size - Need(size) edges are impossible (so a quorum larger than the
// group is impossible at once), and waiting otherwise.
func (g EdgeGroupPolicy) Decide(size, succeeded, impossible int) GroupState {
	need := g.Need(size)
	switch {
	case succeeded >= need:
		return GroupSatisfied
	case impossible > size-need:
		return GroupImpossible
	}
	return GroupWaiting
}

// EdgeGroupPolicy is the policy of one downstream's incoming edges.
type EdgeGroupPolicy struct {
	Kind EdgeGroupKind
	// Quorum is the number of successful upstreams a GroupQuorum needs
	// (1..MaxQuorum); zero for the other kinds (AnyOf is a quorum of 1).
	Quorum int
	// OnSatisfied is required for AnyOf and Quorum, zero for AllOf.
	OnSatisfied SiblingPolicy
}

// AllOf is the default group policy of a downstream.
var AllOf = EdgeGroupPolicy{Kind: GroupAllOf}

// MaxQuorum bounds EdgeGroupPolicy.Quorum.
const MaxQuorum = 10000

// MaxGraphSearchEdges bounds the work of the cycle check of EdgeStage:
// the check follows the outgoing edges reachable from the new edge's
// downstream, and when there are more than this many the stage is refused
// with ErrGraphSearchLimit (nothing is written) rather than answered
// approximately. Staging edges in topological order (a downstream before
// its own outgoing edges) keeps every search empty.
const MaxGraphSearchEdges = 10000

// Validate checks the policy.
func (g EdgeGroupPolicy) Validate(field string) error {
	switch g.Kind {
	case GroupAllOf:
		if g.Quorum != 0 {
			return &Error{Code: CodeInvalidInput, Field: field + ".Quorum", Detail: "not_for_all_of", Got: strconv.Itoa(g.Quorum), Want: "0"}
		}
		if g.OnSatisfied != 0 {
			return &Error{Code: CodeInvalidInput, Field: field + ".OnSatisfied", Detail: "not_for_all_of", Got: g.OnSatisfied.String(), Want: "unset"}
		}
		return nil
	case GroupAnyOf:
		if g.Quorum != 0 {
			return &Error{Code: CodeInvalidInput, Field: field + ".Quorum", Detail: "not_for_any_of", Got: strconv.Itoa(g.Quorum), Want: "0"}
		}
	case GroupQuorum:
		if g.Quorum < 1 || g.Quorum > MaxQuorum {
			return OutOfRange(field+".Quorum", g.Quorum, "1.."+strconv.Itoa(MaxQuorum))
		}
	default:
		return &Error{Code: CodeInvalidInput, Field: field + ".Kind", Detail: "unknown", Got: strconv.Itoa(int(g.Kind)), Want: "GroupAllOf, GroupAnyOf or GroupQuorum"}
	}
	if g.OnSatisfied != SiblingsCancelRemaining && g.OnSatisfied != SiblingsLetRun {
		return &Error{Code: CodeInvalidInput, Field: field + ".OnSatisfied", Detail: "missing", Got: strconv.Itoa(int(g.OnSatisfied)), Want: "SiblingsCancelRemaining or SiblingsLetRun"}
	}
	return nil
}

// FlowSnapshot describes one flow.
type FlowSnapshot struct {
	ID        FlowID
	Partition int
	State     FlowState
	// MemberCount and EdgeCount count the members and the staged edges.
	MemberCount int
	EdgeCount   int
	// GraphRevision counts the changes of the graph: one per member added
	// and one per edge staged, so it equals MemberCount + EdgeCount.
	// EdgeStage compares it with its ExpectedGraphRevision.
	GraphRevision uint64
	// Sealed reports whether FlowSeal closed the graph: groups decide
	// only in a sealed flow, and its held members without dependencies
	// were released.
	Sealed bool
	// Counts counts the members by public state (every member, read when
	// the flow is described).
	Counts map[PublicState]int
	// CancelPolicy, CancelReason and CancelledAt are set once FlowCancel
	// cancelled the flow (State FlowCancelled).
	CancelPolicy   FlowCancelPolicy
	CancelReason   string
	CancelledAt    time.Time
	CreatedAt      time.Time
	LastMutationAt time.Time
	// Tags is nil when the flow has none.
	Tags map[string]string
}

// EdgeSnapshot describes one dependency edge. An edge's condition is the
// upstream's success (FlowFabric's success_only, its only kind).
type EdgeSnapshot struct {
	ID         EdgeID
	Flow       FlowID
	Upstream   ExecutionID
	Downstream ExecutionID
	// PassResult: the upstream's result becomes the downstream's payload
	// when the edge is satisfied (never into a terminal downstream).
	PassResult bool
	State      EdgeState
	// GraphRevision is the flow's revision this edge's staging produced.
	GraphRevision uint64
	// Generation is 0 for an edge staged while the flow was built, and n
	// for an edge from a child the downstream's nth ExecutionAwaitChildren
	// created; such an edge is satisfied when its child ends, whatever
	// the outcome.
	Generation int
	CreatedAt  time.Time
}

// EdgeGroupSnapshot describes the edge group of one downstream.
type EdgeGroupSnapshot struct {
	Flow       FlowID
	Downstream ExecutionID
	// Policy is AllOf unless EdgeGroupSet set another.
	Policy EdgeGroupPolicy
	// Explicit reports whether EdgeGroupSet set the policy.
	Explicit bool
	// Edges counts the downstream's incoming edges.
	Edges int
	// Size is the group's size, fixed by FlowSeal (the incoming edges
	// then); zero before the flow is sealed.
	Size int
	// Succeeded and Impossible count the incoming edges resolved
	// satisfied and impossible.
	Succeeded, Impossible int
	// State is the group's decision (GroupWaiting until it decides).
	State GroupState
	// Generation is the group's current generation: 0 for the edges
	// staged while the flow was built (Policy applies), n after the
	// downstream's nth ExecutionAwaitChildren (AllOf over that call's
	// edges, whatever Policy says). Size, Succeeded and Impossible count
	// the current generation's edges only; Edges counts them all.
	Generation int
}
