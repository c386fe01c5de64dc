package flowfabric_test

import (
	"errors"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// A claim grant is consumed only by the worker it was issued to: a worker
// without the capabilities cannot run a gpu-only execution through a
// grant issued to a gpu worker (issue 18, defect 1).
func TestClaimGrantForeignWorkerRefused(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	g := newGate(h.Clock)
	// Neither worker polls the lane "granted": the execution only moves
	// by grant.
	wa := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "wa", Capabilities: []string{"gpu"}, Lanes: []model.LaneID{"idle"}})
	wb := h.NewWorker(&flowfabric.WorkerConfig{WorkerID: "wb", Lanes: []model.LaneID{"idle"}})
	flowfabric.AddHandler(wa, g.handler())
	flowfabric.AddHandler(wb, g.handler())
	h.StartWorker(wa)
	h.StartWorker(wb)
	id := mustSubmit(t, h, blocker{Key: "x"}, &flowfabric.SubmitOpts{Lane: "granted", RequiredCapabilities: []string{"gpu"}})
	grant, err := h.Engine.IssueGrant(h.Ctx, id, wa, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.ClaimGrant(h.Ctx, grant); !errors.Is(err, model.ErrInvalidClaimGrant) {
		t.Fatalf("wb consumed wa's grant: %v", err)
	}
	if s, _ := h.Engine.Describe(h.Ctx, id); s.PublicState != model.PublicWaiting || s.Grant == nil || s.Grant.WorkerID != "wa" {
		t.Fatalf("after the refused claim: %s, grant %+v", s.PublicState, s.Grant)
	}
	if err := wa.ClaimGrant(h.Ctx, grant); err != nil {
		t.Fatalf("wa: %v", err)
	}
	<-g.startedCh("x")
	s, _ := h.Engine.Describe(h.Ctx, id)
	if s.CurrentLease == nil || s.CurrentLease.WorkerInstanceID != wa.Config().InstanceID {
		t.Fatalf("lease %+v, want wa's instance", s.CurrentLease)
	}
	g.open("x")
	h.WaitTerminal(id)
}
