package flowfabric

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Suspension (issue 11): a running handler parks until outside signals —
// an approval click, a webhook, a tool's result — satisfy a resume
// condition, and then runs again, the same attempt under a new lease.
// Signals are addressed by waitpoint tokens that a third party presents
// without credentials; Config.WaitpointKeys signs and verifies them.

// Types of suspension, waitpoints and signals, shared with package model.
type (
	// KeyRing signs and verifies waitpoint tokens (Config.WaitpointKeys).
	KeyRing = model.KeyRing
	// SigningKey is one key of a KeyRing.
	SigningKey = model.SigningKey
	// ResumeCondition is what a suspension waits for; build one with
	// SignalFor, SignalOn, AllOf, CountOf, OperatorOnly or TimeoutOnly.
	ResumeCondition = model.ResumeCondition
	// CountDistinct says what CountOf counts.
	CountDistinct = model.CountDistinct
	// SuspendReason says what a suspended execution waits for.
	SuspendReason = model.SuspendReason
	// TimeoutBehavior is what a suspension's timeout does.
	TimeoutBehavior = model.TimeoutBehavior
	// ResumePolicy says what resuming does besides making the execution
	// runnable.
	ResumePolicy = model.ResumePolicy
	// WaitpointID identifies a waitpoint.
	WaitpointID = model.WaitpointID
	// SuspensionID identifies a suspension.
	SuspensionID = model.SuspensionID
	// SignalID identifies a delivered signal.
	SignalID = model.SignalID
	// SignalRecord is one delivered signal as stored.
	SignalRecord = model.SignalRecord
	// SignalEffect is what a delivered signal did.
	SignalEffect = model.SignalEffect
	// SuspensionSnapshot is an execution's open or last suspension.
	SuspensionSnapshot = model.SuspensionSnapshot
	// WaitpointSnapshot is one waitpoint as stored.
	WaitpointSnapshot = model.WaitpointSnapshot
	// CloseReason says why a suspension or waitpoint closed.
	CloseReason = model.CloseReason
	// SignalFeedEvent is one signal delivery as a partition's feed
	// records it.
	SignalFeedEvent = model.SignalFeedEvent
)

// What CountOf counts.
const (
	DistinctWaitpoints = model.DistinctWaitpoints
	DistinctSignals    = model.DistinctSignals
	DistinctSources    = model.DistinctSources
)

// Suspend reasons.
const (
	SuspendForSignal         = model.SuspendForSignal
	SuspendForApproval       = model.SuspendForApproval
	SuspendForCallback       = model.SuspendForCallback
	SuspendForToolResult     = model.SuspendForToolResult
	SuspendForOperatorReview = model.SuspendForOperatorReview
)

// Timeout behaviours.
const (
	TimeoutFail       = model.TimeoutFail
	TimeoutCancel     = model.TimeoutCancel
	TimeoutExpire     = model.TimeoutExpire
	TimeoutAutoResume = model.TimeoutAutoResume
	TimeoutEscalate   = model.TimeoutEscalate
)

// Signal effects.
const (
	SignalBuffered  = model.SignalBuffered
	SignalAccepted  = model.SignalAccepted
	SignalResumed   = model.SignalResumed
	SignalDuplicate = model.SignalDuplicate
	SignalIgnored   = model.SignalIgnored
)

// Errors of suspension and signals.
var (
	// ErrInvalidToken: a waitpoint token was refused (malformed,
	// tampered, forged, or signed by an unknown or retired key). It says
	// no more, on purpose.
	ErrInvalidToken = model.ErrInvalidToken
	// ErrNotSuspended: Resume found no open suspension.
	ErrNotSuspended = model.ErrNotSuspended
	// ErrSuspensionNotFound: the execution never suspended.
	ErrSuspensionNotFound = model.ErrSuspensionNotFound
	// ErrWaitpointClosed: the waitpoint takes no more signals (its
	// suspension ended, it expired, or its execution ended).
	ErrWaitpointClosed = model.ErrWaitpointClosed
	// ErrWaitpointNotFound: no such waitpoint.
	ErrWaitpointNotFound = model.ErrWaitpointNotFound
	// ErrSignalLimit: the waitpoint holds its SignalLimit signals.
	ErrSignalLimit = model.ErrSignalLimit
)

// NewKeyRing returns a key ring that signs with keys[0] and verifies with
// every key that has not retired; see model.NewKeyRing.
func NewKeyRing(keys ...SigningKey) (*KeyRing, error) { return model.NewKeyRing(keys...) }

// SignalFor is a condition that one signal named name ("": any name) on
// the suspension's own waitpoint satisfies.
func SignalFor(name string) ResumeCondition { return model.SignalFor(name) }

// SignalOn is a condition that one signal named name ("": any) on
// waitpoint w (a pending waitpoint the task created) satisfies.
func SignalOn(w WaitpointID, name string) ResumeCondition {
	return ResumeCondition{Kind: model.CondSignal, Name: name, Waitpoint: w}
}

// AllOf is satisfied when every one of conds is.
func AllOf(conds ...ResumeCondition) ResumeCondition {
	return ResumeCondition{Kind: model.CondAllOf, Of: conds}
}

// CountOf is satisfied by n signals named name ("": any) counted distinct
// by what distinct says, on waitpoints ws (none: the suspension's own).
// CountOf(2, DistinctSources, "approve") waits for two different
// approvers on one waitpoint whose token both received.
func CountOf(n int, distinct CountDistinct, name string, ws ...WaitpointID) ResumeCondition {
	return ResumeCondition{Kind: model.CondCount, N: n, Distinct: distinct, Name: name, Waitpoints: ws}
}

// OperatorOnly is a condition no signal satisfies: only Engine.Resume
// (or the timeout) ends the suspension.
func OperatorOnly() ResumeCondition { return ResumeCondition{Kind: model.CondOperator} }

// TimeoutOnly is a condition only the suspension's timeout ends (a
// durable sleep); it needs SuspendOpts.Timeout.
func TimeoutOnly() ResumeCondition { return ResumeCondition{Kind: model.CondTimeout} }

// DefaultWaitpointTTL is how long a pending waitpoint waits for its
// suspension when WaitpointOpts.TTL is zero.
const DefaultWaitpointTTL = 24 * time.Hour

// WaitpointOpts tunes TaskInfo.CreateWaitpoint. The zero value (or nil)
// means the defaults.
type WaitpointOpts struct {
	// TTL closes the waitpoint if the task has not suspended on it by
	// then (default DefaultWaitpointTTL).
	TTL time.Duration
	// SignalLimit bounds the signals it takes (default 100).
	SignalLimit int
}

// Waitpoint is a pending waitpoint a running task created: signals sent
// with its Token are buffered until the task suspends on it.
type Waitpoint struct {
	ID        WaitpointID
	Execution ExecutionID
	// Token delivers signals to it (Engine.DeliverSignal): send it to
	// whoever must answer, in a link or a webhook registration.
	Token     string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SuspendOpts tunes Suspend. The zero value (or nil) suspends on a fresh
// waitpoint, for a signal, without timeout, resuming at once.
type SuspendOpts struct {
	// Waitpoint is the suspension's own waitpoint, a pending one the task
	// created (its buffered signals count). nil: a fresh one, whose token
	// Engine.Waitpoints returns.
	Waitpoint *Waitpoint
	// Reason says what the execution waits for (default
	// SuspendForSignal); it shows in its blocking reason.
	Reason SuspendReason
	// Timeout applies OnTimeout when the condition is not satisfied in
	// time (zero: never).
	Timeout time.Duration
	// OnTimeout is what the timeout does (default TimeoutFail).
	OnTimeout TimeoutBehavior
	// Resume says what resuming does (default: at once, waitpoints
	// closed).
	Resume ResumePolicy
	// SignalLimit bounds the signals a fresh waitpoint takes (default
	// 100).
	SignalLimit int
}

// Suspend, returned by a handler, parks the task until cond is satisfied
// by delivered signals, an operator resumes it (Engine.Resume), or its
// timeout fires. The task then runs again: the same attempt under a new
// lease, TaskInfo.Resumed set and TaskInfo.Signals holding what the
// signals said. It does not count as a failure.
//
// When the buffered signals of a pending waitpoint already satisfy cond,
// nothing parks: the handler is called again at once, in the same attempt
// and lease, Resumed set. A condition naming a waitpoint that is not a
// pending waitpoint of this task, or any invalid option, fails the
// attempt with category invalid_outcome (not retried).
func Suspend(cond ResumeCondition, opts *SuspendOpts) error {
	o := &outcome{kind: outcomeSuspend, cond: cond}
	if opts != nil {
		o.suspend = *opts
	}
	return o
}

// keys returns the engine's key ring, or a validation error naming the
// config field.
func (e *Engine) keys() (*KeyRing, error) {
	if e.cfg.WaitpointKeys == nil {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Config.WaitpointKeys", Detail: "missing",
			Want: "a KeyRing shared by every process (flowfabric.NewKeyRing)"}
	}
	return e.cfg.WaitpointKeys, nil
}

// suspendStore returns the store's SuspendStore.
func (e *Engine) suspendStore() (model.SuspendStore, error) {
	ss, ok := e.store.(model.SuspendStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store", Detail: "no_suspend_support",
			Want: "a store implementing model.SuspendStore (memstore, valkeystore)"}
	}
	return ss, nil
}

// CreateWaitpoint creates a pending waitpoint for the running task and
// returns it with its token, so the token can go out (in an email, to a
// webhook) before the handler suspends on it: signals that arrive first
// are buffered. On a TaskInfo built by hand it returns an error.
func (t *TaskInfo) CreateWaitpoint(ctx context.Context, opts *WaitpointOpts) (*Waitpoint, error) {
	if t.w == nil || t.run == nil {
		return nil, wrap("create waitpoint", &model.Error{Code: model.CodeInvalidInput, Field: "TaskInfo", Detail: "not_running"})
	}
	e := t.w.engine
	var o WaitpointOpts
	if opts != nil {
		o = *opts
	}
	if o.TTL == 0 {
		o.TTL = DefaultWaitpointTTL
	}
	ring, err := e.keys()
	if err != nil {
		return nil, wrap("create waitpoint", err)
	}
	ss, err := e.suspendStore()
	if err != nil {
		return nil, wrap("create waitpoint", err)
	}
	now := e.clock.Now()
	p := &model.WaitpointCreateParams{
		ID: t.ID, Fence: t.run.fence, Waitpoint: model.WaitpointID(e.newUUID()),
		ExpiresAt: now.Add(o.TTL), SignalLimit: o.SignalLimit, Now: now,
	}
	if err := p.Validate(e.parts); err != nil {
		return nil, wrap("create waitpoint", renameField(err, "ExpiresAt", "WaitpointOpts.TTL"))
	}
	res, err := ss.WaitpointCreate(ctx, p)
	if err != nil {
		return nil, wrap("create waitpoint", err)
	}
	e.hint(e.wpExpiry, t.ID, p.ExpiresAt)
	tok, err := ring.Sign(model.WaitpointToken{Execution: t.ID, Waitpoint: p.Waitpoint, CreatedAt: res.CreatedAt})
	if err != nil {
		return nil, wrap("create waitpoint", err)
	}
	return &Waitpoint{ID: p.Waitpoint, Execution: t.ID, Token: tok, CreatedAt: res.CreatedAt, ExpiresAt: p.ExpiresAt}, nil
}

// renameField names an option instead of the store parameter it became.
func renameField(err error, from, to string) error {
	var me *model.Error
	if errors.As(err, &me) && me.Field == from {
		c := *me
		c.Field = to
		return &c
	}
	return err
}

// Signals returns the signals of the task's latest suspension in this
// attempt, in delivery order, once it resumed (none before, or when it
// never suspended). On a TaskInfo built by hand it returns nil.
func (t *TaskInfo) Signals(ctx context.Context) ([]SignalRecord, error) {
	if t.satisfied != nil {
		return t.satisfied, nil
	}
	if t.w == nil || !t.Resumed {
		return nil, nil
	}
	ss, err := t.w.engine.suspendStore()
	if err != nil {
		return nil, wrap("signals", err)
	}
	s, err := ss.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: t.ID})
	if model.CodeOf(err) == model.CodeSuspensionNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("signals", err)
	}
	if s.AttemptIndex != t.Attempt || s.ClosedAt.IsZero() {
		return nil, nil
	}
	return s.Signals, nil
}

// suspendParams is the store step for a Suspend outcome of the holder of
// fence; its ids are drawn once, so a retried step replays.
func (e *Engine) suspendParams(id ExecutionID, fence Fence, o *outcome) *model.ExecutionSuspendParams {
	if o.suspendParams != nil {
		return o.suspendParams
	}
	so := o.suspend
	p := &model.ExecutionSuspendParams{
		ID: id, Fence: fence, Suspension: model.SuspensionID(e.newUUID()),
		Reason: so.Reason, Condition: o.cond, TimeoutBehavior: so.OnTimeout, Policy: so.Resume, SignalLimit: so.SignalLimit,
	}
	if p.Reason == 0 {
		p.Reason = SuspendForSignal
	}
	if so.Waitpoint != nil {
		p.Waitpoint, p.UsePending = so.Waitpoint.ID, true
	} else {
		p.Waitpoint = model.WaitpointID(e.newUUID())
	}
	o.suspendParams = p
	return p
}

// suspend records a Suspend outcome. When the buffered signals already
// satisfy the condition it arms info to run the handler again.
func (w *Worker) suspend(ctx context.Context, id ExecutionID, fence Fence, info *TaskInfo, o *outcome) error {
	e := w.engine
	ss, err := e.suspendStore()
	if err != nil {
		return err
	}
	p := e.suspendParams(id, fence, o)
	p.Now = e.clock.Now()
	if o.suspend.Timeout > 0 {
		p.TimeoutAt = p.Now.Add(o.suspend.Timeout)
	}
	if err := p.Validate(e.parts); err != nil {
		return renameField(renameField(err, "TimeoutAt", "SuspendOpts.Timeout"), "Condition", "Suspend.Condition")
	}
	res, err := ss.ExecutionSuspend(ctx, p)
	if err != nil {
		return err
	}
	dbg := w.log.Enabled(ctx, slog.LevelDebug)
	if res.Outcome == model.SuspendAlreadySatisfied {
		info.again, info.Resumed = true, true
		info.satisfied = res.Signals
		if info.satisfied == nil {
			info.satisfied = []SignalRecord{}
		}
		if dbg {
			w.log.Debug("task suspend already satisfied; running again", "execution", id.String(), "kind", string(info.Kind),
				"signals", len(res.Signals))
		}
		return nil
	}
	if !p.TimeoutAt.IsZero() {
		e.hint(e.suspTimeout, id, p.TimeoutAt)
	}
	if dbg {
		w.log.Debug("task suspended", "execution", id.String(), "kind", string(info.Kind), "reason", p.Reason.String(),
			"waitpoint", p.Waitpoint.String(), "timeout_at", p.TimeoutAt)
	}
	return nil
}

// suspendRefused reports whether the store refused a suspend for a
// reason a retry cannot change, so the attempt fails at once.
func suspendRefused(err error) bool {
	switch model.CodeOf(err) {
	case model.CodeWaitpointNotFound, model.CodeWaitpointNotPending, model.CodeWaitpointLimit, model.CodeWaitpointClosed:
		return true
	}
	return false
}

// SignalInput is a signal to deliver.
type SignalInput struct {
	// Name is what conditions match (SignalFor(name)); may be empty.
	Name string
	// Source identifies the sender as "type:identity" ("approver:alice"),
	// for CountOf(n, DistinctSources, ...).
	Source string
	// Payload is handed to the resumed handler (TaskInfo.Signals), at
	// most 64 KiB.
	Payload []byte
	// IdempotencyKey makes redelivery harmless: the same key on the same
	// waitpoint within DedupTTL returns the first delivery (Effect
	// SignalDuplicate) and changes nothing.
	IdempotencyKey string
	// DedupTTL is how long the key is remembered (default 24h).
	DedupTTL time.Duration
}

// SignalDelivery reports a delivered signal.
type SignalDelivery struct {
	// Signal is the stored signal (the first one for a duplicate).
	Signal SignalID
	// Effect is what it did: buffered (the task has not suspended yet),
	// accepted (counted, the condition is not yet satisfied), resumed,
	// duplicate or ignored (no part of the condition reads it; Ignored
	// says why).
	Effect  SignalEffect
	Ignored string
	// State is the execution's state after the delivery.
	State PublicState
	// Execution and Waitpoint are what the token named.
	Execution ExecutionID
	Waitpoint WaitpointID
}

// DeliverSignal delivers a signal to the waitpoint a token names. The
// token is verified before anything is read, so a bad token learns
// nothing: every refusal of the token is ErrInvalidToken. A closed
// waitpoint refuses with ErrWaitpointClosed (except a duplicate, which
// reports the first delivery), a full one with ErrSignalLimit.
func (e *Engine) DeliverSignal(ctx context.Context, token string, s *SignalInput) (*SignalDelivery, error) {
	ring, err := e.keys()
	if err != nil {
		return nil, wrap("deliver signal", err)
	}
	now := e.clock.Now()
	tok, err := ring.Verify(token, now)
	if err != nil {
		return nil, wrap("deliver signal", err)
	}
	ss, err := e.suspendStore()
	if err != nil {
		return nil, wrap("deliver signal", err)
	}
	var in SignalInput
	if s != nil {
		in = *s
	}
	res, err := ss.SignalDeliver(ctx, &model.SignalDeliverParams{
		Execution: tok.Execution, Waitpoint: tok.Waitpoint, WaitpointCreatedAt: tok.CreatedAt,
		Signal: model.SignalID(e.newUUID()), Name: in.Name, Source: in.Source, Payload: in.Payload,
		IdempotencyKey: in.IdempotencyKey, DedupTTL: in.DedupTTL, Now: now,
	})
	if err != nil {
		return nil, wrap("deliver signal", err)
	}
	if res.Effect == model.SignalResumed {
		e.resumed(tok.Execution, res.DelayUntil)
	}
	return &SignalDelivery{Signal: res.Signal, Effect: res.Effect, Ignored: res.IgnoredReason, State: res.State,
		Execution: tok.Execution, Waitpoint: tok.Waitpoint}, nil
}

// resumed tells the scanners and the engine's watchers that id resumed.
func (e *Engine) resumed(id ExecutionID, delayUntil time.Time) {
	if !delayUntil.IsZero() {
		e.hint(e.delayed, id, delayUntil)
	}
	e.activity()
}

// Resume resumes a suspended execution whatever its condition, as an
// operator (the approval screen's "continue anyway"), applying its resume
// policy. ErrNotSuspended when it has no open suspension.
func (e *Engine) Resume(ctx context.Context, id ExecutionID) error {
	ss, err := e.suspendStore()
	if err != nil {
		return wrap("resume", err)
	}
	res, err := ss.ExecutionResume(ctx, &model.ExecutionResumeParams{ID: id, Now: e.clock.Now()})
	if err != nil {
		return wrap("resume", err)
	}
	e.resumed(id, res.DelayUntil)
	return nil
}

// Suspension returns an execution's open suspension or, when none is
// open, its last one, with the signals it saw. ErrSuspensionNotFound when
// it never suspended.
func (e *Engine) Suspension(ctx context.Context, id ExecutionID) (*SuspensionSnapshot, error) {
	ss, err := e.suspendStore()
	if err != nil {
		return nil, wrap("suspension", err)
	}
	s, err := ss.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: id})
	return s, wrap("suspension", err)
}

// WaitpointInfo is a waitpoint with its token.
type WaitpointInfo struct {
	WaitpointSnapshot
	// Token delivers signals to it; empty once it closed.
	Token string
}

// Waitpoints returns an execution's waitpoints (the open ones, and those
// closed with its last suspension or since) with the tokens of the open
// ones, for an approval screen or an operator.
func (e *Engine) Waitpoints(ctx context.Context, id ExecutionID) ([]WaitpointInfo, error) {
	ss, err := e.suspendStore()
	if err != nil {
		return nil, wrap("waitpoints", err)
	}
	ring, err := e.keys()
	if err != nil {
		return nil, wrap("waitpoints", err)
	}
	res, err := ss.WaitpointList(ctx, &model.WaitpointListParams{ID: id})
	if err != nil {
		return nil, wrap("waitpoints", err)
	}
	out := make([]WaitpointInfo, 0, len(res.Waitpoints))
	for _, w := range res.Waitpoints {
		wi := WaitpointInfo{WaitpointSnapshot: w}
		if w.State != model.WaitpointClosed {
			wi.Token, err = ring.Sign(model.WaitpointToken{Execution: id, Waitpoint: w.ID, CreatedAt: w.CreatedAt})
			if err != nil {
				return nil, wrap("waitpoints", err)
			}
		}
		out = append(out, wi)
	}
	return out, nil
}

// SuspendedEntry is one suspended execution.
type SuspendedEntry = model.SuspendedEntry

// SuspendedPage is one page of ListSuspended.
type SuspendedPage struct {
	Entries []SuspendedEntry
	// Next is the cursor of the next page; zero after the last page.
	Next ExecutionID
}

// ListSuspended returns one page of a partition's suspended executions
// with what they wait for, in id order (opts as for List).
func (e *Engine) ListSuspended(ctx context.Context, opts *ListOpts) (*SuspendedPage, error) {
	o := opts.withDefaults()
	ss, err := e.suspendStore()
	if err != nil {
		return nil, wrap("list suspended", err)
	}
	r, err := ss.SuspendedList(ctx, &model.SuspendedListParams{Partition: o.Partition, After: o.After, Limit: o.Limit})
	if err != nil {
		return nil, wrap("list suspended", err)
	}
	return &SuspendedPage{Entries: r.Entries, Next: r.Next}, nil
}

// SignalFeed returns up to limit (1–1000; 0: 100) of partition's
// signal-delivery events after sequence number after (0: from the oldest
// the store keeps, model.SignalFeedLen per partition), oldest first, and
// the last sequence number written: every delivery's effect, duplicates
// included, for an audit trail or a subscriber that polls.
func (e *Engine) SignalFeed(ctx context.Context, partition int, after uint64, limit int) ([]SignalFeedEvent, uint64, error) {
	if limit == 0 {
		limit = 100
	}
	ss, err := e.suspendStore()
	if err != nil {
		return nil, 0, wrap("signal feed", err)
	}
	r, err := ss.SignalFeed(ctx, &model.SignalFeedParams{Partition: partition, After: after, Limit: limit})
	if err != nil {
		return nil, 0, wrap("signal feed", err)
	}
	return r.Events, r.Last, nil
}
