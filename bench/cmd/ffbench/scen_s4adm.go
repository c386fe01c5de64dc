package main

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// admissionBlock is what S4 blocks executions on besides routes.
type admissionBlock string

const (
	blockBudget admissionBlock = "budget"
	blockQuota  admissionBlock = "quota"
)

// admissionUnblockCost blocks n executions of one lane on an exhausted
// budget (kind budget) or on a quota bucket whose one concurrency slot is
// held (kind quota), then resets the budget or releases the slot, and
// measures one pass of the unblock scanner with its budget and quota half
// (scan.Unblock with SetAdmission, as flowfabric.New wires it).
//
// The executions are blocked as the engine's claim path blocks them: the
// store's ExecutionBlock with Reason WaitingForBudget and Budget, or
// WaitingForQuota (the claim path calls it after BudgetStatus reads an
// exhausted budget, or QuotaAdmit refuses). The claim path hints the
// partition it blocked in; the scanner then visits that partition.
func admissionUnblockCost(ctx context.Context, client valkey.Client, probe *serverProbe, n int, kind admissionBlock) (UnblockResult, error) {
	r := UnblockResult{Blocked: n}
	if err := probe.flushAll(); err != nil {
		return r, err
	}
	store, err := valkeystore.New(client, nil)
	if err != nil {
		return r, err
	}
	clock := model.NewSimClock(time.Now())
	t0 := time.Now()
	lane := model.LaneID(string(kind) + "-jobs")
	part := store.Partitions().SoloPartition(lane)
	create := &model.ExecutionCreateParams{Namespace: model.DefaultNamespace, Lane: lane, Kind: "bench"}
	block := model.ExecutionBlockParams{}
	var release func() error
	switch kind {
	case blockBudget:
		b := model.BudgetID(benchUUID())
		if _, err := store.BudgetCreate(ctx, &model.BudgetCreateParams{ID: b,
			Limits: map[string]model.BudgetLimit{"calls": {Hard: 1}}, Now: clock.Now()}); err != nil {
			return r, err
		}
		// exhaust it: usage at the hard limit
		if _, err := store.BudgetReport(ctx, &model.BudgetReportParams{ID: b, Deltas: map[string]int64{"calls": 1}, Now: clock.Now()}); err != nil {
			return r, err
		}
		create.Budgets = []model.BudgetID{b}
		block.Reason, block.Budget = model.WaitingForBudget, b
		release = func() error {
			_, err := store.BudgetReset(ctx, &model.BudgetResetParams{ID: b, Now: clock.Now()})
			return err
		}
	case blockQuota:
		q := model.QuotaID(benchUUID())
		if _, err := store.QuotaCreate(ctx, &model.QuotaCreateParams{ID: q, Concurrency: 1, Now: clock.Now()}); err != nil {
			return r, err
		}
		// hold the slot
		holder := model.NewExecutionID(part, benchUUID())
		if _, err := store.QuotaAdmit(ctx, &model.QuotaAdmitParams{ID: q, Key: "k", Execution: holder, Token: "held", Now: clock.Now()}); err != nil {
			return r, err
		}
		create.Quota, create.QuotaKey = q, "k"
		block.Reason = model.WaitingForQuota
		release = func() error {
			_, err := store.QuotaRelease(ctx, &model.QuotaReleaseParams{ID: q, Key: "k", Execution: holder, Token: "held", Now: clock.Now()})
			return err
		}
	default:
		return r, fmt.Errorf("unknown block %q", kind)
	}
	err = parallelDo(n, 32, func(int) error {
		p := *create
		p.ID = model.NewExecutionID(part, benchUUID())
		p.Now = clock.Now()
		if _, err := store.ExecutionCreate(ctx, &p); err != nil {
			return err
		}
		b := block
		b.ID, b.Now = p.ID, clock.Now()
		_, err := store.ExecutionBlock(ctx, &b)
		return err
	})
	if err != nil {
		return r, err
	}
	if err := release(); err != nil {
		return r, err
	}
	r.SetupSecs = time.Since(t0).Seconds()
	r.ServerUsedMem, _ = probe.usedMemory()
	u := scan.NewUnblock(store, clock, scan.UnblockConfig{})
	u.SetAdmission(store)
	u.HintAdmission(part, time.Time{})
	w := openWindow(probe)
	t := time.Now()
	pr, err := u.RunOnce(ctx)
	r.PassMillis = ms(time.Since(t))
	st := w.close()
	if err != nil {
		return r, err
	}
	if pr.Errors > 0 {
		return r, fmt.Errorf("the pass had %d errors", pr.Errors)
	}
	r.Partitions, r.Unblocked = pr.Partitions, pr.Acted
	r.Cmds, r.Scripts, r.ServerUsec = st.Cmds.total(), st.Cmds.scripts(), st.Cmds.scriptUsec()
	w = openWindow(probe)
	if _, err := u.RunOnce(ctx); err != nil {
		return r, err
	}
	r.SteadyCmds = w.close().Cmds.total()
	return r, nil
}
