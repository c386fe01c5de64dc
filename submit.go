package flowfabric

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Args is the payload of a typed execution. Kind names the handler that
// runs it; the value is stored as JSON.
type Args interface {
	Kind() string
}

// ArgsWithOpts is implemented by Args types that carry default submit
// options; options passed to Submit override them field by field.
type ArgsWithOpts interface {
	Args
	SubmitOpts() SubmitOpts
}

// SubmitOpts are per-submission options. The zero value (or nil) means the
// defaults: lane "default", priority 0, run now, the engine's
// Config.DefaultRetryPolicy (25 retries with exponential backoff unless
// configured otherwise).
type SubmitOpts struct {
	// Lane to run on (default "default").
	Lane LaneID
	// Priority in [0, 9000]; higher runs first. Values outside are clamped.
	Priority int
	// RunAt makes the execution eligible from then on. Delay is the same,
	// relative to now; RunAt wins when both are set.
	//
	// Past and negative times, for every field here: a time in the past
	// means "already due" (a past RunAt runs now, a past Deadline expires
	// the execution at once); a negative duration (Delay, AttemptTimeout,
	// IdempotencyTTL) is an error naming the field. Times must lie between
	// 1970 and 9999.
	RunAt time.Time
	Delay time.Duration
	// RetryPolicy decides retries after failures (nil: the engine's
	// Config.DefaultRetryPolicy; NoRetries(): none).
	RetryPolicy *RetryPolicy
	// MaxReclaims caps automatic crash recoveries (0: 1000).
	MaxReclaims int
	// MaxReplays caps replays (0: 10).
	MaxReplays int
	// AttemptTimeout limits each attempt; a timed-out attempt fails with
	// category "timeout" and retries per the policy.
	AttemptTimeout time.Duration
	// Deadline expires the execution, whatever it is doing, when reached.
	Deadline time.Time
	// Tags are namespaced labels ("team.owner" = "billing").
	Tags map[string]string
	// Metadata (headers) are string key/values carried from the submission
	// to every attempt's handler (TaskInfo.Metadata) and shown by Describe;
	// separate from Tags (not indexed, not filterable), they carry context
	// such as a W3C trace context ("traceparent"). A key is 1..256 bytes of
	// printable ASCII without spaces, a value valid UTF-8; at most 64
	// entries and 32 KiB in all (model.ValidateMetadata). The args'
	// Metadata and the call's are merged, the call's winning per key.
	Metadata map[string]string
	// RequiredCapabilities must all be held by the worker that runs it.
	RequiredCapabilities []string
	// IdempotencyKey makes a repeated submission with the same key (in the
	// same namespace and lane) within IdempotencyTTL (default 24h) return
	// the first execution instead of creating another.
	IdempotencyKey string
	IdempotencyTTL time.Duration
	// Unique makes the submission unique by what it is rather than by a
	// key the caller chooses (see UniqueOpts): the engine derives the
	// idempotency key, and keeps the execution at least as long as the
	// key lives (its Retention is raised to it), so a delete never ends
	// the uniqueness early. With IdempotencyKey set, only Unique.ByState may be
	// set, and applies to that key.
	Unique *UniqueOpts
	// Budgets are checked before each attempt starts: while one is
	// exhausted the execution waits blocked on it (see CreateBudget).
	Budgets []BudgetID
	// Quota admits each attempt to the bucket QuotaKey of a quota policy
	// before it starts (see CreateQuota); QuotaKey is set only with Quota.
	Quota    QuotaID
	QuotaKey string
	// Retention is how long the execution is kept once terminal (zero
	// fields: its lane's, then the engine's; see Retention).
	Retention Retention
}

// merge overlays the set fields of o on d.
func (d SubmitOpts) merge(o *SubmitOpts) SubmitOpts {
	if o == nil {
		return d
	}
	r := d
	if o.Lane != "" {
		r.Lane = o.Lane
	}
	if o.Priority != 0 {
		r.Priority = o.Priority
	}
	if !o.RunAt.IsZero() {
		r.RunAt = o.RunAt
	}
	if o.Delay != 0 {
		r.Delay = o.Delay
	}
	if o.RetryPolicy != nil {
		r.RetryPolicy = o.RetryPolicy
	}
	if o.MaxReclaims != 0 {
		r.MaxReclaims = o.MaxReclaims
	}
	if o.MaxReplays != 0 {
		r.MaxReplays = o.MaxReplays
	}
	if o.AttemptTimeout != 0 {
		r.AttemptTimeout = o.AttemptTimeout
	}
	if !o.Deadline.IsZero() {
		r.Deadline = o.Deadline
	}
	r.Tags = overlay(r.Tags, o.Tags)
	r.Metadata = overlay(r.Metadata, o.Metadata)
	if o.RequiredCapabilities != nil {
		r.RequiredCapabilities = o.RequiredCapabilities
	}
	if o.IdempotencyKey != "" {
		r.IdempotencyKey = o.IdempotencyKey
	}
	if o.IdempotencyTTL != 0 {
		r.IdempotencyTTL = o.IdempotencyTTL
	}
	if o.Unique != nil {
		r.Unique = o.Unique
	}
	if o.Budgets != nil {
		r.Budgets = o.Budgets
	}
	if !model.UUID(o.Quota).IsZero() {
		r.Quota, r.QuotaKey = o.Quota, o.QuotaKey
	}
	r.Retention.Completed = cmp.Or(o.Retention.Completed, r.Retention.Completed)
	r.Retention.Failed = cmp.Or(o.Retention.Failed, r.Retention.Failed)
	r.Retention.Cancelled = cmp.Or(o.Retention.Cancelled, r.Retention.Cancelled)
	return r
}

// overlay returns base with over's entries set on it: base itself when
// over is empty, otherwise a new map (base is the caller's).
func overlay(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	t := maps.Clone(base)
	if t == nil {
		t = make(map[string]string, len(over))
	}
	maps.Copy(t, over)
	return t
}

// Submission is what a SubmitHook sees of one submission: the kind, the
// payload and the options, all of which it may change (the options are
// the merged ones: the args' SubmitOpts overlaid with the call's).
type Submission struct {
	Kind    Kind
	Payload []byte
	Opts    *SubmitOpts
}

// SubmitHook sees a submission before it is validated and stored. It may
// amend it (add tags or metadata, pick a lane, set a retry policy; the
// Tags and Metadata maps are the hook's own copies, nil when empty) or refuse it by
// returning an error, which the submitting call returns wrapped (nothing
// is stored; for SubmitMany and SubmitFlow, nothing of the batch or the
// flow): errors.Is matches both the hook's error and ErrSubmissionRefused.
type SubmitHook func(ctx context.Context, s *Submission) error

// hookRefusal is a submit hook's refusal.
type hookRefusal struct{ err error }

func (h *hookRefusal) Error() string { return "hook: " + h.err.Error() }

// Unwrap gives the hook's error first (a hook that refuses with a
// *model.Error keeps its code), then ErrSubmissionRefused's code.
func (h *hookRefusal) Unwrap() []error {
	return []error{h.err, &model.Error{Code: model.CodeSubmissionRefused, Detail: h.err.Error()}}
}

// hooked runs the engine's submit hooks on one submission.
func (e *Engine) hooked(ctx context.Context, kind Kind, payload []byte, opts SubmitOpts) (Kind, []byte, SubmitOpts, error) {
	if len(e.cfg.SubmitHooks) == 0 {
		return kind, payload, opts, nil
	}
	o := opts // a copy the hooks may change: only a submission with hooks allocates it
	// and the maps too, so a hook may write to them without touching the caller's
	o.Tags, o.Metadata = maps.Clone(o.Tags), maps.Clone(o.Metadata)
	s := &Submission{Kind: kind, Payload: payload, Opts: &o}
	for _, h := range e.cfg.SubmitHooks {
		if err := h(ctx, s); err != nil {
			return "", nil, SubmitOpts{}, &hookRefusal{err: err}
		}
	}
	if s.Opts == nil {
		s.Opts = &SubmitOpts{}
	}
	return s.Kind, s.Payload, *s.Opts, nil
}

// SubmitResult reports one submission.
type SubmitResult struct {
	ID ExecutionID
	// Duplicate is true when the idempotency key matched an earlier
	// submission; ID is that execution.
	Duplicate   bool
	PublicState PublicState
}

// Submit stores args (as JSON) as a new execution of kind args.Kind().
func (e *Engine) Submit(ctx context.Context, args Args, opts *SubmitOpts) (*SubmitResult, error) {
	kind, payload, defaults, err := encodeArgs(args)
	if err != nil {
		return nil, wrap("submit", err)
	}
	return e.submit(ctx, kind, payload, defaults.merge(opts))
}

// SubmitRaw stores payload as a new execution of kind.
func (e *Engine) SubmitRaw(ctx context.Context, kind Kind, payload []byte, opts *SubmitOpts) (*SubmitResult, error) {
	return e.submit(ctx, kind, payload, SubmitOpts{}.merge(opts))
}

// SubmitParams is one entry of a batch.
type SubmitParams struct {
	// Args is the typed payload; when nil, Kind and Payload are used.
	Args    Args
	Kind    Kind
	Payload []byte
	Opts    *SubmitOpts
}

// SubmitMany submits a batch. Every entry is validated before anything is
// stored, so a bad entry stores nothing; each entry is then created
// atomically on its own (entries on different partitions cannot share one
// transaction). On a store error it returns the results so far with the
// error.
func (e *Engine) SubmitMany(ctx context.Context, batch []SubmitParams) ([]*SubmitResult, error) {
	params := make([]*model.ExecutionCreateParams, len(batch))
	for i, b := range batch {
		kind, payload, opts := b.Kind, b.Payload, SubmitOpts{}.merge(b.Opts)
		if b.Args != nil {
			k, p, d, err := encodeArgs(b.Args)
			if err != nil {
				return nil, fmt.Errorf("flowfabric: submit many: entry %d: %w", i, err)
			}
			kind, payload, opts = k, p, d.merge(b.Opts)
		}
		kind, payload, opts, err := e.hooked(ctx, kind, payload, opts)
		if err != nil {
			return nil, fmt.Errorf("flowfabric: submit many: entry %d: %w", i, err)
		}
		p, err := e.createParams(kind, payload, opts)
		if err != nil {
			return nil, fmt.Errorf("flowfabric: submit many: entry %d: %w", i, err)
		}
		params[i] = p
	}
	out := make([]*SubmitResult, 0, len(batch))
	for _, p := range params {
		r, err := e.create(ctx, p)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func encodeArgs(args Args) (Kind, []byte, SubmitOpts, error) {
	if args == nil {
		return "", nil, SubmitOpts{}, model.InvalidField("Args", "nil")
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return "", nil, SubmitOpts{}, &model.Error{Code: model.CodeInvalidInput, Field: "Args", Detail: "json: " + err.Error()}
	}
	var d SubmitOpts
	if w, ok := args.(ArgsWithOpts); ok {
		d = w.SubmitOpts()
	}
	return Kind(args.Kind()), payload, d, nil
}

func (e *Engine) submit(ctx context.Context, kind Kind, payload []byte, opts SubmitOpts) (*SubmitResult, error) {
	kind, payload, opts, err := e.hooked(ctx, kind, payload, opts)
	if err != nil {
		return nil, wrap("submit", err)
	}
	p, err := e.createParams(kind, payload, opts)
	if err != nil {
		return nil, wrap("submit", err)
	}
	return e.create(ctx, p)
}

// lastTime is the latest time a store keeps (the end of year 9999).
var lastTime = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)

// eligibleAt resolves RunAt and Delay into when the execution becomes
// eligible (zero: now), with the rule of SubmitOpts for past and negative
// times, naming the field the user set.
func eligibleAt(o SubmitOpts, now time.Time) (time.Time, error) {
	const span = "a time from 1970-01-01 to 9999-12-31 (a past time runs now)"
	if !o.RunAt.IsZero() {
		if o.RunAt.UnixMilli() <= 0 || o.RunAt.After(lastTime) {
			return time.Time{}, model.OutOfRange("RunAt", o.RunAt.UTC().Format(time.RFC3339Nano), span)
		}
		return o.RunAt, nil
	}
	if o.Delay < 0 {
		return time.Time{}, model.OutOfRange("Delay", o.Delay, "0 (run now) or more")
	}
	if o.Delay == 0 {
		return time.Time{}, nil
	}
	if t := now.Add(o.Delay); t.After(now) && !t.After(lastTime) {
		return t, nil
	}
	return time.Time{}, model.OutOfRange("Delay", o.Delay, "a delay that ends before 9999-12-31")
}

// createParams builds and validates the store parameters, choosing the new
// execution's id and partition.
func (e *Engine) createParams(kind Kind, payload []byte, o SubmitOpts) (*model.ExecutionCreateParams, error) {
	lane := o.Lane
	if lane == "" {
		lane = model.DefaultLane
	}
	if err := lane.Validate(); err != nil {
		return nil, err
	}
	caps, err := model.ParseCapabilities("RequiredCapabilities", o.RequiredCapabilities)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	var states model.PublicStateSet
	if o.Unique != nil {
		if o, states, err = uniqueKey(kind, lane, payload, o, now); err != nil {
			return nil, err
		}
		// the execution outlives its uniqueness: a delete must not end it
		e.keepAtLeast(&o, cmp.Or(o.IdempotencyTTL, model.DefaultIdempotencyTTL))
	}
	u := e.newExecutionUUID(now)
	part := e.parts.SoloPartition(lane)
	if e.spread(lane) {
		part = e.parts.SpreadPartition(u)
		if o.IdempotencyKey != "" {
			// a key must always land on the same partition to be found again
			part = int(model.CRC16([]byte(string(e.ns)+"\x00"+o.IdempotencyKey))) % e.parts.WithDefaults().FlowPartitions
		}
	}
	runAt, err := eligibleAt(o, now)
	if err != nil {
		return nil, err
	}
	if err := validateRetention("Retention", o.Retention); err != nil {
		return nil, err
	}
	retry := *e.cfg.DefaultRetryPolicy
	if o.RetryPolicy != nil {
		retry = *o.RetryPolicy
	}
	p := &model.ExecutionCreateParams{
		ID: model.NewExecutionID(part, u), Namespace: e.ns, Lane: lane, Kind: kind, Payload: payload,
		Priority: o.Priority, Tags: o.Tags, Metadata: o.Metadata, RequiredCapabilities: caps, RetryPolicy: retry,
		MaxReclaims: o.MaxReclaims, MaxReplays: o.MaxReplays, AttemptTimeout: o.AttemptTimeout,
		Deadline: o.Deadline, DelayUntil: runAt, IdempotencyKey: o.IdempotencyKey,
		IdempotencyTTL: o.IdempotencyTTL, IdempotencyStates: states, Budgets: o.Budgets, Quota: o.Quota,
		QuotaKey: o.QuotaKey, Retention: e.retentionFor(lane, o.Retention), Now: now,
	}
	if err := p.Validate(e.parts); err != nil {
		return nil, err
	}
	return p, nil
}

func (e *Engine) create(ctx context.Context, p *model.ExecutionCreateParams) (*SubmitResult, error) {
	r, err := e.store.ExecutionCreate(ctx, p)
	if err != nil {
		return nil, wrap("submit", err)
	}
	if !r.Duplicate {
		if p.DelayUntil.After(p.Now) {
			e.hint(e.delayed, r.ID, p.DelayUntil)
		}
		e.hint(e.deadline, r.ID, p.Deadline)
	}
	return &SubmitResult{ID: r.ID, Duplicate: r.Duplicate, PublicState: r.PublicState}, nil
}

// wrap prefixes store errors with the operation, keeping the chain for
// errors.Is and errors.As.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("flowfabric: %s: %w", op, err)
}
