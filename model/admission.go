package model

import (
	"context"
	"time"
)

// AdmissionStore holds spend budgets, quota policies and the admission
// steps of the claim path (issue 12; lua-semantics §3 budget.lua and
// quota.lua, §5 "Budget" and "Quota"; engine.md §1 scanners 8–11, §2
// steps 5–7).
//
// Three kinds of partition are involved, each operation atomic within
// one:
//
//   - a budget lives on its budget partition (BudgetPartition, tag
//     "{b:M}"): its definition, usage, breach counters, its reset
//     schedule, the per-execution spend ledger and the dedup records of
//     reports, so a deduplicated report is one atomic step on a cluster
//     too (engine.md §9 bug 17);
//   - a quota policy lives on its quota partition (QuotaPartition,
//     "{q:K}"), with one bucket per key: the bucket's sliding rate window
//     and its admissions (one per execution admitted and not released;
//     the concurrency in use is their number, so it cannot drift);
//   - an execution's attachments (ExecutionCreateParams.Budgets, Quota,
//     QuotaKey) and the admission token its lease holds live in its
//     record on its execution partition, with the blocked-on-budget and
//     blocked-on-quota groups and the quota release outbox.
//
// The claim path (engine) for an execution that has budgets or a quota:
// unless the request's InlineAdmission admits and claims it in the same
// step (InlineAdmitter stores only), ExecutionClaimNext does not claim it
// but grants it to the claiming worker and returns it as
// ExecutionClaimNextResult.Admit; the engine
// reads each budget (BudgetStatus; a read error aborts: fail-closed) and
// blocks the execution on an exhausted one (ExecutionBlock with
// WaitingForBudget and Budget); it admits the execution to its quota
// bucket (QuotaAdmit with a fresh token), blocking it on a refusal
// (WaitingForQuota); then it claims the grant (ExecutionClaim with
// AdmissionToken). Every step is idempotent and a crash between any two
// is safe:
//
//   - a grant lapses by itself (the next claimer gets the head again);
//   - an admission of an execution that is not running is taken over by
//     the next admission of the same execution (QuotaAdmit reports
//     AlreadyAdmitted, replaces the token and charges nothing), so a
//     retried admission never counts twice;
//   - a claim stores the admission token in the record; every transition
//     that ends the lease (complete, fail, cancel, delay, suspend, await
//     children, recovery, expiry, a flow's skip or cancel) moves the
//     token to the partition's quota release outbox in the same atomic
//     step (QuotaReleasePending), which the engine drains (QuotaRelease,
//     then QuotaReleaseAck); a release names its token, so a stale
//     release never frees a newer admission of the same execution;
//   - ExecutionReclaim (a reclaim grant's claim of an expired lease)
//     keeps the record's admission token: the reclaimer inherits the
//     slot;
//   - an admission whose claim never happened (the claimer died, the
//     execution was cancelled meanwhile) is reported by QuotaReconcile
//     once older than the caller's grace, and released by the engine
//     when the execution's record does not hold its token
//     (ExecutionSnapshot.AdmissionToken).
//
// Both stores implement it; the conformance suite skips its tests without
// it and the differential requires it.
type AdmissionStore interface {
	BudgetCreate(ctx context.Context, p *BudgetCreateParams) (*BudgetCreateResult, error)
	BudgetReport(ctx context.Context, p *BudgetReportParams) (*BudgetReportResult, error)
	BudgetRelease(ctx context.Context, p *BudgetReleaseParams) (*BudgetReleaseResult, error)
	BudgetReset(ctx context.Context, p *BudgetResetParams) (*BudgetResetResult, error)
	BudgetResetDue(ctx context.Context, p *BudgetResetDueParams) (*BudgetResetDueResult, error)
	BudgetReconcile(ctx context.Context, p *BudgetReconcileParams) (*BudgetReconcileResult, error)
	BudgetStatus(ctx context.Context, p *BudgetStatusParams) (*BudgetStatus, error)

	QuotaCreate(ctx context.Context, p *QuotaCreateParams) (*QuotaCreateResult, error)
	QuotaAdmit(ctx context.Context, p *QuotaAdmitParams) (*QuotaAdmitResult, error)
	QuotaRelease(ctx context.Context, p *QuotaReleaseParams) (*QuotaReleaseResult, error)
	QuotaStatus(ctx context.Context, p *QuotaStatusParams) (*QuotaStatus, error)
	QuotaReconcile(ctx context.Context, p *QuotaReconcileParams) (*QuotaReconcileResult, error)

	AdmissionBlocked(ctx context.Context, p *AdmissionBlockedParams) (*AdmissionBlockedResult, error)
	AdmissionUnblock(ctx context.Context, p *AdmissionUnblockParams) (*AdmissionUnblockResult, error)
	QuotaReleasePending(ctx context.Context, p *QuotaReleasePendingParams) (*QuotaReleasePendingResult, error)
	QuotaReleaseAck(ctx context.Context, p *QuotaReleaseAckParams) (*QuotaReleaseAckResult, error)
}

// Limits of budgets and quotas.
const (
	// MaxBudgetDimensions bounds the dimensions of one budget and of one
	// report.
	MaxBudgetDimensions = 32
	// MaxBudgetAmount bounds a limit, a delta and a usage.
	MaxBudgetAmount = int64(1_000_000_000_000_000)
	// MaxExecutionBudgets bounds the budgets attached to one execution.
	MaxExecutionBudgets = 8
	// MaxBudgetResetInterval bounds a budget's reset interval.
	MaxBudgetResetInterval = 366 * 24 * time.Hour
	// BudgetDedupTTL is how long a report's dedup key is remembered.
	BudgetDedupTTL = 24 * time.Hour
	// MaxQuotaRate bounds a quota's rate and its concurrency cap.
	MaxQuotaRate = 1_000_000
	// MaxQuotaWindow bounds a quota's rate window.
	MaxQuotaWindow = 24 * time.Hour
	// MaxQuotaKeyBytes bounds a quota bucket key.
	MaxQuotaKeyBytes = 256
	// MaxAdmissionTokenBytes bounds an admission token.
	MaxAdmissionTokenBytes = 64
	// DefaultAdmissionGrantTTL is the grant a claim-next issues on a head
	// that needs admission, when the request does not say.
	DefaultAdmissionGrantTTL = 5 * time.Second
)

// BudgetLimit is the limits of one budget dimension. Zero means none.
type BudgetLimit struct {
	// Hard refuses a report that would take usage above it (nothing of
	// the report applies) and makes the budget exhausted once usage
	// reaches it: the claim path blocks executions attached to it.
	Hard int64 `json:"hard"`
	// Soft lets a report through that takes usage above it, and says so.
	Soft int64 `json:"soft"`
}

// BudgetBreachAction is what the engine does when a flow member's report
// breaches a hard limit.
type BudgetBreachAction string

// Breach actions.
const (
	// BreachNone: the report is refused; nothing else happens.
	BreachNone BudgetBreachAction = ""
	// BreachCancelFlow: the report is refused and the engine cancels the
	// reporting member's flow, cancelling its members that have not
	// started (FlowFabric's token-budget example).
	BreachCancelFlow BudgetBreachAction = "cancel_flow"
)

// Valid reports whether a is a known action.
func (a BudgetBreachAction) Valid() bool { return a == BreachNone || a == BreachCancelFlow }

// BudgetReportOutcome is what a report did.
type BudgetReportOutcome int

// Report outcomes.
const (
	// ReportApplied: every delta applied; no limit passed.
	ReportApplied BudgetReportOutcome = iota + 1
	// ReportSoftBreach: every delta applied; Dimension passed its soft
	// limit (the first in name order that did).
	ReportSoftBreach
	// ReportHardBreach: nothing applied; Dimension (the first in name
	// order) would have passed its hard limit.
	ReportHardBreach
	// ReportAlreadyApplied: the dedup key was seen within BudgetDedupTTL;
	// nothing changed.
	ReportAlreadyApplied
)

var reportOutcomeNames = [...]string{"", "applied", "soft_breach", "hard_breach", "already_applied"}

func (o BudgetReportOutcome) String() string {
	if o > 0 && int(o) < len(reportOutcomeNames) {
		return reportOutcomeNames[o]
	}
	return "unknown"
}

// QuotaOutcome is what an admission did.
type QuotaOutcome int

// Admission outcomes.
const (
	// QuotaAdmitted: a new admission; it counts against the rate window
	// and takes a concurrency slot.
	QuotaAdmitted QuotaOutcome = iota + 1
	// QuotaAlreadyAdmitted: the execution already held an admission in
	// the bucket; it now carries the new token and nothing was charged.
	QuotaAlreadyAdmitted
	// QuotaRateExceeded: the window holds Rate admissions; RetryAfter
	// says when one leaves it (plus the jitter asked for).
	QuotaRateExceeded
	// QuotaConcurrencyExceeded: Concurrency admissions are held.
	QuotaConcurrencyExceeded
)

var quotaOutcomeNames = [...]string{"", "admitted", "already_admitted", "rate_exceeded", "concurrency_exceeded"}

func (o QuotaOutcome) String() string {
	if o > 0 && int(o) < len(quotaOutcomeNames) {
		return quotaOutcomeNames[o]
	}
	return "unknown"
}

// QuotaBucket names one bucket of a quota policy.
type QuotaBucket struct {
	ID  QuotaID
	Key string
}

// ScannerFilter limits what an execution-shaped scanner acts on, so
// tenants sharing a keyspace never act on each other's executions (seed
// 000): an execution matches when its namespace is Namespace (empty: any)
// and, when TagKey is set, its tag TagKey equals TagValue. The zero value
// matches everything.
type ScannerFilter struct {
	Namespace Namespace
	TagKey    string
	TagValue  string
}

// IsZero reports whether the filter matches everything.
func (f ScannerFilter) IsZero() bool { return f == ScannerFilter{} }

// Matches reports whether an execution of namespace ns with tags matches.
func (f ScannerFilter) Matches(ns Namespace, tags map[string]string) bool {
	if f.Namespace != "" && f.Namespace != ns {
		return false
	}
	if f.TagKey != "" {
		v, ok := tags[f.TagKey]
		return ok && v == f.TagValue
	}
	return true
}

// Validate checks the filter's fields (prefixed by field).
func (f ScannerFilter) Validate(field string) error {
	if f.Namespace != "" {
		if err := f.Namespace.Validate(); err != nil {
			return prefixField(err, field+".")
		}
	}
	if f.TagKey == "" {
		if f.TagValue != "" {
			return invalidField(field+".TagValue", "set_without_tag_key")
		}
		return nil
	}
	if err := ValidateTags(map[string]string{f.TagKey: f.TagValue}); err != nil {
		return prefixField(err, field+".")
	}
	return nil
}

// BudgetStatus is a budget as it stands.
type BudgetStatus struct {
	ID            BudgetID
	Limits        map[string]BudgetLimit
	OnHardBreach  BudgetBreachAction
	Usage         map[string]int64 // dimensions reported so far (absent: 0)
	ResetInterval time.Duration
	// NextResetAt is when BudgetResetDue next zeroes the usage (zero:
	// never).
	NextResetAt  time.Time
	ResetCount   int
	HardBreaches int // reports refused
	SoftBreaches int // reports that passed a soft limit
	// BreachedAt is set by BudgetReconcile while some dimension's usage
	// is at or above its hard limit (zero: not marked).
	BreachedAt time.Time
	CreatedAt  time.Time
	// Exhausted is the first dimension, in name order, whose usage is at
	// or above a hard limit ("": none): the claim path blocks on it.
	Exhausted string
	// Spend is BudgetStatusParams.Execution's ledger (nil when not asked
	// or empty).
	Spend map[string]int64
}

// QuotaStatus is one bucket of a quota policy as it stands at Now.
type QuotaStatus struct {
	ID          QuotaID
	Key         string
	Rate        int
	Window      time.Duration
	Jitter      time.Duration
	Concurrency int
	CreatedAt   time.Time
	// InWindow counts the admissions within the window ending at Now.
	InWindow int
	// Active counts the admissions held (the concurrency in use).
	Active int
	// Free is how many admissions would pass at Now: the least of
	// Rate−InWindow and Concurrency−Active over the limits set, at
	// least 0.
	Free int
	// RetryAfter is, when the rate is full, when the oldest admission
	// leaves the window (0 otherwise).
	RetryAfter time.Duration
}

// QuotaAdmission is one admission held in a bucket.
type QuotaAdmission struct {
	ID         QuotaID
	Key        string
	Execution  ExecutionID
	Token      string
	AdmittedAt time.Time
}

// QuotaHold is one entry of an execution partition's quota release
// outbox: the admission (Token) Execution's lease held when it ended.
type QuotaHold struct {
	Execution ExecutionID
	Quota     QuotaID
	Key       string
	Token     string
	At        time.Time // when the lease ended
}

// AdmissionCandidate is a head of the eligible index that needs admission
// before it can be claimed; it is granted to the claiming worker until
// GrantExpiresAt.
type AdmissionCandidate struct {
	ID             ExecutionID
	Budgets        []BudgetID
	Quota          QuotaID // zero: none
	QuotaKey       string
	GrantExpiresAt time.Time
}

// AdmissionGroup is the executions of one lane of a partition blocked on
// one budget (Reason WaitingForBudget, Budget) or one quota bucket
// (WaitingForQuota, Quota and QuotaKey).
type AdmissionGroup struct {
	Lane     LaneID
	Reason   BlockingReason
	Budget   BudgetID
	Quota    QuotaID
	QuotaKey string
	Count    int
}
