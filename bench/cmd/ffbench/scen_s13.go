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
	BesidePairs int      `json:"beside_s1_pairs"`
	Rows        []S13Row `json:"rows"`
	// FeedNotRun says why the completion-feed latency was not measured.
	FeedNotRun string `json:"completion_feed_not_run"`
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
	// TailCalls and TailFrames are the tailing reader's TailStream calls
	// and the frames they returned (tailed runs only).
	TailCalls  int     `json:"tail_calls,omitempty"`
	TailFrames int     `json:"tail_frames_read,omitempty"`
	OtherCPU   float64 `json:"other_cpu_share"`
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
	Pairs      int
}

const s13Note = "The streams-and-feeds issue calls this scenario S8; S8 (flows) already exists here, so it is S13. " +
	"Append throughput: 16 Workers × MaxConcurrent 1 each claim one execution; once all 16 handlers run they are released together and each appends " +
	"its frames (type \"token\", 256-byte payload) with TaskInfo.AppendFrame as fast as it can, one call after the other; frames/s = every frame / " +
	"(the last append's return − the release). Durable and best-effort frames are separate runs, each on a fresh store after a GC, and the durable run " +
	"is repeated while a reader loops Engine.TailStream (default Limit 100) over the first execution's stream; the three runs alternate by round " +
	"(their order rotates). Tail latency: one handler appends a frame, pauses 10–40 ms, appends the next (durable); a reader waiting in TailStream " +
	"from its cursor takes the time when TailStream returns the frame; latency = the time just before AppendFrame → that return; on valkeystore the " +
	"handler also times a PING on the store's client before each frame, after its own 10–40 ms gap. S1 beside appends: plain S1 and S1 with the " +
	"appenders, back to back in pairs (order alternating), each on a fresh store; the median pair ratio is reported. The engine's store is the " +
	"bench's call-counting wrapper, forwarding model.StreamStore and model.StreamNotifier"

const s13FeedNotRun = "completion feeds are not built yet (the streams-and-feeds issue's feeds come later); nothing to measure"

// s13Kind is the kind of S13's executions.
const s13Kind flowfabric.Kind = "s13_frames"

// s13FramesLane is the lane of the appenders beside S1.
const s13FramesLane model.LaneID = "s13-frames"

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

var (
	_ model.StreamStore    = (*streamCountingStore)(nil)
	_ model.StreamNotifier = (*streamCountingStore)(nil)
	_ model.WorkNotifier   = (*streamCountingStore)(nil)
	_ model.LeaseNotifier  = (*streamCountingStore)(nil)
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
		TailFrames: c.TailFrames, BesideRate: c.BesideRate, BesidePairs: c.Pairs, FeedNotRun: s13FeedNotRun}
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
		logf("  S13 %s round %d: durable %.0f frames/s, best-effort %.0f frames/s, durable with a tail %.0f frames/s (the tail read %d frames in %d calls)",
			name, round+1, plain[round].fps, best[round].fps, tailed[round].fps, tailed[round].tailFrames, tailed[round].tailCalls)
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
	return row
}

// s13Round is one append-throughput run.
type s13Round struct {
	frames     int
	fps        float64
	calls      []time.Duration
	storeCalls map[string]int64 // delta over the appending
	ws         windowStats
	tailCalls  int
	tailFrames int
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
		a.TailFrames += r.tailFrames
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

	// the reader tails the first stream from its start until it has
	// every frame (or is stopped after the writers)
	rctx, stopReader := context.WithCancel(ctx)
	readerDone := make(chan struct{})
	defer func() { stopReader(); <-readerDone }()
	var readerErr error
	var tailCalls, tailFrames int // the reader's until readerDone
	if tailed {
		go func() {
			defer close(readerDone)
			o := &flowfabric.StreamReadOpts{MaxWait: 5 * time.Second}
			for o.After < uint64(c.Frames) {
				p, err := engine.TailStream(rctx, running[0].id, running[0].attempt, o)
				if err != nil {
					if rctx.Err() == nil {
						readerErr = err
					}
					return
				}
				tailCalls++
				tailFrames += len(p.Frames)
				o.After = p.Next
				if p.Done {
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
	r.tailCalls, r.tailFrames = tailCalls, tailFrames
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
	f := s.ffSystem
	f.comp = newCounter()
	var base model.Store
	if f.addrs == nil {
		base = memstore.New(nil)
	} else {
		if err := f.probe().flushAll(); err != nil {
			return err
		}
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: f.addrs, DisableCache: true})
		if err != nil {
			return err
		}
		f.client = c
		vs, err := valkeystore.New(c, nil)
		if err != nil {
			c.Close()
			f.client = nil
			return err
		}
		f.vs, base = vs, vs
	}
	f.store = newCountingStore(base, f.comp)
	st, err := newStreamCountingStore(f.store)
	if err != nil {
		f.close()
		return err
	}
	f.engine = flowfabric.New(st, nil)
	if err := f.engine.Start(ctx); err != nil {
		f.close()
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
