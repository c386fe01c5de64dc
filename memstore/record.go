package memstore

import (
	"maps"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// execution is the in-memory record of one execution: the exec_core hash of
// the spec (valkeystore's X:core, whose field names these are in Go case,
// valkeystore/record.go) plus its payload, result, tags, attempts and lease
// history. Times are Unix milliseconds; 0 means unset.
type execution struct {
	id        model.ExecutionID
	namespace model.Namespace // ns
	lane      model.LaneID
	kind      model.Kind
	priority  int

	lifecyclePhase   model.LifecyclePhase
	ownershipState   model.OwnershipState
	eligibilityState model.EligibilityState
	blockingReason   model.BlockingReason
	terminalOutcome  model.TerminalOutcome
	attemptState     model.AttemptState
	// hasResult says result holds a result (a completion's, possibly
	// empty); admit is admission.go's (below). Both sit here, beside the
	// one-byte state fields, so the record packs without padding.
	hasResult bool
	admit     bool

	blockingDetail string

	createdAt, lastMutationAt, lastTransitionAt, startedAt, terminalAt, delayUntil int64

	requiredCaps   model.Capabilities
	retry          model.RetryPolicy // retry_*
	retryCount     int
	maxReclaims    int
	reclaimCount   int
	maxReplays     int
	replayCount    int
	attemptTimeout int64 // ms
	deadline       int64
	timeoutAt      int64 // current attempt's timeout (the attempt_timeout score)

	totalAttempts int
	curAttempt    int                   // -1: none
	pending       *model.PendingAttempt // pending_*

	epoch          uint64
	lease          *leaseRec // lease_*
	leaseExpiredAt int64
	leaseRevokedAt int64
	revokeReason   string
	grant          *grantRec // grant_*

	progressPct int
	progressMsg string
	progressAt  int64

	failureReason      string
	failureCategory    model.FailureCategory
	cancellationReason string
	cancelledBy        string
	lastCapMismatchAt  int64

	payload []byte
	result  []byte
	tags    map[string]string
	meta    map[string]string // metadata (headers); nil when none

	attempts []model.Attempt
	// streams holds the attempt streams by attempt index (stream.go).
	streams map[int]*streamRec
	history []model.LeaseEvent
	histSeq uint64

	op *opRecord // op_*: the last replayable operation (fence.go)

	// susp is the open or last suspension; waitpoints are the
	// waitpoints the execution keeps, by creation time then id; sigSeq
	// numbers its delivered signals (wait.go).
	susp       *suspensionRec
	waitpoints []*waitpointRec
	sigSeq     uint64

	// admission (admission.go): admit (above) says the execution has
	// budgets or a quota (the one check the claim path pays for executions
	// without);
	// budgets, quota and quotaKey are its attachments; admissionToken is
	// the quota admission its lease holds; blockedBudget is the budget
	// whose blocked group it is in (while blocked on a budget).
	budgets        []model.BudgetID
	quota          model.QuotaID
	quotaKey       string
	admissionToken string
	blockedBudget  model.BudgetID

	// retention is how long the execution is kept once terminal
	// (retention_ops.go), shared by every execution with the same one
	// (Store.retentions; nil: kept for good): 8 bytes rather than 24
	// keep the record in a smaller allocation class.
	retention *model.Retention
	// idemKey is the idempotency key it was created with ("": none).
	idemKey string
}

// leaseRec is the current lease (the record's lease_* fields).
type leaseRec struct {
	id               model.LeaseID
	workerID         model.WorkerID
	workerInstanceID model.WorkerInstanceID
	acquiredAt       int64
	expiresAt        int64
	renewBy          int64
}

// grantRec is a claim or reclaim grant (the record's grant_* fields).
type grantRec struct {
	kind             model.GrantKind
	workerID         model.WorkerID
	workerInstanceID model.WorkerInstanceID
	createdAt        int64
	expiresAt        int64
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func tm(v int64) time.Time { return model.FromMillis(v) }

// snapshot builds the describe view.
func (e *execution) snapshot() *model.ExecutionSnapshot {
	s := &model.ExecutionSnapshot{
		ID: e.id, Namespace: e.namespace, Lane: e.lane, Kind: e.kind, Priority: e.priority,
		State:                    e.vector(),
		CreatedAt:                tm(e.createdAt),
		LastMutationAt:           tm(e.lastMutationAt),
		LastTransitionAt:         tm(e.lastTransitionAt),
		StartedAt:                tm(e.startedAt),
		TerminalAt:               tm(e.terminalAt),
		DelayUntil:               tm(e.delayUntil),
		RequiredCapabilities:     cloneCaps(e.requiredCaps),
		RetryPolicy:              e.retry,
		RetryCount:               e.retryCount,
		MaxReclaims:              e.maxReclaims,
		ReclaimCount:             e.reclaimCount,
		MaxReplays:               e.maxReplays,
		Retention:                e.keeps(),
		ReplayCount:              e.replayCount,
		AttemptTimeout:           time.Duration(e.attemptTimeout) * time.Millisecond,
		Deadline:                 tm(e.deadline),
		TotalAttempts:            e.totalAttempts,
		LeaseEpoch:               e.epoch,
		LeaseExpiredAt:           tm(e.leaseExpiredAt),
		LeaseRevokedAt:           tm(e.leaseRevokedAt),
		RevokeReason:             e.revokeReason,
		ProgressPercent:          e.progressPct,
		ProgressMessage:          e.progressMsg,
		ProgressUpdatedAt:        tm(e.progressAt),
		FailureReason:            e.failureReason,
		FailureCategory:          e.failureCategory,
		CancellationReason:       e.cancellationReason,
		CancelledBy:              e.cancelledBy,
		LastCapabilityMismatchAt: tm(e.lastCapMismatchAt),
		Tags:                     maps.Clone(e.tags),
		Metadata:                 maps.Clone(e.meta),
		Budgets:                  cloneBudgets(e.budgets),
		Quota:                    e.quota,
		QuotaKey:                 e.quotaKey,
		AdmissionToken:           e.admissionToken,
	}
	s.PublicState = s.State.PublicState()
	if s.Tags == nil {
		s.Tags = map[string]string{}
	}
	if a := e.currentAttempt(); a != nil {
		s.CurrentAttempt = &model.AttemptRef{ID: a.ID, Index: a.Index}
	}
	if e.pending != nil {
		p := *e.pending
		s.Pending = &p
	}
	if l := e.lease; l != nil {
		s.CurrentLease = &model.Lease{
			ID: l.id, Epoch: e.epoch, WorkerID: l.workerID, WorkerInstanceID: l.workerInstanceID,
			AcquiredAt: tm(l.acquiredAt), ExpiresAt: tm(l.expiresAt), RenewBy: tm(l.renewBy),
		}
	}
	if g := e.grant; g != nil {
		s.Grant = &model.Grant{
			Kind: g.kind, WorkerID: g.workerID, WorkerInstanceID: g.workerInstanceID,
			CreatedAt: tm(g.createdAt), ExpiresAt: tm(g.expiresAt),
		}
	}
	return s
}

func cloneCaps(c model.Capabilities) model.Capabilities {
	if len(c) == 0 {
		return nil
	}
	return append(model.Capabilities(nil), c...)
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// loadExec returns the record of id, or model.ErrNotFound.
func (s *Store) loadExec(id model.ExecutionID) (*execution, error) {
	e := s.execs[id]
	if e == nil {
		return nil, model.ErrNotFound
	}
	return e, nil
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return cloneBytes(b)
}
