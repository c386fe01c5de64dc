package flowfabric

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Budgets and quotas (issue 12). A budget caps spend (tokens, cents,
// calls: any named dimension) across the executions attached to it; a
// quota caps how many executions start per window and how many run at
// once, per key. Both are checked by the claim path before each attempt
// starts: an execution whose budget is exhausted is blocked on it
// (public state rate_limited) until the budget is reset or raised, and
// one its quota refuses is blocked until the quota has room. See
// docs/ARCHITECTURE.md, "Budgets and quotas".

// BudgetSpec defines a budget.
type BudgetSpec struct {
	// ID names the budget (zero: a new id is drawn).
	ID BudgetID
	// Limits per dimension: Hard refuses a report that would pass it and,
	// once reached, blocks the executions attached to the budget; Soft
	// lets reports through and says so.
	Limits map[string]BudgetLimit
	// ResetEvery zeroes the usage on that period from the creation on
	// (0: never).
	ResetEvery time.Duration
	// OnHardBreach is what a hard breach reported by a flow member does
	// besides refusing the report (BreachCancelFlow: cancel the flow's
	// members that have not started).
	OnHardBreach BudgetBreachAction
}

// CreateBudget creates a budget, or finds the one with spec.ID and the
// same definition (created false); another definition under that id is
// ErrIdempotencyConflict.
func (e *Engine) CreateBudget(ctx context.Context, spec BudgetSpec) (id BudgetID, created bool, err error) {
	as, err := e.admissionStore()
	if err != nil {
		return BudgetID{}, false, wrap("create budget", err)
	}
	id = spec.ID
	if model.UUID(id).IsZero() {
		id = BudgetID(e.newUUID())
	}
	p := &model.BudgetCreateParams{ID: id, Limits: spec.Limits, ResetInterval: spec.ResetEvery,
		OnHardBreach: spec.OnHardBreach, Now: e.clock.Now()}
	if err := p.Validate(e.parts); err != nil {
		return BudgetID{}, false, wrap("create budget", renameField(err, "ResetInterval", "BudgetSpec.ResetEvery"))
	}
	r, err := as.BudgetCreate(ctx, p)
	if err != nil {
		return BudgetID{}, false, wrap("create budget", err)
	}
	return id, r.Created, nil
}

// BudgetStatus reads a budget: limits, usage, breaches, next reset.
func (e *Engine) BudgetStatus(ctx context.Context, id BudgetID) (*BudgetStatus, error) {
	as, err := e.admissionStore()
	if err != nil {
		return nil, wrap("budget status", err)
	}
	st, err := as.BudgetStatus(ctx, &model.BudgetStatusParams{ID: id, Now: e.clock.Now()})
	return st, wrap("budget status", err)
}

// ResetBudget zeroes a budget's usage now (its schedule is unchanged) and
// lets the executions blocked on it run.
func (e *Engine) ResetBudget(ctx context.Context, id BudgetID) error {
	as, err := e.admissionStore()
	if err != nil {
		return wrap("reset budget", err)
	}
	if _, err := as.BudgetReset(ctx, &model.BudgetResetParams{ID: id, Now: e.clock.Now()}); err != nil {
		return wrap("reset budget", err)
	}
	e.unblock.KickAdmission()
	return nil
}

// UsageOpts tunes a usage report.
type UsageOpts struct {
	// DedupKey makes a retried report apply once (within 24 hours). From
	// a handler it is scoped to the attempt: the next attempt reporting
	// with the same key is charged again.
	DedupKey string
}

// UsageReport is what a usage report did.
type UsageReport struct {
	// Outcome: applied, soft_breach, hard_breach (nothing applied) or
	// already_applied (the dedup key was seen).
	Outcome BudgetReportOutcome
	// Dimension, Usage and Limit describe a breach.
	Dimension string
	Usage     int64
	Limit     int64
}

// ReportUsage adds usage to a budget as an operator (no execution is
// charged). A hard breach returns the report and ErrBudgetExceeded.
func (e *Engine) ReportUsage(ctx context.Context, id BudgetID, deltas map[string]int64, opts *UsageOpts) (*UsageReport, error) {
	rep, _, err := e.reportUsage(ctx, id, deltas, opts, model.ExecutionID{}, "")
	return rep, err
}

func (e *Engine) reportUsage(ctx context.Context, id BudgetID, deltas map[string]int64, opts *UsageOpts,
	exec model.ExecutionID, scope string) (*UsageReport, BudgetBreachAction, error) {
	as, err := e.admissionStore()
	if err != nil {
		return nil, "", wrap("report usage", err)
	}
	var o UsageOpts
	if opts != nil {
		o = *opts
	}
	key := o.DedupKey
	if key != "" && scope != "" {
		key = scope + key
	}
	p := &model.BudgetReportParams{ID: id, Deltas: deltas, DedupKey: key, Execution: exec, Now: e.clock.Now()}
	if err := p.Validate(e.parts); err != nil {
		return nil, "", wrap("report usage", renameField(err, "DedupKey", "UsageOpts.DedupKey"))
	}
	r, err := as.BudgetReport(ctx, p)
	if err != nil {
		return nil, "", wrap("report usage", err)
	}
	rep := &UsageReport{Outcome: r.Outcome, Dimension: r.Dimension, Usage: r.Usage, Limit: r.Limit}
	if r.Outcome == model.ReportHardBreach {
		return rep, r.OnHardBreach, wrap("report usage", fmt.Errorf("%w: %s would reach %d, above its hard limit %d",
			model.ErrBudgetExceeded, r.Dimension, r.Usage, r.Limit))
	}
	return rep, "", nil
}

// ReportUsage charges the task's execution on budget (one of its budgets
// or any other). Reports go with the attempt: one from an attempt whose
// lease is gone is refused (ErrLeaseLost's cause), and UsageOpts.DedupKey
// is scoped to the attempt. The execution's ledger keeps what it was
// charged, for ReleaseBudgetSpend. A hard breach returns the report and
// ErrBudgetExceeded; when the budget's OnHardBreach is BreachCancelFlow
// and the execution is a flow member, the flow's members that have not
// started are cancelled.
//
// The lease check is made here, not in the budget's step (a budget lives
// on another partition than the execution): a report racing the lease's
// loss by less than a renewal can still apply.
func (t *TaskInfo) ReportUsage(ctx context.Context, budget BudgetID, deltas map[string]int64, opts *UsageOpts) (*UsageReport, error) {
	if t.w == nil || t.run == nil {
		return nil, wrap("report usage", &model.Error{Code: model.CodeInvalidInput, Field: "TaskInfo", Detail: "not_running"})
	}
	if cause := t.leaseGone(); cause != nil {
		return nil, wrap("report usage", cause)
	}
	e := t.w.engine
	scope := t.ID.String() + "/" + t.run.fence.AttemptID.String() + "/"
	rep, action, err := e.reportUsage(ctx, budget, deltas, opts, t.ID, scope)
	if err != nil && action == model.BreachCancelFlow && errors.Is(err, model.ErrBudgetExceeded) {
		if snap, derr := e.Describe(ctx, t.ID); derr == nil && !snap.Flow.IsZero() {
			_, cerr := e.CancelFlow(ctx, snap.Flow, CancelPending, "budget "+budget.String()+" hard limit reached")
			if cerr != nil && !errors.Is(cerr, model.ErrFlowTerminal) {
				e.log.Warn("budget breach: cancelling the flow failed", "flow", snap.Flow.String(), "err", cerr)
			}
		}
	}
	return rep, err
}

// ReleaseBudgetSpend gives back what an execution was charged on each of
// its budgets (its ledger), for example before replaying it or after
// cancelling it. An execution without a ledger changes nothing.
func (e *Engine) ReleaseBudgetSpend(ctx context.Context, id ExecutionID) error {
	as, err := e.admissionStore()
	if err != nil {
		return wrap("release budget spend", err)
	}
	snap, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		return wrap("release budget spend", err)
	}
	for _, b := range snap.Budgets {
		if _, err := as.BudgetRelease(ctx, &model.BudgetReleaseParams{ID: b, Execution: id, Now: e.clock.Now()}); err != nil {
			return wrap("release budget spend", err)
		}
	}
	e.unblock.KickAdmission()
	return nil
}

// QuotaSpec defines a quota policy. At least one of Rate and Concurrency
// is set.
type QuotaSpec struct {
	// ID names the policy (zero: a new id is drawn).
	ID QuotaID
	// Rate admits at most Rate executions per key in any Window.
	Rate   int
	Window time.Duration
	// Jitter spreads the retry of executions the rate refused over up to
	// this much (at most Window).
	Jitter time.Duration
	// Concurrency caps the executions of one key running at once.
	Concurrency int
}

// CreateQuota creates a quota policy, or finds the one with spec.ID and
// the same definition (created false); another definition under that id
// is ErrIdempotencyConflict. Attach it with SubmitOpts.Quota and
// SubmitOpts.QuotaKey (the key chooses the bucket: a tenant, a customer).
func (e *Engine) CreateQuota(ctx context.Context, spec QuotaSpec) (id QuotaID, created bool, err error) {
	as, err := e.admissionStore()
	if err != nil {
		return QuotaID{}, false, wrap("create quota", err)
	}
	id = spec.ID
	if model.UUID(id).IsZero() {
		id = QuotaID(e.newUUID())
	}
	p := &model.QuotaCreateParams{ID: id, Rate: spec.Rate, Window: spec.Window, Jitter: spec.Jitter,
		Concurrency: spec.Concurrency, Now: e.clock.Now()}
	r, err := as.QuotaCreate(ctx, p)
	if err != nil {
		return QuotaID{}, false, wrap("create quota", err)
	}
	return id, r.Created, nil
}

// QuotaStatus reads one bucket of a quota policy.
func (e *Engine) QuotaStatus(ctx context.Context, id QuotaID, key string) (*QuotaStatus, error) {
	as, err := e.admissionStore()
	if err != nil {
		return nil, wrap("quota status", err)
	}
	st, err := as.QuotaStatus(ctx, &model.QuotaStatusParams{ID: id, Key: key, Now: e.clock.Now()})
	return st, wrap("quota status", err)
}

// admissionStore returns the store's budget and quota operations.
func (e *Engine) admissionStore() (model.AdmissionStore, error) {
	as, ok := e.store.(model.AdmissionStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store",
			Detail: fmt.Sprintf("%T does not implement model.AdmissionStore", e.store)}
	}
	return as, nil
}

// leaseGone returns why the task's lease can no longer be used (nil while
// it can): lost, handed back, or past its expiry.
func (t *TaskInfo) leaseGone() error {
	w := t.w
	w.mu.Lock()
	lost, released, expires := t.run.lost, t.run.released, t.run.expiresAt
	w.mu.Unlock()
	switch {
	case lost:
		return fmt.Errorf("%w: the lease was lost", ErrLeaseLost)
	case released:
		return fmt.Errorf("%w: the worker handed the execution back", ErrLeaseLost)
	case !expires.IsZero() && !w.engine.clock.Now().Before(expires):
		return fmt.Errorf("%w: the lease expired", ErrLeaseLost)
	}
	return nil
}
