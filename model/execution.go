package model

import "time"

// Fence identifies the lease a worker holds: the lease id, its epoch and the
// attempt it runs. Stores compare all three; a worker that lost its lease
// (the execution was reclaimed or re-claimed, so the epoch moved on) is
// refused with ErrStaleLease and nothing changes. The epoch is the fencing
// token handlers may pass on to their own downstream writes.
type Fence struct {
	LeaseID    LeaseID
	LeaseEpoch uint64
	AttemptID  AttemptID
}

// IsZero reports whether no part of the fence is set.
func (f Fence) IsZero() bool { return f.LeaseID.IsZero() && f.LeaseEpoch == 0 && f.AttemptID.IsZero() }

// IsComplete reports whether every part of the fence is set.
func (f Fence) IsComplete() bool {
	return !f.LeaseID.IsZero() && f.LeaseEpoch != 0 && !f.AttemptID.IsZero()
}

// Source says who asks for an operation that a worker or an operator may
// perform.
type Source string

// Sources.
const (
	// SourceWorker: the lease holder, fenced by its lease (the zero value).
	SourceWorker Source = ""
	// SourceOperator: an operator or the engine acting without a lease; it
	// presents no fence.
	SourceOperator Source = "operator_override"
)

// CheckFence checks the source and the fence that goes with it: a worker
// must present a complete fence; an operator presents none.
func CheckFence(src Source, f Fence) error {
	switch src {
	case SourceWorker:
		if f.IsZero() {
			return &Error{Code: CodeFenceRequired, Field: "Fence"}
		}
		if !f.IsComplete() {
			return &Error{Code: CodePartialFenceTriple, Field: "Fence"}
		}
		return nil
	case SourceOperator:
		if !f.IsZero() {
			return invalidField("Fence", "not_allowed_for_operator")
		}
		return nil
	}
	return invalidField("Source", "unknown")
}

// Lease is a worker's time-limited ownership of an execution.
type Lease struct {
	ID               LeaseID
	Epoch            uint64
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	AcquiredAt       time.Time
	ExpiresAt        time.Time
	// RenewBy is when the holder should renew: two thirds into the TTL.
	RenewBy time.Time
}

// RenewDeadline is when a lease acquired (or renewed) at now with ttl should
// be renewed: ⌊ttl·2/3⌋ after now, in whole milliseconds.
func RenewDeadline(nowMs, ttlMs int64) int64 { return nowMs + ttlMs*2/3 }

// AttemptRef points at an execution's current attempt.
type AttemptRef struct {
	ID    AttemptID
	Index int
}

// Grant is a claim or reclaim grant: the right of one worker to claim one
// execution until ExpiresAt.
type Grant struct {
	Kind             GrantKind
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	CreatedAt        time.Time
	ExpiresAt        time.Time
}

// GrantKind says what a grant lets its worker do.
type GrantKind uint8

// Grant kinds.
const (
	GrantClaim GrantKind = iota + 1
	GrantReclaim
)

var grantKindNames = enumNames{"claim", "reclaim"}

func (k GrantKind) String() string { return grantKindNames.name(uint8(k)) }

// ParseGrantKind parses a grant kind name.
func ParseGrantKind(s string) (GrantKind, bool) {
	v, ok := grantKindNames.parse(s)
	return GrantKind(v), ok
}

// PendingAttempt describes the attempt a runnable execution will start when
// it is next claimed, when that attempt is not its first.
type PendingAttempt struct {
	Type AttemptType
	// Reason is the failure reason of a retry or the reason of a replay.
	Reason string
	// RequestedBy is who asked for a replay.
	RequestedBy string
	// PreviousIndex is the index of the attempt this one follows.
	PreviousIndex int
}

// ExecutionSnapshot is everything describe returns about one execution.
type ExecutionSnapshot struct {
	ID        ExecutionID
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	Priority  int

	State       StateVector
	PublicState PublicState

	CreatedAt        time.Time
	LastMutationAt   time.Time
	LastTransitionAt time.Time
	StartedAt        time.Time // first claim
	TerminalAt       time.Time
	DelayUntil       time.Time

	RequiredCapabilities Capabilities
	RetryPolicy          RetryPolicy
	RetryCount           int
	MaxReclaims          int
	ReclaimCount         int
	MaxReplays           int
	ReplayCount          int
	AttemptTimeout       time.Duration
	Deadline             time.Time
	// Retention is how long the execution is kept once terminal.
	Retention Retention

	TotalAttempts  int
	CurrentAttempt *AttemptRef
	Pending        *PendingAttempt
	LeaseEpoch     uint64
	CurrentLease   *Lease
	LeaseExpiredAt time.Time
	LeaseRevokedAt time.Time
	RevokeReason   string
	Grant          *Grant

	ProgressPercent   int
	ProgressMessage   string
	ProgressUpdatedAt time.Time

	FailureReason      string
	FailureCategory    FailureCategory
	CancellationReason string
	CancelledBy        string

	LastCapabilityMismatchAt time.Time

	// Flow is the flow the execution is a member of (zero: none).
	Flow FlowID

	Tags map[string]string
	// Metadata is the execution's metadata (headers), set at create; nil
	// when it has none.
	Metadata map[string]string

	// Budgets, Quota and QuotaKey are the execution's admission
	// attachments (see AdmissionStore); AdmissionToken is the quota
	// admission its current lease holds ("": none).
	Budgets        []BudgetID
	Quota          QuotaID
	QuotaKey       string
	AdmissionToken string
}

// Attempt is one attempt of an execution.
type Attempt struct {
	Index            int
	ID               AttemptID
	Type             AttemptType
	Status           AttemptStatus
	LeaseID          LeaseID
	LeaseEpoch       uint64
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	StartedAt        time.Time
	EndedAt          time.Time
	FailureReason    string
	FailureCategory  FailureCategory
}

// LeaseEventKind names an entry of an execution's lease history.
type LeaseEventKind string

// Lease history events.
const (
	LeaseAcquired  LeaseEventKind = "acquired"
	LeaseResumed   LeaseEventKind = "resumed"
	LeaseReleased  LeaseEventKind = "released"
	LeaseExpired   LeaseEventKind = "expired"
	LeaseRevoked   LeaseEventKind = "revoked"
	LeaseReclaimed LeaseEventKind = "reclaimed"
	LeaseRecovered LeaseEventKind = "recovered"
	LeaseCancelled LeaseEventKind = "cancelled"
	LeaseReplayed  LeaseEventKind = "replay_initiated"
)

// LeaseEvent is one entry of an execution's lease history. The history keeps
// the newest DefaultLeaseHistory entries.
type LeaseEvent struct {
	Seq              uint64
	Kind             LeaseEventKind
	LeaseID          LeaseID
	LeaseEpoch       uint64
	AttemptIndex     int
	WorkerInstanceID WorkerInstanceID
	At               time.Time
	Reason           string
}

// WorkerInfo is one registered worker instance.
type WorkerInfo struct {
	Namespace        Namespace
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	Lanes            []LaneID
	Capabilities     Capabilities
	TTL              time.Duration
	RegisteredAt     time.Time
	LastHeartbeatAt  time.Time
	ExpiresAt        time.Time
}

// IndexKind names a partition-level timer index a scanner walks.
type IndexKind uint8

// Timer indexes.
const (
	IndexLeaseExpiry IndexKind = iota + 1
	IndexAttemptTimeout
	IndexExecutionDeadline
	IndexDelayed // per lane; a scan covers every lane of the partition
	// IndexSuspensionTimeout holds each suspended execution whose
	// suspension has a timeout, scored by it (scanner 5).
	IndexSuspensionTimeout
	// IndexWaitpointExpiry holds each execution with a pending
	// waitpoint, scored by the earliest pending waitpoint's expiry
	// (scanner 6).
	IndexWaitpointExpiry
	// IndexRetention holds each terminal execution with a retention for
	// its outcome, scored by its terminal time plus that retention
	// (scanner 7, RetentionStore).
	IndexRetention
)

var indexKindNames = enumNames{
	"lease_expiry", "attempt_timeout", "execution_deadline", "delayed",
	"suspension_timeout", "pending_waitpoint_expiry", "retention",
}

func (k IndexKind) String() string { return indexKindNames.name(uint8(k)) }

// ExpireReason says why an execution is being expired.
type ExpireReason uint8

// Expire reasons.
const (
	ExpireAttemptTimeout ExpireReason = iota + 1
	ExpireExecutionDeadline
)

var expireReasonNames = enumNames{"attempt_timeout", "execution_deadline"}

func (r ExpireReason) String() string { return expireReasonNames.name(uint8(r)) }
