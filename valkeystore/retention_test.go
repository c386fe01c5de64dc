package valkeystore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// TestDeleteLeavesNoKey: an execution that used everything an execution
// can own (payload, tags, two attempts, stream frames, a waitpoint, a
// suspension and a signal, a result, lease history, an idempotency key)
// leaves no key and no entry in any sorted set, hash or stream of its
// store once deleted. (Keys of the partition, not of the execution,
// remain.) The cluster backend is left out: SCAN walks one node.
func TestDeleteLeavesNoKey(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			s := newStore(t, b, nil)
			ctx := context.Background()
			now := time.UnixMilli(1_700_000_000_000)
			at := func(d time.Duration) time.Time { return now.Add(d) }
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			id := model.NewExecutionID(3, model.NewUUIDv4([16]byte{1, 2, 3}))
			seq := byte(0)
			fresh := func() model.UUID { seq++; return model.NewUUIDv4([16]byte{9, seq}) }
			claim := func(when time.Time) model.Fence {
				t.Helper()
				r, err := s.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: model.LeaseRequest{
					WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(fresh()), AttemptID: model.AttemptID(fresh()), LeaseTTL: time.Minute,
				}, Now: when})
				must(err)
				return r.Fence()
			}
			_, err := s.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: "ns", Lane: "l", Kind: "k.v",
				Payload: []byte("payload"), Tags: map[string]string{"app.k": "v"}, IdempotencyKey: "key-1",
				RetryPolicy: model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed}, Retention: model.Retention{Completed: time.Hour},
				Deadline: at(24 * time.Hour), Now: at(0)})
			must(err)
			f := claim(at(time.Second))
			_, err = s.StreamAppend(ctx, &model.StreamAppendParams{ID: id, Fence: f, Mode: model.StreamDurable, Type: "t", Payload: []byte("x"), Now: at(time.Second)})
			must(err)
			fr, err := s.ExecutionFail(ctx, &model.ExecutionFailParams{ID: id, Fence: f, Reason: "r", Category: model.FailureTransient, Now: at(2 * time.Second)})
			must(err)
			_, err = s.ExecutionPromoteDelayed(ctx, &model.ExecutionPromoteDelayedParams{ID: id, Lane: "l", Now: fr.DelayUntil})
			must(err)
			t0 := fr.DelayUntil
			f = claim(t0)
			_, err = s.StreamAppend(ctx, &model.StreamAppendParams{ID: id, Fence: f, Mode: model.StreamSummary, Type: "t", Payload: []byte(`{"a":1}`),
				Summary: &model.SummaryUpdate{Document: []byte(`{"a":1}`)}, Now: t0})
			must(err)
			spare := model.WaitpointID(fresh())
			_, err = s.WaitpointCreate(ctx, &model.WaitpointCreateParams{ID: id, Fence: f, Waitpoint: spare, ExpiresAt: t0.Add(time.Hour), Now: t0})
			must(err)
			wp := model.WaitpointID(fresh())
			sr, err := s.ExecutionSuspend(ctx, &model.ExecutionSuspendParams{ID: id, Fence: f, Suspension: model.SuspensionID(fresh()), Waitpoint: wp,
				Reason: model.SuspendForSignal, Condition: model.ResumeCondition{Kind: model.CondSignal, Name: "go", Waitpoint: wp}, Now: t0})
			must(err)
			_, err = s.SignalDeliver(ctx, &model.SignalDeliverParams{Execution: id, Waitpoint: wp, WaitpointCreatedAt: sr.CreatedAt, Signal: model.SignalID(fresh()),
				Name: "go", Source: "test", Payload: []byte("sig"), IdempotencyKey: "sig-1", Now: t0.Add(time.Second)})
			must(err)
			f = claim(t0.Add(2 * time.Second))
			_, err = s.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: id, Fence: f, Result: []byte("done"), Now: t0.Add(3 * time.Second)})
			must(err)

			owned := s.scanKeys(t, id.UUID().String())
			if len(owned) < 10 {
				t.Fatalf("the execution owns only %d keys before the delete: %q", len(owned), owned)
			}
			res, err := s.ExecutionDelete(ctx, &model.ExecutionDeleteParams{ID: id, Now: t0.Add(4 * time.Second)})
			must(err)
			if res.Outcome != model.DeleteDeleted {
				t.Fatalf("delete: %v", res.Outcome)
			}
			if left := s.scanKeys(t, id.UUID().String()); len(left) != 0 {
				t.Fatalf("keys left: %q", left)
			}
			// the waitpoints' keys carry their own ids
			for _, w := range []model.WaitpointID{spare, wp} {
				if left := s.scanKeys(t, model.UUID(w).String()); len(left) != 0 {
					t.Fatalf("waitpoint keys left: %q", left)
				}
			}
			// and no sorted set, hash or stream of the store mentions it
			for _, k := range s.scanKeys(t, "") {
				typ, err := s.client.Do(ctx, s.client.B().Type().Key(k).Build()).ToString()
				must(err)
				var found bool
				switch typ {
				case "zset":
					_, err := s.client.Do(ctx, s.client.B().Zscore().Key(k).Member(id.String()).Build()).ToFloat64()
					found = err == nil
				case "hash":
					all, err := s.client.Do(ctx, s.client.B().Hgetall().Key(k).Build()).AsStrMap()
					must(err)
					for f, v := range all {
						found = found || strings.Contains(f, id.UUID().String()) || strings.Contains(v, id.UUID().String())
					}
				}
				if found {
					t.Errorf("%s (%s) still holds %v", k, typ, id)
				}
			}
		})
	}
}

// scanKeys returns the keys of s (its prefix) whose name contains sub.
func (s *Store) scanKeys(t *testing.T, sub string) []string {
	t.Helper()
	var out []string
	var cursor uint64
	for {
		e, err := s.client.Do(context.Background(), s.client.B().Scan().Cursor(cursor).Match(s.keys.prefix+":*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range e.Elements {
			if strings.Contains(k, sub) {
				out = append(out, k)
			}
		}
		if e.Cursor == 0 {
			return out
		}
		cursor = e.Cursor
	}
}
