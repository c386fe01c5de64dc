package model

import (
	"context"
	"slices"
	"strconv"
	"time"
)

// ClaimStore holds grants and claims.
type ClaimStore interface {
	ClaimGrantIssue(ctx context.Context, p *ClaimGrantIssueParams) (*ClaimGrantIssueResult, error)
	ExecutionClaim(ctx context.Context, p *ExecutionClaimParams) (*ClaimResult, error)
	ExecutionClaimNext(ctx context.Context, p *ExecutionClaimNextParams) (*ExecutionClaimNextResult, error)
	ExecutionGrantAndClaim(ctx context.Context, p *ExecutionGrantAndClaimParams) (*ClaimResult, error)
}

// Blocker is optional (see Store): blocks by reason (budget, quota,
// operator, lane state). The engine does not call it: its own route blocks
// go through ExecutionClaimNext and RouteUnblock. A feature that blocks
// (budgets, quotas) will assert it or move it into Store.
type Blocker interface {
	ExecutionBlock(ctx context.Context, p *ExecutionBlockParams) (*ExecutionBlockResult, error)
	ExecutionUnblock(ctx context.Context, p *ExecutionUnblockParams) (*ExecutionUnblockResult, error)
}

// ClaimGrantIssueParams grants one worker the right to claim an eligible
// execution. The execution stays eligible; an unused grant lapses.
type ClaimGrantIssueParams struct {
	ID               ExecutionID
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	// Capabilities are the worker's; the execution's required capabilities
	// must be a subset.
	Capabilities Capabilities
	GrantTTL     time.Duration
	Now          time.Time
}

// Validate checks every field.
func (p *ClaimGrantIssueParams) Validate(cfg PartitionConfig) error {
	return validateGrant(cfg, p.ID, p.WorkerID, p.WorkerInstanceID, p.Capabilities, p.GrantTTL, p.Now)
}

// ClaimGrantIssueResult reports a grant.
type ClaimGrantIssueResult struct {
	ExpiresAt time.Time
}

// ExecutionBlockParams moves an eligible execution off the eligible index
// into the blocked index of its reason (admission: budget, quota, route,
// operator, lane state).
//
// A block on WaitingForBudget names the exhausted Budget (required; the
// execution joins that budget's blocked group of its lane); a block on
// WaitingForQuota needs an execution with a quota (otherwise
// ErrInvalidBlockingReason) and joins its bucket's group. Budget is
// refused with any other reason. A block clears the execution's grant.
type ExecutionBlockParams struct {
	ID     ExecutionID
	Reason BlockingReason
	Detail string
	Budget BudgetID
	Now    time.Time
}

// Validate checks every field.
func (p *ExecutionBlockParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, ok := BlockedEligibility(p.Reason); !ok {
		return &Error{Code: CodeInvalidBlockingReason, Field: "Reason", Detail: p.Reason.String()}
	}
	if err := ValidateText("Detail", p.Detail); err != nil {
		return err
	}
	if (p.Reason == WaitingForBudget) == UUID(p.Budget).IsZero() {
		if p.Reason == WaitingForBudget {
			return invalidField("Budget", "empty")
		}
		return invalidField("Budget", "set_without_budget_reason")
	}
	return checkNow(p.Now)
}

// ExecutionBlockResult reports a block.
type ExecutionBlockResult struct {
	EligibilityState EligibilityState
}

// LeaseRequest is what every claim needs to mint a lease.
type LeaseRequest struct {
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	// LeaseID is the new lease's id, chosen by the caller.
	LeaseID LeaseID
	// AttemptID is the id of the attempt started, when one is started (a
	// resumed attempt keeps its id).
	AttemptID AttemptID
	LeaseTTL  time.Duration
}

func (r LeaseRequest) validate() error {
	if err := r.WorkerID.Validate(); err != nil {
		return err
	}
	if err := r.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if r.LeaseID.IsZero() {
		return invalidField("LeaseID", "empty")
	}
	if r.AttemptID.IsZero() {
		return invalidField("AttemptID", "empty")
	}
	return checkDuration("LeaseTTL", r.LeaseTTL, time.Millisecond, MaxLeaseTTL)
}

// ExecutionClaimParams consumes the caller's claim grant. The grant must
// have been issued to the claiming worker instance (LeaseRequest's
// WorkerID and WorkerInstanceID; otherwise invalid_claim_grant), and the
// claimer's Capabilities must still cover the execution's required
// capabilities (otherwise capability_mismatch).
type ExecutionClaimParams struct {
	ID ExecutionID
	// Capabilities are the claiming worker's.
	Capabilities Capabilities
	// AdmissionToken is the quota admission (QuotaAdmit) the lease will
	// hold: required when the execution has a quota (otherwise
	// ErrAdmissionRequired), ignored when it has none.
	AdmissionToken string
	LeaseRequest
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionClaimParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := ValidateAdmissionToken("AdmissionToken", p.AdmissionToken); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ExecutionGrantAndClaimParams checks capabilities and claims in one step.
// AdmissionToken is as in ExecutionClaimParams.
type ExecutionGrantAndClaimParams struct {
	ID             ExecutionID
	Capabilities   Capabilities
	AdmissionToken string
	LeaseRequest
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionGrantAndClaimParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := ValidateAdmissionToken("AdmissionToken", p.AdmissionToken); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ClaimResult is what a worker needs to run a claimed execution.
type ClaimResult struct {
	ID           ExecutionID
	Lease        Lease
	AttemptID    AttemptID
	AttemptIndex int
	AttemptType  AttemptType
	// Resumed is true when an interrupted attempt (a worker delay) resumed
	// instead of a new attempt starting.
	Resumed   bool
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	Priority  int
	// Payload is read-only: a store may hand out the bytes it keeps.
	Payload []byte
	// Tags is nil when the execution has none.
	Tags map[string]string
	// Metadata is nil when the execution has none.
	Metadata map[string]string
	// RetryCount is how many retries came before this attempt, and
	// MaxRetries the retry policy's limit: the attempt is the last one a
	// failure leaves when RetryCount == MaxRetries.
	RetryCount int
	MaxRetries int
	CreatedAt  time.Time
	// TimeoutAt is when the attempt times out (zero: no attempt timeout).
	TimeoutAt time.Time
	// Budgets, Quota and QuotaKey are the execution's admission
	// attachments (nil / zero: none); AdmissionToken is the quota
	// admission the lease holds.
	Budgets        []BudgetID
	Quota          QuotaID
	QuotaKey       string
	AdmissionToken string
}

// Fence returns the fence of the claim's lease.
func (r *ClaimResult) Fence() Fence {
	return Fence{LeaseID: r.Lease.ID, LeaseEpoch: r.Lease.Epoch, AttemptID: r.AttemptID}
}

// ExecutionClaimNextParams claims the best eligible execution of a lane in
// one partition that the worker can serve. It walks at most ScanLimit heads
// of the eligible index in priority order; a head the worker cannot serve is
// moved to blocked:route when no live worker can serve it (its required
// capabilities are not within LiveCapabilities), and skipped otherwise.
//
// Namespace, when set, restricts the walk to the executions of that
// namespace: a head of another namespace is skipped, never claimed nor
// blocked, since LiveCapabilities (the union of that namespace's live
// workers) says nothing about who could serve it. Empty means every
// namespace (the caller's LiveCapabilities then covers them all).
type ExecutionClaimNextParams struct {
	Partition    int
	Lane         LaneID
	Namespace    Namespace
	Capabilities Capabilities
	// LiveCapabilities is the union of the live workers' capabilities.
	LiveCapabilities Capabilities
	// ScanLimit bounds the heads examined (1–1000).
	ScanLimit int
	// AdmissionGrantTTL is the grant issued on a head that needs
	// admission (0: DefaultAdmissionGrantTTL; at most MaxGrantTTL).
	AdmissionGrantTTL time.Duration
	// Inline, when set, lets the walk admit a head with budgets or a
	// quota in its own step (see InlineAdmission); only a store that is
	// an InlineAdmitter reporting true accepts it.
	Inline *InlineAdmission
	LeaseRequest
	Now time.Time
}

// Validate checks every field.
func (p *ExecutionClaimNextParams) Validate(cfg PartitionConfig) error {
	if p.Partition < 0 || p.Partition >= cfg.WithDefaults().FlowPartitions {
		return OutOfRange("Partition", p.Partition, "0.."+strconv.Itoa(cfg.WithDefaults().FlowPartitions-1))
	}
	if err := p.Lane.Validate(); err != nil {
		return err
	}
	if p.Namespace != "" {
		if err := p.Namespace.Validate(); err != nil {
			return err
		}
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if _, err := NormalizeCapabilities("LiveCapabilities", p.LiveCapabilities); err != nil {
		return err
	}
	if err := checkLimit("ScanLimit", p.ScanLimit); err != nil {
		return err
	}
	if err := checkDuration("AdmissionGrantTTL", p.AdmissionGrantTTL, 0, MaxGrantTTL); err != nil {
		return err
	}
	if err := p.Inline.validate(); err != nil {
		return err
	}
	if err := p.LeaseRequest.validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// ExecutionClaimNextResult reports a claim-next.
//
// A claimable head of the namespace that this worker can serve (the
// capability check comes first, so a head no one can serve never takes a
// quota slot) and that has budgets or a quota (and no live grant to
// another worker) is claimed here only when the request's Inline admits
// it (see InlineAdmission). Otherwise the walk grants it to the claiming
// worker for AdmissionGrantTTL (replacing a grant the worker already held
// on it), reports it as Admit and stops, with Claimed nil. The caller
// admits it (see AdmissionStore) and claims the grant.
type ExecutionClaimNextResult struct {
	// Admit is the head that needs admission first (nil: none met).
	Admit *AdmissionCandidate
	// Claimed is nil when nothing could be claimed.
	Claimed *ClaimResult
	// Blocked lists the executions moved to blocked:route.
	Blocked []ExecutionID
	// Skipped counts heads left for a more capable worker.
	Skipped int
	// Paused is true when the lane is paused (LaneStore): nothing was
	// examined, claimed, granted or blocked. The worker should idle until
	// the lane is resumed (a resume notifies with PartitionAll).
	Paused bool
}

// Empty reports that the probed partition had no eligible head of the lane
// at all: the lane was not paused, and nothing was claimed, granted for
// admission, left for a more capable worker or blocked.
func (r *ExecutionClaimNextResult) Empty() bool {
	return !r.Paused && r.Claimed == nil && r.Admit == nil && r.Skipped == 0 && len(r.Blocked) == 0
}

// ExecutionUnblockParams returns a blocked execution to the eligible index
// when it is still blocked for ExpectedReason.
type ExecutionUnblockParams struct {
	ID             ExecutionID
	ExpectedReason BlockingReason
	Now            time.Time
}

// Validate checks every field.
func (p *ExecutionUnblockParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if _, ok := BlockedEligibility(p.ExpectedReason); !ok {
		return &Error{Code: CodeInvalidBlockingReason, Field: "ExpectedReason", Detail: p.ExpectedReason.String()}
	}
	return checkNow(p.Now)
}

// ExecutionUnblockResult is empty.
type ExecutionUnblockResult struct{}

// MaxInlineAdmissionIDs bounds each list of an InlineAdmission.
const MaxInlineAdmissionIDs = 8

// InlineAdmission names the budgets and quota policies a claim-next (or a
// completion's Next) may admit a head to in its own atomic step, instead
// of granting it for admission by the caller.
//
// A head with budgets or a quota is admitted inline when every one of its
// budgets is in Budgets and its quota (if any) is in Quotas, every budget
// exists and has no dimension at or above a positive hard limit, the
// quota policy exists, the head's bucket holds no admission of it, and
// the bucket admits it now (its rate window, trimmed at Now, holds fewer
// than the rate's entries; its admissions are fewer than the concurrency
// cap). The bucket then records the admission as QuotaAdmit would, with
// the new lease's id as the token, and the head is claimed with that
// token. In every other case nothing is written for the admission and the
// head is granted and returned as Admit, as without Inline: the caller's
// admission path reports the refusal and blocks it.
//
// Budgets and quotas live on their own partitions, so only a store that
// can reach every partition in one step takes it (InlineAdmitter).
type InlineAdmission struct {
	Budgets []BudgetID
	Quotas  []QuotaID
}

func (a *InlineAdmission) validate() error {
	if a == nil {
		return nil
	}
	if len(a.Budgets) > MaxInlineAdmissionIDs {
		return OutOfRange("Inline.Budgets", len(a.Budgets), "at most "+strconv.Itoa(MaxInlineAdmissionIDs))
	}
	if len(a.Quotas) > MaxInlineAdmissionIDs {
		return OutOfRange("Inline.Quotas", len(a.Quotas), "at most "+strconv.Itoa(MaxInlineAdmissionIDs))
	}
	for _, b := range a.Budgets {
		if UUID(b).IsZero() {
			return invalidField("Inline.Budgets", "empty")
		}
	}
	for _, q := range a.Quotas {
		if UUID(q).IsZero() {
			return invalidField("Inline.Quotas", "empty")
		}
	}
	return nil
}

// Covers reports whether a lists every budget of budgets and quota q
// (zero: none).
func (a *InlineAdmission) Covers(budgets []BudgetID, q QuotaID) bool {
	if a == nil {
		return false
	}
	for _, b := range budgets {
		if !slices.Contains(a.Budgets, b) {
			return false
		}
	}
	return UUID(q).IsZero() || slices.Contains(a.Quotas, q)
}

// InlineAdmitter is optional: a store that reports true accepts
// ExecutionClaimNextParams.Inline and NextClaim.Inline (memstore; valkeystore
// on a standalone server), and the engine sends them to no other store.
// valkeystore on a cluster reports false and refuses them with a
// validation error naming Inline (InlineUnsupported).
type InlineAdmitter interface {
	InlineAdmission() bool
}

// InlineUnsupported is the validation error of an Inline (at field: Inline
// or Next.Inline) given to a store that cannot admit inline.
func InlineUnsupported(field string) *Error {
	return &Error{Code: CodeInvalidInput, Field: field, Detail: "unsupported_by_store"}
}
