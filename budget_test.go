package flowfabric_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/model"
)

// llmCall spends Tokens on the budgets named in its submission and
// returns; with Hold set it waits for the release channel first.
type llmCall struct {
	Tokens int64         `json:"tokens"`
	Budget string        `json:"budget"`
	Hold   time.Duration `json:"hold"` // simulated time the call takes
}

func (llmCall) Kind() string { return "llm_call" }

func llmHandler(calls *atomic.Int32, clock flowfabric.Clock) flowfabric.Handler[llmCall] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[llmCall]) error {
		calls.Add(1)
		if t.Args.Hold > 0 {
			if err := clock.Wait(ctx, t.Args.Hold, nil); err != nil {
				return err
			}
		}
		if t.Args.Budget == "" {
			return nil
		}
		b, err := model.ParseBudgetID(t.Args.Budget)
		if err != nil {
			return flowfabric.Permanent(err)
		}
		_, err = t.ReportUsage(ctx, b, map[string]int64{"tokens": t.Args.Tokens}, &flowfabric.UsageOpts{DedupKey: "call"})
		if errors.Is(err, flowfabric.ErrBudgetExceeded) {
			return flowfabric.Permanent(err)
		}
		return err
	})
}

// Scenario 25: a report applies, a hard breach applies nothing, a dedup
// key applies once, a reset zeroes the usage.
func TestBudgetReportBreachDedupReset(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	id, created, err := e.CreateBudget(h.Ctx, flowfabric.BudgetSpec{
		Limits: map[string]flowfabric.BudgetLimit{"tokens": {Hard: 100, Soft: 80}},
	})
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	rep, err := e.ReportUsage(h.Ctx, id, map[string]int64{"tokens": 70}, &flowfabric.UsageOpts{DedupKey: "a"})
	if err != nil || rep.Outcome != flowfabric.ReportApplied {
		t.Fatalf("first report: %+v %v", rep, err)
	}
	rep, err = e.ReportUsage(h.Ctx, id, map[string]int64{"tokens": 70}, &flowfabric.UsageOpts{DedupKey: "a"})
	if err != nil || rep.Outcome != flowfabric.ReportAlreadyApplied {
		t.Fatalf("dedup: %+v %v", rep, err)
	}
	rep, err = e.ReportUsage(h.Ctx, id, map[string]int64{"tokens": 20}, nil)
	if err != nil || rep.Outcome != flowfabric.ReportSoftBreach || rep.Usage != 90 || rep.Limit != 80 {
		t.Fatalf("soft breach: %+v %v", rep, err)
	}
	rep, err = e.ReportUsage(h.Ctx, id, map[string]int64{"tokens": 11}, nil)
	if !errors.Is(err, flowfabric.ErrBudgetExceeded) || rep.Outcome != flowfabric.ReportHardBreach || rep.Usage != 101 {
		t.Fatalf("hard breach: %+v %v", rep, err)
	}
	st, err := e.BudgetStatus(h.Ctx, id)
	if err != nil || st.Usage["tokens"] != 90 || st.HardBreaches != 1 || st.SoftBreaches != 1 || st.Exhausted != "" {
		t.Fatalf("status: %+v %v", st, err)
	}
	if err := e.ResetBudget(h.Ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.BudgetStatus(h.Ctx, id); st.Usage["tokens"] != 0 || st.ResetCount != 1 {
		t.Fatalf("after reset: %+v", st)
	}
	if _, _, err := e.CreateBudget(h.Ctx, flowfabric.BudgetSpec{ID: id, Limits: map[string]flowfabric.BudgetLimit{"tokens": {Hard: 5}}}); !errors.Is(err, model.ErrIdempotencyConflict) {
		t.Fatalf("redefinition: %v", err)
	}
}

// Scenario 26: an execution whose budget is exhausted is blocked on it
// (rate_limited) and runs once the budget is reset; a budget that cannot
// be found blocks too (fail-closed).
func TestBudgetBlocksAndUnblocks(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	id, _, err := e.CreateBudget(h.Ctx, flowfabric.BudgetSpec{Limits: map[string]flowfabric.BudgetLimit{"tokens": {Hard: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReportUsage(h.Ctx, id, map[string]int64{"tokens": 10}, nil); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, llmHandler(&calls, h.Engine.Clock()))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, llmCall{}, &flowfabric.SubmitOpts{Budgets: []flowfabric.BudgetID{id}})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool {
		s, _ := e.Describe(h.Ctx, res.ID)
		return s.PublicState == flowfabric.PublicRateLimited
	})
	h.Advance(time.Minute)
	if calls.Load() != 0 {
		t.Fatalf("ran %d times on an exhausted budget", calls.Load())
	}
	if err := e.ResetBudget(h.Ctx, id); err != nil {
		t.Fatal(err)
	}
	if s := h.WaitTerminal(res.ID); s.PublicState != flowfabric.PublicCompleted || calls.Load() != 1 {
		t.Fatalf("after reset: %s, %d calls", s.PublicState, calls.Load())
	}

	missing := flowfabric.BudgetID(model.NewUUIDv4([16]byte{1, 2, 3}))
	res2, err := e.Submit(h.Ctx, llmCall{}, &flowfabric.SubmitOpts{Budgets: []flowfabric.BudgetID{missing}})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool {
		s, _ := e.Describe(h.Ctx, res2.ID)
		return s.PublicState == flowfabric.PublicRateLimited
	})
	if _, _, err := e.CreateBudget(h.Ctx, flowfabric.BudgetSpec{ID: missing, Limits: map[string]flowfabric.BudgetLimit{"tokens": {Hard: 10}}}); err != nil {
		t.Fatal(err)
	}
	h.Advance(10 * time.Second) // the unblock scanner's next pass finds the budget
	if s := h.WaitTerminal(res2.ID); s.PublicState != flowfabric.PublicCompleted {
		t.Fatalf("after the budget appeared: %s", s.PublicState)
	}
}

// Scenario 27: a quota's concurrency cap holds the second execution of a
// key blocked until the first ends; another key is independent; the slot
// frees when the lease ends, whatever ended it.
func TestQuotaConcurrencyPerKey(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	q, _, err := e.CreateQuota(h.Ctx, flowfabric.QuotaSpec{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: 4})
	flowfabric.AddHandler(w, llmHandler(&calls, h.Engine.Clock()))
	h.StartWorker(w)
	sub := func(key string) flowfabric.ExecutionID {
		r, err := e.Submit(h.Ctx, llmCall{Hold: 10 * time.Second}, &flowfabric.SubmitOpts{Quota: q, QuotaKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	a1, a2, b1 := sub("acme"), sub("acme"), sub("bolt")
	h.RunUntil(func() bool { return calls.Load() == 2 })
	s2, _ := e.Describe(h.Ctx, a2)
	if s2.PublicState != flowfabric.PublicRateLimited {
		t.Fatalf("second acme execution: %s, want rate_limited", s2.PublicState)
	}
	if st, _ := e.QuotaStatus(h.Ctx, q, "acme"); st.Active != 1 || st.Free != 0 {
		t.Fatalf("acme bucket: %+v", st)
	}
	start := e.Clock().Now()
	for _, id := range []flowfabric.ExecutionID{a1, a2, b1} {
		if s := h.WaitTerminal(id); s.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("%s: %s", id, s.PublicState)
		}
	}
	// a2 ran only after a1 ended (10s) and took 10s itself
	if s, _ := e.Describe(h.Ctx, a2); s.TerminalAt.Sub(start) < 20*time.Second-time.Second {
		t.Fatalf("a2 ended %v after the start: it ran beside a1", s.TerminalAt.Sub(start))
	}
	h.RunUntil(func() bool {
		st, _ := e.QuotaStatus(h.Ctx, q, "acme")
		return st.Active == 0
	})
	if calls.Load() != 3 {
		t.Fatalf("%d calls", calls.Load())
	}
}

// A quota's rate admits at most Rate executions per window per key: the
// rest wait blocked and start as the window slides.
func TestQuotaRateWindow(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	q, _, err := e.CreateQuota(h.Ctx, flowfabric.QuotaSpec{Rate: 2, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := h.NewWorker(&flowfabric.WorkerConfig{MaxConcurrent: 4})
	flowfabric.AddHandler(w, llmHandler(&calls, h.Engine.Clock()))
	h.StartWorker(w)
	start := h.Engine.Clock().Now()
	var ids []flowfabric.ExecutionID
	for range 5 {
		r, err := e.Submit(h.Ctx, llmCall{}, &flowfabric.SubmitOpts{Quota: q, QuotaKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	var ends []time.Duration
	for _, id := range ids {
		s := h.WaitTerminal(id)
		ends = append(ends, s.TerminalAt.Sub(start))
	}
	// two per minute: the 3rd and 4th wait a window, the 5th two
	for i, d := range ends {
		if want := time.Duration(i/2) * time.Minute; d < want {
			t.Fatalf("execution %d ended %v after the start, before %v: the rate let it through early", i, d, want)
		}
	}
}

// A hard breach reported by a flow member whose budget says
// BreachCancelFlow cancels the members that have not started (FlowFabric's
// token-budget example).
func TestFlowBudgetBreachCancelsPending(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	b, _, err := e.CreateBudget(h.Ctx, flowfabric.BudgetSpec{
		Limits:       map[string]flowfabric.BudgetLimit{"tokens": {Hard: 100}},
		OnHardBreach: flowfabric.BreachCancelFlow,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterLane("agents", flowfabric.LaneConfig{Spread: true}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := h.NewWorker(&flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"agents"}})
	flowfabric.AddHandler(w, llmHandler(&calls, h.Engine.Clock()))
	h.StartWorker(w)
	f := flowfabric.NewFlow()
	on := &flowfabric.SubmitOpts{Lane: "agents"}
	prev := f.Add(llmCall{Tokens: 60, Budget: b.String()}, on)
	nodes := []*flowfabric.FlowNode{prev}
	for range 4 {
		n := f.Add(llmCall{Tokens: 60, Budget: b.String()}, on).After(prev)
		nodes = append(nodes, n)
		prev = n
	}
	fr, err := e.SubmitFlow(h.Ctx, f, &flowfabric.FlowOpts{Budgets: []flowfabric.BudgetID{b}})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	first, _ := e.Describe(h.Ctx, fr.Of(nodes[0]))
	second, _ := e.Describe(h.Ctx, fr.Of(nodes[1]))
	if first.PublicState != flowfabric.PublicCompleted || second.PublicState != flowfabric.PublicFailed {
		t.Fatalf("first %s, second %s", first.PublicState, second.PublicState)
	}
	for _, n := range nodes[2:] {
		s, _ := e.Describe(h.Ctx, fr.Of(n))
		if s.PublicState != flowfabric.PublicCancelled && s.PublicState != flowfabric.PublicSkipped {
			t.Fatalf("a later member is %s, want cancelled or skipped", s.PublicState)
		}
	}
	if st, _ := e.BudgetStatus(h.Ctx, b); st.Usage["tokens"] != 60 || st.HardBreaches != 1 {
		t.Fatalf("budget: %+v", st)
	}
}

// A handler's reports are charged to its execution's ledger, which
// ReleaseBudgetSpend gives back (before a replay, say); the dedup key is
// scoped to the attempt, so the replayed attempt is charged again.
func TestBudgetLedgerReleaseAndReplay(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	e := h.Engine
	b, _, err := e.CreateBudget(h.Ctx, flowfabric.BudgetSpec{Limits: map[string]flowfabric.BudgetLimit{"tokens": {Hard: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, llmHandler(&calls, h.Engine.Clock()))
	h.StartWorker(w)
	res, err := e.Submit(h.Ctx, llmCall{Tokens: 30, Budget: b.String()}, &flowfabric.SubmitOpts{Budgets: []flowfabric.BudgetID{b}})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(res.ID)
	if st, _ := e.BudgetStatus(h.Ctx, b); st.Usage["tokens"] != 30 {
		t.Fatalf("usage after the run: %v", st.Usage)
	}
	if err := e.ReleaseBudgetSpend(h.Ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.BudgetStatus(h.Ctx, b); st.Usage["tokens"] != 0 {
		t.Fatalf("usage after the release: %v", st.Usage)
	}
	if err := e.Replay(h.Ctx, res.ID, nil); err != nil {
		t.Fatal(err)
	}
	h.RunUntil(func() bool { return calls.Load() == 2 })
	h.WaitTerminal(res.ID)
	if st, _ := e.BudgetStatus(h.Ctx, b); st.Usage["tokens"] != 30 {
		t.Fatalf("usage after the replay (same dedup key, new attempt): %v", st.Usage)
	}
}
