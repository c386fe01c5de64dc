package model

import (
	"errors"
	"strconv"
	"time"
)

// MaxAwaitChildren is the most children one ExecutionAwaitChildren call
// creates.
const MaxAwaitChildren = 1000

// AwaitChild is one child ExecutionAwaitChildren creates: the execution,
// and the id of its edge into the parent.
type AwaitChild struct {
	// Create describes the child as ExecutionCreate would. Its ID must
	// name the parent's partition; Flow, IdempotencyKey and Now are left
	// zero (the child joins the parent's flow, the call itself is what a
	// retry replays, and the call's Now applies).
	Create ExecutionCreateParams
	Edge   EdgeID
}

// ExecutionAwaitChildrenParams parks the caller's active execution (the
// parent, a member of a sealed flow) until the children it creates in the
// same step have all ended: each child joins the parent's flow runnable
// (eligible, or delayed until its DelayUntil) with an edge child → parent,
// the parent's lease is released with its attempt paused (as
// ExecutionDelay leaves it), and the parent is held (BlockedByDependencies)
// with a new generation of its edge group: the children's edges, satisfied
// when their child ends whatever the outcome, under AllOf. When the last
// child ends the parent is released and its next claim resumes the same
// attempt (ClaimResult.Resumed); its handler reads the children's
// outcomes and results through its incoming edges (EdgeSnapshot.Generation
// names the call that made each). The edges of earlier generations stay
// recorded but no longer count; a replay of the parent returns its group
// to generation 0 (the edges staged while the flow was built).
//
// A retry of the same call by the same holder replays (Replayed, the same
// Generation). Errors, in this order: the fence checks of a fenced
// operation (ErrStaleLease, ErrLeaseExpired, ErrLeaseRevoked,
// ErrNotActive); ErrNotInFlow (the parent is in no flow; Field "ID");
// ErrFlowTerminal (the flow was cancelled); ErrFlowNotSealed; a validation
// error naming Children[i].Create.ID when a child's id exists, and
// ErrDependencyExists (Field Children[i].Edge) when its edge id does.
// Nothing is written on any error.
type ExecutionAwaitChildrenParams struct {
	ID       ExecutionID
	Fence    Fence
	Children []AwaitChild
	Now      time.Time
}

// prefixField names a field inside an element of a list parameter.
func prefixField(err error, prefix string) error {
	var me *Error
	if errors.As(err, &me) {
		c := *me
		c.Field = prefix + c.Field
		return &c
	}
	return err
}

// Validate checks every field.
func (p *ExecutionAwaitChildrenParams) Validate(cfg PartitionConfig) error {
	if err := checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now); err != nil {
		return err
	}
	if len(p.Children) == 0 || len(p.Children) > MaxAwaitChildren {
		return OutOfRange("Children", len(p.Children), "1.."+strconv.Itoa(MaxAwaitChildren))
	}
	ids := make(map[ExecutionID]bool, len(p.Children))
	edges := make(map[EdgeID]bool, len(p.Children))
	for i := range p.Children {
		c := &p.Children[i]
		pre := "Children[" + strconv.Itoa(i) + "]."
		cp := c.Create
		cp.Now = p.Now
		if err := cp.Validate(cfg); err != nil {
			return prefixField(err, pre+"Create.")
		}
		switch {
		case !c.Create.Flow.IsZero():
			return invalidField(pre+"Create.Flow", "set_by_store")
		case c.Create.IdempotencyKey != "":
			return invalidField(pre+"Create.IdempotencyKey", "not_supported")
		case c.Create.IdempotencyTTL != 0:
			return invalidField(pre+"Create.IdempotencyTTL", "not_supported")
		case c.Create.IdempotencyStates != 0:
			return invalidField(pre+"Create.IdempotencyStates", "not_supported")
		case c.Create.ID.Partition() != p.ID.Partition():
			return &Error{Code: CodeInvalidInput, Field: pre + "Create.ID", Detail: "not_in_parent_partition",
				Got: strconv.Itoa(c.Create.ID.Partition()), Want: strconv.Itoa(p.ID.Partition())}
		case c.Create.ID == p.ID:
			return &Error{Code: CodeSelfReferencingEdge, Field: pre + "Create.ID", Detail: "equals_parent", Got: p.ID.String()}
		case ids[c.Create.ID]:
			return invalidField(pre+"Create.ID", "duplicate")
		case c.Edge.IsZero():
			return invalidField(pre+"Edge", "empty")
		case edges[c.Edge]:
			return invalidField(pre+"Edge", "duplicate")
		}
		ids[c.Create.ID] = true
		edges[c.Edge] = true
	}
	return nil
}

// ExecutionAwaitChildrenResult reports an await.
type ExecutionAwaitChildrenResult struct {
	Flow FlowID
	// Generation numbers this call's edges among the parent's awaits
	// (1 for the first).
	Generation int
	Replayed   bool
}
