package flowfabric

import (
	"context"
	"encoding/binary"
	"log/slog"
	"strconv"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Waiting on children: a running flow node adds children to its flow and
// parks until they have all ended, then runs again (the same attempt,
// under a new lease) and reads what they produced. The store does it in
// one step (model.FlowStore.ExecutionAwaitChildren): the children exist
// and the parent is parked together, or neither happened.

// ErrFlowNotSealed: a handler awaited children in a flow that was still
// being built (only a sealed flow takes children; SubmitFlow seals).
var ErrFlowNotSealed = model.ErrFlowNotSealed

// MaxAwaitChildren is the most children one AwaitChildren creates.
const MaxAwaitChildren = model.MaxAwaitChildren

// Child is one child execution for AwaitChildren.
type Child struct {
	args    Args
	kind    Kind
	payload []byte
	opts    *SubmitOpts
}

// NewChild describes a child that runs args with opts (nil: the
// defaults), as Engine.Submit would; its lane must be spread, as a flow
// node's, and it takes no idempotency key (a retried await is replayed by
// the store).
func NewChild(args Args, opts *SubmitOpts) Child { return Child{args: args, opts: opts} }

// NewRawChild describes a child that runs payload as kind.
func NewRawChild(kind Kind, payload []byte, opts *SubmitOpts) Child {
	return Child{kind: kind, payload: payload, opts: opts}
}

// AwaitChildren, returned by the handler of a flow node, creates children
// in the node's flow and parks the node until every child has ended,
// whatever the outcome (a failed or cancelled child does not fail the
// node). The node then runs again: the same attempt resumes
// (TaskInfo.Resumed) under a new lease, and TaskInfo.Children reads the
// children's states and results, so the handler decides what their
// outcomes mean. It does not count as a failure. A handler can await
// again after resuming; each await is a new set of children.
//
// The children are created and the node parked in one store step. A node
// outside any flow (a plain Submit), or in a cancelled flow, cannot await:
// its attempt fails with category invalid_outcome, not retried, as does
// an await whose children are invalid (a lane that is not spread, an
// idempotency key, more than MaxAwaitChildren, a payload that does not
// encode).
func AwaitChildren(children ...Child) error {
	return &outcome{kind: outcomeAwait, children: children}
}

// awaitParams is the store step for an await of children by the holder
// of fence on execution id: each child prepared as a flow member, with
// an id derived from the parent, its lease epoch and the child's index,
// so a retried step names the same children.
func (e *Engine) awaitParams(ctx context.Context, id ExecutionID, fence Fence, children []Child) (*model.ExecutionAwaitChildrenParams, error) {
	if len(children) == 0 || len(children) > model.MaxAwaitChildren {
		return nil, model.OutOfRange("AwaitChildren", len(children), "1.."+strconv.Itoa(model.MaxAwaitChildren))
	}
	p := &model.ExecutionAwaitChildrenParams{ID: id, Fence: fence}
	epoch := strconv.FormatUint(fence.LeaseEpoch, 10)
	for i, c := range children {
		field := "AwaitChildren[" + strconv.Itoa(i) + "]"
		cp, err := e.memberParams(ctx, field, c.args, c.kind, c.payload, c.opts)
		if err != nil {
			return nil, err
		}
		cp.ID = model.NewExecutionID(id.Partition(), derivedUUID(id.String(), "child", epoch, strconv.Itoa(i)))
		cp.Now = time.Time{} // the await's Now applies
		// The edge id starts with the child's index, so the edges (listed
		// in id order) come back in the order the children were given.
		edge := derivedUUID(id.String(), "child-edge", epoch, strconv.Itoa(i))
		binary.BigEndian.PutUint32(edge[:4], uint32(i))
		p.Children = append(p.Children, model.AwaitChild{Create: *cp, Edge: model.EdgeID(edge)})
	}
	return p, nil
}

// awaitRefused reports whether the store refused an await for a reason a
// retry cannot change, so the attempt fails at once (invalid_outcome).
func awaitRefused(err error) bool {
	switch model.CodeOf(err) {
	case model.CodeExecutionNotInFlow, model.CodeFlowNotSealed, model.CodeFlowAlreadyTerminal, model.CodeDependencyExists:
		return true
	}
	return false
}

// await records an AwaitChildren outcome in the store.
func (w *Worker) await(ctx context.Context, id ExecutionID, fence Fence, info *TaskInfo, children []Child) error {
	e := w.engine
	p, err := e.awaitParams(ctx, id, fence, children)
	if err != nil {
		return err
	}
	p.Now = e.clock.Now()
	fs, err := e.flowStore()
	if err != nil {
		return err
	}
	res, err := fs.ExecutionAwaitChildren(ctx, p)
	if err != nil {
		return err
	}
	for _, c := range p.Children {
		if c.Create.DelayUntil.After(p.Now) {
			e.hint(e.delayed, c.Create.ID, c.Create.DelayUntil)
		}
		e.hint(e.deadline, c.Create.ID, c.Create.Deadline)
	}
	if w.log.Enabled(ctx, slog.LevelDebug) {
		w.log.Debug("task awaits children", "execution", id.String(), "kind", string(info.Kind),
			"children", len(p.Children), "generation", res.Generation)
	}
	return nil
}

// Children returns the children of the task's latest AwaitChildren, in
// the order they were given, with the result of each one that completed; none when the
// task never awaited (in this run: a replay starts afresh). Call it after
// the task resumed. On a TaskInfo built by hand it returns nil.
func (t *TaskInfo) Children(ctx context.Context) ([]Upstream, error) {
	if t.w == nil {
		return nil, nil
	}
	out, err := t.w.engine.incoming(ctx, t.ID, true)
	if err != nil {
		return nil, wrap("children", err)
	}
	return out, nil
}
