package scan

import (
	"context"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Default intervals of the suspension scanners (FlowFabric's scanners 5
// and 6). Like the other timer scanners they wake at the earliest due time
// they know, so the interval is only the backstop.
const (
	DefaultSuspensionTimeoutInterval = 2 * time.Second
	DefaultWaitpointExpiryInterval   = 5 * time.Second
)

// SuspensionTimeoutStore is what the suspension-timeout scanner uses.
type SuspensionTimeoutStore interface {
	IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)
	SuspensionExpire(ctx context.Context, p *model.SuspensionExpireParams) (*model.SuspensionExpireResult, error)
	Partitions() model.PartitionConfig
}

// SuspensionTimeout applies the timeout behaviour of suspensions whose
// timeout passed (fail, cancel, expire, auto-resume or escalate).
type SuspensionTimeout struct {
	timer
	store   SuspensionTimeoutStore
	delayed Hinter
}

// HintResumes makes the scanner hint h (the delayed promoter) with the
// time an auto-resume holds an execution delayed until, so it starts when
// due. Call it before the scanner runs.
func (s *SuspensionTimeout) HintResumes(h Hinter) { s.delayed = h }

// NewSuspensionTimeout returns the suspension-timeout scanner.
func NewSuspensionTimeout(store SuspensionTimeoutStore, clock model.Clock, cfg TimerConfig) *SuspensionTimeout {
	s := &SuspensionTimeout{store: store}
	s.timer = newTimer("suspension_timeout", store.Partitions().WithDefaults().FlowPartitions, model.IndexSuspensionTimeout,
		clock, cfg, DefaultSuspensionTimeoutInterval, store.IndexScanDue)
	return s
}

// RunOnce implements Scanner.
func (s *SuspensionTimeout) RunOnce(ctx context.Context) (Result, error) {
	return s.run(ctx, func(ctx context.Context, it model.DueItem) (bool, error) {
		r, err := s.store.SuspensionExpire(ctx, &model.SuspensionExpireParams{ID: it.ID, Now: s.clock.Now()})
		if err != nil {
			return false, err
		}
		if !r.DelayUntil.IsZero() && s.delayed != nil {
			s.delayed.Hint(it.ID.Partition(), r.DelayUntil)
		}
		switch r.Outcome {
		case model.SuspensionExpireNotFoundCleaned, model.SuspensionExpireNotSuspendedCleaned, model.SuspensionExpireNotYetDue:
			return false, nil
		}
		return true, nil
	})
}

// WaitpointExpiryStore is what the pending-waitpoint expiry scanner uses.
type WaitpointExpiryStore interface {
	IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)
	WaitpointExpire(ctx context.Context, p *model.WaitpointExpireParams) (*model.WaitpointExpireResult, error)
	Partitions() model.PartitionConfig
}

// WaitpointExpiry closes pending waitpoints that no suspension bound
// before they expired.
type WaitpointExpiry struct {
	timer
	store WaitpointExpiryStore
}

// NewWaitpointExpiry returns the pending-waitpoint expiry scanner.
func NewWaitpointExpiry(store WaitpointExpiryStore, clock model.Clock, cfg TimerConfig) *WaitpointExpiry {
	s := &WaitpointExpiry{store: store}
	s.timer = newTimer("pending_waitpoint_expiry", store.Partitions().WithDefaults().FlowPartitions, model.IndexWaitpointExpiry,
		clock, cfg, DefaultWaitpointExpiryInterval, store.IndexScanDue)
	return s
}

// RunOnce implements Scanner.
func (s *WaitpointExpiry) RunOnce(ctx context.Context) (Result, error) {
	return s.run(ctx, func(ctx context.Context, it model.DueItem) (bool, error) {
		r, err := s.store.WaitpointExpire(ctx, &model.WaitpointExpireParams{ID: it.ID, Now: s.clock.Now()})
		if err != nil {
			return false, err
		}
		if !r.NextDueAt.IsZero() {
			s.Hint(it.ID.Partition(), r.NextDueAt)
		}
		return r.Closed > 0, nil
	})
}
