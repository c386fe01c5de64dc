package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// S13Result is attempt output streams (the streams-and-feeds issue calls
// this scenario S8; S8 already measures flows here, so it is S13): how
// fast handlers append frames, how soon a tail sees a frame, whether a
// tail slows the writers, and what frames appended on another lane cost
// S1's drain.
type S13Result struct {
	Note string `json:"note"`
	// Executions append FramesEach frames of PayloadBytes each, as fast as
	// they can, Rounds times per mode (the median round is reported).
	Executions   int `json:"executions"`
	FramesEach   int `json:"frames_per_execution"`
	PayloadBytes int `json:"payload_bytes"`
	Rounds       int `json:"rounds"`
	// TailFrames is the number of timed frames of the tail-latency run.
	TailFrames int `json:"tail_frames"`
	// BesideRate is each of the Executions best-effort appenders' pace
	// (frames/s) beside S1.
	BesideRate float64 `json:"beside_s1_frames_per_sec_per_execution"`
	// BesidePairs is how many pairs of plain S1 and S1 beside appends
	// were measured per store.
	BesidePairs int `json:"beside_s1_pairs"`
	// FeedSamples is the number of timed completions of the
	// completion-feed latency run; FeedPairs how many pairs of S1 with the
	// store's feeds off and on were measured per store.
	FeedSamples int      `json:"feed_samples"`
	FeedPairs   int      `json:"feed_cost_pairs"`
	Rows        []S13Row `json:"rows"`
}

// S13Row is one store.
type S13Row struct {
	Store string `json:"store"`
	Error string `json:"error,omitempty"`
	// Durable and BestEffort are the append throughput of each mode;
	// DurableTailed is Durable again while a reader tails one of the
	// streams with Engine.TailStream.
	Durable       S13Append `json:"append_durable"`
	BestEffort    S13Append `json:"append_best_effort"`
	DurableTailed S13Append `json:"append_durable_tailed"`
	// TailedRatio is DurableTailed.FramesPerSec / Durable.FramesPerSec
	// (the bench's target: ≥ 0.95, "writers are not slowed").
	TailedRatio float64 `json:"tailed_over_plain_frames_per_sec"`
	Tail        S13Tail `json:"tail_latency"`
	// Beside is S1 with best-effort appenders on another lane (filled in
	// by run, which has the plain S1 rows).
	Beside *S13Beside `json:"s1_beside_appends,omitempty"`
	// Feed is handler return → completion event at a subscriber.
	Feed S13Feed `json:"completion_feed"`
	// FeedCost is S1 on the store built with both feeds against S1
	// without (filled in by run).
	FeedCost *S13FeedCost `json:"s1_feeds_on,omitempty"`
}

// S13Append is the append throughput of one mode on one store.
type S13Append struct {
	Mode   string `json:"mode"`
	Tailed bool   `json:"tailed"`
	// Frames is every frame appended over the rounds; FramesPerSec the
	// median round's frames / (last append's return − the common start),
	// and RoundsPerSec every round's.
	Frames       int       `json:"frames"`
	FramesPerSec float64   `json:"frames_per_sec"`
	RoundsPerSec []float64 `json:"frames_per_sec_by_round"`
	// AppendCall is one TaskInfo.AppendFrame call's duration.
	AppendCall Latency `json:"append_call"`
	// StoreCallsPerFrame counts model.Store calls per frame over the
	// appending (background calls such as lease renewals included);
	// the server counters are INFO commandstats over the same window
	// (valkeystore only): commands (script-internal included), scripts
	// and the time in scripts, per frame.
	StoreCallsPerFrame map[string]float64 `json:"store_calls_per_frame"`
	ServerCmdsPerFrame float64            `json:"server_cmds_per_frame,omitempty"`
	ScriptsPerFrame    float64            `json:"scripts_per_frame,omitempty"`
	ScriptUsecPerFrame float64            `json:"server_script_usec_per_frame,omitempty"`
	TopCommands        []string           `json:"top_commands,omitempty"`
	// ClientCPUUsecPerFrame is this process's CPU per frame.
	ClientCPUUsecPerFrame float64 `json:"client_cpu_usec_per_frame"`
	// TailReader says how the tailing reader follows the stream (tailed
	// runs only): one Engine.Frames iteration. TailCalls is its StreamRead
	// calls (pages read, empty ones included), TailWatches its
	// WatchStream calls (stream subscriptions) and TailFrames the frames it
	// got, over every round.
	TailReader  string  `json:"tail_reader,omitempty"`
	TailCalls   int     `json:"tail_stream_reads,omitempty"`
	TailWatches int     `json:"tail_watches,omitempty"`
	TailFrames  int     `json:"tail_frames_read,omitempty"`
	OtherCPU    float64 `json:"other_cpu_share"`
}

// S13Tail is append → tail latency after idle gaps on one store.
type S13Tail struct {
	Error  string `json:"error,omitempty"`
	Frames int    `json:"frames"`
	// Latency is the time just before TaskInfo.AppendFrame is called →
	// Engine.TailStream returning the frame to a reader that was waiting
	// for it (10–40 ms idle gap before every append).
	Latency    Latency `json:"append_to_tail"`
	AppendCall Latency `json:"append_call"`
	// Ping is PING round trips on the store's own client, back to back
	// after the run; PingAfterGap one before each frame, after its own
	// 10–40 ms idle gap (then another gap before the frame), so both see
	// the same host load (valkeystore only).
	Ping         Latency `json:"ping_rtt"`
	PingAfterGap Latency `json:"ping_rtt_after_idle"`
	// Ratio is Latency.P50 / PingAfterGap.P50 (target ≤ 2; valkeystore).
	Ratio float64 `json:"tail_p50_over_ping_after_idle_p50,omitempty"`
	// TailCalls counts the reader's TailStream calls; StoreCallsPerFrame
	// and ServerCmdsPerFrame are per timed frame over the whole run (the
	// reader's re-subscription per TailStream call included).
	TailCalls          int                `json:"tail_calls"`
	StoreCallsPerFrame map[string]float64 `json:"store_calls_per_frame"`
	ServerCmdsPerFrame float64            `json:"server_cmds_per_frame,omitempty"`
	TopCommands        []string           `json:"top_commands,omitempty"`
	OtherCPU           float64            `json:"other_cpu_share"`
}

// S13Beside is S1 with best-effort appenders on another lane, against
// plain S1 on the same store, measured in pairs back to back (a shared
// host's load drifts over minutes; the S1 row of the run is not reused).
type S13Beside struct {
	Pairs []S13Pair `json:"pairs"`
	// Ratio is the median of the pairs' ratios (target ≥ 0.95).
	Ratio float64 `json:"throughput_ratio"`
	Error string  `json:"error,omitempty"`
}

// S13Pair is one plain S1 and one S1 beside appends, one right after the
// other (First says which ran first; the order alternates by pair).
type S13Pair struct {
	First  string   `json:"first"`
	Plain  S1Result `json:"plain"`
	Beside S1Result `json:"with_appends"`
	// Ratio is Beside's drain throughput / Plain's.
	Ratio float64 `json:"throughput_ratio"`
	// FramesPerSec is the appenders' pace over the whole S1 run (seed,
	// drain and latency stream); FramesPerJob the frames appended per S1
	// job over the drain (StreamAppend calls in Beside's store calls).
	FramesPerSec float64 `json:"frames_per_sec"`
	FramesPerJob float64 `json:"frames_per_drained_job"`
	Error        string  `json:"error,omitempty"`
}

// s13Beside measures c.Pairs pairs of plain S1 and S1 beside appends on
// store; plain and beside run one S1 each (beside also returns the system
// that measured it).
func s13Beside(ctx context.Context, store string, c s13Config, plain func() (S1Result, bool), beside func() (S1Result, *framesBeside, bool)) *S13Beside {
	b := &S13Beside{}
	var ratios []float64
	for i := range c.Pairs {
		if ctx.Err() != nil {
			break
		}
		p := S13Pair{First: "plain"}
		var fb *framesBeside
		ok1, ok2 := false, false
		if i%2 == 0 {
			p.Plain, ok1 = plain()
			p.Beside, fb, ok2 = beside()
		} else {
			p.First = "with_appends"
			p.Beside, fb, ok2 = beside()
			p.Plain, ok1 = plain()
		}
		if !ok1 || !ok2 {
			b.Error = "a system could not be made (see Not run)"
			return b
		}
		if fb != nil {
			p.FramesPerSec = fb.framesPerSec()
			if err := fb.appendErr(); err != nil {
				p.Error = "appenders: " + err.Error()
			}
		}
		p.FramesPerJob = p.Beside.StoreCallsPerJob["StreamAppend"]
		switch {
		case p.Plain.Error != "":
			p.Error = "plain: " + p.Plain.Error
		case p.Beside.Error != "":
			p.Error = p.Beside.Error
		case p.Error == "" && p.Plain.Throughput > 0:
			p.Ratio = p.Beside.Throughput / p.Plain.Throughput
			ratios = append(ratios, p.Ratio)
			logf("  S13 %s pair %d: S1 beside %.0f best-effort frames/s (%.3f per drained job): %.0f vs %.0f jobs/s plain (%.2f ×)",
				store, i+1, p.FramesPerSec, p.FramesPerJob, p.Beside.Throughput, p.Plain.Throughput, p.Ratio)
		}
		if p.Error != "" && b.Error == "" {
			b.Error = fmt.Sprintf("pair %d: %s", i+1, p.Error)
		}
		b.Pairs = append(b.Pairs, p)
	}
	if b.Error == "" && len(ratios) > 0 {
		slices.Sort(ratios)
		b.Ratio = ratios[(len(ratios)-1)/2]
	}
	return b
}

type s13Config struct {
	Executions int
	Frames     int
	Payload    int
	Rounds     int
	TailFrames int
	BesideRate float64
	// Pairs is the number of back-to-back pairs of S1 beside appends and
	// of S1 with feeds on and off, each.
	Pairs int
	// FeedSamples is the number of timed completions of the feed latency.
	FeedSamples int
}

const s13Note = "The streams-and-feeds issue calls this scenario S8; S8 (flows) already exists here, so it is S13. " +
	"Append throughput: 16 Workers × MaxConcurrent 1 each claim one execution; once all 16 handlers run they are released together and each appends " +
	"its frames (type \"token\", 256-byte payload) with TaskInfo.AppendFrame as fast as it can, one call after the other; frames/s = every frame / " +
	"(the last append's return − the release). Durable and best-effort frames are separate runs, each on a fresh store after a GC, and the durable run " +
	"is repeated while a reader follows the first execution's stream with one Engine.Frames iteration (default Limit 100); the three runs alternate by round " +
	"(their order rotates). Tail latency: one handler appends a frame, pauses 10–40 ms, appends the next (durable); a reader waiting in TailStream " +
	"from its cursor takes the time when TailStream returns the frame; latency = the time just before AppendFrame → that return; on valkeystore the " +
	"handler also times a PING on the store's client before each frame, after its own 10–40 ms gap. S1 beside appends: plain S1 and S1 with the " +
	"appenders, back to back in pairs (order alternating), each on a fresh store; the median pair ratio is reported. The engine's store is the " +
	"bench's call-counting wrapper, forwarding model.StreamStore and model.StreamNotifier (and model.FeedStore, model.FeedNotifier and model.FeedEventNotifier in the feed " +
	"latency run). Completion-feed latency: a store built with Feeds{Completions: true}; a subscriber loops Engine.Subscribe from Engine.FeedHead in " +
	"its own goroutine, on a second Engine (not started: no scanners) on the same memstore, or on valkeystore on its own store and valkey-go client " +
	"against the same server, as another process would; the driver pauses 10–40 ms, submits a no-op job on a spread lane (each job on the partition " +
	"of its id: on a plain lane every job would share the lane's one partition), the one idle Worker (MaxConcurrent 1) runs it " +
	"and its handler takes the time as its last step; latency = that time → the subscriber's loop body has the completion event of that execution. " +
	"The driver waits for the event before the next sample (one untimed sample first). On valkeystore a PING on the subscriber's client, after its own " +
	"10–40 ms gap, precedes every sample. Beside it, as a diagnostic, a model-level reader on a third store and client watches the feed's notices " +
	"(model.FeedNotifier) and on each reads only the partition the notice names (model.FeedStore.FeedRead). Cost of feeds: plain S1 and S1 on the " +
	"store built with Feeds{Completions: true, Leases: true} (default length, nobody subscribed), back to back in pairs (order alternating), each on a " +
	"fresh store; the median pair ratio is reported"

// s13Kind is the kind of S13's executions.
const s13Kind flowfabric.Kind = "s13_frames"

// s13FramesLane is the lane of the appenders beside S1.
const s13FramesLane model.LaneID = "s13-frames"

// s13FeedLane is the spread lane of the feed-latency jobs.
const s13FeedLane model.LaneID = "s13-feed"

// s13Payload is every frame's payload.
func s13Payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// streamCountingStore is countingStore with the stream calls forwarded
// (and counted): countingStore embeds model.Store, which hides the
// optional interfaces the engine looks for.
type streamCountingStore struct {
	*countingStore
	ss model.StreamStore
}

func newStreamCountingStore(cs *countingStore) (*streamCountingStore, error) {
	ss, ok := cs.Store.(model.StreamStore)
	if !ok {
		return nil, fmt.Errorf("%T keeps no attempt streams (model.StreamStore)", cs.Store)
	}
	return &streamCountingStore{countingStore: cs, ss: ss}, nil
}

func (c *streamCountingStore) StreamAppend(ctx context.Context, p *model.StreamAppendParams) (*model.StreamAppendResult, error) {
	c.count("StreamAppend")
	return c.ss.StreamAppend(ctx, p)
}

func (c *streamCountingStore) StreamRead(ctx context.Context, p *model.StreamReadParams) (*model.StreamReadResult, error) {
	c.count("StreamRead")
	return c.ss.StreamRead(ctx, p)
}

func (c *streamCountingStore) StreamSummary(ctx context.Context, p *model.StreamSummaryParams) (*model.StreamSummaryResult, error) {
	c.count("StreamSummary")
	return c.ss.StreamSummary(ctx, p)
}

// WatchStream implements model.StreamNotifier when the wrapped store does
// (otherwise a tail re-reads every second, as the engine does without).
func (c *streamCountingStore) WatchStream(id model.ExecutionID, attempt int, f func()) func() {
	c.count("WatchStream")
	if n, ok := c.Store.(model.StreamNotifier); ok {
		return n.WatchStream(id, attempt, f)
	}
	return func() {}
}

// WatchStreamFrames implements model.StreamFrameNotifier: the stores'
// notices carry small frames, so a tail has them without a read. It
// counts as a WatchStream call.
func (c *streamCountingStore) WatchStreamFrames(id model.ExecutionID, attempt int, f func(*model.Frame)) func() {
	c.count("WatchStream")
	if n, ok := c.Store.(model.StreamFrameNotifier); ok {
		return n.WatchStreamFrames(id, attempt, f)
	}
	if n, ok := c.Store.(model.StreamNotifier); ok {
		return n.WatchStream(id, attempt, func() { f(nil) })
	}
	return func() {}
}

var (
	_ model.StreamStore         = (*streamCountingStore)(nil)
	_ model.StreamNotifier      = (*streamCountingStore)(nil)
	_ model.StreamFrameNotifier = (*streamCountingStore)(nil)
	_ model.WorkNotifier        = (*streamCountingStore)(nil)
	_ model.LeaseNotifier       = (*streamCountingStore)(nil)
)

// s13Store opens a fresh store (memstore when addrs is nil) wrapped for
// counting; client is the valkey client valkeystore uses (nil for
// memstore).
func s13Store(addrs []string) (cs *countingStore, st *streamCountingStore, client valkey.Client, closeFn func(), err error) {
	var base model.Store
	closeFn = func() {}
	if addrs == nil {
		base = memstore.New(nil)
	} else {
		if err := (&serverProbe{addrs: addrs}).flushAll(); err != nil {
			return nil, nil, nil, nil, err
		}
		client, err = valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		vs, err := valkeystore.New(client, nil)
		if err != nil {
			client.Close()
			return nil, nil, nil, nil, err
		}
		base = vs
		closeFn = func() { vs.Close(); client.Close() }
	}
	cs = newCountingStore(base, nil)
	st, err = newStreamCountingStore(cs)
	if err != nil {
		closeFn()
		return nil, nil, nil, nil, err
	}
	return cs, st, client, closeFn, nil
}

// runS13 measures append throughput (with and without a tail) and tail
// latency on memstore and, when addrs is set, on valkeystore at addrs.
// The S1-beside rows are added by run.
func runS13(ctx context.Context, addrs []string, c s13Config) S13Result {
	res := S13Result{Note: s13Note, Executions: c.Executions, FramesEach: c.Frames, PayloadBytes: c.Payload, Rounds: c.Rounds,
		TailFrames: c.TailFrames, BesideRate: c.BesideRate, BesidePairs: c.Pairs, FeedSamples: c.FeedSamples, FeedPairs: c.Pairs}
	res.Rows = append(res.Rows, runS13Store(ctx, "memstore", nil, c))
	if addrs != nil {
		res.Rows = append(res.Rows, runS13Store(ctx, "valkey", addrs, c))
	}
	return res
}

func runS13Store(ctx context.Context, name string, addrs []string, c s13Config) S13Row {
	row := S13Row{Store: name}
	var plain, best, tailed []s13Round
	for round := range c.Rounds {
		if ctx.Err() != nil {
			break
		}
		type run struct {
			mode   flowfabric.StreamMode
			tailed bool
			out    *[]s13Round
		}
		runs := []run{{flowfabric.StreamDurable, false, &plain}, {flowfabric.StreamBestEffort, false, &best}, {flowfabric.StreamDurable, true, &tailed}}
		// rotate the order by round, so no run always follows the same one
		for i := range runs {
			k := runs[(i+round)%len(runs)]
			r, err := s13AppendRound(ctx, addrs, c, k.mode, k.tailed)
			if err != nil {
				row.Error = fmt.Sprintf("%s round %d (tailed %v): %v", k.mode, round+1, k.tailed, err)
				logf("  S13 %s: %s", name, row.Error)
				return row
			}
			*k.out = append(*k.out, r)
		}
		logf("  S13 %s round %d: durable %.0f frames/s, best-effort %.0f frames/s, durable with a tail %.0f frames/s (the tail read %d frames in %d StreamRead calls, %d watch(es))",
			name, round+1, plain[round].fps, best[round].fps, tailed[round].fps, tailed[round].tailFrames, tailed[round].tailCalls, tailed[round].tailWatches)
	}
	row.Durable = s13Aggregate(string(flowfabric.StreamDurable), false, plain, addrs != nil)
	row.BestEffort = s13Aggregate(string(flowfabric.StreamBestEffort), false, best, addrs != nil)
	row.DurableTailed = s13Aggregate(string(flowfabric.StreamDurable), true, tailed, addrs != nil)
	if row.Durable.FramesPerSec > 0 {
		row.TailedRatio = row.DurableTailed.FramesPerSec / row.Durable.FramesPerSec
	}
	if ctx.Err() == nil {
		row.Tail = runS13Tail(ctx, name, addrs, c)
	}
	if ctx.Err() == nil {
		row.Feed = runS13Feed(ctx, name, addrs, c)
	}
	return row
}

// s13Round is one append-throughput run.
type s13Round struct {
	frames      int
	fps         float64
	calls       []time.Duration
	storeCalls  map[string]int64 // delta over the appending
	ws          windowStats
	tailCalls   int
	tailWatches int
	tailFrames  int
}

func s13Aggregate(mode string, tailed bool, rounds []s13Round, server bool) S13Append {
	a := S13Append{Mode: mode, Tailed: tailed}
	if len(rounds) == 0 {
		return a
	}
	var calls []time.Duration
	sc := map[string]int64{}
	var cmds cmdStats
	var clientCPU time.Duration
	var other float64
	for _, r := range rounds {
		a.Frames += r.frames
		a.RoundsPerSec = append(a.RoundsPerSec, r.fps)
		calls = append(calls, r.calls...)
		for k, v := range r.storeCalls {
			sc[k] += v
		}
		cmds = cmds.add(r.ws.Cmds)
		clientCPU += r.ws.ClientCPU
		other += r.ws.OtherCPU
		a.TailCalls += r.tailCalls
		a.TailWatches += r.tailWatches
		a.TailFrames += r.tailFrames
	}
	if tailed {
		a.TailReader = "one Engine.Frames iteration per round"
	}
	sorted := slices.Clone(a.RoundsPerSec)
	slices.Sort(sorted)
	a.FramesPerSec = sorted[(len(sorted)-1)/2]
	a.AppendCall = summarize(calls)
	n := float64(a.Frames)
	a.StoreCallsPerFrame, _ = callsDelta(nil, sc, n)
	a.ClientCPUUsecPerFrame = float64(clientCPU.Microseconds()) / n
	a.OtherCPU = other / float64(len(rounds))
	if server {
		a.ServerCmdsPerFrame = float64(cmds.total()) / n
		a.ScriptsPerFrame = float64(cmds.scripts()) / n
		a.ScriptUsecPerFrame = float64(cmds.scriptUsec()) / n
		a.TopCommands = cmds.top(6, n)
	}
	return a
}

// s13Workers starts n Workers × MaxConcurrent 1 on lane with h for s13Kind.
func s13Workers(ctx context.Context, engine *flowfabric.Engine, prefix string, n int, lane model.LaneID,
	h func(context.Context, *flowfabric.TaskInfo) error) ([]*flowfabric.Worker, error) {
	var ws []*flowfabric.Worker
	for i := range n {
		cfg := &flowfabric.WorkerConfig{WorkerID: model.WorkerID(fmt.Sprintf("%s-%d", prefix, i)), MaxConcurrent: 1}
		if lane != "" {
			cfg.Lanes = []model.LaneID{lane}
		}
		w := flowfabric.NewWorker(engine, cfg)
		if err := w.HandleRaw(s13Kind, h); err != nil {
			return ws, err
		}
		if err := w.Start(ctx); err != nil {
			return ws, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func stopWorkers(ws []*flowfabric.Worker) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { _ = w.Stop(ctx) })
	}
	wg.Wait()
}

type s13Running struct {
	id      model.ExecutionID
	attempt int
}

// s13AppendRound runs one append-throughput measurement on a fresh store.
func s13AppendRound(ctx context.Context, addrs []string, c s13Config, mode flowfabric.StreamMode, tailed bool) (s13Round, error) {
	var r s13Round
	cs, st, _, closeStore, err := s13Store(addrs)
	if err != nil {
		return r, err
	}
	defer closeStore()
	engine := flowfabric.New(st, nil)
	if err := engine.Start(ctx); err != nil {
		return r, err
	}
	defer func() { _ = engine.Stop(context.Background()) }()

	payload := s13Payload(c.Payload)
	arrived := make(chan s13Running, c.Executions)
	release := make(chan struct{})
	type done struct {
		end   time.Time
		calls []time.Duration
		err   error
	}
	finished := make(chan done, c.Executions)
	opts := &flowfabric.FrameOpts{Mode: mode}
	h := func(ctx context.Context, t *flowfabric.TaskInfo) error {
		select {
		case arrived <- s13Running{t.ID, t.Attempt}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-release:
		case <-ctx.Done():
			finished <- done{err: ctx.Err()}
			return ctx.Err()
		}
		calls := make([]time.Duration, 0, c.Frames)
		for range c.Frames {
			t0 := time.Now()
			if _, err := t.AppendFrame(ctx, "token", payload, opts); err != nil {
				finished <- done{err: err}
				return flowfabric.Permanent(err)
			}
			calls = append(calls, time.Since(t0))
		}
		finished <- done{end: time.Now(), calls: calls}
		return nil
	}
	workers, err := s13Workers(ctx, engine, "s13-append", c.Executions, "", h)
	defer stopWorkers(workers)
	if err != nil {
		return r, err
	}
	for i := range c.Executions {
		if _, err := engine.SubmitRaw(ctx, s13Kind, []byte{byte(i)}, nil); err != nil {
			return r, err
		}
	}
	var running []s13Running
	for range c.Executions {
		select {
		case a := <-arrived:
			running = append(running, a)
		case <-time.After(30 * time.Second):
			return r, fmt.Errorf("%d of %d handlers started within 30 s", len(running), c.Executions)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}

	// the reader follows the first stream from its start with one Frames
	// iteration until it has every frame (or is stopped after the writers)
	rctx, stopReader := context.WithCancel(ctx)
	readerDone := make(chan struct{})
	defer func() { stopReader(); <-readerDone }()
	var readerErr error
	var tailFrames int // the reader's until readerDone
	reads0 := cs.snapshot()
	if tailed {
		go func() {
			defer close(readerDone)
			for _, err := range engine.Frames(rctx, running[0].id, running[0].attempt, nil) {
				if err != nil {
					if rctx.Err() == nil {
						readerErr = err
					}
					return
				}
				if tailFrames++; tailFrames == c.Frames {
					return
				}
			}
		}()
		sleep(ctx, 50*time.Millisecond) // the reader is waiting for the first frame
	} else {
		close(readerDone)
	}

	// the previous runs' stores are garbage now: collect them before, not
	// during, the measurement (memstore's runs take a few ten ms)
	runtime.GC()
	w := openWindow(probeOf(addrs))
	calls0 := cs.snapshot()
	start := time.Now()
	close(release)
	var end time.Time
	timeout := time.NewTimer(max(2*time.Minute, time.Duration(c.Executions*c.Frames/100)*time.Second))
	defer timeout.Stop()
	for range c.Executions {
		select {
		case d := <-finished:
			if d.err != nil {
				return r, fmt.Errorf("append: %w", d.err)
			}
			if d.end.After(end) {
				end = d.end
			}
			r.calls = append(r.calls, d.calls...)
		case <-timeout.C:
			return r, fmt.Errorf("appending: %w", errTimeout)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.ws = w.close()
	r.storeCalls = subCalls(cs.snapshot(), calls0)
	r.frames = c.Executions * c.Frames
	r.fps = float64(r.frames) / end.Sub(start).Seconds()
	if tailed {
		if err := waitFor(ctx, readerDone, 10*time.Second); err != nil {
			stopReader()
			<-readerDone
			return r, fmt.Errorf("the tail had %d of %d frames 10 s after the writers: %w", tailFrames, c.Frames, err)
		}
	}
	<-readerDone
	if readerErr != nil {
		return r, fmt.Errorf("tail: %w", readerErr)
	}
	if tailed {
		// only the reader reads or watches a stream
		reads := subCalls(cs.snapshot(), reads0)
		r.tailCalls, r.tailWatches, r.tailFrames = int(reads["StreamRead"]), int(reads["WatchStream"]), tailFrames
	}
	return r, nil
}

func probeOf(addrs []string) *serverProbe {
	if addrs == nil {
		return nil
	}
	return &serverProbe{addrs: addrs}
}

// subCalls returns b − a per method, dropping zeros.
func subCalls(b, a map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range b {
		if d := v - a[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// runS13Tail measures append → tail latency after idle gaps, and on
// valkeystore the PING round trip of the store's client.
func runS13Tail(ctx context.Context, name string, addrs []string, c s13Config) (res S13Tail) {
	n := c.TailFrames
	res.Frames = n
	fail := func(err error) S13Tail {
		res.Error = err.Error()
		logf("  S13 %s tail: %v", name, err)
		return res
	}
	cs, st, client, closeStore, err := s13Store(addrs)
	if err != nil {
		return fail(err)
	}
	defer closeStore()
	engine := flowfabric.New(st, nil)
	if err := engine.Start(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = engine.Stop(context.Background()) }()

	payload := s13Payload(c.Payload)
	gap := func() { sleep(ctx, 10*time.Millisecond+time.Duration(rand.IntN(31))*time.Millisecond) }
	starts := make([]time.Time, n)
	arrivals := make([]time.Time, n)
	var appendCalls, cold []time.Duration
	finished := make(chan error, 1)
	var ran atomic.Bool
	h := func(ctx context.Context, t *flowfabric.TaskInfo) error {
		if !ran.CompareAndSwap(false, true) {
			return flowfabric.Permanent(errors.New("the tail handler ran twice"))
		}
		err := func() error {
			// an untimed first frame opens the stream (sequence 1)
			if _, err := t.AppendFrame(ctx, "start", nil, nil); err != nil {
				return err
			}
			for i := range n {
				if client != nil {
					// a PING after the same idle gap, interleaved with the
					// frames so both see the same host load
					gap()
					t := time.Now()
					if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
						return err
					}
					cold = append(cold, time.Since(t))
				}
				gap()
				t0 := time.Now()
				starts[i] = t0
				seq, err := t.AppendFrame(ctx, "token", payload, nil)
				appendCalls = append(appendCalls, time.Since(t0))
				if err != nil {
					return err
				}
				if seq != uint64(i+2) {
					return fmt.Errorf("frame %d has sequence %d, want %d", i, seq, i+2)
				}
			}
			return nil
		}()
		finished <- err
		if err != nil {
			return flowfabric.Permanent(err)
		}
		return nil
	}
	workers, err := s13Workers(ctx, engine, "s13-tail", 1, "", h)
	defer stopWorkers(workers)
	if err != nil {
		return fail(err)
	}
	sleep(ctx, 200*time.Millisecond) // let the worker settle idle

	w := openWindow(probeOf(addrs))
	calls0 := cs.snapshot()
	cont := snapContention()
	sub, err := engine.SubmitRaw(ctx, s13Kind, nil, nil)
	if err != nil {
		return fail(err)
	}
	rctx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	readerDone := make(chan struct{})
	var readerErr error
	var tailCalls int // the reader's until readerDone
	go func() {
		defer close(readerDone)
		o := &flowfabric.StreamReadOpts{}
		last := uint64(n + 1)
		for o.After < last {
			p, err := engine.TailStream(rctx, sub.ID, 0, o)
			now := time.Now()
			if err != nil {
				readerErr = err
				return
			}
			tailCalls++
			for _, f := range p.Frames {
				if k := int(f.Sequence) - 2; k >= 0 && k < n {
					arrivals[k] = now
				}
			}
			o.After = p.Next
			if p.Done {
				return
			}
		}
	}()
	limit := time.Duration(n)*100*time.Millisecond + time.Minute
	select {
	case err := <-finished:
		if err != nil {
			return fail(fmt.Errorf("handler: %w", err))
		}
	case <-time.After(limit):
		return fail(fmt.Errorf("the handler did not finish within %v", limit))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if err := waitFor(ctx, readerDone, 30*time.Second); err != nil {
		return fail(fmt.Errorf("the tail did not reach the last frame: %w", err))
	}
	ws := w.close()
	res.OtherCPU = cont.otherShare()
	res.TailCalls = tailCalls
	if readerErr != nil {
		return fail(fmt.Errorf("tail: %w", readerErr))
	}
	res.StoreCallsPerFrame, _ = callsDelta(calls0, cs.snapshot(), float64(n))
	if addrs != nil {
		res.ServerCmdsPerFrame = float64(ws.Cmds.total()) / float64(n)
		res.TopCommands = ws.Cmds.top(12, float64(n))
	}
	var lats []time.Duration
	for i := range n {
		if arrivals[i].IsZero() {
			return fail(fmt.Errorf("frame %d (sequence %d) never reached the tail", i, i+2))
		}
		lats = append(lats, arrivals[i].Sub(starts[i]))
	}
	res.Latency, res.AppendCall = summarize(lats), summarize(appendCalls)

	if client != nil {
		// PING on the store's client back to back (the PINGs after a gap
		// were taken between the frames)
		var pings []time.Duration
		for range 200 {
			t := time.Now()
			if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
				return fail(err)
			}
			pings = append(pings, time.Since(t))
		}
		res.Ping = summarize(pings)
		res.PingAfterGap = summarize(cold)
		if res.PingAfterGap.P50 > 0 {
			res.Ratio = res.Latency.P50 / res.PingAfterGap.P50
		}
	}
	return res
}

// ---- S1 beside appends ----

// framesBeside is the flowfabric system of S1 (same store, engine and
// workers) plus Executions executions on another lane, each appending
// best-effort frames at a steady pace from open to close.
type framesBeside struct {
	*ffSystem
	c       s13Config
	payload []byte

	stop      chan struct{}
	handlers  sync.WaitGroup
	appenders []*flowfabric.Worker
	frames    atomic.Int64
	err       atomic.Pointer[error]
	from, to  time.Time
}

func newFramesBeside(ff *ffSystem, c s13Config) *framesBeside {
	ff.name += "+frames"
	return &framesBeside{ffSystem: ff, c: c, payload: s13Payload(c.Payload)}
}

func (s *framesBeside) Describe() string {
	return s.ffSystem.Describe() + fmt.Sprintf("; beside it %d executions on lane %q (%d more Workers × MaxConcurrent 1, the same engine) each append a %d-byte best-effort frame every %v from before the seed until after the latency stream",
		s.c.Executions, s13FramesLane, s.c.Executions, s.c.Payload, s.period())
}

func (s *framesBeside) period() time.Duration {
	return time.Duration(float64(time.Second) / s.c.BesideRate)
}

// open is ffSystem.open (without admission) on the stream-forwarding
// wrapper, then starts the appenders and waits until all of them append.
func (s *framesBeside) open(ctx context.Context) error {
	s.ffSystem.wrap = func(cs *countingStore) (model.Store, error) { return newStreamCountingStore(cs) }
	if err := s.ffSystem.open(ctx); err != nil {
		return err
	}
	if err := s.startAppenders(ctx); err != nil {
		s.close()
		return err
	}
	return nil
}

func (s *framesBeside) startAppenders(ctx context.Context) error {
	s.stop = make(chan struct{})
	stop := s.stop
	arrived := make(chan struct{}, s.c.Executions)
	period := s.period()
	opts := &flowfabric.FrameOpts{Mode: flowfabric.StreamBestEffort}
	h := func(ctx context.Context, t *flowfabric.TaskInfo) error {
		s.handlers.Add(1)
		defer s.handlers.Done()
		arrived <- struct{}{}
		// spread the appenders over the period
		sleep(ctx, time.Duration(rand.Int64N(int64(period))))
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			if _, err := t.AppendFrame(ctx, "token", s.payload, opts); err != nil {
				if !errors.Is(err, context.Canceled) {
					s.err.CompareAndSwap(nil, &err)
				}
				return flowfabric.Permanent(err)
			}
			s.frames.Add(1)
		}
	}
	ws, err := s13Workers(ctx, s.engine, "s13-frames", s.c.Executions, s13FramesLane, h)
	s.appenders = ws
	if err != nil {
		return err
	}
	for i := range s.c.Executions {
		if _, err := s.engine.SubmitRaw(ctx, s13Kind, []byte{byte(i)}, &flowfabric.SubmitOpts{Lane: s13FramesLane}); err != nil {
			return err
		}
	}
	for i := range s.c.Executions {
		if err := waitFor(ctx, arrived, 30*time.Second); err != nil {
			return fmt.Errorf("%d of %d appenders started: %w", i, s.c.Executions, err)
		}
	}
	s.from = time.Now()
	return nil
}

func (s *framesBeside) close() {
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
		s.to = time.Now()
		s.handlers.Wait()
	}
	stopWorkers(s.appenders)
	s.appenders = nil
	s.ffSystem.close()
}

// appendErr is the first append that failed, if any.
func (s *framesBeside) appendErr() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}

// framesPerSec is every appender's frames / the time they appended.
func (s *framesBeside) framesPerSec() float64 {
	if s.to.After(s.from) {
		return float64(s.frames.Load()) / s.to.Sub(s.from).Seconds()
	}
	return 0
}

// ---- completion-feed latency ----

// S13Feed is handler return → completion event at a subscriber on one
// store, after idle gaps.
type S13Feed struct {
	Error   string `json:"error,omitempty"`
	Samples int    `json:"samples"`
	// Subscriber says where the subscribing Engine runs.
	Subscriber string `json:"subscriber"`
	// Latency is the handler's last step (time taken just before it
	// returns) → the body of the subscriber's Engine.Subscribe loop has
	// the execution's completion event; ByQuarter is the same split by the
	// execution's partition (quarters of the partition range, in the
	// order Subscribe reads them).
	Latency   Latency   `json:"handler_return_to_event"`
	ByQuarter []Latency `json:"handler_return_to_event_by_partition_quarter"`
	// SubmitToEvent is the start of the SubmitRaw call → the same event
	// (wake, claim, the handler and the completion included).
	SubmitToEvent Latency `json:"submit_to_event"`
	// OnePartition is the diagnostic reader's: handler return → a
	// model-level reader that reads only the partition each notice names
	// has the event.
	OnePartition Latency `json:"handler_return_to_event_one_partition_reader"`
	// Ping, PingAfterGap and Ratio are as in S13Tail, on the subscriber's
	// client (valkeystore only); Ratio is Latency.P50 / PingAfterGap.P50
	// (target ≤ 2).
	Ping         Latency `json:"ping_rtt"`
	PingAfterGap Latency `json:"ping_rtt_after_idle"`
	Ratio        float64 `json:"event_p50_over_ping_after_idle_p50,omitempty"`
	// SubscriberCalls are the subscribing Engine's store calls per timed
	// sample; DriverCalls the driver's and worker's engine's.
	SubscriberCalls map[string]float64 `json:"subscriber_store_calls_per_sample"`
	DriverCalls     map[string]float64 `json:"driver_store_calls_per_sample"`
	// ServerCmdsPerSample counts every server command over the timed
	// samples (both engines, the diagnostic reader, the PINGs) per sample.
	ServerCmdsPerSample float64  `json:"server_cmds_per_sample,omitempty"`
	TopCommands         []string `json:"top_commands,omitempty"`
	OtherCPU            float64  `json:"other_cpu_share"`
}

// feedCountingStore is streamCountingStore with the feed calls forwarded
// (and counted).
type feedCountingStore struct {
	*streamCountingStore
	fs model.FeedStore
}

func newFeedCountingStore(cs *countingStore) (*feedCountingStore, error) {
	st, err := newStreamCountingStore(cs)
	if err != nil {
		return nil, err
	}
	fs, ok := cs.Store.(model.FeedStore)
	if !ok {
		return nil, fmt.Errorf("%T keeps no event feeds (model.FeedStore)", cs.Store)
	}
	return &feedCountingStore{streamCountingStore: st, fs: fs}, nil
}

func (c *feedCountingStore) FeedEnabled(k model.FeedKind) bool { return c.fs.FeedEnabled(k) }

func (c *feedCountingStore) FeedRead(ctx context.Context, p *model.FeedReadParams) (*model.FeedReadResult, error) {
	c.count("FeedRead")
	return c.fs.FeedRead(ctx, p)
}

// WatchFeed implements model.FeedNotifier when the wrapped store does.
func (c *feedCountingStore) WatchFeed(k model.FeedKind, f func(partition int)) func() {
	c.count("WatchFeed")
	if n, ok := c.Store.(model.FeedNotifier); ok {
		return n.WatchFeed(k, func(p int) {
			c.count("WatchFeed(notified)")
			f(p)
		})
	}
	return func() {}
}

// WatchFeedEvents implements model.FeedEventNotifier: with the wrapped
// store's events when it has them, else its plain notices.
func (c *feedCountingStore) WatchFeedEvents(k model.FeedKind, f func(partition int, ev *model.FeedEvent)) func() {
	c.count("WatchFeed")
	if n, ok := c.Store.(model.FeedEventNotifier); ok {
		return n.WatchFeedEvents(k, func(p int, ev *model.FeedEvent) {
			c.count("WatchFeed(notified)")
			f(p, ev)
		})
	}
	return c.WatchFeed(k, func(p int) { f(p, nil) })
}

var (
	_ model.FeedStore         = (*feedCountingStore)(nil)
	_ model.FeedNotifier      = (*feedCountingStore)(nil)
	_ model.FeedEventNotifier = (*feedCountingStore)(nil)
	_ model.StreamStore       = (*feedCountingStore)(nil)
)

// s13Valkey opens a valkeystore with feeds on its own client, emptying
// the server first when flush is set; closeFn closes both.
func s13Valkey(addrs []string, feeds model.Feeds, flush bool) (vs *valkeystore.Store, client valkey.Client, closeFn func(), err error) {
	if flush {
		if err := (&serverProbe{addrs: addrs}).flushAll(); err != nil {
			return nil, nil, nil, err
		}
	}
	client, err = valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return nil, nil, nil, err
	}
	vs, err = valkeystore.New(client, &valkeystore.Options{Feeds: feeds})
	if err != nil {
		client.Close()
		return nil, nil, nil, err
	}
	return vs, client, func() { vs.Close(); client.Close() }, nil
}

// s13Arrival is one completion event seen by a reader.
type s13Arrival struct {
	id model.ExecutionID
	at time.Time
}

// waitArrival takes arrivals from ch until id's, for at most d.
func waitArrival(ctx context.Context, ch <-chan s13Arrival, id model.ExecutionID, d time.Duration) (time.Time, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case a := <-ch:
			if a.id == id {
				return a.at, nil
			}
		case <-t.C:
			return time.Time{}, errTimeout
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// runS13Feed measures handler return → completion event at a subscriber
// after idle gaps, and on valkeystore PING on the subscriber's client.
func runS13Feed(ctx context.Context, name string, addrs []string, c s13Config) (res S13Feed) {
	n := c.FeedSamples
	res.Samples = n
	fail := func(err error) S13Feed {
		res.Error = err.Error()
		logf("  S13 %s feed: %v", name, err)
		return res
	}
	feeds := model.Feeds{Completions: true}
	// A: the driver's engine and worker; B: the subscriber's engine; C:
	// the diagnostic reader
	var baseA, baseB, baseC model.Store
	var pingClient valkey.Client
	if addrs == nil {
		m := memstore.New(&memstore.Options{Feeds: feeds})
		baseA, baseB, baseC = m, m, m
		res.Subscriber = "a second Engine (not started) on the same memstore, in its own goroutine"
	} else {
		var stores []model.Store
		for i := range 3 {
			vs, client, closeFn, err := s13Valkey(addrs, feeds, i == 0)
			if err != nil {
				return fail(err)
			}
			defer closeFn()
			stores = append(stores, vs)
			if i == 1 {
				pingClient = client
			}
		}
		baseA, baseB, baseC = stores[0], stores[1], stores[2]
		res.Subscriber = "a second Engine (not started) on its own valkeystore and valkey-go client, same server, in its own goroutine"
	}
	csA, csB := newCountingStore(baseA, nil), newCountingStore(baseB, nil)
	stA, err := newFeedCountingStore(csA)
	if err != nil {
		return fail(err)
	}
	stB, err := newFeedCountingStore(csB)
	if err != nil {
		return fail(err)
	}
	fsC, ok1 := baseC.(model.FeedStore)
	ntC, ok2 := baseC.(model.FeedNotifier)
	if !ok1 || !ok2 {
		return fail(fmt.Errorf("%T has no feed notices (model.FeedNotifier)", baseC))
	}
	engine := flowfabric.New(stA, nil)
	// a spread lane: every job lands on a partition of its own id, so the
	// samples cover every place in Subscribe's round over the partitions
	// (on a plain lane every job shares the lane's one partition)
	if err := engine.RegisterLane(s13FeedLane, flowfabric.LaneConfig{Spread: true}); err != nil {
		return fail(err)
	}
	if err := engine.Start(ctx); err != nil {
		return fail(err)
	}
	defer func() { _ = engine.Stop(context.Background()) }()
	sub := flowfabric.New(stB, nil)

	var mu sync.Mutex
	ends := map[model.ExecutionID]time.Time{}
	h := func(_ context.Context, t *flowfabric.TaskInfo) error {
		end := time.Now() // the handler's last step
		mu.Lock()
		ends[t.ID] = end
		mu.Unlock()
		return nil
	}
	workers, err := s13Workers(ctx, engine, "s13-feed", 1, s13FeedLane, h)
	defer stopWorkers(workers)
	if err != nil {
		return fail(err)
	}

	head, err := sub.FeedHead(ctx, flowfabric.FeedCompletions)
	if err != nil {
		return fail(err)
	}
	rctx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	subCh, oneCh := make(chan s13Arrival, 1024), make(chan s13Arrival, 1024)
	subDone, oneDone := make(chan struct{}), make(chan struct{})
	var subErr, oneErr error
	go func() {
		defer close(subDone)
		for ev, err := range sub.Subscribe(rctx, &flowfabric.SubscribeOpts{From: head}) {
			now := time.Now()
			if err != nil {
				if rctx.Err() == nil {
					subErr = err
				}
				return
			}
			select {
			case subCh <- s13Arrival{ev.Execution, now}:
			default:
			}
		}
	}()
	// the diagnostic reader: per notice, one FeedRead of its partition
	notes := make(chan int, 4096)
	stopWatch := ntC.WatchFeed(flowfabric.FeedCompletions, func(p int) {
		select {
		case notes <- p:
		default:
		}
	})
	defer stopWatch()
	go func() {
		defer close(oneDone)
		cur := make([]uint64, sub.Partitions())
		for p := range cur {
			cur[p] = head.Seq(p)
		}
		read := func(p int) error {
			for {
				r, err := fsC.FeedRead(rctx, &model.FeedReadParams{Feed: flowfabric.FeedCompletions, Partition: p, After: cur[p], Count: 100})
				if err != nil {
					return err
				}
				now := time.Now()
				for _, ev := range r.Events {
					cur[p] = ev.Seq
					select {
					case oneCh <- s13Arrival{ev.Execution, now}:
					default:
					}
				}
				if len(r.Events) < 100 {
					return nil
				}
			}
		}
		for {
			var p int
			select {
			case <-rctx.Done():
				return
			case p = <-notes:
			}
			var err error
			if p < 0 || p >= len(cur) {
				for q := range cur {
					if err = read(q); err != nil {
						break
					}
				}
			} else {
				err = read(p)
			}
			if err != nil {
				if rctx.Err() == nil {
					oneErr = err
				}
				return
			}
		}
	}()
	sleep(ctx, 200*time.Millisecond) // the subscriber waits, the worker idles

	gap := func() { sleep(ctx, 10*time.Millisecond+time.Duration(rand.IntN(31))*time.Millisecond) }
	var lats, ones, submits, cold []time.Duration
	quarters := make([][]time.Duration, 4)
	sample := func(timed bool) error {
		if pingClient != nil && timed {
			gap()
			t := time.Now()
			if err := pingClient.Do(ctx, pingClient.B().Ping().Build()).Error(); err != nil {
				return err
			}
			cold = append(cold, time.Since(t))
		}
		gap()
		t0 := time.Now()
		r, err := engine.SubmitRaw(ctx, s13Kind, nil, &flowfabric.SubmitOpts{Lane: s13FeedLane})
		if err != nil {
			return err
		}
		at, err := waitArrival(ctx, subCh, r.ID, 10*time.Second)
		if err != nil {
			select {
			case <-subDone:
				return fmt.Errorf("subscriber: %w", subErr)
			default:
			}
			return fmt.Errorf("the subscriber had no completion event for %v within 10 s: %w", r.ID, err)
		}
		one, err := waitArrival(ctx, oneCh, r.ID, 10*time.Second)
		if err != nil {
			select {
			case <-oneDone:
				return fmt.Errorf("one-partition reader: %w", oneErr)
			default:
			}
			return fmt.Errorf("the one-partition reader had no completion event for %v within 10 s: %w", r.ID, err)
		}
		mu.Lock()
		end := ends[r.ID]
		mu.Unlock()
		if end.IsZero() {
			return fmt.Errorf("%v completed without its handler's time", r.ID)
		}
		if timed {
			lats = append(lats, at.Sub(end))
			ones = append(ones, one.Sub(end))
			submits = append(submits, at.Sub(t0))
			q := min(3, 4*r.ID.Partition()/sub.Partitions())
			quarters[q] = append(quarters[q], at.Sub(end))
		}
		return nil
	}
	if err := sample(false); err != nil { // untimed: every subscription is up
		return fail(err)
	}
	w := openWindow(probeOf(addrs))
	a0, b0 := csA.snapshot(), csB.snapshot()
	cont := snapContention()
	for range n {
		if err := sample(true); err != nil {
			return fail(err)
		}
	}
	ws := w.close()
	res.OtherCPU = cont.otherShare()
	res.DriverCalls, _ = callsDelta(a0, csA.snapshot(), float64(n))
	res.SubscriberCalls, _ = callsDelta(b0, csB.snapshot(), float64(n))
	if addrs != nil {
		res.ServerCmdsPerSample = float64(ws.Cmds.total()) / float64(n)
		res.TopCommands = ws.Cmds.top(8, float64(n))
	}
	res.Latency, res.OnePartition, res.SubmitToEvent = summarize(lats), summarize(ones), summarize(submits)
	for _, q := range quarters {
		res.ByQuarter = append(res.ByQuarter, summarize(q))
	}
	if pingClient != nil {
		var pings []time.Duration
		for range 200 {
			t := time.Now()
			if err := pingClient.Do(ctx, pingClient.B().Ping().Build()).Error(); err != nil {
				return fail(err)
			}
			pings = append(pings, time.Since(t))
		}
		res.Ping, res.PingAfterGap = summarize(pings), summarize(cold)
		if res.PingAfterGap.P50 > 0 {
			res.Ratio = res.Latency.P50 / res.PingAfterGap.P50
		}
	}
	return res
}

// ---- the cost of feeds on S1 ----

// S13FeedCost is S1 on the store built with both feeds against S1
// without, measured in pairs back to back.
type S13FeedCost struct {
	Pairs []S13FeedPair `json:"pairs"`
	// Ratio is the median of the pairs' ratios (no target: with feeds off
	// nothing changes, with feeds on the cost is this).
	Ratio float64 `json:"throughput_ratio"`
	Error string  `json:"error,omitempty"`
}

// S13FeedPair is one S1 with feeds off and one with feeds on, one right
// after the other (First says which ran first; the order alternates).
type S13FeedPair struct {
	First string   `json:"first"`
	Off   S1Result `json:"feeds_off"`
	On    S1Result `json:"feeds_on"`
	// Ratio is On's drain throughput / Off's.
	Ratio float64 `json:"throughput_ratio"`
	Error string  `json:"error,omitempty"`
}

// s13FeedCost measures pairs pairs of S1 with the store's feeds off and
// on; off and on run one S1 each.
func s13FeedCost(ctx context.Context, store string, pairs int, off, on func() (S1Result, bool)) *S13FeedCost {
	fc := &S13FeedCost{}
	var ratios []float64
	for i := range pairs {
		if ctx.Err() != nil {
			break
		}
		p := S13FeedPair{First: "off"}
		ok1, ok2 := false, false
		if i%2 == 0 {
			p.Off, ok1 = off()
			p.On, ok2 = on()
		} else {
			p.First = "on"
			p.On, ok2 = on()
			p.Off, ok1 = off()
		}
		if !ok1 || !ok2 {
			fc.Error = "a system could not be made (see Not run)"
			return fc
		}
		switch {
		case p.Off.Error != "":
			p.Error = "feeds off: " + p.Off.Error
		case p.On.Error != "":
			p.Error = "feeds on: " + p.On.Error
		case p.Off.Throughput > 0:
			p.Ratio = p.On.Throughput / p.Off.Throughput
			ratios = append(ratios, p.Ratio)
			logf("  S13 %s feeds pair %d: S1 with both feeds %.0f vs %.0f jobs/s without (%.2f ×), script µs/job %.1f vs %.1f",
				store, i+1, p.On.Throughput, p.Off.Throughput, p.Ratio, p.On.ScriptUsecPerJob, p.Off.ScriptUsecPerJob)
		}
		if p.Error != "" && fc.Error == "" {
			fc.Error = fmt.Sprintf("pair %d: %s", i+1, p.Error)
		}
		fc.Pairs = append(fc.Pairs, p)
	}
	if fc.Error == "" && len(ratios) > 0 {
		slices.Sort(ratios)
		fc.Ratio = ratios[(len(ratios)-1)/2]
	}
	return fc
}

// s13AllFeeds is the store option of S1 with feeds on.
var s13AllFeeds = model.Feeds{Completions: true, Leases: true}

// feedsSystem is the flowfabric system of S1 on a store built with both
// feeds (the engine and workers as in S1; nobody subscribes).
type feedsSystem struct {
	*ffSystem
}

func newFeedsSystem(ff *ffSystem) *feedsSystem {
	ff.name += "+feeds"
	return &feedsSystem{ffSystem: ff}
}

func (s *feedsSystem) Describe() string {
	return s.ffSystem.Describe() + "; the store built with both event feeds (Feeds{Completions: true, Leases: true}, default length), nobody subscribed"
}

// open is ffSystem.open (without admission) on a store with feeds.
func (s *feedsSystem) open(ctx context.Context) error {
	s.ffSystem.feeds = s13AllFeeds
	return s.ffSystem.open(ctx)
}
