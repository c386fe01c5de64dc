package valkeystore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// TestDeleteLeavesNoKey: an execution that used everything an execution
// can own (payload, tags, metadata, two attempts, stream frames, a waitpoint, a
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
				Payload: []byte("payload"), Tags: map[string]string{"app.k": "v"}, Metadata: map[string]string{"traceparent": "x"}, IdempotencyKey: "key-1",
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
			s.wantUnmentioned(t, id.String(), id.UUID().String())
		})
	}
}

// wantUnmentioned fails when a sorted set of s has the member zmember, or
// a hash has a field or value containing sub.
func (s *Store) wantUnmentioned(t *testing.T, zmember, sub string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range s.scanKeys(t, "") {
		typ, err := s.client.Do(ctx, s.client.B().Type().Key(k).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		switch typ {
		case "zset":
			_, err := s.client.Do(ctx, s.client.B().Zscore().Key(k).Member(zmember).Build()).ToFloat64()
			found = err == nil
		case "hash":
			all, err := s.client.Do(ctx, s.client.B().Hgetall().Key(k).Build()).AsStrMap()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range all {
				found = found || strings.Contains(f, sub) || strings.Contains(v, sub)
			}
		}
		if found {
			t.Errorf("%s (%s) still holds %s", k, typ, zmember)
		}
	}
}

// TestFlowDeleteLeavesNoKey: a finished flow with tags, an AnyOf group
// and edges, whose members used payloads, tags, attempts, results and
// lease history, leaves no key of the flow or of a member, and no entry
// naming them in any sorted set or hash, once FlowDelete deleted it.
func TestFlowDeleteLeavesNoKey(t *testing.T) {
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
			seq := byte(0)
			fresh := func() model.UUID { seq++; return model.NewUUIDv4([16]byte{9, seq}) }
			f := model.FlowID(model.NewUUIDv4([16]byte{4, 4}))
			part := s.Partitions().FlowPartition(f)
			_, err := s.FlowCreate(ctx, &model.FlowCreateParams{Flow: f, Tags: map[string]string{"app.k": "v"}, Now: at(0)})
			must(err)
			var ids []model.ExecutionID
			for i := range 3 {
				id := model.NewExecutionID(part, fresh())
				_, err := s.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: "ns", Lane: "l", Kind: "k.v",
					Payload: []byte("payload"), Tags: map[string]string{"app.k": "v"}, IdempotencyKey: "key-" + string(rune('a'+i)),
					Retention: model.Retention{Completed: time.Hour}, Deadline: at(24 * time.Hour), Now: at(0)})
				must(err)
				_, err = s.FlowAddMember(ctx, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: at(0)})
				must(err)
				ids = append(ids, id)
			}
			_, err = s.EdgeGroupSet(ctx, &model.EdgeGroupSetParams{Flow: f, Downstream: ids[2],
				Policy: model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsLetRun}, Now: at(0)})
			must(err)
			for i, up := range ids[:2] {
				_, err = s.EdgeStage(ctx, &model.EdgeStageParams{Flow: f, Edge: model.EdgeID(fresh()), Upstream: up, Downstream: ids[2],
					ExpectedGraphRevision: uint64(3 + i), PassResult: true, Now: at(0)})
				must(err)
			}
			_, err = s.FlowSeal(ctx, &model.FlowSealParams{Flow: f, Now: at(time.Second)})
			must(err)
			run := func(id model.ExecutionID, when time.Time) {
				t.Helper()
				r, err := s.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: model.LeaseRequest{
					WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(fresh()), AttemptID: model.AttemptID(fresh()), LeaseTTL: time.Minute,
				}, Now: when})
				must(err)
				_, err = s.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Result: []byte("done"), Now: when.Add(time.Second)})
				must(err)
			}
			run(ids[0], at(2*time.Second))
			run(ids[2], at(4*time.Second))
			run(ids[1], at(6*time.Second))

			if owned := s.scanKeys(t, f.String()); len(owned) < 8 {
				t.Fatalf("the flow owns only %d keys before the delete: %q", len(owned), owned)
			}
			// the scanner's way: a member's due entry names the flow, which goes
			r, err := s.ExecutionDelete(ctx, &model.ExecutionDeleteParams{ID: ids[0], Due: true, Now: at(2 * time.Hour)})
			must(err)
			if r.Outcome != model.DeleteInFlow || r.Flow != f {
				t.Fatalf("due delete of a member: %+v", r)
			}
			res, err := s.FlowDelete(ctx, &model.FlowDeleteParams{Flow: f, Due: true, Now: at(2 * time.Hour)})
			must(err)
			if res.Outcome != model.DeleteDeleted || len(res.Members) != 3 {
				t.Fatalf("flow delete: %+v", res)
			}
			if left := s.scanKeys(t, f.String()); len(left) != 0 {
				t.Fatalf("flow keys left: %q", left)
			}
			s.wantUnmentioned(t, f.String(), f.String())
			for _, id := range ids {
				if left := s.scanKeys(t, id.UUID().String()); len(left) != 0 {
					t.Fatalf("keys of %v left: %q", id, left)
				}
				s.wantUnmentioned(t, id.String(), id.UUID().String())
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

// TestRetentionReturnsServerMemory: on a server of its own, 20,000
// completed executions (5,000 under the race detector) grow used_memory;
// once their retention ran out and the trimmer deleted them, used_memory
// comes back within 5 % of what it was before the fill. The server shrinks
// its key table in its periodic task, so the test reads INFO until it has
// (at most 20 s).
func TestRetentionReturnsServerMemory(t *testing.T) {
	n := 20_000
	if raceEnabled {
		n = 5_000
	}
	srv := redisserver.Start(t, nil)
	c := newClient(t, srv.Addr())
	s := newStoreWith(t, c, nil)
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	keep := model.Retention{Completed: time.Hour}
	if _, err := storetest.FillCompleted(ctx, s, 1, 1, "mem", keep, now); err != nil {
		t.Fatal(err)
	}
	if d, err := storetest.TrimDue(ctx, s, now.Add(time.Hour)); err != nil || d != 1 {
		t.Fatalf("warm-up trim: %d %v", d, err)
	}
	base := usedMemory(t, c)
	if _, err := storetest.FillCompleted(ctx, s, n, 8, "mem", keep, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	full := usedMemory(t, c)
	if d, err := storetest.TrimDue(ctx, s, now.Add(time.Hour+time.Second)); err != nil || d != n {
		t.Fatalf("trim deleted %d of %d: %v", d, n, err)
	}
	limit := base + base/20
	after := usedMemory(t, c)
	for start := time.Now(); after > limit && time.Since(start) < 20*time.Second; {
		after = usedMemory(t, c)
	}
	t.Logf("used_memory: %d B before, %d B with %d completed executions (%d B each), %d B after retention",
		base, full, n, (full-base)/int64(n), after)
	if full < base+int64(n)*200 {
		t.Fatalf("the fill took only %d B: the measurement is not measuring", full-base)
	}
	if after > limit {
		t.Fatalf("used_memory after retention %d B, more than 5 %% above the %d B before the fill", after, base)
	}
}
