// Command budget runs LLM calls under a token budget and a per-customer
// quota. An agent's run is a flow of five calls that share a budget of
// 100 tokens: the call whose tokens would pass it is refused, and the
// budget's BreachCancelFlow cancels the calls that have not started.
// Customers' calls go through a quota of 2 running at once and 10 per
// minute per customer: a third call of one customer waits for a slot
// while another customer's calls run, and an eleventh call within the
// minute waits for the window (the example cancels it rather than wait).
//
//	go run ./examples/budget                          # in-memory store
//	go run ./examples/budget -valkey 127.0.0.1:6379   # Valkey/Redis
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// lane is where the calls run; a flow's lane is spread.
const lane = flowfabric.LaneID("llm")

// tokensPerCall is what the fake model uses on every call.
const tokensPerCall = 40

// LLMCall asks the model one thing.
type LLMCall struct {
	Prompt string `json:"prompt"`
	// Budget, when set, is charged with the tokens the call used.
	Budget string `json:"budget,omitempty"`
	// Hold keeps the call running until the program lets it go (so that
	// what it prints does not depend on timing).
	Hold bool `json:"hold,omitempty"`
}

// Kind implements flowfabric.Args.
func (LLMCall) Kind() string { return "llm_call" }

func main() {
	addrs := flag.String("valkey", "", "comma-separated Valkey/Redis address(es); empty: the in-memory store")
	flag.Parse()
	store, closeStore, err := openStore(*addrs)
	if err != nil {
		log.Fatal(err)
	}
	defer closeStore()
	if err := run(store, func(s string) { fmt.Println(s) }); err != nil {
		log.Fatal(err)
	}
}

// openStore returns memstore, or valkeystore on the given server(s) under a
// fresh key prefix.
func openStore(addrs string) (flowfabric.Store, func(), error) {
	if addrs == "" {
		return memstore.New(nil), func() {}, nil
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: strings.Split(addrs, ",")})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addrs, err)
	}
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("budget%d", time.Now().UnixNano())})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return store, func() { store.Close(); client.Close() }, nil
}

// fakeModel is a fake LLM: every call uses tokensPerCall tokens. Held calls
// say they started on started and wait for release to be closed.
type fakeModel struct {
	started chan string // the prompts of held calls, as they start
	release chan struct{}
}

// llmHandler calls the model and charges the call's budget with what it
// used. A charge that would pass the budget's hard limit is refused and
// the call fails for good (its answer is not used).
func llmHandler(m *fakeModel) flowfabric.Handler[LLMCall] {
	return flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[LLMCall]) error {
		if t.Args.Hold {
			m.started <- t.Args.Prompt
			select {
			case <-m.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		used := int64(tokensPerCall)
		if t.Args.Budget != "" {
			b, err := model.ParseBudgetID(t.Args.Budget)
			if err != nil {
				return flowfabric.Permanent(err)
			}
			// DedupKey: a retry of the report within the attempt is charged once.
			_, err = t.ReportUsage(ctx, b, map[string]int64{"tokens": used}, &flowfabric.UsageOpts{DedupKey: "call"})
			if errors.Is(err, flowfabric.ErrBudgetExceeded) {
				return flowfabric.Permanent(err)
			}
			if err != nil {
				return err
			}
		}
		return t.SetResult(fmt.Appendf(nil, "answer to %q (%d tokens)", t.Args.Prompt, used))
	})
}

// run runs both halves, reporting each step through say in a fixed order.
func run(store flowfabric.Store, say func(string)) error {
	ctx := context.Background()
	engine := flowfabric.New(store, nil)
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer engine.Stop(ctx) //nolint:errcheck // best effort at exit
	if err := engine.RegisterLane(lane, flowfabric.LaneConfig{Spread: true}); err != nil {
		return err
	}

	m := &fakeModel{started: make(chan string, 16), release: make(chan struct{})}
	w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: "llm", Lanes: []flowfabric.LaneID{lane}, MaxConcurrent: 8})
	flowfabric.AddHandler(w, llmHandler(m))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(ctx) //nolint:errcheck // best effort at exit
	// the held calls of part 2 are let go at the latest here, so that
	// the worker's Stop does not wait for them
	defer func() {
		select {
		case <-m.release:
		default:
			close(m.release)
		}
	}()

	if err := agentRun(ctx, engine, say); err != nil {
		return err
	}
	return customers(ctx, engine, m, say)
}

// agentRun runs five sequential calls of one agent on a budget of 100
// tokens whose hard breach cancels the flow's calls that have not started.
func agentRun(ctx context.Context, engine *flowfabric.Engine, say func(string)) error {
	budget, _, err := engine.CreateBudget(ctx, flowfabric.BudgetSpec{
		Limits:       map[string]flowfabric.BudgetLimit{"tokens": {Hard: 100}},
		OnHardBreach: flowfabric.BreachCancelFlow,
	})
	if err != nil {
		return err
	}
	f := flowfabric.NewFlow()
	var prev *flowfabric.FlowNode
	for i := 1; i <= 5; i++ {
		n := f.Add(LLMCall{Prompt: fmt.Sprintf("step %d", i), Budget: budget.String()}, &flowfabric.SubmitOpts{Lane: lane})
		if prev != nil {
			n.After(prev)
		}
		prev = n
	}
	res, err := engine.SubmitFlow(ctx, f, &flowfabric.FlowOpts{Budgets: []flowfabric.BudgetID{budget}})
	if err != nil {
		return err
	}
	say(fmt.Sprintf("agent run: 5 calls of %d tokens, one after another, on a budget of 100 tokens", tokensPerCall))
	for i, id := range res.Executions {
		snap, err := engine.Wait(ctx, id, 5*time.Millisecond)
		if err != nil {
			return err
		}
		var what string
		switch snap.PublicState {
		case flowfabric.PublicCompleted:
			out, err := engine.Result(ctx, id)
			if err != nil {
				return err
			}
			what = string(out)
		case flowfabric.PublicFailed:
			what = snap.FailureReason
		case flowfabric.PublicCancelled:
			what = snap.CancellationReason
		}
		what = strings.ReplaceAll(what, "budget "+budget.String(), "the run's budget")
		say(fmt.Sprintf("  call %d: %s: %s", i+1, snap.PublicState, what))
	}
	st, err := engine.BudgetStatus(ctx, budget)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("budget: %d of %d tokens used, %d hard breach (the refused report applied nothing)",
		st.Usage["tokens"], st.Limits["tokens"].Hard, st.HardBreaches))
	return nil
}

// customers submits calls for two customers through a quota of 2 calls
// running at once and 10 per minute per customer.
func customers(ctx context.Context, engine *flowfabric.Engine, m *fakeModel, say func(string)) error {
	quota, _, err := engine.CreateQuota(ctx, flowfabric.QuotaSpec{Rate: 10, Window: time.Minute, Concurrency: 2})
	if err != nil {
		return err
	}
	submit := func(customer, prompt string, hold bool) (flowfabric.ExecutionID, error) {
		r, err := engine.Submit(ctx, LLMCall{Prompt: customer + " " + prompt, Hold: hold},
			&flowfabric.SubmitOpts{Lane: lane, Quota: quota, QuotaKey: customer})
		if err != nil {
			return flowfabric.ExecutionID{}, err
		}
		return r.ID, nil
	}

	// Three held calls of acme and one of bolt: two of acme and bolt's
	// run, acme's third waits for a slot.
	var acme, all []flowfabric.ExecutionID
	for i := 1; i <= 3; i++ {
		id, err := submit("acme", fmt.Sprintf("call %d", i), true)
		if err != nil {
			return err
		}
		acme = append(acme, id)
	}
	bolt, err := submit("bolt", "call 1", true)
	if err != nil {
		return err
	}
	all = append(append(all, acme...), bolt)
	say("customers: quota of 2 calls at once and 10 per minute, per customer")
	say("  acme submits 3 calls that take a while, bolt 1")
	running := map[string]int{}
	for range 3 {
		p := <-m.started
		running[strings.Fields(p)[0]]++
	}
	err = poll(func() (bool, error) {
		n := 0
		for _, id := range acme {
			s, err := engine.Describe(ctx, id)
			if err != nil {
				return false, err
			}
			if s.PublicState == flowfabric.PublicRateLimited {
				n++
			}
		}
		return n == 1, nil
	})
	if err != nil {
		return err
	}
	select {
	case p := <-m.started:
		return fmt.Errorf("%s started beside two of acme", p)
	default:
	}
	say(fmt.Sprintf("  running: %d of acme, %d of bolt; acme's third call is rate_limited", running["acme"], running["bolt"]))
	for _, key := range []string{"acme", "bolt"} {
		st, err := engine.QuotaStatus(ctx, quota, key)
		if err != nil {
			return err
		}
		say(fmt.Sprintf("  quota %s: %d active, %d free", key, st.Active, st.Free))
	}
	close(m.release)
	if err := waitCompleted(ctx, engine, all); err != nil {
		return err
	}
	say("  the calls end; acme's third ran once a slot freed: all 4 completed")

	// Seven more calls of acme fill its 10 a minute; the eleventh waits.
	var more []flowfabric.ExecutionID
	for i := 4; i <= 10; i++ {
		id, err := submit("acme", fmt.Sprintf("call %d", i), false)
		if err != nil {
			return err
		}
		more = append(more, id)
	}
	if err := waitCompleted(ctx, engine, more); err != nil {
		return err
	}
	say("  acme's calls 4 to 10 completed")
	eleventh, err := submit("acme", "call 11", false)
	if err != nil {
		return err
	}
	err = poll(func() (bool, error) {
		s, err := engine.Describe(ctx, eleventh)
		return err == nil && s.PublicState == flowfabric.PublicRateLimited, err
	})
	if err != nil {
		return err
	}
	st, err := engine.QuotaStatus(ctx, quota, "acme")
	if err != nil {
		return err
	}
	if st.RetryAfter <= 0 || st.RetryAfter > time.Minute {
		return fmt.Errorf("acme's RetryAfter is %v, want within the minute", st.RetryAfter)
	}
	say(fmt.Sprintf("  acme call 11: rate_limited (%d calls in the window, %d free, room again within the minute)", st.InWindow, st.Free))
	b2, err := submit("bolt", "call 2", false)
	if err != nil {
		return err
	}
	if err := waitCompleted(ctx, engine, []flowfabric.ExecutionID{b2}); err != nil {
		return err
	}
	say("  bolt call 2: completed at once")
	if err := engine.Cancel(ctx, eleventh, "the example does not wait the minute"); err != nil {
		return err
	}
	s, err := engine.Wait(ctx, eleventh, 5*time.Millisecond)
	if err != nil {
		return err
	}
	say(fmt.Sprintf("  acme call 11: %s (%s)", s.PublicState, s.CancellationReason))
	return nil
}

// waitCompleted waits for each execution to end and checks it completed.
func waitCompleted(ctx context.Context, engine *flowfabric.Engine, ids []flowfabric.ExecutionID) error {
	for _, id := range ids {
		s, err := engine.Wait(ctx, id, 5*time.Millisecond)
		if err != nil {
			return err
		}
		if s.PublicState != flowfabric.PublicCompleted {
			return fmt.Errorf("%s ended %s: %s", id, s.PublicState, s.FailureReason)
		}
	}
	return nil
}

// poll calls ok every few milliseconds until it says true (or fails), for
// at most 10 seconds.
func poll(ok func() (bool, error)) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		done, err := ok()
		if err != nil || done {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("the state waited for never came")
}
