package flowfabric_test

import (
	"errors"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// TestRetryNow: an execution waiting for its time becomes eligible at
// once; one that is not waiting for a time is ErrNotEligible, an unknown
// one ErrNotFound, and neither changes.
func TestRetryNow(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	start := h.Clock.Now()
	r, err := h.Engine.SubmitRaw(h.Ctx, "later", nil, &flowfabric.SubmitOpts{RunAt: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := h.Engine.Describe(h.Ctx, r.ID); s.PublicState != flowfabric.PublicDelayed {
		t.Fatalf("before: %s", s.PublicState)
	}
	if err := h.Engine.RetryNow(h.Ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	s, err := h.Engine.Describe(h.Ctx, r.ID)
	if err != nil || s.PublicState != flowfabric.PublicWaiting || !s.DelayUntil.IsZero() {
		t.Fatalf("after RetryNow: %+v %v", s, err)
	}
	if err := h.Engine.RetryNow(h.Ctx, r.ID); !errors.Is(err, flowfabric.ErrNotEligible) {
		t.Fatalf("RetryNow of a waiting execution: %v", err)
	}
	if after, _ := h.Engine.Describe(h.Ctx, r.ID); !after.LastMutationAt.Equal(s.LastMutationAt) {
		t.Fatal("a refused RetryNow changed the execution")
	}
	unknown := model.NewExecutionID(r.ID.Partition(), model.UUID{1, 2, 3, 4, 5, 6, 0x47, 8, 0x89})
	if err := h.Engine.RetryNow(h.Ctx, unknown); !errors.Is(err, flowfabric.ErrNotFound) {
		t.Fatalf("RetryNow of an unknown execution: %v", err)
	}
}
