package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// S10Result is S1 with a budget and a quota attached that never limit
// (issue 12): what the admission steps of the claim path cost.
type S10Result struct {
	Note string   `json:"note"`
	Rows []S10Row `json:"rows"`
	// OpCosts is the server cost of each store call of one job's way
	// through admission on valkeystore, measured one call at a time.
	OpCosts []OpCost `json:"valkeystore_admission_op_costs,omitempty"`
}

// S10Row is one store: plain S1 and the same workload with admission.
type S10Row struct {
	Store string `json:"store"`
	// Plain is the store's S1 row of this run (PlainFrom "S1"), or, when S1
	// did not run the store, a plain S1 measured right before (PlainFrom
	// "S10").
	Plain     S1Result `json:"plain"`
	PlainFrom string   `json:"plain_from"`
	Admission S1Result `json:"with_admission"`
	// Ratio is the drain throughput with admission / plain (target ≥ 0.7).
	Ratio float64 `json:"throughput_ratio"`
	Error string  `json:"error,omitempty"`
}

const s10Note = "The S1 workload (same jobs, slots, 4 KiB payload, same store, same run) with every job submitted with " +
	"SubmitOpts{Budgets: [b], Quota: q, QuotaKey: \"k\"}: b has one dimension with the largest hard limit (nothing reports usage), " +
	"q admits 100,000 starts per second and 10,000 running per key. Every claim then goes through admission. The first one takes the grant path: the store grants the head, " +
	"the engine reads the budget (BudgetStatus), admits the execution to the quota bucket (QuotaAdmit) and claims the grant (ExecutionClaim). " +
	"After it, every claim-next and completion's next claim carries the budget and policy (model.InlineAdmission), and on a store that reaches " +
	"every partition in one step (memstore, standalone Valkey/Redis) the store checks the budget, admits and claims in that step. " +
	"Each lease end queues the quota slot in the partition's release outbox, which the engine drains (QuotaRelease, QuotaReleaseAck)"

// ---- S11: keyed quota rate accuracy ----

// S11Result is the rate a keyed quota admits per key, against its limit.
type S11Result struct {
	Note    string   `json:"note"`
	Keys    int      `json:"keys"`
	Rate    int      `json:"rate_per_key_per_sec"`
	Workers int      `json:"workers"`
	Secs    float64  `json:"run_seconds"`
	Warmup  float64  `json:"warmup_seconds"`
	Rows    []S11Row `json:"rows"`
}

// S11Row is one store's run.
type S11Row struct {
	Store string    `json:"store"`
	Error string    `json:"error,omitempty"`
	Keys  []KeyRate `json:"keys"`
	// MaxDev is the largest |rate − limit| / limit over the keys (target
	// ≤ 2 %).
	MaxDev  float64 `json:"max_abs_deviation"`
	MinRate float64 `json:"min_rate"`
	MaxRate float64 `json:"max_rate"`
	// Started counts handler starts over the run (all keys).
	Started int `json:"started"`
	// CallsPerStart is store calls per started job: the blocks and the
	// unblock scanner's passes a refused start costs.
	CallsPerStart map[string]float64 `json:"store_calls_per_start"`
	OtherCPU      float64            `json:"other_cpu_share"`
}

// KeyRate is one key's admitted rate.
type KeyRate struct {
	Key string `json:"key"`
	// Started is every handler start of the key; Measured the starts the
	// rate is computed over (after the warm-up, phase-aligned).
	Started  int     `json:"started"`
	Measured int     `json:"measured"`
	Rate     float64 `json:"rate_per_sec"`
	Dev      float64 `json:"deviation"`
}

type s11Config struct {
	Duration, Warmup time.Duration
	Keys, Rate       int
	Workers          int
}

const s11Note = "One quota policy {Rate: 10, Window: 1 s} (no concurrency cap, no jitter) attached to every job with QuotaKey key-00 … key-19; " +
	"16 Workers × MaxConcurrent 1, engine scanners at defaults. Each key starts with 2 × rate jobs queued and every handler start submits " +
	"a replacement for its key, so every key always has jobs waiting. The admitted rate of a key is taken from its handler starts after " +
	"the warm-up: (j − i) / (t_j − t_i) with i the first start after the warm-up and j − i the largest multiple of the rate that fits, " +
	"so the estimate covers whole windows (a sliding-window quota admits in bursts of up to Rate); deviation = rate / limit − 1"

// runS11 runs the keyed quota on memstore and, when addrs is set, on
// valkeystore at addrs.
func runS11(ctx context.Context, addrs []string, c s11Config) S11Result {
	res := S11Result{Note: s11Note, Keys: c.Keys, Rate: c.Rate, Workers: c.Workers, Secs: c.Duration.Seconds(), Warmup: c.Warmup.Seconds()}
	res.Rows = append(res.Rows, runS11Store(ctx, "memstore", nil, c))
	if addrs != nil {
		res.Rows = append(res.Rows, runS11Store(ctx, "valkey", addrs, c))
	}
	return res
}

func runS11Store(ctx context.Context, name string, addrs []string, c s11Config) (row S11Row) {
	row.Store = name
	fail := func(err error) S11Row {
		row.Error = err.Error()
		logf("  S11 %s: %v", name, err)
		return row
	}
	base, closeStore, err := openStore(addrs)
	if err != nil {
		return fail(err)
	}
	defer closeStore()
	as, ok := base.(model.AdmissionStore)
	bl, ok2 := base.(model.Blocker)
	if !ok || !ok2 {
		return fail(fmt.Errorf("%T has no budgets and quotas", base))
	}
	cs := newCountingStore(base, nil)
	engine := flowfabric.New(newAdmCountingStore(cs, as, bl), nil)
	q, _, err := engine.CreateQuota(ctx, flowfabric.QuotaSpec{Rate: c.Rate, Window: time.Second})
	if err != nil {
		return fail(err)
	}
	if err := engine.Start(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = engine.Stop(context.Background()) }()
	keys := make([]string, c.Keys)
	opts := make([]*flowfabric.SubmitOpts, c.Keys)
	for k := range keys {
		keys[k] = fmt.Sprintf("key-%02d", k)
		opts[k] = &flowfabric.SubmitOpts{Quota: q, QuotaKey: keys[k]}
	}
	submit := func(k int) error {
		var p [2]byte
		binary.BigEndian.PutUint16(p[:], uint16(k))
		_, err := engine.SubmitRaw(ctx, benchKind, p[:], opts[k])
		return err
	}
	// the backlog: 2 × rate per key, then one replacement per start
	if err := parallelDo(c.Keys*2*c.Rate, 16, func(i int) error { return submit(i % c.Keys) }); err != nil {
		return fail(err)
	}
	var mu sync.Mutex
	starts := make([][]time.Time, c.Keys)
	var feeding atomic.Bool
	feeding.Store(true)
	refill := make(chan int, c.Keys*c.Rate*int(c.Duration/time.Second+10))
	var submitErr atomic.Pointer[error]
	var feeders sync.WaitGroup
	for range 4 {
		feeders.Add(1)
		go func() {
			defer feeders.Done()
			for k := range refill {
				if err := submit(k); err != nil && ctx.Err() == nil {
					submitErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	h := func(_ context.Context, t *flowfabric.TaskInfo) error {
		now := time.Now()
		if len(t.Payload) != 2 {
			return flowfabric.Permanent(fmt.Errorf("payload of %d bytes", len(t.Payload)))
		}
		k := int(binary.BigEndian.Uint16(t.Payload))
		mu.Lock()
		starts[k] = append(starts[k], now)
		mu.Unlock()
		if feeding.Load() {
			select {
			case refill <- k:
			default:
			}
		}
		return nil
	}
	calls0 := cs.snapshot()
	cont := snapContention()
	var workers []*flowfabric.Worker
	for i := range c.Workers {
		w := flowfabric.NewWorker(engine, &flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("s11-%d", i)), MaxConcurrent: 1})
		if err := w.HandleRaw(benchKind, h); err != nil {
			return fail(err)
		}
		if err := w.Start(ctx); err != nil {
			return fail(err)
		}
		workers = append(workers, w)
	}
	sleep(ctx, c.Duration)
	feeding.Store(false)
	mu.Lock()
	snap := make([][]time.Time, c.Keys)
	for k := range starts {
		snap[k] = slices.Clone(starts[k])
	}
	mu.Unlock()
	row.OtherCPU = cont.otherShare()
	calls1 := cs.snapshot()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	for _, w := range workers {
		_ = w.Stop(stopCtx)
	}
	cancel()
	close(refill)
	feeders.Wait()
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	if e := submitErr.Load(); e != nil {
		return fail(fmt.Errorf("refill: %w", *e))
	}
	var first time.Time
	for _, ts := range snap {
		row.Started += len(ts)
		if len(ts) > 0 && (first.IsZero() || ts[0].Before(first)) {
			first = ts[0]
		}
	}
	row.CallsPerStart, _ = callsDelta(calls0, calls1, float64(max(row.Started, 1)))
	cutoff := first.Add(c.Warmup)
	row.MinRate = math.Inf(1)
	for k, ts := range snap {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		kr := keyRate(keys[k], ts, cutoff, c.Rate)
		row.Keys = append(row.Keys, kr)
		if kr.Measured == 0 {
			return fail(fmt.Errorf("%s: %d starts, too few after the %v warm-up to cover a window", keys[k], kr.Started, c.Warmup))
		}
		row.MaxDev = max(row.MaxDev, math.Abs(kr.Dev))
		row.MinRate = min(row.MinRate, kr.Rate)
		row.MaxRate = max(row.MaxRate, kr.Rate)
	}
	return row
}

// keyRate is the admitted rate over whole windows of starts after cutoff:
// (j − i) / (t_j − t_i), i the first start at or after cutoff, j − i the
// largest multiple of rate.
func keyRate(key string, ts []time.Time, cutoff time.Time, rate int) KeyRate {
	kr := KeyRate{Key: key, Started: len(ts)}
	i, _ := slices.BinarySearchFunc(ts, cutoff, func(a, b time.Time) int { return a.Compare(b) })
	if i >= len(ts) {
		return kr
	}
	n := (len(ts) - 1 - i) / rate * rate
	if n == 0 {
		return kr
	}
	j := i + n
	kr.Measured = n
	kr.Rate = float64(n) / ts[j].Sub(ts[i]).Seconds()
	kr.Dev = kr.Rate/float64(rate) - 1
	return kr
}
