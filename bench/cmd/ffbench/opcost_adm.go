package main

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// admOpCosts measures, on a fresh valkeystore, the server cost of each
// store call a job with a budget and a quota makes on its way through the
// claim path (S10), on both of its paths: inline (what the drain does
// once the engine has admitted one job to the budget and quota: the
// claim-next admits and claims in its step) and the grant path (the first
// job, a cluster, a refusal: the claim-next grants the head, the engine
// reads the budget, admits to the quota and claims the grant). One job at
// a time, each call between two INFO commandstats reads, summed per call
// over n jobs of each path. Server time only (client CPU is not split
// per call here).
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
	inline := &model.InlineAdmission{Budgets: []model.BudgetID{b}, Quotas: []model.QuotaID{q}}
	lane := model.LaneID("adm")
	part := store.Partitions().SoloPartition(lane)
	payload := []byte(payload4K)
	type step struct {
		name string
		f    func() error
	}
	// one job's calls on one path, in the claim path's order
	job := func(i int, viaGrant bool) []step {
		id := model.NewExecutionID(part, benchUUID())
		lr := model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(benchUUID()),
			AttemptID: model.AttemptID(benchUUID()), LeaseTTL: time.Minute}
		token := lr.LeaseID.String()
		var cand *model.AdmissionCandidate
		var claim *model.ClaimResult
		create := step{"ExecutionCreate (budget + quota, 4 KiB)", func() error {
			_, err := store.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: model.DefaultNamespace, Lane: lane,
				Kind: "bench", Payload: payload, Budgets: []model.BudgetID{b}, Quota: q, QuotaKey: "k", Now: now()})
			return err
		}}
		end := []step{
			{"ExecutionComplete (queues the quota release)", func() error {
				_, err := store.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: id, Fence: claim.Fence(), Now: now()})
				return err
			}},
			{"QuotaRelease", func() error {
				_, err := store.QuotaRelease(ctx, &model.QuotaReleaseParams{ID: q, Key: "k", Execution: id, Token: token, Now: now()})
				return err
			}},
		}
		if !viaGrant {
			return append([]step{create, {"ExecutionClaimNext (admits inline, claims)", func() error {
				r, err := store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{Partition: part, Lane: lane, ScanLimit: 32,
					Inline: inline, LeaseRequest: lr, Now: now()})
				if err == nil && (r.Claimed == nil || r.Claimed.ID != id) {
					err = fmt.Errorf("job %d: not claimed inline (admit %v)", i, r.Admit != nil)
				}
				if err == nil {
					claim = r.Claimed
				}
				return err
			}}}, end...)
		}
		return append([]step{create,
			{"ExecutionClaimNext (grants the head)", func() error {
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
			}},
			{"BudgetStatus", func() error {
				st, err := store.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: now()})
				if err == nil && st.Exhausted != "" {
					err = fmt.Errorf("budget exhausted on %s", st.Exhausted)
				}
				return err
			}},
			{"QuotaAdmit", func() error {
				_, err := store.QuotaAdmit(ctx, &model.QuotaAdmitParams{ID: q, Key: "k", Execution: cand.ID, Token: token, Now: now()})
				return err
			}},
			{"ExecutionClaim (admission token)", func() error {
				c, err := store.ExecutionClaim(ctx, &model.ExecutionClaimParams{ID: cand.ID, AdmissionToken: token, LeaseRequest: lr, Now: now()})
				claim = c
				return err
			}},
		}, end...)
	}
	var out []OpCost
	for _, viaGrant := range []bool{false, true} {
		path := map[bool]string{false: "inline", true: "grant"}[viaGrant]
		// load every script first, unmeasured
		for _, st := range job(-1, viaGrant) {
			if err := st.f(); err != nil {
				return nil, fmt.Errorf("%s warm-up: %s: %w", path, st.name, err)
			}
		}
		var names []string
		var sums []cmdStats
		for i := range n {
			for k, st := range job(i, viaGrant) {
				if k == len(sums) {
					names, sums = append(names, st.name), append(sums, cmdStats{})
				}
				before, err := probe.commandStats()
				if err != nil {
					return nil, err
				}
				if err := st.f(); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", path, st.name, err)
				}
				after, err := probe.commandStats()
				if err != nil {
					return nil, err
				}
				sums[k] = sums[k].add(after.sub(before))
			}
		}
		fn := float64(n)
		for k, name := range names {
			st := sums[k]
			oc := OpCost{Op: name, N: n, Path: path, CmdsPerOp: float64(st.total()) / fn, ScriptUsec: float64(st.scriptUsec()) / fn,
				InnerUsec: float64(st.nonScriptUsec()) / fn, Top: st.top(6, fn)}
			oc.LuaUsec = oc.ScriptUsec - oc.InnerUsec
			out = append(out, oc)
		}
	}
	return out, nil
}
