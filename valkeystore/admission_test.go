package valkeystore

import (
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/storetest"
)

// adm is a store's model.AdmissionStore (both stores implement it).
func adm(s model.Store) model.AdmissionStore { return s.(model.AdmissionStore) }

// TestBudgetAmountsExact: near model.MaxBudgetAmount (sums reach twice
// it) every usage, breach and ledger equals memstore's to the unit, and
// saturates at the maximum as memstore's does.
func TestBudgetAmountsExact(t *testing.T) {
	const maxA = model.MaxBudgetAmount
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{})
		var sq seq
		id := model.BudgetID(sq.uuid())
		x := sq.exec(3)
		ok(p, "create", func(s model.Store) (*model.BudgetCreateResult, error) {
			return adm(s).BudgetCreate(bg, &model.BudgetCreateParams{ID: id, Limits: map[string]model.BudgetLimit{
				"big": {Hard: maxA - 1, Soft: maxA - 3}, "odd": {Hard: 999_999_999_999_997, Soft: 1_000_000_001},
				"free": {},
			}, Now: at(0)})
		})
		report := func(n int, deltas map[string]int64, ex model.ExecutionID) {
			t.Helper()
			ok(p, fmt.Sprintf("report %v", deltas), func(s model.Store) (*model.BudgetReportResult, error) {
				return adm(s).BudgetReport(bg, &model.BudgetReportParams{ID: id, Deltas: deltas, Execution: ex,
					Now: at(time.Duration(n) * time.Second)})
			})
		}
		status := func(n int, ex model.ExecutionID) *model.BudgetStatus {
			t.Helper()
			return ok(p, "status", func(s model.Store) (*model.BudgetStatus, error) {
				return adm(s).BudgetStatus(bg, &model.BudgetStatusParams{ID: id, Execution: ex, Now: at(time.Duration(n) * time.Second)})
			})
		}
		report(1, map[string]int64{"big": maxA - 5, "odd": 999_999_999, "free": maxA}, x)
		report(2, map[string]int64{"big": 3, "odd": 3, "free": maxA - 7}, x)                   // soft breach; free saturates
		report(3, map[string]int64{"big": 2}, x)                                               // hard breach at maxA
		report(4, map[string]int64{"big": 1, "odd": 999_999_999_999_990}, model.ExecutionID{}) // hard breach on odd
		report(4, map[string]int64{"big": 1}, model.ExecutionID{})                             // at the hard limit
		report(4, map[string]int64{"odd": 999_998_999_999_995}, model.ExecutionID{})           // at the hard limit
		st := status(5, x)
		if st.Usage["big"] != maxA-1 || st.Usage["free"] != maxA || st.Exhausted != "big" || st.Spend["free"] != maxA {
			t.Fatalf("status %+v", st)
		}
		ok(p, "release", func(s model.Store) (*model.BudgetReleaseResult, error) {
			return adm(s).BudgetRelease(bg, &model.BudgetReleaseParams{ID: id, Execution: x, Now: at(6 * time.Second)})
		})
		st = status(7, x)
		if st.Usage["big"] != 1 || st.Usage["odd"] != 999_998_999_999_995 || st.Spend != nil {
			t.Fatalf("status after release %+v", st)
		}
		if u, ok := st.Usage["free"]; !ok || u != 0 {
			t.Fatalf("a usage released to 0 is not listed at 0: %+v", st.Usage)
		}
	})
}

// TestAdmissionDifferential drives both stores through the admission
// path of several lanes, namespaces and partitions (candidates, blocks,
// unblocks with bounds, limits and filters, tokens, the outbox, quota
// reconcile across execution partitions) and compares every result.
func TestAdmissionDifferential(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 4}, bothFeeds)
		var sq seq
		bud, bud2 := model.BudgetID(sq.uuid()), model.BudgetID(sq.uuid())
		q := model.QuotaID(sq.uuid())
		for _, id := range []model.BudgetID{bud, bud2} {
			ok(p, "budget", func(s model.Store) (*model.BudgetCreateResult, error) {
				return adm(s).BudgetCreate(bg, &model.BudgetCreateParams{ID: id,
					Limits: map[string]model.BudgetLimit{"calls": {Hard: 2}}, ResetInterval: time.Minute, Now: at(0)})
			})
		}
		ok(p, "quota", func(s model.Store) (*model.QuotaCreateResult, error) {
			return adm(s).QuotaCreate(bg, &model.QuotaCreateParams{ID: q, Rate: 3, Window: 10 * time.Second,
				Jitter: time.Second, Concurrency: 2, Now: at(0)})
		})
		const key = "tenant:{x} ü"
		var ids []model.ExecutionID
		for i := range 12 {
			id := sq.exec(1 + i%2)
			c := createP(id, at(time.Duration(i)*time.Millisecond))
			if i%3 == 1 {
				c.Lane = lane2
			}
			if i%4 == 3 {
				c.Namespace = "ns-b"
			}
			c.Tags = map[string]string{"app.tenant": []string{"t1", "t2"}[i%2]}
			switch i % 3 {
			case 0:
				c.Budgets = []model.BudgetID{bud, bud2}
			case 1:
				c.Quota, c.QuotaKey = q, key
			default:
				c.Budgets, c.Quota = []model.BudgetID{bud2}, q
			}
			create(p, c)
			ids = append(ids, id)
		}
		for part := 1; part <= 2; part++ {
			for _, l := range []model.LaneID{lane, lane2} {
				for _, n := range []model.Namespace{ns, "ns-b"} {
					req := sq.req("wi1", ttl)
					_, _ = do(p, "claim next", func(s model.Store) (*model.ExecutionClaimNextResult, error) {
						return s.ExecutionClaimNext(bg, &model.ExecutionClaimNextParams{Partition: part, Lane: l, Namespace: n,
							ScanLimit: 10, AdmissionGrantTTL: 2 * time.Second, LeaseRequest: req, Now: at(time.Second)})
					})
				}
			}
		}
		// block every other on a budget or its quota, in several groups
		for i, id := range ids {
			bp := &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForQuota, Now: at(2*time.Second + time.Duration(i))}
			if i%3 == 0 {
				bp.Reason, bp.Budget = model.WaitingForBudget, []model.BudgetID{bud, bud2}[i%2]
			}
			_, _ = do(p, "block", func(s model.Store) (*model.ExecutionBlockResult, error) {
				return s.(model.Blocker).ExecutionBlock(bg, bp)
			})
		}
		for part := 1; part <= 2; part++ {
			ok(p, "groups", func(s model.Store) (*model.AdmissionBlockedResult, error) {
				return adm(s).AdmissionBlocked(bg, &model.AdmissionBlockedParams{Partition: part, Limit: 2})
			})
			ok(p, "due", func(s model.Store) (*model.PartitionDueResult, error) {
				return s.PartitionDue(bg, &model.PartitionDueParams{Partition: part})
			})
		}
		// unblock in steps: a tag filter, a bucket bound, a small limit
		for step, f := range []model.ScannerFilter{{TagKey: "app.tenant", TagValue: "t2"}, {Namespace: "ns-b"}, {}, {}} {
			for part := 1; part <= 2; part++ {
				ok(p, "unblock", func(s model.Store) (*model.AdmissionUnblockResult, error) {
					return adm(s).AdmissionUnblock(bg, &model.AdmissionUnblockParams{Partition: part,
						Budgets: []model.BudgetID{bud2, bud, bud2},
						Quotas:  []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q}, Max: 1}, {QuotaBucket: model.QuotaBucket{ID: q, Key: key}, Max: step % 2}},
						Filter:  f, Limit: 1 + step, Now: at(3*time.Second + time.Duration(step))})
				})
				ok(p, "groups", func(s model.Store) (*model.AdmissionBlockedResult, error) {
					return adm(s).AdmissionBlocked(bg, &model.AdmissionBlockedParams{Partition: part, Limit: 10})
				})
			}
		}
		// admit and claim what is eligible; end the leases several ways
		var claims []*model.ClaimResult
		for i, id := range ids {
			if i%3 != 0 {
				ra := ok(p, "admit", func(s model.Store) (*model.QuotaAdmitResult, error) {
					k := key
					if i%3 == 2 {
						k = ""
					}
					return adm(s).QuotaAdmit(bg, &model.QuotaAdmitParams{ID: q, Key: k, Execution: id,
						Token: fmt.Sprintf("tok-%d", i), Jitter: 3 * time.Second, Now: at(4 * time.Second)})
				})
				if ra.Outcome != model.QuotaAdmitted {
					continue
				}
			}
			req := sq.req("wi2", ttl)
			r, err := do(p, "grant and claim", func(s model.Store) (*model.ClaimResult, error) {
				return s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id,
					AdmissionToken: fmt.Sprintf("tok-%d", i), LeaseRequest: req, Now: at(5 * time.Second)})
			})
			if err == nil {
				claims = append(claims, r)
			}
		}
		for i, c := range claims {
			switch i % 3 {
			case 0:
				ok(p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) {
					return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: c.ID, Fence: c.Fence(), Now: at(6 * time.Second)})
				})
			case 1:
				ok(p, "fail", func(s model.Store) (*model.ExecutionFailResult, error) {
					return s.ExecutionFail(bg, &model.ExecutionFailParams{ID: c.ID, Fence: c.Fence(), Reason: "x", Now: at(6 * time.Second)})
				})
			default:
				ok(p, "revoke", func(s model.Store) (*model.LeaseRevokeResult, error) {
					return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: c.ID, Reason: "r", Now: at(6 * time.Second)})
				})
			}
		}
		for part := 1; part <= 2; part++ {
			pend := ok(p, "pending", func(s model.Store) (*model.QuotaReleasePendingResult, error) {
				return adm(s).QuotaReleasePending(bg, &model.QuotaReleasePendingParams{Partition: part, Limit: 10})
			})
			if len(pend.Items) > 0 {
				ok(p, "ack", func(s model.Store) (*model.QuotaReleaseAckResult, error) {
					return adm(s).QuotaReleaseAck(bg, &model.QuotaReleaseAckParams{Partition: part, Items: pend.Items[:1]})
				})
			}
			ok(p, "due", func(s model.Store) (*model.PartitionDueResult, error) {
				return s.PartitionDue(bg, &model.PartitionDueParams{Partition: part})
			})
		}
		for _, k := range []string{key, ""} {
			ok(p, "quota status", func(s model.Store) (*model.QuotaStatus, error) {
				return adm(s).QuotaStatus(bg, &model.QuotaStatusParams{ID: q, Key: k, Now: at(7 * time.Second)})
			})
		}
		qp := model.PartitionConfig{}.QuotaPartition(q)
		for _, now := range []time.Duration{8 * time.Second, 20 * time.Second} {
			ok(p, "quota reconcile", func(s model.Store) (*model.QuotaReconcileResult, error) {
				return adm(s).QuotaReconcile(bg, &model.QuotaReconcileParams{Partition: qp, StaleBefore: at(now),
					Limit: 2, Now: at(now)})
			})
		}
		bp := model.PartitionConfig{}.BudgetPartition(bud)
		ok(p, "reset due", func(s model.Store) (*model.BudgetResetDueResult, error) {
			return adm(s).BudgetResetDue(bg, &model.BudgetResetDueParams{Partition: bp, Limit: 5, Now: at(3 * time.Minute)})
		})
	})
}

// TestAdmissionSingleClientMiniredis runs the conformance suite's
// Admission group on miniredis through a single-node client. valkey-go's
// default client treats miniredis as a one-node cluster (it answers
// CLUSTER SLOTS), so the other miniredis runs take the grant path; this
// one admits inline, so the inline Lua (lib/claim.lua inline_admit) also
// runs under miniredis's interpreter.
func TestAdmissionSingleClientMiniredis(t *testing.T) {
	storetest.ExerciseAdmission(t, storetest.Interpreted(func(t *testing.T) model.Store {
		m := miniredis.RunT(t)
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		s := newStoreWith(t, c, nil)
		if !s.InlineAdmission() {
			t.Fatal("a single-node client's store does not admit inline")
		}
		return s
	}))
}
