package flowfabric

import (
	"errors"
	"time"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

// This file re-exports what a program and its tests touch from package
// model, so the common path needs only this package (and a store). The
// names are aliases: a flowfabric.PublicState is a model.PublicState, and
// code that imports model as well keeps compiling. Package model stays the
// store seam (Store, the Params/Result types, validation) for store
// authors and tools.

// Types shared with the model package.
type (
	// Store is the state behind an engine: memstore.New or valkeystore.New.
	Store = model.Store
	// Clock is the engine's source of time.
	Clock = model.Clock
	// SimClock is a simulated clock for tests (see NewSimClock); package
	// flowfabrictest wires one up for you.
	SimClock = model.SimClock
	// Signal wakes a Clock.Wait.
	Signal = model.Signal
	// ExecutionID identifies an execution ("{fp:N}:<uuid>").
	ExecutionID = model.ExecutionID
	// LaneID names a lane (a queue).
	LaneID = model.LaneID
	// WorkerID names a logical worker.
	WorkerID = model.WorkerID
	// WorkerInstanceID names one running worker process.
	WorkerInstanceID = model.WorkerInstanceID
	// Namespace scopes idempotency keys and the worker registry.
	Namespace = model.Namespace
	// Kind names what an execution does.
	Kind = model.Kind
	// Snapshot is the full state of one execution.
	Snapshot = model.ExecutionSnapshot
	// StateVector is the seven-dimension state inside a Snapshot.
	StateVector = model.StateVector
	// Attempt is one attempt of an execution.
	Attempt = model.Attempt
	// AttemptType says why an attempt started (AttemptInitial, ...).
	AttemptType = model.AttemptType
	// AttemptStatus is the state of one attempt record.
	AttemptStatus = model.AttemptStatus
	// LeaseEvent is one entry of an execution's lease history.
	LeaseEvent = model.LeaseEvent
	// Fence is a task's lease id, epoch and attempt id.
	Fence = model.Fence
	// PublicState is an execution's one-word state (PublicCompleted, ...).
	PublicState = model.PublicState
	// RetryPolicy decides retries and their backoff.
	RetryPolicy = model.RetryPolicy
	// BackoffKind selects how retry delays grow (BackoffExponential,
	// BackoffFixed).
	BackoffKind = model.BackoffKind
	// FailureCategory classifies a failure; Fail takes one.
	FailureCategory = model.FailureCategory
	// Error is the engine's coded error type.
	Error = model.Error
	// ErrorCode names one error condition (Error.Code).
	ErrorCode = model.Code
	// TimerConfig tunes a timer scanner (interval, batch, sweep).
	TimerConfig = scan.TimerConfig
	// LeaseExpiryConfig tunes the lease-expiry scanner.
	LeaseExpiryConfig = scan.LeaseExpiryConfig
	// UnblockConfig tunes the unblock scanner.
	UnblockConfig = scan.UnblockConfig
	// BudgetScanConfig configures the budget reset and reconcile
	// scanners and the quota releaser.
	BudgetScanConfig = scan.BudgetConfig
	// QuotaReconcileConfig configures the quota reconciler.
	QuotaReconcileConfig = scan.QuotaReconcileConfig
	// IndexRepairConfig configures the repairing index reconciler.
	IndexRepairConfig = scan.IndexRepairConfig
)

// NewSimClock returns a simulated clock reading start. Time moves only when
// the test advances it (Advance, Set) or, with SetAutoAdvance(true), when
// every tracked goroutine waits.
func NewSimClock(start time.Time) *SimClock { return model.NewSimClock(start) }

// Defaults.
const (
	// DefaultLane is the lane used when none is given.
	DefaultLane = model.DefaultLane
	// DefaultNamespace is the namespace used when none is given.
	DefaultNamespace = model.DefaultNamespace
	// MinPriority and MaxPriority bound SubmitOpts.Priority.
	MinPriority = model.MinPriority
	MaxPriority = model.MaxPriority
)

// Public states of an execution (Snapshot.PublicState).
const (
	PublicWaiting         = model.PublicWaiting
	PublicDelayed         = model.PublicDelayed
	PublicRateLimited     = model.PublicRateLimited
	PublicWaitingChildren = model.PublicWaitingChildren
	PublicActive          = model.PublicActive
	PublicSuspended       = model.PublicSuspended
	PublicCompleted       = model.PublicCompleted
	PublicFailed          = model.PublicFailed
	PublicCancelled       = model.PublicCancelled
	PublicExpired         = model.PublicExpired
	PublicSkipped         = model.PublicSkipped
)

// Failure categories, for Fail and Attempt.FailureCategory.
const (
	// FailureTransient is what a plain error returned by a handler means;
	// it retries per the retry policy.
	FailureTransient = model.FailureTransient
	// FailurePermanent fails the execution at once (Permanent).
	FailurePermanent = model.FailurePermanent
	// FailureInfraCrash: the worker crashed or lost its lease.
	FailureInfraCrash = model.FailureInfraCrash
	// FailureTimeout: the attempt ran past SubmitOpts.AttemptTimeout.
	FailureTimeout = model.FailureTimeout
	// FailureCancelled fails without retry.
	FailureCancelled = model.FailureCancelled
	// FailurePanic: the handler panicked.
	FailurePanic = model.FailurePanic
	// FailurePayloadInvalid: the payload did not decode; no retry.
	FailurePayloadInvalid = model.FailurePayloadInvalid
	// FailureUnknownKind: no handler for the kind on the worker.
	FailureUnknownKind = model.FailureUnknownKind
	// FailureInvalidOutcome: the handler's outcome cannot be recorded (a
	// result over MaxResultBytes that SetResult refused, Fail with a
	// malformed category, an outcome the store refuses as invalid); no
	// retry.
	FailureInvalidOutcome = model.FailureInvalidOutcome
)

// Attempt types (TaskInfo.AttemptType, Attempt.Type).
const (
	AttemptInitial = model.AttemptInitial
	AttemptRetry   = model.AttemptRetry
	AttemptReplay  = model.AttemptReplay
	AttemptReclaim = model.AttemptReclaim
)

// Backoff kinds (RetryPolicy.Backoff).
const (
	BackoffExponential = model.BackoffExponential
	BackoffFixed       = model.BackoffFixed
)

// Errors, for errors.Is.
var (
	ErrValidation          = model.ErrValidation
	ErrInvalidInput        = model.ErrInvalidInput
	ErrInvalidPolicy       = model.ErrInvalidPolicy
	ErrInvalidTagKey       = model.ErrInvalidTagKey
	ErrInvalidCapabilities = model.ErrInvalidCapabilities
	ErrNotFound            = model.ErrNotFound
	ErrNotActive           = model.ErrNotActive
	ErrNotTerminal         = model.ErrNotTerminal
	// ErrInFlow: the execution is a flow member, deleted only with its
	// flow (Delete; DeleteFlow deletes the flow).
	ErrInFlow              = model.ErrInFlow
	ErrNotEligible         = model.ErrNotEligible
	ErrNotReclaimable      = model.ErrNotReclaimable
	ErrStaleLease          = model.ErrStaleLease
	ErrLeaseExpired        = model.ErrLeaseExpired
	ErrLeaseRevoked        = model.ErrLeaseRevoked
	ErrMaxReplaysExhausted = model.ErrMaxReplaysExhausted
	ErrResultNotFound      = model.ErrResultNotFound
	// ErrSubmissionRefused: a submit hook (Config.SubmitHooks) refused the
	// submission; errors.Is matches the hook's own error too.
	ErrSubmissionRefused  = model.ErrSubmissionRefused
	ErrDuplicateWorker    = model.ErrDuplicateWorker
	ErrCapabilityMismatch = model.ErrCapabilityMismatch
	ErrInvalidClaimGrant  = model.ErrInvalidClaimGrant
	ErrClaimGrantExpired  = model.ErrClaimGrantExpired

	// ErrWorkerAtCapacity: the worker holds MaxConcurrent tasks; a grant
	// offered to it is left untouched.
	ErrWorkerAtCapacity = model.ErrWorkerAtCapacity
	// ErrWorkerStopped: the worker is stopping or stopped.
	ErrWorkerStopped = model.ErrWorkerStopped
	// ErrWorkerAlreadyStarted: Start on a worker that was started (or
	// stopped) before, or a handler added after Start.
	ErrWorkerAlreadyStarted = model.ErrWorkerAlreadyStarted
	// ErrWorkerHasNoHandlers: Start on a worker without handlers.
	ErrWorkerHasNoHandlers = model.ErrWorkerHasNoHandlers
	// ErrHandlerAlreadyRegistered: a second handler for a kind.
	ErrHandlerAlreadyRegistered = model.ErrHandlerAlreadyRegistered
	// ErrLeaseLost matches the cause of every task context cancelled
	// because its lease was taken away (cancelled, revoked, timed out,
	// expired, taken over); see Task for the specific causes.
	ErrLeaseLost = errors.New("flowfabric: lease lost")
	// ErrBudgetExceeded: a usage report would pass a hard limit; nothing
	// of it applied.
	ErrBudgetExceeded = model.ErrBudgetExceeded
	// ErrBudgetNotFound: no budget has the id.
	ErrBudgetNotFound = model.ErrBudgetNotFound
	// ErrQuotaNotFound: no quota policy has the id.
	ErrQuotaNotFound = model.ErrQuotaNotFound
)

// MaxResultBytes is the largest result TaskInfo.SetResult accepts (1 MiB).
const MaxResultBytes = model.MaxResultBytes

// Budgets and quotas (see CreateBudget, CreateQuota).
type (
	// BudgetID identifies a budget.
	BudgetID = model.BudgetID
	// QuotaID identifies a quota policy.
	QuotaID = model.QuotaID
	// BudgetLimit is one dimension's hard and soft limits.
	BudgetLimit = model.BudgetLimit
	// BudgetStatus is a budget as it stands.
	BudgetStatus = model.BudgetStatus
	// QuotaStatus is one bucket of a quota policy as it stands.
	QuotaStatus = model.QuotaStatus
	// BudgetBreachAction is what a flow member's hard breach does.
	BudgetBreachAction = model.BudgetBreachAction
	// BudgetReportOutcome is what a usage report did.
	BudgetReportOutcome = model.BudgetReportOutcome
	// ScannerFilter limits the scanners to one tenant's executions.
	ScannerFilter = model.ScannerFilter
)

// Breach actions and report outcomes.
const (
	BreachNone           = model.BreachNone
	BreachCancelFlow     = model.BreachCancelFlow
	ReportApplied        = model.ReportApplied
	ReportSoftBreach     = model.ReportSoftBreach
	ReportHardBreach     = model.ReportHardBreach
	ReportAlreadyApplied = model.ReportAlreadyApplied
)
