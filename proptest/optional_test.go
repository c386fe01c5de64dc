package proptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// The machine calls every operation, so it refuses a store without an
// optional interface up front, naming it, rather than covering less.
func TestMachineNeedsOptionalInterfaces(t *testing.T) {
	t.Parallel()
	full := newMemstore(t)
	if _, err := newMachine(context.Background(), []model.Store{full}, Options{}); err != nil {
		t.Fatalf("memstore refused: %v", err)
	}
	type minimal struct {
		model.Store
		model.IndexInspector
	}
	_, err := newMachine(context.Background(), []model.Store{full, minimal{full, full.(model.IndexInspector)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "store 1") || !strings.Contains(err.Error(), "model.Blocker") {
		t.Fatalf("a store without model.Blocker: %v", err)
	}
	if _, err := Observe(context.Background(), struct{ model.Store }{full}, startTime, ObserveOptions{}); err != nil {
		t.Fatalf("Observe of an empty store without IndexInspector: %v", err)
	}
}

// Observe reads the attempt streams of a model.StreamStore, one per
// attempt, and leaves them nil for a store without it.
func TestObserveStreamsOptional(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	full := newMemstore(t)
	id := model.NewExecutionID(0, model.NewUUIDv4([16]byte{15: 1}))
	if _, err := full.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lanes[0],
		Kind: kinds[0], Now: startTime}); err != nil {
		t.Fatal(err)
	}
	req := model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{15: 2})),
		AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{15: 3})), LeaseTTL: time.Minute}
	c, err := full.ExecutionGrantAndClaim(ctx, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: req, Now: startTime})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.(model.StreamStore).StreamAppend(ctx, &model.StreamAppendParams{ID: id, Fence: c.Fence(), Mode: model.StreamDurable,
		Type: "log", Payload: []byte{0, 1}, Now: startTime}); err != nil {
		t.Fatal(err)
	}
	o, err := Observe(ctx, full, startTime, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x := o.Execs[id]
	if x == nil || len(x.Streams) != 1 || x.Streams[0].Read.LastSequence != 1 || len(x.Streams[0].Read.Frames) != 1 || x.Streams[0].Read.Closed {
		t.Fatalf("memstore's streams: %+v", x)
	}
	if v := o.Violations([]model.ExecutionID{id}); len(v) > 0 {
		t.Fatalf("violations: %q", v)
	}
	type noStreams struct {
		model.Store
		model.IndexInspector
	}
	o, err = Observe(ctx, noStreams{full, full.(model.IndexInspector)}, startTime, ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if x := o.Execs[id]; x == nil || x.Streams != nil {
		t.Fatalf("a store without model.StreamStore: %+v", x)
	}
}
