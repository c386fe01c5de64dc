package model

import (
	"context"
	"time"
)

// Store is the seam between the engine and its state. Each method is one
// atomic transition (or one consistent read) of lua-semantics.md; memstore
// runs it under its lock, valkeystore as one Lua script on one cluster slot.
//
// Every method takes (ctx, *Params) and returns (*Result, error). Params
// carry Now, read once from the engine's clock; stores never read a clock.
// An error means nothing was written. Bad input yields an *Error whose Field
// names the input and that matches ErrValidation.
//
// Outsiders may implement Store, but it grows with the engine; run
// storetest.Exercise against any implementation.
type Store interface {
	ExecutionStore
	ClaimStore
	LeaseStore
	ScanStore
	WorkerStore
	ReadStore
	// Partitions returns the partition counts the store was opened with.
	Partitions() PartitionConfig
}

// WorkNotifier is implemented by stores that can tell a waiting worker that
// a lane may have new eligible work, so idle workers need not poll.
type WorkNotifier interface {
	// WatchWork calls f whenever an execution of lane may have become
	// eligible (created, promoted, unblocked, requeued), possibly by another
	// process, with the partition the execution lives on (-1 when unknown,
	// as after a lost subscription). f must not block and must not call the
	// store. Spurious calls are allowed. The returned func stops the watch.
	WatchWork(lane LaneID, f func(partition int)) (stop func())
}

// ExecutionStore holds the transitions that create and end executions.
type ExecutionStore interface {
	ExecutionCancel(ctx context.Context, p *ExecutionCancelParams) (*ExecutionCancelResult, error)
	ExecutionChangePriority(ctx context.Context, p *ExecutionChangePriorityParams) (*ExecutionChangePriorityResult, error)
	ExecutionComplete(ctx context.Context, p *ExecutionCompleteParams) (*ExecutionCompleteResult, error)
	ExecutionCreate(ctx context.Context, p *ExecutionCreateParams) (*ExecutionCreateResult, error)
	ExecutionDelay(ctx context.Context, p *ExecutionDelayParams) (*ExecutionDelayResult, error)
	ExecutionExpire(ctx context.Context, p *ExecutionExpireParams) (*ExecutionExpireResult, error)
	ExecutionFail(ctx context.Context, p *ExecutionFailParams) (*ExecutionFailResult, error)
	ExecutionReplay(ctx context.Context, p *ExecutionReplayParams) (*ExecutionReplayResult, error)
	ExecutionUpdateProgress(ctx context.Context, p *ExecutionUpdateProgressParams) (*ExecutionUpdateProgressResult, error)
}

// ClaimStore holds grants, claims and admission blocks.
type ClaimStore interface {
	ClaimGrantIssue(ctx context.Context, p *ClaimGrantIssueParams) (*ClaimGrantIssueResult, error)
	ExecutionBlock(ctx context.Context, p *ExecutionBlockParams) (*ExecutionBlockResult, error)
	ExecutionClaim(ctx context.Context, p *ExecutionClaimParams) (*ClaimResult, error)
	ExecutionClaimNext(ctx context.Context, p *ExecutionClaimNextParams) (*ExecutionClaimNextResult, error)
	ExecutionGrantAndClaim(ctx context.Context, p *ExecutionGrantAndClaimParams) (*ClaimResult, error)
	ExecutionUnblock(ctx context.Context, p *ExecutionUnblockParams) (*ExecutionUnblockResult, error)
}

// LeaseStore holds the lease transitions and crash recovery.
type LeaseStore interface {
	ExecutionReclaim(ctx context.Context, p *ExecutionReclaimParams) (*ExecutionReclaimResult, error)
	ExecutionRecover(ctx context.Context, p *ExecutionRecoverParams) (*ExecutionRecoverResult, error)
	LeaseMarkExpired(ctx context.Context, p *LeaseMarkExpiredParams) (*LeaseMarkExpiredResult, error)
	LeaseRenew(ctx context.Context, p *LeaseRenewParams) (*LeaseRenewResult, error)
	LeaseRevoke(ctx context.Context, p *LeaseRevokeParams) (*LeaseRevokeResult, error)
	ReclaimGrantIssue(ctx context.Context, p *ReclaimGrantIssueParams) (*ReclaimGrantIssueResult, error)
}

// ScanStore holds what the background scanners read and do.
type ScanStore interface {
	ExecutionPromoteDelayed(ctx context.Context, p *ExecutionPromoteDelayedParams) (*ExecutionPromoteDelayedResult, error)
	IndexScanDue(ctx context.Context, p *IndexScanDueParams) (*IndexScanDueResult, error)
	PartitionDue(ctx context.Context, p *PartitionDueParams) (*PartitionDueResult, error)
	RouteUnblock(ctx context.Context, p *RouteUnblockParams) (*RouteUnblockResult, error)
}

// WorkerStore holds the worker registry.
type WorkerStore interface {
	WorkerDeregister(ctx context.Context, p *WorkerDeregisterParams) (*WorkerDeregisterResult, error)
	WorkerExpire(ctx context.Context, p *WorkerExpireParams) (*WorkerExpireResult, error)
	WorkerHeartbeat(ctx context.Context, p *WorkerHeartbeatParams) (*WorkerHeartbeatResult, error)
	WorkerList(ctx context.Context, p *WorkerListParams) (*WorkerListResult, error)
	WorkerRegister(ctx context.Context, p *WorkerRegisterParams) (*WorkerRegisterResult, error)
}

// ReadStore holds the reads.
type ReadStore interface {
	AttemptList(ctx context.Context, p *AttemptListParams) (*AttemptListResult, error)
	ExecutionDescribe(ctx context.Context, p *ExecutionDescribeParams) (*ExecutionSnapshot, error)
	ExecutionIndexes(ctx context.Context, p *ExecutionIndexesParams) (*ExecutionIndexesResult, error)
	ExecutionList(ctx context.Context, p *ExecutionListParams) (*ExecutionListResult, error)
	ExecutionPayload(ctx context.Context, p *ExecutionPayloadParams) (*ExecutionPayloadResult, error)
	ExecutionResult(ctx context.Context, p *ExecutionResultParams) (*ExecutionResultResult, error)
	LeaseHistory(ctx context.Context, p *LeaseHistoryParams) (*LeaseHistoryResult, error)
}

// ---- ExecutionStore ----

// ExecutionCreateParams creates one execution.
type ExecutionCreateParams struct {
	// ID is the new execution's id; its partition decides where it lives.
	ID        ExecutionID
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	Payload   []byte
	// Priority is clamped to [0, 9000]; higher runs first.
	Priority             int
	Tags                 map[string]string
	RequiredCapabilities Capabilities
	RetryPolicy          RetryPolicy
	// MaxReclaims caps crash recoveries (0: DefaultMaxReclaims).
	MaxReclaims int
	// MaxReplays caps replays of the terminal execution (0: DefaultMaxReplays).
	MaxReplays int
	// AttemptTimeout limits each attempt (0: none).
	AttemptTimeout time.Duration
	// Deadline expires the execution, whatever its phase, when reached
	// (zero: none).
	Deadline time.Time
	// DelayUntil makes the execution eligible only from then on; a time not
	// after Now means eligible now.
	DelayUntil time.Time
	// IdempotencyKey, when set, makes a second create with the same key in
	// the same namespace and partition within IdempotencyTTL return the
	// first id. (The engine derives the partition from the lane, or from the
	// key itself for spread lanes, so a key is scoped to namespace and lane.)
	IdempotencyKey string
	// IdempotencyTTL defaults to DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	Now            time.Time
}

// ExecutionCreateResult reports a create.
type ExecutionCreateResult struct {
	ID ExecutionID
	// Duplicate is true when the idempotency key or the id already existed;
	// ID is then the existing execution.
	Duplicate   bool
	PublicState PublicState
}

// ExecutionCancelParams cancels an execution in any non-terminal phase. A
// worker cancels its own active execution with its fence; an operator
// (SourceOperator) cancels anything without one.
type ExecutionCancelParams struct {
	ID     ExecutionID
	Reason string
	Source Source
	Fence  Fence
	Now    time.Time
}

// ExecutionCancelResult reports a cancel.
type ExecutionCancelResult struct {
	PriorPhase LifecyclePhase
	// Replayed is true when the same caller had already cancelled it.
	Replayed bool
}

// ExecutionChangePriorityParams changes the priority of a non-terminal
// execution; an eligible one is re-ordered at once.
type ExecutionChangePriorityParams struct {
	ID       ExecutionID
	Priority int
	Now      time.Time
}

// ExecutionChangePriorityResult reports the old and new (clamped) priority.
type ExecutionChangePriorityResult struct {
	Old, New int
}

// ExecutionCompleteParams completes the caller's active execution.
type ExecutionCompleteParams struct {
	ID     ExecutionID
	Fence  Fence
	Source Source
	// Result is stored as given (binary-safe), at most MaxResultBytes.
	Result []byte
	// Next, when set, claims the worker's next execution in the same atomic
	// step, as ExecutionClaimNext would on the completed execution's
	// partition: a worker keeps its slot busy with one store call per
	// execution instead of two. It runs only when the completion succeeds
	// (including a replay).
	Next *NextClaim
	Now  time.Time
}

// NextClaim asks for the next execution within a completion. It has the
// meaning of ExecutionClaimNextParams, on the completed execution's
// partition.
type NextClaim struct {
	Lane LaneID
	// Namespace, when set, restricts the claim to executions of that
	// namespace (see ExecutionClaimNextParams.Namespace).
	Namespace        Namespace
	Capabilities     Capabilities
	LiveCapabilities Capabilities
	ScanLimit        int
	LeaseRequest
}

// ExecutionCompleteResult reports a completion.
type ExecutionCompleteResult struct {
	// Replayed is true when the same lease had already completed it.
	Replayed bool
	// Next is the outcome of Params.Next (nil when it was not asked for).
	Next *ExecutionClaimNextResult
}

// ExecutionDelayParams hands the caller's active execution back until
// DelayUntil; the same attempt resumes when it is claimed again.
type ExecutionDelayParams struct {
	ID         ExecutionID
	Fence      Fence
	Source     Source
	DelayUntil time.Time
	Now        time.Time
}

// ExecutionDelayResult reports a delay.
type ExecutionDelayResult struct {
	DelayUntil time.Time
	Replayed   bool
}

// ExecutionExpireParams expires an execution whose attempt timeout or
// execution deadline has passed. It does nothing to an execution that is not
// due (the index entry may be stale).
type ExecutionExpireParams struct {
	ID     ExecutionID
	Reason ExpireReason
	Now    time.Time
}

// Expire outcomes.
const (
	ExpireExpired         = "expired"
	ExpireRetryScheduled  = "retry_scheduled"
	ExpireNotFoundCleaned = "not_found_cleaned"
	ExpireAlreadyTerminal = "already_terminal"
	ExpireNotActive       = "not_active_cleaned"
	ExpireNotYetDue       = "not_yet_due"
)

// ExecutionExpireResult reports an expiry.
type ExecutionExpireResult struct {
	// Status is one of the Expire* outcomes. An attempt timeout with retries
	// left schedules a retry (category "timeout") instead of expiring.
	Status     string
	PriorPhase LifecyclePhase
	DelayUntil time.Time
}

// ExecutionFailParams fails the caller's current attempt.
type ExecutionFailParams struct {
	ID       ExecutionID
	Fence    Fence
	Source   Source
	Reason   string
	Category FailureCategory
	Now      time.Time
}

// Fail outcomes.
const (
	FailRetryScheduled = "retry_scheduled"
	FailTerminal       = "terminal_failed"
)

// ExecutionFailResult reports a failure.
type ExecutionFailResult struct {
	// Outcome is FailRetryScheduled or FailTerminal.
	Outcome    string
	DelayUntil time.Time
	Replayed   bool
}

// ExecutionReplayParams makes a terminal execution runnable again with a new
// attempt of type replay.
type ExecutionReplayParams struct {
	ID          ExecutionID
	Reason      string
	RequestedBy string
	Now         time.Time
}

// ExecutionReplayResult reports a replay.
type ExecutionReplayResult struct {
	PublicState PublicState
}

// ExecutionUpdateProgressParams records progress of the caller's attempt.
type ExecutionUpdateProgressParams struct {
	ID      ExecutionID
	Fence   Fence
	Percent int // 0–100
	Message string
	Now     time.Time
}

// ExecutionUpdateProgressResult is empty.
type ExecutionUpdateProgressResult struct{}

// ---- ClaimStore ----

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

// ClaimGrantIssueResult reports a grant.
type ClaimGrantIssueResult struct {
	ExpiresAt time.Time
}

// ExecutionBlockParams moves an eligible execution off the eligible index
// into the blocked index of its reason (admission: budget, quota, route,
// operator, lane state).
type ExecutionBlockParams struct {
	ID     ExecutionID
	Reason BlockingReason
	Detail string
	Now    time.Time
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

// ExecutionClaimParams consumes the caller's claim grant. The grant must
// have been issued to the claiming worker instance (LeaseRequest's
// WorkerID and WorkerInstanceID; otherwise invalid_claim_grant), and the
// claimer's Capabilities must still cover the execution's required
// capabilities (otherwise capability_mismatch).
type ExecutionClaimParams struct {
	ID ExecutionID
	// Capabilities are the claiming worker's.
	Capabilities Capabilities
	LeaseRequest
	Now time.Time
}

// ExecutionGrantAndClaimParams checks capabilities and claims in one step.
type ExecutionGrantAndClaimParams struct {
	ID           ExecutionID
	Capabilities Capabilities
	LeaseRequest
	Now time.Time
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
	// RetryCount is how many retries came before this attempt, and
	// MaxRetries the retry policy's limit: the attempt is the last one a
	// failure leaves when RetryCount == MaxRetries.
	RetryCount int
	MaxRetries int
	CreatedAt  time.Time
	// TimeoutAt is when the attempt times out (zero: no attempt timeout).
	TimeoutAt time.Time
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
	LeaseRequest
	Now time.Time
}

// ExecutionClaimNextResult reports a claim-next.
type ExecutionClaimNextResult struct {
	// Claimed is nil when nothing could be claimed.
	Claimed *ClaimResult
	// Blocked lists the executions moved to blocked:route.
	Blocked []ExecutionID
	// Skipped counts heads left for a more capable worker.
	Skipped int
}

// ExecutionUnblockParams returns a blocked execution to the eligible index
// when it is still blocked for ExpectedReason.
type ExecutionUnblockParams struct {
	ID             ExecutionID
	ExpectedReason BlockingReason
	Now            time.Time
}

// ExecutionUnblockResult is empty.
type ExecutionUnblockResult struct{}

// ---- LeaseStore ----

// LeaseRenewParams extends the caller's lease to Now + LeaseTTL.
type LeaseRenewParams struct {
	ID       ExecutionID
	Fence    Fence
	LeaseTTL time.Duration
	Now      time.Time
}

// LeaseRenewResult reports a renewal.
type LeaseRenewResult struct {
	ExpiresAt time.Time
	RenewBy   time.Time
}

// LeaseMarkExpiredParams marks an execution whose lease has run out as
// reclaimable.
type LeaseMarkExpiredParams struct {
	ID  ExecutionID
	Now time.Time
}

// Mark-expired outcomes.
const (
	MarkExpiredMarked         = "marked_expired"
	MarkExpiredNotFound       = "not_found_cleaned"
	MarkExpiredNotActive      = "not_active_cleaned"
	MarkExpiredUnowned        = "unowned_cleaned"
	MarkExpiredAlreadyExpired = "already_expired"
	MarkExpiredAlreadyRevoked = "already_revoked"
	MarkExpiredNotYet         = "not_yet_expired"
)

// LeaseMarkExpiredResult reports a mark.
type LeaseMarkExpiredResult struct {
	// Status is one of the MarkExpired* outcomes.
	Status string
}

// LeaseRevokeParams takes the lease away from its holder; the execution
// becomes reclaimable.
type LeaseRevokeParams struct {
	ID ExecutionID
	// ExpectedLeaseID, when set, must be the current lease.
	ExpectedLeaseID LeaseID
	Reason          string
	Now             time.Time
}

// Revoke outcomes.
const (
	RevokeRevoked        = "revoked"
	RevokeAlreadyRevoked = "already_revoked"
	RevokeAlreadyExpired = "already_expired"
)

// LeaseRevokeResult reports a revoke.
type LeaseRevokeResult struct {
	Status     string
	LeaseID    LeaseID
	LeaseEpoch uint64
}

// ReclaimGrantIssueParams grants one worker the right to reclaim an active
// execution whose lease expired or was revoked.
type ReclaimGrantIssueParams struct {
	ID               ExecutionID
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	Capabilities     Capabilities
	GrantTTL         time.Duration
	Now              time.Time
}

// ReclaimGrantIssueResult reports a reclaim grant.
type ReclaimGrantIssueResult struct {
	ExpiresAt time.Time
}

// ExecutionReclaimParams consumes a reclaim grant: the old attempt ends
// interrupted, a new attempt of type reclaim starts under a new lease with
// the next epoch. As for ExecutionClaimParams, the grant must have been
// issued to the claiming worker instance and its Capabilities must still
// cover the execution's required capabilities.
type ExecutionReclaimParams struct {
	ID ExecutionID
	// Capabilities are the claiming worker's.
	Capabilities Capabilities
	LeaseRequest
	Now time.Time
}

// Reclaim and recover outcomes.
const (
	ReclaimClaimed     = "claimed"
	ReclaimRequeued    = "requeued"
	ReclaimCapExceeded = "reclaim_cap_exceeded"
)

// ExecutionReclaimResult reports a reclaim.
type ExecutionReclaimResult struct {
	// Status is ReclaimClaimed or ReclaimCapExceeded (the execution then
	// failed terminally with reason "max_reclaims_exceeded").
	Status  string
	Claimed *ClaimResult
}

// ExecutionRecoverParams returns an active execution whose lease expired or
// was revoked to the eligible index, to run again as a new attempt of type
// reclaim. This is the automatic crash recovery the lease-expiry scanner
// performs.
type ExecutionRecoverParams struct {
	ID  ExecutionID
	Now time.Time
}

// ExecutionRecoverResult reports a recovery.
type ExecutionRecoverResult struct {
	// Status is ReclaimRequeued or ReclaimCapExceeded.
	Status string
}

// ---- ScanStore ----

// ExecutionPromoteDelayedParams makes a delayed execution eligible once its
// time has come, and drops stale delayed-index entries.
type ExecutionPromoteDelayedParams struct {
	ID   ExecutionID
	Lane LaneID
	Now  time.Time
}

// Promote outcomes.
const (
	PromotePromoted          = "promoted"
	PromoteNotFoundCleaned   = "not_found_cleaned"
	PromoteNotRunnableClean  = "not_runnable_cleaned"
	PromoteNotDelayedCleaned = "not_delayed_cleaned"
	PromoteNotYetDue         = "not_yet_due"
)

// ExecutionPromoteDelayedResult reports a promotion.
type ExecutionPromoteDelayedResult struct {
	Status string
}

// DueCursor is an exclusive position in a timer index: (DueAt, ID).
type DueCursor struct {
	DueAt time.Time
	ID    ExecutionID
}

// IndexScanDueParams reads the entries of one partition's timer index that
// are due at Now, in (due time, id) order, after the cursor.
type IndexScanDueParams struct {
	Partition int
	Index     IndexKind
	Now       time.Time
	After     *DueCursor
	Limit     int // 1–1000
}

// DueItem is one due entry.
type DueItem struct {
	ID    ExecutionID
	Lane  LaneID // set for the delayed index
	DueAt time.Time
}

// IndexScanDueResult reports a scan.
type IndexScanDueResult struct {
	Items []DueItem
	// More is true when due entries remain after the last item.
	More bool
	// NextDueAt is the earliest entry due after Now (zero: none), so a
	// scanner can sleep until then.
	NextDueAt time.Time
}

// PartitionDueParams asks what one partition has scheduled, so a sweep
// costs one call per partition rather than one per scanner.
type PartitionDueParams struct {
	Partition int
}

// PartitionDueResult tells when each timer index of a partition next comes
// due (the earliest entry, possibly already past; zero when the index is
// empty), whether any execution waits blocked on route, and how many
// executions the partition holds.
type PartitionDueResult struct {
	LeaseExpiry       time.Time
	AttemptTimeout    time.Time
	ExecutionDeadline time.Time
	Delayed           time.Time // earliest over every lane
	RouteBlocked      bool
	Executions        int
}

// Due returns the earliest entry of timer index k (zero: none).
func (r *PartitionDueResult) Due(k IndexKind) time.Time {
	switch k {
	case IndexLeaseExpiry:
		return r.LeaseExpiry
	case IndexAttemptTimeout:
		return r.AttemptTimeout
	case IndexExecutionDeadline:
		return r.ExecutionDeadline
	case IndexDelayed:
		return r.Delayed
	}
	return time.Time{}
}

// RouteUnblockParams returns to the eligible index up to Limit
// route-blocked executions of a partition whose required capabilities are
// within Live (the union of the live workers' capabilities). Its cost does
// not grow with the number of executions that stay blocked.
//
// Only executions of Namespace are considered, and Live must be the union
// of that namespace's live workers: a worker of one namespace never
// unblocks another namespace's execution (engine.md §1, scanner 11).
type RouteUnblockParams struct {
	Partition int
	Namespace Namespace
	Live      Capabilities
	// All unblocks regardless of capabilities (Live is ignored): the
	// fail-open mode the unblock scanner uses when the live workers'
	// capabilities cannot be read.
	All   bool
	Limit int // 1–1000
	Now   time.Time
}

// RouteUnblockResult reports the unblocked executions.
type RouteUnblockResult struct {
	Unblocked []ExecutionID
	More      bool
}

// ---- WorkerStore ----

// WorkerRegisterParams registers (or refreshes) a worker instance. A live
// registration of the same instance with another SessionID is a duplicate
// process and is refused with ErrDuplicateWorker.
type WorkerRegisterParams struct {
	Namespace        Namespace
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	// SessionID is unique per process start.
	SessionID    string
	Lanes        []LaneID
	Capabilities Capabilities
	TTL          time.Duration
	Now          time.Time
}

// Worker registration outcomes.
const (
	WorkerRegistered = "registered"
	WorkerRefreshed  = "refreshed"
)

// WorkerRegisterResult reports a registration.
type WorkerRegisterResult struct {
	Status    string
	ExpiresAt time.Time
}

// WorkerHeartbeatParams keeps a registration alive.
type WorkerHeartbeatParams struct {
	Namespace        Namespace
	WorkerInstanceID WorkerInstanceID
	SessionID        string
	TTL              time.Duration
	Now              time.Time
}

// WorkerHeartbeatResult reports a heartbeat.
type WorkerHeartbeatResult struct {
	ExpiresAt time.Time
}

// WorkerDeregisterParams removes a registration on graceful shutdown.
type WorkerDeregisterParams struct {
	Namespace        Namespace
	WorkerInstanceID WorkerInstanceID
	SessionID        string
	Now              time.Time
}

// WorkerDeregisterResult reports a removal.
type WorkerDeregisterResult struct {
	Removed bool
}

// WorkerExpireParams drops registrations that expired before Now.
type WorkerExpireParams struct {
	Namespace Namespace
	Limit     int
	Now       time.Time
}

// WorkerExpireResult lists the dropped instances.
type WorkerExpireResult struct {
	Removed []WorkerInstanceID
}

// WorkerListParams lists the live registrations of a namespace.
type WorkerListParams struct {
	Namespace Namespace
	Now       time.Time
}

// WorkerListResult lists workers in instance-id order.
type WorkerListResult struct {
	Workers []WorkerInfo
}

// LiveCapabilities returns the union of the listed workers' capabilities.
func (r *WorkerListResult) LiveCapabilities() Capabilities {
	var all []string
	for _, w := range r.Workers {
		all = append(all, w.Capabilities...)
	}
	c, _ := ParseCapabilities("Capabilities", all)
	return c
}

// ---- ReadStore ----

// ExecutionDescribeParams reads one execution.
type ExecutionDescribeParams struct {
	ID ExecutionID
}

// ExecutionListParams pages through one partition's executions in id order.
type ExecutionListParams struct {
	Partition int
	// After is an exclusive cursor (zero: from the start).
	After ExecutionID
	Limit int // 1–1000
}

// ExecutionListResult is one page.
type ExecutionListResult struct {
	IDs []ExecutionID
	// Next is the cursor for the next page; zero when this page is the last.
	Next ExecutionID
}

// ExecutionPayloadParams reads an execution's payload.
type ExecutionPayloadParams struct {
	ID ExecutionID
}

// ExecutionPayloadResult holds the payload bytes (nil when empty).
type ExecutionPayloadResult struct {
	Payload []byte
}

// ExecutionResultParams reads a completed execution's result.
type ExecutionResultParams struct {
	ID ExecutionID
}

// ExecutionResultResult holds the result bytes. A non-completed execution
// yields ErrResultNotFound.
type ExecutionResultResult struct {
	Result []byte
}

// AttemptListParams reads every attempt of an execution.
type AttemptListParams struct {
	ID ExecutionID
}

// AttemptListResult lists attempts in index order.
type AttemptListResult struct {
	Attempts []Attempt
}

// LeaseHistoryParams reads an execution's lease history.
type LeaseHistoryParams struct {
	ID ExecutionID
	// AfterSeq returns only entries with a larger sequence number.
	AfterSeq uint64
	Limit    int // 1–1000
}

// LeaseHistoryResult lists history entries, oldest first.
type LeaseHistoryResult struct {
	Events []LeaseEvent
}

// ExecutionIndexesParams asks which indexes hold an execution.
type ExecutionIndexesParams struct {
	ID ExecutionID
}

// ExecutionIndexesResult names the indexes holding the execution, sorted,
// in the spec's naming: "lane:<L>:eligible", "lease_expiry",
// "worker:<wiid>:leases", "all_executions", ...
type ExecutionIndexesResult struct {
	Indexes []string
}
