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

// Misuse of the worker API returns a coded *flowfabric.Error, never a
// panic or a plain error (issue 18, defect 10).
func TestWorkerMisuseTypedErrors(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	id := mustSubmit(t, h, greet{Name: "x"}, nil)
	wantCoded := func(what string, err error, target error) {
		t.Helper()
		var fe *flowfabric.Error
		if !errors.As(err, &fe) || !errors.Is(err, target) {
			t.Fatalf("%s: %v (%T), want a *flowfabric.Error matching %v", what, err, err, target)
		}
	}
	_, err := h.Engine.IssueGrant(h.Ctx, id, nil, time.Second)
	wantCoded("IssueGrant(nil worker)", err, flowfabric.ErrValidation)

	w := h.NewWorker(nil)
	wantCoded("Start without handlers", w.Start(h.Ctx), flowfabric.ErrWorkerHasNoHandlers)
	if err := flowfabric.AddHandlerSafe(w, greetHandler()); err != nil {
		t.Fatal(err)
	}
	wantCoded("duplicate AddHandlerSafe", flowfabric.AddHandlerSafe(w, greetHandler()), flowfabric.ErrHandlerAlreadyRegistered)
	h.StartWorker(w)
	wantCoded("late AddHandlerSafe", flowfabric.AddHandlerSafe(w, flowfabric.HandlerFunc[blocker](newGate(h.Clock).handler())), flowfabric.ErrWorkerAlreadyStarted)
	wantCoded("second Start", w.Start(h.Ctx), flowfabric.ErrWorkerAlreadyStarted)
	wantCoded("ClaimGrant(nil)", w.ClaimGrant(h.Ctx, nil), flowfabric.ErrValidation)
	h.WaitTerminal(id)
}
