package proptest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Observation is what a store shows through its read methods at one instant
// (Now): every execution it lists, with its describe snapshot, index
// membership, attempts, lease history, payload, result and attempt
// streams; the listing pages; the timer entries due at Now; the live
// workers of some namespaces; and the event feeds.
// Two stores given the same operations must produce equal observations.
type Observation struct {
	Now        time.Time
	Partitions model.PartitionConfig
	// Lists holds, per partition with executions, the listing read page by
	// page with a small page size.
	Lists map[int]*ListObservation
	// Execs holds every listed execution.
	Execs map[model.ExecutionID]*ExecObservation
	// Due holds, per partition and timer index, the entries due at Now.
	Due map[DueKey]*model.IndexScanDueResult
	// Workers holds the live workers per namespace.
	Workers map[model.Namespace][]model.WorkerInfo
	// Flows holds every listed flow (flow.go); nil for a store without
	// model.FlowStore.
	Flows map[model.FlowID]*FlowObservation
	// PartitionDue holds every partition's PartitionDue answer.
	PartitionDue map[int]*model.PartitionDueResult
	// Suspended holds, per partition, SuspendedList read page by page
	// (suspend_observe.go); nil for a store without model.SuspendStore.
	Suspended map[int]*SuspendedObservation
	// Admission is what model.AdmissionStore's reads show
	// (admission_observe.go); nil for a store without it.
	Admission *AdmissionObservation
	// Feeds holds, per partition and enabled feed, what model.FeedStore's
	// reads show (feed_observe.go); nil for a store without it or without
	// feeds.
	Feeds map[FeedKey]*FeedObservation
	// FeedLen is ObserveOptions.FeedLen.
	FeedLen int
	// Lanes holds the pause state of ObserveOptions.Lanes (lane.go); nil
	// for a store without model.LaneStore.
	Lanes map[model.LaneID]model.LaneState
	// Counts holds every partition's counters by public state (counts.go);
	// nil for a store without model.CountStore.
	Counts []model.CountRow
}

// ListObservation is one partition's listing.
type ListObservation struct {
	IDs []model.ExecutionID
	// Cursors are the Next cursors of the pages, in order (the last is zero).
	Cursors []model.ExecutionID
}

// DueKey names one timer index of one partition.
type DueKey struct {
	Partition int
	Index     model.IndexKind
}

func (k DueKey) String() string { return fmt.Sprintf("%s/p%d", k.Index, k.Partition) }

// ExecObservation is everything read about one execution.
type ExecObservation struct {
	Snapshot *model.ExecutionSnapshot
	Indexes  []string
	Attempts []model.Attempt
	History  []model.LeaseEvent
	Payload  []byte
	// HasResult is false when ExecutionResult reports result_not_found.
	HasResult bool
	Result    []byte
	// Suspend is what model.SuspendStore's reads show of it
	// (SuspensionDescribe, WaitpointList); nil for a store without it.
	Suspend *SuspendObservation
	// Streams holds, by attempt index, what model.StreamStore's reads
	// show of each attempt's stream (stream_observe.go); nil for a store
	// without it.
	Streams []*StreamObservation
}

// ObserveOptions tunes Observe.
type ObserveOptions struct {
	// Namespaces whose live workers are listed.
	Namespaces []model.Namespace
	// ListPageSize is the ExecutionList page size (default 3), small so
	// that cursors are exercised.
	ListPageSize int
	// Budgets and Quotas are the budgets and quota buckets read (of a
	// model.AdmissionStore).
	Budgets []model.BudgetID
	Quotas  []model.QuotaBucket
	// FeedLen is how many events each feed of the store keeps (its
	// model.Feeds option's EffectiveLen), checked by the invariants; 0:
	// not known.
	FeedLen int
	// Lanes whose pause state is read (of a model.LaneStore).
	Lanes []model.LaneID
}

var timerIndexes = []model.IndexKind{
	model.IndexLeaseExpiry, model.IndexAttemptTimeout, model.IndexExecutionDeadline, model.IndexDelayed,
	model.IndexRetention,
}

// Observe reads everything observable from s at now. Partitions with no
// listed execution are scanned for due timers too when the store has at
// most 16 partitions (so stale entries of lost executions show up).
func Observe(ctx context.Context, s model.Store, now time.Time, opts ObserveOptions) (*Observation, error) {
	page := opts.ListPageSize
	if page <= 0 {
		page = 3
	}
	cfg := s.Partitions().WithDefaults()
	o := &Observation{
		Now:          now,
		Partitions:   cfg,
		Lists:        map[int]*ListObservation{},
		Execs:        map[model.ExecutionID]*ExecObservation{},
		Due:          map[DueKey]*model.IndexScanDueResult{},
		Workers:      map[model.Namespace][]model.WorkerInfo{},
		PartitionDue: map[int]*model.PartitionDueResult{},
		FeedLen:      opts.FeedLen,
	}
	_, suspends := s.(model.SuspendStore)
	for part := range cfg.FlowPartitions {
		lo := &ListObservation{}
		var after model.ExecutionID
		for {
			r, err := s.ExecutionList(ctx, &model.ExecutionListParams{Partition: part, After: after, Limit: page})
			if err != nil {
				return nil, fmt.Errorf("ExecutionList(p%d after %v): %w", part, after, err)
			}
			lo.IDs = append(lo.IDs, r.IDs...)
			lo.Cursors = append(lo.Cursors, r.Next)
			if r.Next.IsZero() {
				break
			}
			if !after.IsZero() && r.Next.Compare(after) <= 0 {
				return nil, fmt.Errorf("ExecutionList(p%d): cursor %v does not advance past %v", part, r.Next, after)
			}
			if len(lo.Cursors) > 100_000 {
				return nil, fmt.Errorf("ExecutionList(p%d): too many pages", part)
			}
			after = r.Next
		}
		if len(lo.IDs) > 0 {
			o.Lists[part] = lo
		}
		if len(lo.IDs) == 0 && cfg.FlowPartitions > 16 {
			continue
		}
		pd, err := s.PartitionDue(ctx, &model.PartitionDueParams{Partition: part})
		if err != nil {
			return nil, fmt.Errorf("PartitionDue(p%d): %w", part, err)
		}
		o.PartitionDue[part] = pd
		for _, idx := range scannedIndexes(suspends) {
			r, err := s.IndexScanDue(ctx, &model.IndexScanDueParams{Partition: part, Index: idx, Now: now, Limit: model.MaxPageSize})
			if err != nil {
				return nil, fmt.Errorf("IndexScanDue(p%d %s): %w", part, idx, err)
			}
			o.Due[DueKey{part, idx}] = r
		}
	}
	for _, lo := range o.Lists {
		for _, id := range lo.IDs {
			if _, dup := o.Execs[id]; dup {
				continue // reported by the invariants
			}
			x, err := observeExec(ctx, s, id)
			if err != nil {
				return nil, err
			}
			o.Execs[id] = x
		}
	}
	if err := observeSuspend(ctx, s, o); err != nil {
		return nil, err
	}
	if err := observeAdmission(ctx, s, o, opts); err != nil {
		return nil, err
	}
	if err := observeStreams(ctx, s, o); err != nil {
		return nil, err
	}
	if err := observeFlows(ctx, s, o, page); err != nil {
		return nil, err
	}
	if err := observeFeeds(ctx, s, o); err != nil {
		return nil, err
	}
	if err := observeLanes(ctx, s, o, opts); err != nil {
		return nil, err
	}
	if err := observeCounts(ctx, s, o); err != nil {
		return nil, err
	}
	for _, ns := range opts.Namespaces {
		r, err := s.WorkerList(ctx, &model.WorkerListParams{Namespace: ns, Now: now})
		if err != nil {
			return nil, fmt.Errorf("WorkerList(%s): %w", ns, err)
		}
		o.Workers[ns] = r.Workers
	}
	return o, nil
}

func observeExec(ctx context.Context, s model.Store, id model.ExecutionID) (*ExecObservation, error) {
	x := &ExecObservation{}
	var err error
	if x.Snapshot, err = s.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id}); err != nil {
		return nil, fmt.Errorf("ExecutionDescribe(%v): %w", id, err)
	}
	ii, ok := s.(model.IndexInspector)
	if !ok {
		return nil, fmt.Errorf("proptest: Observe reads indexes, and %T does not implement model.IndexInspector", s)
	}
	ir, err := ii.ExecutionIndexes(ctx, &model.ExecutionIndexesParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("ExecutionIndexes(%v): %w", id, err)
	}
	x.Indexes = ir.Indexes
	ar, err := s.AttemptList(ctx, &model.AttemptListParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("AttemptList(%v): %w", id, err)
	}
	x.Attempts = ar.Attempts
	var after uint64
	for {
		hr, err := s.LeaseHistory(ctx, &model.LeaseHistoryParams{ID: id, AfterSeq: after, Limit: model.MaxPageSize})
		if err != nil {
			return nil, fmt.Errorf("LeaseHistory(%v): %w", id, err)
		}
		x.History = append(x.History, hr.Events...)
		if len(hr.Events) < model.MaxPageSize {
			break
		}
		next := hr.Events[len(hr.Events)-1].Seq
		if next <= after {
			return nil, fmt.Errorf("LeaseHistory(%v): sequence does not advance past %d", id, after)
		}
		after = next
	}
	pr, err := s.ExecutionPayload(ctx, &model.ExecutionPayloadParams{ID: id})
	if err != nil {
		return nil, fmt.Errorf("ExecutionPayload(%v): %w", id, err)
	}
	x.Payload = pr.Payload
	rr, err := s.ExecutionResult(ctx, &model.ExecutionResultParams{ID: id})
	switch {
	case err == nil:
		x.HasResult, x.Result = true, rr.Result
	case errors.Is(err, model.ErrResultNotFound):
	default:
		return nil, fmt.Errorf("ExecutionResult(%v): %w", id, err)
	}
	return x, nil
}
