package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// quotaCap is the per-key concurrency of the quota the admission drain
// attaches; quotaKeys are its keys. One, because the drain's natural
// concurrency per key is only two or three (each claim of an execution
// with a quota is several round trips), and a cap above that could not be
// seen to bind: with the cap at 100 the check below does find three at
// once, so it can fail.
const quotaCap = 1

var quotaKeys = []string{"tenant-a", "tenant-b"}

// Admission across processes on a real server: every job carries a
// non-limiting budget and a quota capping each of two keys at quotaCap
// running at once, while worker processes (12 slots in all) are killed
// with SIGKILL and restarted. Every acknowledged job completes once; the
// slots a killed worker held come back by themselves (through lease
// recovery), or the drain would stall; and at no instant do more than
// quotaCap handlers of one key run, across all processes (from the
// ledger: each attempt runs from its "start" to its "end", or to its
// process's kill).
func TestQuotaWorkersKilled(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	d := newDrain(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	budget, _, err := d.engine.CreateBudget(ctx, flowfabric.BudgetSpec{Limits: map[string]flowfabric.BudgetLimit{"calls": {Hard: 1 << 40}}})
	if err != nil {
		t.Fatal(err)
	}
	quota, _, err := d.engine.CreateQuota(ctx, flowfabric.QuotaSpec{Concurrency: quotaCap})
	if err != nil {
		t.Fatal(err)
	}
	keyOf := map[string]string{}
	submit := func(n int) { // each batch bounded on its own, however many faults the run injects
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := range n {
			key := quotaKeys[i%len(quotaKeys)]
			d.submitted++
			r, err := d.engine.Submit(ctx, job{N: i}, &flowfabric.SubmitOpts{
				Budgets: []flowfabric.BudgetID{budget}, Quota: quota, QuotaKey: key,
			})
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			d.acked = append(d.acked, r.ID)
			keyOf[r.ID.String()] = key
		}
	}
	names := []string{"w1", "w2", "w3"}
	for _, n := range names {
		d.startWorker(n)
	}
	jobs := min(*flagJobs, 300)
	n := faults(4)
	for range n {
		before := completedCount(d.read())
		submit(jobs / n)
		d.killMidDrain(before, 10, names)
	}
	d.stalled = func(ctx context.Context) string { return quotaHolders(ctx, d, quota) }
	d.finish(time.Minute)
	if worst, at := maxRunning(d.read(), keyOf, d.faults); worst > quotaCap {
		t.Fatalf("%d handlers of one key ran at once at %v (the quota caps a key at %d)\n%s", worst, at.Format(time.RFC3339Nano), quotaCap, d.logs())
	} else {
		t.Logf("at most %d handlers of one key ran at once (cap %d)", worst, quotaCap)
	}
}

// maxRunning is the most handlers of one quota key running at one
// instant, and when: an attempt (execution, epoch) runs from its "start"
// to its "end", or to the kill of its process when it has none.
func maxRunning(es []entry, keyOf map[string]string, faults []fault) (int, time.Time) {
	killed := map[string]time.Time{}
	for _, f := range faults {
		killed[f.instance] = f.begin
	}
	type edge struct {
		at    time.Time
		delta int
		key   string
	}
	starts := map[string]entry{}
	var edges []edge
	for _, e := range es {
		key, ok := keyOf[e.id]
		if !ok {
			continue
		}
		attempt := fmt.Sprintf("%s/%d", e.id, e.epoch)
		switch e.event {
		case "start":
			starts[attempt] = e
			edges = append(edges, edge{e.at, +1, key})
		case "end":
			if _, ok := starts[attempt]; ok {
				delete(starts, attempt)
				edges = append(edges, edge{e.at, -1, key})
			}
		}
	}
	for _, s := range starts { // never ended: its process was killed
		end, ok := killed[s.instance]
		if !ok {
			end = time.Unix(1<<40, 0) // still running: to the end of the run
		}
		edges = append(edges, edge{end, -1, keyOf[s.id]})
	}
	// at one instant, ends before starts: a slot released and taken again
	// at the same nanosecond is not two at once
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	running := map[string]int{}
	worst, when := 0, time.Time{}
	for _, e := range edges {
		running[e.key] += e.delta
		if running[e.key] > worst {
			worst, when = running[e.key], e.at
		}
	}
	return worst, when
}

// TestMaxRunning checks the overlap count on a ledger built by hand.
func TestMaxRunning(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	x, y, z := model.NewExecutionID(0, model.NewUUIDv4([16]byte{1})), model.NewExecutionID(0, model.NewUUIDv4([16]byte{2})), model.NewExecutionID(0, model.NewUUIDv4([16]byte{3}))
	keyOf := map[string]string{x.String(): "a", y.String(): "a", z.String(): "b"}
	es := []entry{
		{at(0), "start", x.String(), 1, "w-1"},
		{at(1), "start", y.String(), 1, "w-2"},
		{at(2), "start", z.String(), 1, "w-2"},
		{at(5), "end", x.String(), 1, "w-1"},
		{at(5), "start", x.String(), 2, "w-1"}, // released and taken at the same instant
		{at(9), "end", x.String(), 2, "w-1"},
	}
	// y never ends: its process w-2 was killed at 7ms
	if n, when := maxRunning(es, keyOf, []fault{{instance: "w-2", begin: at(7)}}); n != 2 || !when.Equal(at(1)) {
		t.Fatalf("max running %d at %v, want 2 at %v", n, when, at(1))
	}
	es = append(es, entry{at(6), "start", model.NewExecutionID(0, model.NewUUIDv4([16]byte{4})).String(), 1, "w-3"})
	keyOf[es[len(es)-1].id] = "a"
	if n, _ := maxRunning(es, keyOf, []fault{{instance: "w-2", begin: at(7)}}); n != 3 {
		t.Fatalf("max running %d, want 3 (x, y and the late start overlap at 6ms)", n)
	}
}

// quotaHolders describes, for a stalled drain, each key's bucket, every
// admission held (with its execution's state and token, and the ledger's
// events of it) and every quota release outbox entry left unreleased.
func quotaHolders(ctx context.Context, d *drain, quota flowfabric.QuotaID) string {
	var b strings.Builder
	now := time.Now()
	for _, key := range quotaKeys {
		st, err := d.store.QuotaStatus(ctx, &model.QuotaStatusParams{ID: quota, Key: key, Now: now})
		if err != nil {
			fmt.Fprintf(&b, "key %s: %v\n", key, err)
			continue
		}
		fmt.Fprintf(&b, "key %s: active %d, in window %d, free %d\n", key, st.Active, st.InWindow, st.Free)
	}
	cfg := d.store.Partitions()
	es := d.read()
	for p := range cfg.QuotaPartitions {
		r, err := d.store.QuotaReconcile(ctx, &model.QuotaReconcileParams{Partition: p, StaleBefore: now.Add(time.Hour), Limit: 100, Now: now})
		if err != nil {
			fmt.Fprintf(&b, "quota partition %d: %v\n", p, err)
			continue
		}
		for _, a := range r.Stale {
			fmt.Fprintf(&b, "admission %s key %s token %s admitted %s\n", a.Execution, a.Key, a.Token, a.AdmittedAt.Format(time.RFC3339Nano))
			if snap, err := d.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: a.Execution}); err != nil {
				fmt.Fprintf(&b, "  describe: %v\n", err)
			} else {
				fmt.Fprintf(&b, "  execution %s (%+v), token %q\n", snap.PublicState, snap.State, snap.AdmissionToken)
			}
			for _, e := range es {
				if e.id == a.Execution.String() {
					fmt.Fprintf(&b, "  %s %s epoch %d %s\n", e.at.Format(time.RFC3339Nano), e.event, e.epoch, e.instance)
				}
			}
		}
	}
	for p := range cfg.FlowPartitions {
		r, err := d.store.QuotaReleasePending(ctx, &model.QuotaReleasePendingParams{Partition: p, Limit: 100})
		if err != nil {
			fmt.Fprintf(&b, "partition %d outbox: %v\n", p, err)
			continue
		}
		for _, h := range r.Items {
			fmt.Fprintf(&b, "unreleased %s key %s token %s since %s\n", h.Execution, h.Key, h.Token, h.At.Format(time.RFC3339Nano))
		}
	}
	return b.String()
}
