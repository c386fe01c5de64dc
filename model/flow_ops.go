package model

import (
	"bytes"
	"context"
	"strconv"
	"time"
)

// FlowStore holds the flow operations (issue 10): flows, members,
// dependency edges and edge-group policies, sealing, dependency
// resolution, and their reads. It is optional (see Store): the engine
// does not call it yet. memstore and valkeystore implement it; the
// conformance suite and the differential run it on both.
//
// Every flow operation is one atomic step on the flow's partition
// (PartitionConfig.FlowPartition): a member must live there (its
// execution id names that partition), so the flow's record, members,
// edges and groups and the member's flow field share one slot.
//
// A flow is built, then sealed. While it is open, a member that joins
// runnable is held (eligibility BlockedByDependencies, blocking reason
// WaitingForChildren): no worker can claim it. FlowSeal fixes every
// group's size, releases the held members with no incoming edge, and
// decides every group it can. From then on each member's terminal
// transition resolves its outgoing edges in the same atomic step
// (success satisfies, any other outcome makes the edge impossible) and
// decides the downstream groups it completes: a satisfied group releases
// its downstream (eligible, or delayed until its RunAt), an impossible
// one skips it (terminal, OutcomeSkipped), and a skip resolves the
// skipped member's own edges in turn, so skips cascade within the step.
// No resolution waits for a scanner or a notification. A group decides
// once. An edge with PassResult copies its upstream's result into the
// downstream's payload when it is satisfied while the downstream still
// waits. When an AnyOf or Quorum group with SiblingsCancelRemaining
// decides, its upstreams that have not ended are cancelled in the same
// step (CancellationReason ReasonSiblingSatisfied or
// ReasonSiblingImpossible, CancelledBy CancelledByFlow; a running one's
// holder gets a LeaseNoticeCancelled, as for an operator cancel), and
// their own edges resolve in turn; SiblingsLetRun leaves them running.
//
// Replaying a member re-opens what it decided: a replayed upstream's
// edges into groups still waiting return to pending, and a replayed
// member with incoming edges is held again, its group reset to count only
// the upstreams that succeeded (the others stay pending until they are
// replayed and end), then decided again.
type FlowStore interface {
	FlowCreate(ctx context.Context, p *FlowCreateParams) (*FlowCreateResult, error)
	FlowAddMember(ctx context.Context, p *FlowAddMemberParams) (*FlowAddMemberResult, error)
	EdgeStage(ctx context.Context, p *EdgeStageParams) (*EdgeStageResult, error)
	EdgeGroupSet(ctx context.Context, p *EdgeGroupSetParams) (*EdgeGroupSetResult, error)
	FlowSeal(ctx context.Context, p *FlowSealParams) (*FlowSealResult, error)
	FlowCancel(ctx context.Context, p *FlowCancelParams) (*FlowCancelResult, error)
	// ExecutionAwaitChildren parks a running member until the children
	// it creates have ended (flow_await.go).
	ExecutionAwaitChildren(ctx context.Context, p *ExecutionAwaitChildrenParams) (*ExecutionAwaitChildrenResult, error)

	FlowDescribe(ctx context.Context, p *FlowDescribeParams) (*FlowSnapshot, error)
	FlowList(ctx context.Context, p *FlowListParams) (*FlowListResult, error)
	// FlowMemberList pages a flow's members in id order (ErrFlowNotFound
	// for an unknown flow): a reader of the whole graph costs the flow's
	// size, not its partition's.
	FlowMemberList(ctx context.Context, p *FlowMemberListParams) (*FlowMemberListResult, error)
	EdgeDescribe(ctx context.Context, p *EdgeDescribeParams) (*EdgeSnapshot, error)
	EdgeGroupDescribe(ctx context.Context, p *EdgeGroupDescribeParams) (*EdgeGroupSnapshot, error)
	// EdgeListOutgoing and EdgeListIncoming list an execution's edges
	// (seed 004's list_outgoing_edges / list_incoming_edges), empty for
	// an execution in no flow.
	EdgeListOutgoing(ctx context.Context, p *EdgeListParams) (*EdgeListResult, error)
	EdgeListIncoming(ctx context.Context, p *EdgeListParams) (*EdgeListResult, error)
}

func checkFlowID(field string, f FlowID) error {
	if f.IsZero() {
		return invalidField(field, "empty")
	}
	return nil
}

// checkMember checks an execution id given as a member of flow f: it must
// name f's partition.
func checkMember(cfg PartitionConfig, field string, id ExecutionID, f FlowID) error {
	if id.IsZero() {
		return invalidField(field, "empty")
	}
	if id.Partition() >= cfg.WithDefaults().FlowPartitions {
		return invalidField(field, "partition_out_of_range")
	}
	if want := cfg.FlowPartition(f); id.Partition() != want {
		return &Error{Code: CodeInvalidInput, Field: field, Detail: "not_in_flow_partition",
			Got: strconv.Itoa(id.Partition()), Want: strconv.Itoa(want)}
	}
	return nil
}

// FlowCreateParams creates a flow. Creating an existing flow changes
// nothing (not even its tags) and reports FlowAlreadyExists.
type FlowCreateParams struct {
	Flow FlowID
	Tags map[string]string
	Now  time.Time
}

// Validate checks every field.
func (p *FlowCreateParams) Validate() error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if err := ValidateTags(p.Tags); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// FlowCreateOutcome is what FlowCreate did; its String is the wire name.
type FlowCreateOutcome uint8

// Flow creation outcomes.
const (
	FlowCreated       FlowCreateOutcome = iota + 1 // "created"
	FlowAlreadyExists                              // "already_exists"
)

var flowCreateOutcomeNames = enumNames{"created", "already_exists"}

func (v FlowCreateOutcome) String() string { return flowCreateOutcomeNames.name(uint8(v)) }

// ParseFlowCreateOutcome parses a wire name.
func ParseFlowCreateOutcome(s string) (FlowCreateOutcome, bool) {
	v, ok := flowCreateOutcomeNames.parse(s)
	return FlowCreateOutcome(v), ok
}

// FlowCreateResult reports a creation.
type FlowCreateResult struct {
	Outcome FlowCreateOutcome
	// Partition is the flow's partition, where its members must live.
	Partition int
}

// FlowAddMemberParams adds an execution to a flow; joining stamps the
// execution's LastMutationAt, and a runnable execution is held
// (BlockedByDependencies, its RunAt kept for its release). An execution
// that joins active or suspended runs on; it can be an upstream but not a
// downstream. Errors, in this order: ErrFlowNotFound, ErrFlowTerminal,
// ErrNotFound (the execution), ErrAlreadyInFlow (a member of another
// flow), ErrFlowSealed, ErrNotActive (a terminal execution: its record is
// frozen, and its outcome could resolve no edge). Adding a member again
// reports AlreadyMember, sealed or not.
type FlowAddMemberParams struct {
	Flow      FlowID
	Execution ExecutionID // in the flow's partition
	Now       time.Time
}

// Validate checks every field.
func (p *FlowAddMemberParams) Validate(cfg PartitionConfig) error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if err := checkMember(cfg, "Execution", p.Execution, p.Flow); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// FlowAddMemberOutcome is what FlowAddMember did; its String is the wire
// name.
type FlowAddMemberOutcome uint8

// Member outcomes.
const (
	MemberAdded   FlowAddMemberOutcome = iota + 1 // "added"
	AlreadyMember                                 // "already_member": nothing changed
)

var flowAddMemberOutcomeNames = enumNames{"added", "already_member"}

func (v FlowAddMemberOutcome) String() string { return flowAddMemberOutcomeNames.name(uint8(v)) }

// ParseFlowAddMemberOutcome parses a wire name.
func ParseFlowAddMemberOutcome(s string) (FlowAddMemberOutcome, bool) {
	v, ok := flowAddMemberOutcomeNames.parse(s)
	return FlowAddMemberOutcome(v), ok
}

// FlowAddMemberResult reports a membership.
type FlowAddMemberResult struct {
	Outcome       FlowAddMemberOutcome
	MemberCount   int
	GraphRevision uint64
}

// EdgeStageParams stages the edge Upstream → Downstream: Downstream
// depends on Upstream's success. ExpectedGraphRevision must equal the
// flow's revision (ErrStaleGraphRevision otherwise). An upstream that has
// already ended resolves the edge as it is staged. Errors, checked in
// this order: ErrFlowNotFound, ErrFlowTerminal, ErrFlowSealed,
// ErrStaleGraphRevision, ErrNotInFlow (Field names the end),
// ErrDependencyExists (the edge id, or an edge between the same two
// members), ErrDownstreamStarted (the downstream is not held), ErrCycle,
// ErrGraphSearchLimit.
type EdgeStageParams struct {
	Flow                  FlowID
	Edge                  EdgeID
	Upstream, Downstream  ExecutionID // members, in the flow's partition
	ExpectedGraphRevision uint64
	PassResult            bool
	// MaxSearchEdges bounds the cycle check's walk (zero:
	// MaxGraphSearchEdges, which is also the most accepted): a caller
	// with a latency budget may lower it.
	MaxSearchEdges int
	Now            time.Time
}

// Validate checks every field; an edge from an execution to itself is
// ErrSelfEdge (a validation error).
func (p *EdgeStageParams) Validate(cfg PartitionConfig) error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if p.Edge.IsZero() {
		return invalidField("Edge", "empty")
	}
	if err := checkMember(cfg, "Upstream", p.Upstream, p.Flow); err != nil {
		return err
	}
	if err := checkMember(cfg, "Downstream", p.Downstream, p.Flow); err != nil {
		return err
	}
	if p.MaxSearchEdges < 0 || p.MaxSearchEdges > MaxGraphSearchEdges {
		return OutOfRange("MaxSearchEdges", p.MaxSearchEdges, "0.."+strconv.Itoa(MaxGraphSearchEdges))
	}
	if p.Upstream == p.Downstream {
		return &Error{Code: CodeSelfReferencingEdge, Field: "Downstream", Detail: "equals_upstream", Got: p.Downstream.String()}
	}
	return checkNow(p.Now)
}

// EdgeStageResult reports a staged edge.
type EdgeStageResult struct {
	// GraphRevision is the flow's new revision.
	GraphRevision uint64
}

// EdgeGroupSetParams sets the policy of Downstream's incoming edges. It is
// accepted only before the first edge into Downstream is staged
// (ErrEdgeGroupFixed after) and before the flow is sealed
// (ErrFlowSealed); setting the same policy again reports GroupAlreadySet.
type EdgeGroupSetParams struct {
	Flow       FlowID
	Downstream ExecutionID
	Policy     EdgeGroupPolicy
	Now        time.Time
}

// Validate checks every field.
func (p *EdgeGroupSetParams) Validate(cfg PartitionConfig) error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if err := checkMember(cfg, "Downstream", p.Downstream, p.Flow); err != nil {
		return err
	}
	if err := p.Policy.Validate("Policy"); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// EdgeGroupSetOutcome is what EdgeGroupSet did; its String is the wire name.
type EdgeGroupSetOutcome uint8

// Group policy outcomes.
const (
	GroupSet        EdgeGroupSetOutcome = iota + 1 // "set"
	GroupAlreadySet                                // "already_set": the same policy was set; nothing changed
)

var edgeGroupSetOutcomeNames = enumNames{"set", "already_set"}

func (v EdgeGroupSetOutcome) String() string { return edgeGroupSetOutcomeNames.name(uint8(v)) }

// ParseEdgeGroupSetOutcome parses a wire name.
func ParseEdgeGroupSetOutcome(s string) (EdgeGroupSetOutcome, bool) {
	v, ok := edgeGroupSetOutcomeNames.parse(s)
	return EdgeGroupSetOutcome(v), ok
}

// EdgeGroupSetResult reports a policy change.
type EdgeGroupSetResult struct {
	Outcome EdgeGroupSetOutcome
}

// FlowSealParams seals a flow: its graph is complete. Sealing fixes each
// downstream's group size (its incoming edges now), releases every held
// member that has no incoming edge, and decides every group whose edges
// already resolved (releasing or skipping, with cascades). Afterwards the
// flow takes no member, edge or group policy (ErrFlowSealed). Errors:
// ErrFlowNotFound, ErrFlowTerminal. Sealing a sealed flow changes nothing
// and reports FlowAlreadySealed.
type FlowSealParams struct {
	Flow FlowID
	Now  time.Time
}

// Validate checks every field.
func (p *FlowSealParams) Validate() error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// FlowSealOutcome is what FlowSeal did; its String is the wire name.
type FlowSealOutcome uint8

// Seal outcomes.
const (
	FlowSealedNow     FlowSealOutcome = iota + 1 // "sealed"
	FlowAlreadySealed                            // "already_sealed": nothing changed
)

var flowSealOutcomeNames = enumNames{"sealed", "already_sealed"}

func (v FlowSealOutcome) String() string { return flowSealOutcomeNames.name(uint8(v)) }

// ParseFlowSealOutcome parses a wire name.
func ParseFlowSealOutcome(s string) (FlowSealOutcome, bool) {
	v, ok := flowSealOutcomeNames.parse(s)
	return FlowSealOutcome(v), ok
}

// FlowSealResult reports a seal.
type FlowSealResult struct {
	Outcome FlowSealOutcome
	// Released counts the members the seal released to run (held
	// members without incoming edges, and downstreams of groups it
	// found satisfied); Skipped counts the members it skipped, cascades
	// included.
	Released, Skipped int
}

// FlowCancelParams cancels a flow: its state becomes FlowCancelled (it
// takes no member, edge, group policy or seal after), and Policy says
// which members are cancelled in the same step (reason Reason, cancelled
// by CancelledByFlow; a running member's holder gets a
// LeaseNoticeCancelled). The members cancelled in the step resolve no
// edge (their downstreams are cancelled with them, or end on their own
// under CancelFlowOnly), so the outcome does not depend on the order they
// are cancelled in; members that end later resolve as usual. Everything
// happens in one atomic step: no member is left claimable that the
// policy cancels, and there is no backlog to drain after a crash. Errors:
// ErrFlowNotFound, ErrFlowTerminal (Detail: the flow's state).
type FlowCancelParams struct {
	Flow   FlowID
	Policy FlowCancelPolicy
	Reason string
	Now    time.Time
}

// Validate checks every field.
func (p *FlowCancelParams) Validate() error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if p.Policy < CancelFlowOnly || p.Policy > CancelPending {
		return &Error{Code: CodeInvalidInput, Field: "Policy", Detail: "unknown", Got: strconv.Itoa(int(p.Policy)),
			Want: "CancelFlowOnly, CancelAll or CancelPending"}
	}
	if err := ValidateText("Reason", p.Reason); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// FlowCancelResult reports a flow cancel.
type FlowCancelResult struct {
	// Cancelled lists the members cancelled, in id order.
	Cancelled []ExecutionID
}

// FlowDescribeParams reads one flow (ErrFlowNotFound when absent).
type FlowDescribeParams struct {
	Flow FlowID
}

// Validate checks every field.
func (p *FlowDescribeParams) Validate() error { return checkFlowID("Flow", p.Flow) }

// FlowListParams pages through one partition's flows in id order (the
// byte order of the UUIDs): the live ones, or with Finished the finished
// ones. A flow is finished once every member has ended and it is sealed or
// cancelled (it then takes nothing more, and nothing in it runs); it is
// live otherwise, and again when a member is replayed. The stores move a
// flow between the two lists in the step that changes it, so listing live
// flows costs nothing for the flows that are done.
type FlowListParams struct {
	Finished  bool
	Partition int
	// After is an exclusive cursor (zero: from the start), a flow of
	// Partition.
	After FlowID
	Limit int // 1–1000
}

// Validate checks every field.
func (p *FlowListParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if !p.After.IsZero() && cfg.FlowPartition(p.After) != p.Partition {
		return invalidField("After", "other_partition")
	}
	return checkLimit("Limit", p.Limit)
}

// FlowListResult is one page.
type FlowListResult struct {
	IDs []FlowID
	// Next is the cursor for the next page; zero when this page is the last.
	Next FlowID
}

// FlowMemberListParams reads one page of a flow's members, in the order
// of their ids (every member lives on the flow's partition, so the order
// of their UUIDs).
type FlowMemberListParams struct {
	Flow FlowID
	// After is an exclusive cursor (zero: from the start), a member id of
	// the flow's partition.
	After ExecutionID
	Limit int // 1–1000
}

// Validate checks every field.
func (p *FlowMemberListParams) Validate(cfg PartitionConfig) error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if !p.After.IsZero() {
		if err := cfg.CheckExecutionID(p.After); err != nil {
			return err
		}
		if p.After.Partition() != cfg.FlowPartition(p.Flow) {
			return invalidField("After", "other_partition")
		}
	}
	return checkLimit("Limit", p.Limit)
}

// FlowMemberListResult is one page of members.
type FlowMemberListResult struct {
	IDs []ExecutionID
	// Next is the cursor for the next page; zero when this page is the last.
	Next ExecutionID
}

// CompareFlowIDs orders flow ids as FlowList does.
func CompareFlowIDs(a, b FlowID) int { return bytes.Compare(a[:], b[:]) }

// EdgeDescribeParams reads one edge of a flow (ErrEdgeNotFound when the
// flow has no such edge).
type EdgeDescribeParams struct {
	Flow FlowID
	Edge EdgeID
}

// Validate checks every field.
func (p *EdgeDescribeParams) Validate() error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	if p.Edge.IsZero() {
		return invalidField("Edge", "empty")
	}
	return nil
}

// EdgeGroupDescribeParams reads the edge group of a downstream member
// (ErrFlowNotFound, ErrNotInFlow).
type EdgeGroupDescribeParams struct {
	Flow       FlowID
	Downstream ExecutionID
}

// Validate checks every field.
func (p *EdgeGroupDescribeParams) Validate(cfg PartitionConfig) error {
	if err := checkFlowID("Flow", p.Flow); err != nil {
		return err
	}
	return checkMember(cfg, "Downstream", p.Downstream, p.Flow)
}

// EdgeListParams names the execution whose edges are listed
// (ErrNotFound when it does not exist).
type EdgeListParams struct {
	Execution ExecutionID
}

// Validate checks every field.
func (p *EdgeListParams) Validate(cfg PartitionConfig) error {
	if p.Execution.IsZero() {
		return invalidField("Execution", "empty")
	}
	if p.Execution.Partition() >= cfg.WithDefaults().FlowPartitions {
		return invalidField("Execution", "partition_out_of_range")
	}
	return nil
}

// EdgeListResult lists edges in edge-id order. Flow is the execution's
// flow (zero, with no edges, for an execution in no flow). The list is
// not paged: it holds every edge of one end.
type EdgeListResult struct {
	Flow  FlowID
	Edges []EdgeSnapshot
}

// SearchLimit is the bound of the cycle check's walk.
func (p *EdgeStageParams) SearchLimit() int {
	if p.MaxSearchEdges == 0 {
		return MaxGraphSearchEdges
	}
	return p.MaxSearchEdges
}
