package storetest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// FillCompleted creates n executions on lane (in the lane's partition,
// as the engine places them), claims and completes each at now with
// retention keep, using workers goroutines. It returns their ids. Memory
// tests and the bench use it to measure what terminal executions cost
// and what retention gives back.
func FillCompleted(ctx context.Context, s model.Store, n, workers int, lane model.LaneID, keep model.Retention, now time.Time) ([]model.ExecutionID, error) {
	part := s.Partitions().WithDefaults().SoloPartition(lane)
	ids := make([]model.ExecutionID, n)
	uuid := func(kind byte, i int) model.UUID {
		var b [16]byte
		b[0] = kind
		binary.BigEndian.PutUint64(b[8:], uint64(i))
		return model.NewUUIDv4(b)
	}
	for i := range ids {
		ids[i] = model.NewExecutionID(part, uuid(1, i))
	}
	workers = max(workers, 1)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := completeOne(ctx, s, ids[i], lane, keep, now, uuid(2, i), uuid(3, i)); err != nil {
					errs[w] = fmt.Errorf("execution %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

func completeOne(ctx context.Context, s model.Store, id model.ExecutionID, lane model.LaneID, keep model.Retention, now time.Time, lease, attempt model.UUID) error {
	if _, err := s.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lane,
		Kind: "fill.noop", Retention: keep, Now: now}); err != nil {
		return err
	}
	c, err := s.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: model.LeaseRequest{
		WorkerID: "fill", WorkerInstanceID: "fill-1", LeaseID: model.LeaseID(lease), AttemptID: model.AttemptID(attempt), LeaseTTL: time.Minute,
	}, Now: now})
	if err != nil {
		return err
	}
	_, err = s.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: id, Fence: c.Fence(), Now: now})
	return err
}

// TrimDue does what the retention trimmer does, to the end: it walks
// every partition's retention index and deletes each entry due at now
// (model.RetentionStore, ExecutionDelete with Due), a flow member's by
// deleting its flow when that is due (model.FlowDeleter, FlowDelete with
// Due, when the store has it), and returns how many executions it
// deleted.
func TrimDue(ctx context.Context, s model.Store, now time.Time) (int, error) {
	rs, ok := s.(model.RetentionStore)
	if !ok {
		return 0, fmt.Errorf("storetest: %T does not implement model.RetentionStore", s)
	}
	fd, _ := s.(model.FlowDeleter)
	deleted := 0
	for part := range s.Partitions().WithDefaults().FlowPartitions {
		var after *model.DueCursor
		for {
			r, err := s.IndexScanDue(ctx, &model.IndexScanDueParams{Partition: part, Index: model.IndexRetention, Now: now,
				After: after, Limit: model.MaxPageSize})
			if err != nil {
				return deleted, err
			}
			for _, it := range r.Items {
				res, err := rs.ExecutionDelete(ctx, &model.ExecutionDeleteParams{ID: it.ID, Due: true, Now: now})
				if err != nil {
					return deleted, err
				}
				switch {
				case res.Outcome == model.DeleteDeleted:
					deleted++
				case res.Outcome == model.DeleteInFlow && fd != nil:
					fr, err := fd.FlowDelete(ctx, &model.FlowDeleteParams{Flow: res.Flow, Due: true, Now: now})
					if err != nil {
						return deleted, err
					}
					deleted += len(fr.Members)
				}
			}
			if !r.More {
				break
			}
			// entries left in place (a member's, without FlowDelete) are passed
			after = r.LastSeen
			if after == nil && len(r.Items) > 0 {
				last := r.Items[len(r.Items)-1]
				after = &model.DueCursor{DueAt: last.DueAt, ID: last.ID}
			}
		}
	}
	return deleted, nil
}
