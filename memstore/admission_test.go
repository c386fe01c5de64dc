package memstore

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Focused tests of memstore's AdmissionStore internals the conformance
// suite (storetest) cannot see: the blocked groups and the release outbox
// stay consistent with the records, the usage saturates, and the
// admission path leaves nothing behind.

var at0 = time.UnixMilli(1_700_000_000_000).UTC()

func atd(d time.Duration) time.Time { return at0.Add(d) }

type afix struct {
	t   *testing.T
	s   *Store
	ctx context.Context
	seq uint64
}

func newAfix(t *testing.T) *afix {
	return &afix{t: t, s: New(nil), ctx: context.Background()}
}

func (f *afix) uuid() model.UUID {
	f.seq++
	var b [16]byte
	binary.BigEndian.PutUint64(b[8:], f.seq)
	return model.NewUUIDv4(b)
}

func (f *afix) lr(w model.WorkerID) model.LeaseRequest {
	return model.LeaseRequest{WorkerID: w, WorkerInstanceID: model.WorkerInstanceID(w + "-1"),
		LeaseID: model.LeaseID(f.uuid()), AttemptID: model.AttemptID(f.uuid()), LeaseTTL: time.Minute}
}

func (f *afix) create(lane model.LaneID, mod func(*model.ExecutionCreateParams)) model.ExecutionID {
	f.t.Helper()
	p := &model.ExecutionCreateParams{ID: model.NewExecutionID(3, f.uuid()), Namespace: "ns", Lane: lane, Kind: "k", Now: at0}
	if mod != nil {
		mod(p)
	}
	if _, err := f.s.ExecutionCreate(f.ctx, p); err != nil {
		f.t.Fatalf("create: %v", err)
	}
	return p.ID
}

// must returns r, panicking (failing the test) on err.
func must[R any](r R, err error) R {
	if err != nil {
		panic(err)
	}
	return r
}

// checkGroups checks that every budget and quota group entry is an
// execution blocked for that reason and that every such execution is in
// its group, and that no empty group is kept.
func (f *afix) checkGroups() {
	f.t.Helper()
	for n, pt := range f.s.parts {
		if pt == nil {
			continue
		}
		for _, name := range pt.laneNames {
			l := pt.lanes[name]
			inGroups := 0
			for b, g := range l.budgetGroups {
				if g.len() == 0 {
					f.t.Errorf("partition %d lane %s: empty budget group %v kept", n, name, b)
				}
				g.scan(func(it zitem) bool {
					e := f.s.execs[it.id]
					if e == nil || e.eligibilityState != model.BlockedByBudget || e.blockedBudget != b {
						f.t.Errorf("budget group %v holds %v, not blocked on it", b, it.id)
					}
					inGroups++
					return true
				})
			}
			if n := l.blocked[model.BlockedByBudget].len(); n != inGroups {
				f.t.Errorf("lane %s: %d blocked on budgets, %d in groups", name, n, inGroups)
			}
			inGroups = 0
			for k, g := range l.quotaGroups {
				if g.len() == 0 {
					f.t.Errorf("partition %d lane %s: empty quota group %v kept", n, name, k)
				}
				g.scan(func(it zitem) bool {
					e := f.s.execs[it.id]
					if e == nil || e.eligibilityState != model.BlockedByQuota || bucketOf(e) != k {
						f.t.Errorf("quota group %v holds %v, not blocked on it", k, it.id)
					}
					inGroups++
					return true
				})
			}
			if n := l.blocked[model.BlockedByQuota].len(); n != inGroups {
				f.t.Errorf("lane %s: %d blocked on quotas, %d in groups", name, n, inGroups)
			}
		}
		if o := pt.releases; o != nil && o.tree.Len() != len(o.at) {
			f.t.Errorf("partition %d: outbox tree %d entries, map %d", n, o.tree.Len(), len(o.at))
		}
	}
}

// TestAdmissionGroupsFollowTheRecord blocks executions on budgets and
// quotas and moves them out every way there is, checking the groups after
// each step.
func TestAdmissionGroupsFollowTheRecord(t *testing.T) {
	f := newAfix(t)
	b1, b2 := model.BudgetID(f.uuid()), model.BudgetID(f.uuid())
	q := model.QuotaID(f.uuid())
	withQuota := func(p *model.ExecutionCreateParams) { p.Quota, p.QuotaKey = q, "tenant-1" }
	block := func(id model.ExecutionID, r model.BlockingReason, b model.BudgetID, now time.Duration) {
		t.Helper()
		must(f.s.ExecutionBlock(f.ctx, &model.ExecutionBlockParams{ID: id, Reason: r, Budget: b, Now: atd(now)}))
		f.checkGroups()
	}
	a := f.create("l1", nil)
	b := f.create("l2", nil)
	c := f.create("l1", withQuota)
	d := f.create("l1", withQuota)
	e := f.create("l1", func(p *model.ExecutionCreateParams) { p.Tags = map[string]string{"app.t": "x"}; withQuota(p) })
	block(a, model.WaitingForBudget, b1, time.Second)
	block(b, model.WaitingForBudget, b2, 2*time.Second)
	block(c, model.WaitingForQuota, model.BudgetID{}, 3*time.Second)
	block(d, model.WaitingForQuota, model.BudgetID{}, 4*time.Second)
	block(e, model.WaitingForQuota, model.BudgetID{}, 5*time.Second)

	// no quota: refused, nothing written
	before := must(f.s.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: f.create("l1", nil)}))
	_, err := f.s.ExecutionBlock(f.ctx, &model.ExecutionBlockParams{ID: before.ID, Reason: model.WaitingForQuota, Now: atd(time.Minute)})
	if !errors.Is(err, model.ErrInvalidBlockingReason) {
		t.Fatalf("block on quota without one: %v", err)
	}
	after := must(f.s.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: before.ID}))
	if after.LastMutationAt != before.LastMutationAt || after.State != before.State {
		t.Fatalf("refused block wrote: %+v", after)
	}

	got := must(f.s.AdmissionBlocked(f.ctx, &model.AdmissionBlockedParams{Partition: 3, Limit: 10}))
	if len(got.Groups) != 3 || got.Groups[0].Lane != "l1" || got.Groups[0].Budget != b1 ||
		got.Groups[1].Quota != q || got.Groups[1].Count != 3 || got.Groups[2].Lane != "l2" {
		t.Fatalf("groups: %+v", got.Groups)
	}

	// cancel leaves the group; the filter keeps e blocked; Max bounds the bucket
	must(f.s.ExecutionCancel(f.ctx, &model.ExecutionCancelParams{ID: c, Source: model.SourceOperator, Reason: "r", Now: atd(time.Minute)}))
	f.checkGroups()
	u := must(f.s.AdmissionUnblock(f.ctx, &model.AdmissionUnblockParams{Partition: 3,
		Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "tenant-1"}, Max: 1}},
		Filter: model.ScannerFilter{TagKey: "app.t", TagValue: "x"}, Limit: 10, Now: atd(time.Minute)}))
	if len(u.Unblocked) != 1 || u.Unblocked[0] != e || u.More {
		t.Fatalf("unblock: %+v", u)
	}
	f.checkGroups()
	u = must(f.s.AdmissionUnblock(f.ctx, &model.AdmissionUnblockParams{Partition: 3,
		Budgets: []model.BudgetID{b2, b1}, Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: q, Key: "tenant-1"}}},
		Limit: 2, Now: atd(time.Minute)}))
	if len(u.Unblocked) != 2 || u.Unblocked[0] != b || u.Unblocked[1] != a || !u.More {
		t.Fatalf("unblock: %+v", u)
	}
	f.checkGroups()
	// expiry of a blocked execution leaves its group too
	x := f.create("l1", func(p *model.ExecutionCreateParams) { p.Deadline = atd(time.Hour) })
	block(x, model.WaitingForBudget, b1, time.Minute)
	must(f.s.ExecutionExpire(f.ctx, &model.ExecutionExpireParams{ID: x, Reason: model.ExpireExecutionDeadline, Now: atd(2 * time.Hour)}))
	f.checkGroups()
	due := must(f.s.PartitionDue(f.ctx, &model.PartitionDueParams{Partition: 3}))
	if !due.AdmissionBlocked { // d is still blocked on the quota
		t.Fatalf("partition due: %+v", due)
	}
}

// TestAdmissionTokenPath runs the claim path of an execution with a
// quota: claim-next grants it, the claim stores the token, every way the
// lease ends moves it to the outbox once, a reclaim keeps it.
func TestAdmissionTokenPath(t *testing.T) {
	f := newAfix(t)
	q := model.QuotaID(f.uuid())
	must(f.s.QuotaCreate(f.ctx, &model.QuotaCreateParams{ID: q, Concurrency: 2, Now: at0}))
	id := f.create("l", func(p *model.ExecutionCreateParams) { p.Quota = q; p.MaxReclaims = 5 })
	plain := f.create("l", nil)

	next := func(now time.Duration) *model.ExecutionClaimNextResult {
		return must(f.s.ExecutionClaimNext(f.ctx, &model.ExecutionClaimNextParams{Partition: 3, Lane: "l",
			ScanLimit: 10, LeaseRequest: f.lr("w"), Now: atd(now)}))
	}
	r := next(0)
	if r.Claimed != nil || r.Admit == nil || r.Admit.ID != id || r.Admit.GrantExpiresAt != atd(model.DefaultAdmissionGrantTTL) {
		t.Fatalf("claim-next: %+v", r)
	}
	_, err := f.s.ExecutionClaim(f.ctx, &model.ExecutionClaimParams{ID: id, LeaseRequest: f.lr("w"), Now: at0})
	if !errors.Is(err, model.ErrAdmissionRequired) {
		t.Fatalf("claim without a token: %v", err)
	}
	claim := func(tok string, now time.Duration) *model.ClaimResult {
		t.Helper()
		must(f.s.QuotaAdmit(f.ctx, &model.QuotaAdmitParams{ID: q, Execution: id, Token: tok, Now: atd(now)}))
		if r := next(now); r.Admit == nil {
			t.Fatalf("claim-next: %+v", r)
		}
		return must(f.s.ExecutionClaim(f.ctx, &model.ExecutionClaimParams{ID: id, AdmissionToken: tok, LeaseRequest: f.lr("w"), Now: atd(now)}))
	}
	cr := claim("tok-1", 0)
	if cr.AdmissionToken != "tok-1" || cr.Quota != q {
		t.Fatalf("claim: %+v", cr)
	}
	// a plain execution is claimed directly, the token ignored
	pr := must(f.s.ExecutionGrantAndClaim(f.ctx, &model.ExecutionGrantAndClaimParams{ID: plain, AdmissionToken: "ignored", LeaseRequest: f.lr("w"), Now: at0}))
	if pr.AdmissionToken != "" {
		t.Fatalf("plain claim: %+v", pr)
	}
	pending := func() []model.QuotaHold {
		return must(f.s.QuotaReleasePending(f.ctx, &model.QuotaReleasePendingParams{Partition: 3, Limit: 10})).Items
	}
	// revoke keeps the token; a reclaim inherits it; recovery moves it
	must(f.s.LeaseRevoke(f.ctx, &model.LeaseRevokeParams{ID: id, Reason: "r", Now: atd(time.Second)}))
	if len(pending()) != 0 {
		t.Fatalf("revoke moved the token: %+v", pending())
	}
	must(f.s.ReclaimGrantIssue(f.ctx, &model.ReclaimGrantIssueParams{ID: id, WorkerID: "w2", WorkerInstanceID: "w2-1", GrantTTL: time.Second, Now: atd(time.Second)}))
	rc := must(f.s.ExecutionReclaim(f.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: f.lr("w2"), Now: atd(time.Second)}))
	if rc.Claimed == nil || rc.Claimed.AdmissionToken != "tok-1" || len(pending()) != 0 {
		t.Fatalf("reclaim: %+v %+v", rc.Claimed, pending())
	}
	must(f.s.LeaseRevoke(f.ctx, &model.LeaseRevokeParams{ID: id, Reason: "r", Now: atd(2 * time.Second)}))
	must(f.s.ExecutionRecover(f.ctx, &model.ExecutionRecoverParams{ID: id, Now: atd(2 * time.Second)}))
	want := model.QuotaHold{Execution: id, Quota: q, Token: "tok-1", At: atd(2 * time.Second)}
	if p := pending(); len(p) != 1 || p[0] != want {
		t.Fatalf("outbox: %+v", p)
	}
	snap := must(f.s.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: id}))
	if snap.AdmissionToken != "" || snap.Quota != q {
		t.Fatalf("describe: %+v", snap)
	}
	cr = claim("tok-2", 3*time.Second)
	must(f.s.ExecutionComplete(f.ctx, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Source: model.SourceWorker, Now: atd(4 * time.Second)}))
	p := pending()
	if len(p) != 2 || p[1].Token != "tok-2" {
		t.Fatalf("outbox: %+v", p)
	}
	ack := must(f.s.QuotaReleaseAck(f.ctx, &model.QuotaReleaseAckParams{Partition: 3, Items: append(p, model.QuotaHold{Execution: id, Token: "nope"})}))
	if ack.Acked != 2 || len(pending()) != 0 {
		t.Fatalf("ack: %+v %+v", ack, pending())
	}
	f.checkGroups()
}

// TestBudgetUsageSaturates: a tracked dimension's usage stops at
// model.MaxBudgetAmount.
func TestBudgetUsageSaturates(t *testing.T) {
	f := newAfix(t)
	b := model.BudgetID(f.uuid())
	must(f.s.BudgetCreate(f.ctx, &model.BudgetCreateParams{ID: b, Limits: map[string]model.BudgetLimit{"tokens": {}}, Now: at0}))
	for range 3 {
		must(f.s.BudgetReport(f.ctx, &model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": model.MaxBudgetAmount}, Now: at0}))
	}
	st := must(f.s.BudgetStatus(f.ctx, &model.BudgetStatusParams{ID: b, Now: at0}))
	if st.Usage["tokens"] != model.MaxBudgetAmount {
		t.Fatalf("usage %d", st.Usage["tokens"])
	}
}

// TestBudgetDedupForgotten: dedup records are dropped once expired, so
// the map does not grow without bound.
func TestBudgetDedupForgotten(t *testing.T) {
	f := newAfix(t)
	b := model.BudgetID(f.uuid())
	must(f.s.BudgetCreate(f.ctx, &model.BudgetCreateParams{ID: b, Limits: map[string]model.BudgetLimit{"tokens": {Hard: 1000}}, Now: at0}))
	report := func(key string, now time.Time) model.BudgetReportOutcome {
		return must(f.s.BudgetReport(f.ctx, &model.BudgetReportParams{ID: b, Deltas: map[string]int64{"tokens": 1}, DedupKey: key, Now: now})).Outcome
	}
	for i := range 5 {
		report(string(rune('a'+i)), at0)
	}
	if o := report("a", atd(model.BudgetDedupTTL-time.Millisecond)); o != model.ReportAlreadyApplied {
		t.Fatalf("within the ttl: %v", o)
	}
	if o := report("a", atd(model.BudgetDedupTTL)); o != model.ReportApplied {
		t.Fatalf("at the ttl: %v", o)
	}
	if n := len(f.s.bparts[f.s.cfg.BudgetPartition(b)].defs[b].dedup); n != 1 {
		t.Fatalf("%d dedup records kept", n)
	}
}

// TestAdmissionDeterministic runs the same admission operations on two
// stores and compares every result: Go randomises map iteration, so an
// order taken from a map would show.
func TestAdmissionDeterministic(t *testing.T) {
	run := func() []any {
		f := newAfix(t)
		var out []any
		rec := func(r any, err error) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		var budgets []model.BudgetID
		for range 6 {
			b := model.BudgetID(f.uuid())
			budgets = append(budgets, b)
			rec(f.s.BudgetCreate(f.ctx, &model.BudgetCreateParams{ID: b, ResetInterval: time.Minute,
				Limits: map[string]model.BudgetLimit{"a": {Hard: 5, Soft: 2}, "b": {Hard: 3}, "c": {}, "d": {Soft: 1}}, Now: at0}))
			rec(f.s.BudgetReport(f.ctx, &model.BudgetReportParams{ID: b, Deltas: map[string]int64{"a": 3, "b": 3, "c": 1, "d": 2},
				Execution: model.NewExecutionID(3, f.uuid()), Now: at0}))
		}
		qs := []model.QuotaID{model.QuotaID(f.uuid()), model.QuotaID(f.uuid())}
		for _, q := range qs {
			rec(f.s.QuotaCreate(f.ctx, &model.QuotaCreateParams{ID: q, Rate: 100, Window: time.Hour, Concurrency: 50, Now: at0}))
		}
		for i := range 40 {
			lane := model.LaneID([]string{"x", "y", "z"}[i%3])
			q := qs[i%2]
			key := string(rune('k' + i%5))
			id := f.create(lane, func(p *model.ExecutionCreateParams) { p.Quota, p.QuotaKey = q, key })
			rec(f.s.QuotaAdmit(f.ctx, &model.QuotaAdmitParams{ID: q, Key: key, Execution: id, Token: "t", Now: atd(time.Duration(i%4) * time.Second)}))
			if i%2 == 0 {
				rec(f.s.ExecutionBlock(f.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForBudget, Budget: budgets[i%6], Now: atd(time.Second)}))
			} else {
				rec(f.s.ExecutionBlock(f.ctx, &model.ExecutionBlockParams{ID: id, Reason: model.WaitingForQuota, Now: atd(time.Second)}))
			}
		}
		rec(f.s.AdmissionBlocked(f.ctx, &model.AdmissionBlockedParams{Partition: 3, Limit: 100}))
		for _, b := range budgets {
			rec(f.s.BudgetStatus(f.ctx, &model.BudgetStatusParams{ID: b, Now: atd(time.Second)}))
		}
		for range 3 {
			rec(f.s.QuotaReconcile(f.ctx, &model.QuotaReconcileParams{Partition: f.s.cfg.QuotaPartition(qs[0]), StaleBefore: atd(2 * time.Second), Limit: 7, Now: atd(time.Minute)}))
			rec(f.s.BudgetResetDue(f.ctx, &model.BudgetResetDueParams{Partition: f.s.cfg.BudgetPartition(budgets[0]), Limit: 2, Now: atd(time.Minute)}))
			rec(f.s.AdmissionUnblock(f.ctx, &model.AdmissionUnblockParams{Partition: 3, Budgets: budgets[:3],
				Quotas: []model.QuotaUnblock{{QuotaBucket: model.QuotaBucket{ID: qs[1], Key: "l"}, Max: 2}}, Limit: 5, Now: atd(time.Minute)}))
		}
		return out
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		for i := range a {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Fatalf("result %d differs:\n%+v\n%+v", i, a[i], b[i])
			}
		}
	}
}
