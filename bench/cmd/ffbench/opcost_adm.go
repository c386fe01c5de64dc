package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// admOpCosts measures, on a fresh valkeystore, the server cost of each
// store call a job with a budget and a quota makes on its way through the
// claim path (S10): one job at a time, each call between two INFO
// commandstats reads, summed per call over n jobs. Server time only
// (client CPU is not split per call here).
func admOpCosts(ctx context.Context, addrs []string, n int) ([]OpCost, error) {
	probe := &serverProbe{addrs: addrs}
	if err := probe.flushAll(); err != nil {
		return nil, err
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	store, err := valkeystore.New(client, nil)
	if err != nil {
		return nil, err
	}
	now := time.Now
	b := model.BudgetID(benchUUID())
	if _, err := store.BudgetCreate(ctx, &model.BudgetCreateParams{ID: b,
		Limits: map[string]model.BudgetLimit{"tokens": {Hard: model.MaxBudgetAmount}}, Now: now()}); err != nil {
		return nil, err
	}
	q := model.QuotaID(benchUUID())
	if _, err := store.QuotaCreate(ctx, &model.QuotaCreateParams{ID: q, Rate: s10QuotaRate, Window: time.Second,
		Concurrency: s10QuotaConcurrency, Now: now()}); err != nil {
		return nil, err
	}
	lane := model.LaneID("adm")
	part := store.Partitions().SoloPartition(lane)
	payload := []byte(payload4K)
	names := []string{"ExecutionCreate (budget + quota, 4 KiB)", "ExecutionClaimNext (grants the head)", "BudgetStatus",
		"QuotaAdmit", "ExecutionClaim (admission token)", "ExecutionComplete (queues the quota release)", "QuotaRelease"}
	sums := make([]cmdStats, len(names))
	for i := range sums {
		sums[i] = cmdStats{}
	}
	// one job's calls, in the claim path's order; step k is sums[k]
	job := func(i int, step func(k int, f func() error) error) error {
		id := model.NewExecutionID(part, benchUUID())
		lr := model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(benchUUID()),
			AttemptID: model.AttemptID(benchUUID()), LeaseTTL: time.Minute}
		token := "t" + strconv.Itoa(i)
		var cand *model.AdmissionCandidate
		var claim *model.ClaimResult
		steps := []func() error{
			func() error {
				_, err := store.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lane,
					Kind: "bench", Payload: payload, Budgets: []model.BudgetID{b}, Quota: q, QuotaKey: "k", Now: now()})
				return err
			},
			func() error {
				r, err := store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{Partition: part, Lane: lane, ScanLimit: 32,
					LeaseRequest: lr, Now: now()})
				if err != nil {
					return err
				}
				if r.Admit == nil || r.Admit.ID != id {
					return fmt.Errorf("job %d: no admission candidate (claimed %v)", i, r.Claimed != nil)
				}
				cand = r.Admit
				return nil
			},
			func() error {
				st, err := store.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: now()})
				if err == nil && st.Exhausted != "" {
					err = fmt.Errorf("budget exhausted on %s", st.Exhausted)
				}
				return err
			},
			func() error {
				_, err := store.QuotaAdmit(ctx, &model.QuotaAdmitParams{ID: q, Key: "k", Execution: cand.ID, Token: token, Now: now()})
				return err
			},
			func() error {
				c, err := store.ExecutionClaim(ctx, &model.ExecutionClaimParams{ID: cand.ID, AdmissionToken: token, LeaseRequest: lr, Now: now()})
				claim = c
				return err
			},
			func() error {
				_, err := store.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: id, Fence: claim.Fence(), Now: now()})
				return err
			},
			func() error {
				_, err := store.QuotaRelease(ctx, &model.QuotaReleaseParams{ID: q, Key: "k", Execution: id, Token: token, Now: now()})
				return err
			},
		}
		for k, f := range steps {
			if err := step(k, f); err != nil {
				return fmt.Errorf("%s: %w", names[k], err)
			}
		}
		return nil
	}
	// load every script first, unmeasured
	if err := job(-1, func(_ int, f func() error) error { return f() }); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	for i := range n {
		err := job(i, func(k int, f func() error) error {
			before, err := probe.commandStats()
			if err != nil {
				return err
			}
			if err := f(); err != nil {
				return err
			}
			after, err := probe.commandStats()
			if err != nil {
				return err
			}
			sums[k] = sums[k].add(after.sub(before))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []OpCost
	fn := float64(n)
	for k, name := range names {
		st := sums[k]
		oc := OpCost{Op: name, N: n, CmdsPerOp: float64(st.total()) / fn, ScriptUsec: float64(st.scriptUsec()) / fn,
			InnerUsec: float64(st.nonScriptUsec()) / fn, Top: st.top(6, fn)}
		oc.LuaUsec = oc.ScriptUsec - oc.InnerUsec
		out = append(out, oc)
	}
	return out, nil
}
