package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// benchKind is the kind of the bench's no-op jobs.
const benchKind flowfabric.Kind = "ffbench.noop"

// benchLane is the bench's default lane. It is one fixed name rather than
// a fresh one per run because valkeystore keeps every lane it has seen in
// its partition's lane index (I:lanes) even once the lane is empty: a
// fixed name leaves at most that one entry behind, however many runs. The
// bench refuses a lane in use, so it never mixes with real work.
const benchLane = "ffbench"

// stallTimeout ends a bench in which no job completed for this long (the
// server stopped answering, the lane was paused, ...).
const stallTimeout = 30 * time.Second

// benchConfig is the bench's flags.
type benchConfig struct {
	jobs, workers, payload, batch, submitters int
	lane                                      string
	keep                                      bool
}

// benchLatency is the latency percentiles of the bench's document, in
// milliseconds.
type benchLatency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// benchReport is the bench's document.
type benchReport struct {
	Addr         string  `json:"addr"`
	Namespace    string  `json:"namespace"`
	Lane         string  `json:"lane"`
	Jobs         int     `json:"jobs"`
	Workers      int     `json:"workers"`
	WorkerShape  string  `json:"worker_shape"`
	PayloadBytes int     `json:"payload_bytes"`
	Batch        int     `json:"batch"`
	Submitters   int     `json:"submitters"`
	Completed    int     `json:"completed"`
	WallSeconds  float64 `json:"wall_seconds"`
	JobsPerSec   float64 `json:"jobs_per_sec"`
	SubmitSecs   float64 `json:"submit_seconds"`
	SubmitPerSec float64 `json:"submit_per_sec"`
	// LatencyMS is from the SubmitMany call that submitted a job to its
	// handler's return, in milliseconds.
	LatencyMS benchLatency `json:"latency_ms"`
	Kept      bool         `json:"kept"`
	Deleted   int          `json:"deleted"`
}

func benchCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	var bc benchConfig
	fs.IntVar(&bc.jobs, "jobs", 10000, "no-op jobs to submit and run")
	fs.IntVar(&bc.workers, "workers", 16, "Workers, each running one job at a time (MaxConcurrent 1)")
	fs.IntVar(&bc.payload, "payload", 64, "payload `bytes` of each job, 8 to 1048576 (the first 8 carry the submit time)")
	fs.IntVar(&bc.batch, "batch", 100, "jobs per SubmitMany call (1-1000)")
	fs.IntVar(&bc.submitters, "submitters", 4, "goroutines submitting batches at once")
	fs.StringVar(&bc.lane, "lane", benchLane, "the lane to run on: it must hold no execution, have no live worker and not be paused")
	fs.BoolVar(&bc.keep, "keep", false, "keep the executions of a finished run (default: delete them; an interrupted or failed run always deletes them)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("bench takes no arguments, got %q", args)
		}
		switch {
		case bc.jobs < 1 || bc.jobs > 10_000_000:
			return usagef("-jobs: want 1-10000000, got %d", bc.jobs)
		case bc.workers < 1 || bc.workers > 1024:
			return usagef("-workers: want 1-1024, got %d", bc.workers)
		case bc.payload < 8 || bc.payload > model.MaxPayloadBytes:
			return usagef("-payload: want 8-%d bytes, got %d", model.MaxPayloadBytes, bc.payload)
		case bc.batch < 1 || bc.batch > 1000:
			return usagef("-batch: want 1-1000, got %d", bc.batch)
		case bc.submitters < 1 || bc.submitters > 256:
			return usagef("-submitters: want 1-256, got %d", bc.submitters)
		}
		lane, err := model.ParseLaneID(bc.lane)
		if err != nil {
			return fmt.Errorf("-lane %q: %w", bc.lane, err)
		}
		if err := c.benchLaneFree(ctx, lane); err != nil {
			return err
		}
		return c.bench(ctx, bc, lane)
	}
}

// benchLaneFree refuses a lane that holds executions (in any namespace),
// is served by a live worker or is paused: the bench never mixes with
// real work.
func (c *cli) benchLaneFree(ctx context.Context, lane flowfabric.LaneID) error {
	cs, err := c.engine.Counts(ctx, &flowfabric.CountOpts{Lane: lane})
	if err != nil {
		return err
	}
	if cs.Total > 0 {
		return usagef("bench: lane %s holds %d executions: the bench runs only on a lane of its own (a run with -keep? flowfabric delete -find -lane %s -yes; or pass another -lane)", lane, cs.Total, lane)
	}
	ls, err := c.engine.ListLanes(ctx)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if l.Lane == lane && l.Workers > 0 {
			return usagef("bench: lane %s is served by %d live workers: the bench runs only on a lane of its own (pass another -lane)", lane, l.Workers)
		}
	}
	st, err := c.engine.LaneState(ctx, lane)
	if err != nil {
		return err
	}
	if st.Paused {
		return usagef("bench: lane %s is paused", lane)
	}
	return nil
}

// benchRun is the state one bench shares between its goroutines.
type benchRun struct {
	cfg  benchConfig
	base time.Time // payloads carry the submit time as an offset from it

	completed atomic.Int64
	failed    atomic.Int64
	submitted atomic.Int64
	done      chan struct{} // closed when every job completed or failed
	doneOnce  sync.Once
	doneAt    atomic.Int64 // offset from base of the last handler's return

	mu        sync.Mutex
	latencies []time.Duration
	ids       []flowfabric.ExecutionID
}

func (r *benchRun) finishOne(failed bool) {
	var n int64
	if failed {
		n = r.failed.Add(1) + r.completed.Load()
	} else {
		n = r.completed.Add(1) + r.failed.Load()
	}
	if n >= int64(r.cfg.jobs) {
		r.doneOnce.Do(func() {
			r.doneAt.Store(int64(time.Since(r.base)))
			close(r.done)
		})
	}
}

// handle is the no-op handler: it records the job's latency.
func (r *benchRun) handle(_ context.Context, t *flowfabric.TaskInfo) error {
	if len(t.Payload) < 8 {
		return flowfabric.Permanent(fmt.Errorf("payload of %d bytes: not the bench's", len(t.Payload)))
	}
	lat := time.Since(r.base) - time.Duration(binary.BigEndian.Uint64(t.Payload))
	r.mu.Lock()
	r.latencies = append(r.latencies, lat)
	r.mu.Unlock()
	r.finishOne(false)
	return nil
}

// submit submits every job, cfg.submitters batches at a time, and returns
// when all are submitted or one call failed.
func (r *benchRun) submit(ctx context.Context, e *flowfabric.Engine, lane flowfabric.LaneID) error {
	starts := make(chan int)
	errs := make(chan error, r.cfg.submitters)
	var wg sync.WaitGroup
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := &flowfabric.SubmitOpts{Lane: lane, RetryPolicy: flowfabric.NoRetries()}
	for range r.cfg.submitters {
		wg.Go(func() {
			for start := range starts {
				n := min(r.cfg.batch, r.cfg.jobs-start)
				batch := make([]flowfabric.SubmitParams, n)
				at := uint64(time.Since(r.base))
				for i := range batch {
					p := make([]byte, r.cfg.payload)
					binary.BigEndian.PutUint64(p, at)
					batch[i] = flowfabric.SubmitParams{Kind: benchKind, Payload: p, Opts: opts}
				}
				cctx, ccancel := context.WithTimeout(sctx, callTimeout)
				res, err := e.SubmitMany(cctx, batch)
				ccancel()
				r.mu.Lock()
				for _, s := range res {
					r.ids = append(r.ids, s.ID)
				}
				r.mu.Unlock()
				r.submitted.Add(int64(len(res)))
				if err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
feed:
	for start := 0; start < r.cfg.jobs; start += r.cfg.batch {
		select {
		case starts <- start:
		case <-sctx.Done():
			break feed
		}
	}
	close(starts)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

// bench runs the bench on lane: workers first, then the submissions; it
// waits for every job, stops the workers and deletes what it created
// (unless -keep on a finished run).
func (c *cli) bench(ctx context.Context, bc benchConfig, lane flowfabric.LaneID) (err error) {
	r := &benchRun{cfg: bc, base: time.Now(), done: make(chan struct{}),
		latencies: make([]time.Duration, 0, bc.jobs), ids: make([]flowfabric.ExecutionID, 0, bc.jobs)}
	var workers []*flowfabric.Worker
	stopWorkers := func() {
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
				defer cancel()
				_ = w.Stop(sctx) // a failed deregistration expires with the worker's TTL
			})
		}
		wg.Wait()
		workers = nil
	}
	cleaned := false
	defer func() {
		stopWorkers()
		if cleaned || (bc.keep && err == nil) {
			return
		}
		if _, cerr := c.benchCleanup(ctx, lane, r.idList()); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	for i := range bc.workers {
		w := flowfabric.NewWorker(c.engine, &flowfabric.WorkerConfig{
			WorkerID: model.WorkerID(fmt.Sprintf("ffbench-%d", i)), Lanes: []flowfabric.LaneID{lane}, MaxConcurrent: 1,
			OnError: func(context.Context, *flowfabric.TaskInfo, *flowfabric.AttemptError) { r.finishOne(true) },
		})
		if err := w.HandleRaw(benchKind, r.handle); err != nil {
			return err
		}
		if err := w.Start(ctx); err != nil {
			return err
		}
		workers = append(workers, w)
	}

	if !c.g.json {
		_, _ = fmt.Fprintf(c.stderr, "bench: submitting %d no-op jobs on lane %s, %d workers (%dx1), %d-byte payloads, against %s\n",
			bc.jobs, lane, bc.workers, bc.workers, bc.payload, c.g.addr)
	}
	prog := newProgress(c.stderr, "bench", bc.jobs)
	// the clock starts with the first submission (base is set before the
	// workers start, so their handlers read it without a race)
	t0 := time.Since(r.base)
	submitDone := make(chan error, 1)
	var submitAt atomic.Int64
	// the submitters get their own cancel so that a run that ends early
	// (interrupt, stall, failed submission) stops them and waits for them
	// before the cleanup: a Submit already past its context check would
	// otherwise land after the cleanup counted the lane empty
	sctx, stopSubmit := context.WithCancel(ctx)
	defer stopSubmit()
	go func() {
		err := r.submit(sctx, c.engine, lane)
		submitAt.Store(int64(time.Since(r.base)))
		submitDone <- err
	}()
	tick := 100 * time.Millisecond
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	lastDone, lastChange := 0, time.Now()
	var runErr error
wait:
	for {
		select {
		case <-r.done:
			break wait
		case serr := <-submitDone:
			if serr != nil {
				runErr = fmt.Errorf("bench: submitting: %w", serr)
				break wait
			}
			submitDone = nil
		case <-ctx.Done():
			runErr = ctx.Err()
			break wait
		case <-ticker.C:
			done := int(r.completed.Load() + r.failed.Load())
			prog.advance(done, int(r.failed.Load()))
			if done != lastDone {
				lastDone, lastChange = done, time.Now()
			} else if time.Since(lastChange) > stallTimeout {
				runErr = fmt.Errorf("bench: no job finished for %s (%d of %d done, %d submitted)", stallTimeout, done, bc.jobs, r.submitted.Load())
				break wait
			}
		}
	}
	prog.advance(int(r.completed.Load()+r.failed.Load()), int(r.failed.Load()))
	prog.finish()
	if runErr != nil {
		stopSubmit()
		if submitDone != nil {
			<-submitDone
		}
		if errors.Is(runErr, context.Canceled) {
			runErr = fmt.Errorf("bench interrupted after %d of %d jobs: %w", r.completed.Load(), bc.jobs, runErr)
		}
		return runErr
	}
	if submitDone != nil {
		if serr := <-submitDone; serr != nil { // every job ran: the submissions ended
			return fmt.Errorf("bench: submitting: %w", serr)
		}
	}
	stopWorkers()

	wall := time.Duration(r.doneAt.Load()) - t0
	subm := time.Duration(submitAt.Load()) - t0
	rep := benchReport{Addr: c.g.addr, Namespace: string(c.engine.Namespace()), Lane: string(lane), Jobs: bc.jobs,
		Workers: bc.workers, WorkerShape: fmt.Sprintf("%dx1", bc.workers), PayloadBytes: bc.payload, Batch: bc.batch,
		Submitters: bc.submitters, Completed: int(r.completed.Load()), WallSeconds: wall.Seconds(),
		JobsPerSec: rate(bc.jobs, wall), SubmitSecs: subm.Seconds(), SubmitPerSec: rate(bc.jobs, subm),
		LatencyMS: latencyMS(r.latencies), Kept: bc.keep}
	if n := r.failed.Load(); n > 0 {
		return fmt.Errorf("bench: %d of %d no-op jobs failed", n, bc.jobs)
	}
	// every handler returned; the store must have every completion
	cs, err := c.engine.Counts(ctx, &flowfabric.CountOpts{Lane: lane})
	if err != nil {
		return err
	}
	if got := cs.ByState[flowfabric.PublicCompleted]; got != int64(bc.jobs) || cs.Total != int64(bc.jobs) {
		return fmt.Errorf("bench: the lane holds %d executions, %d completed, after %d jobs ran", cs.Total, got, bc.jobs)
	}
	if !bc.keep {
		n, err := c.benchCleanup(ctx, lane, r.idList())
		cleaned = true
		if err != nil {
			return err
		}
		rep.Deleted = n
	}
	if c.g.json {
		return c.printJSON(rep)
	}
	return c.printBench(&rep)
}

func (r *benchRun) idList() []flowfabric.ExecutionID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// benchCleanup deletes the bench's executions (cancelling first the ones
// not terminal), then any other execution left on the lane (a submission
// whose result was lost to an interruption). It runs after an interrupt:
// a second one stops it.
func (c *cli) benchCleanup(ctx context.Context, lane flowfabric.LaneID, ids []flowfabric.ExecutionID) (int, error) {
	cctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt, syscall.SIGTERM)
	defer stop()
	deleted := 0
	for pass := 0; ; pass++ {
		if len(ids) > 0 {
			n, err := c.benchDelete(cctx, ids)
			deleted += n
			if err != nil {
				return deleted, c.leftover(lane, err)
			}
		}
		cs, err := c.engine.Counts(cctx, &flowfabric.CountOpts{Lane: lane})
		switch {
		case err != nil:
			return deleted, c.leftover(lane, err)
		case cs.Total == 0:
			return deleted, nil
		case pass > 0:
			return deleted, c.leftover(lane, fmt.Errorf("%d executions are still on the lane", cs.Total))
		}
		if ids, err = c.findAll(cctx, flowfabric.FindOpts{Lane: lane}); err != nil {
			return deleted, c.leftover(lane, err)
		}
	}
}

func (c *cli) leftover(lane flowfabric.LaneID, err error) error {
	return fmt.Errorf("bench: cleaning up lane %s: %w (finish with: flowfabric cancel -find -lane %s -yes; flowfabric delete -find -lane %s -yes)",
		lane, err, lane, lane)
}

// benchDelete deletes ids from several goroutines with the delete
// action's progress line; an execution not terminal is cancelled first.
func (c *cli) benchDelete(ctx context.Context, ids []flowfabric.ExecutionID) (int, error) {
	prog := newProgress(c.stderr, "delete", len(ids))
	next := make(chan flowfabric.ExecutionID)
	type outcome struct{ err error }
	outs := make(chan outcome)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for id := range next {
				err := c.deleteOne(ctx, id)
				if errors.Is(err, flowfabric.ErrNotFound) {
					err = nil // gone already
				}
				outs <- outcome{err}
			}
		})
	}
	go func() {
		defer close(next)
		for _, id := range ids {
			select {
			case next <- id:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(outs) }()
	done, failed := 0, 0
	var first error
	for o := range outs {
		done++
		if o.err != nil {
			failed++
			if first == nil {
				first = o.err
			}
		}
		prog.advance(done, failed)
	}
	prog.finish()
	if first == nil && done < len(ids) {
		first = ctx.Err()
	}
	if first != nil {
		return done - failed, fmt.Errorf("deleting %d of %d failed (first: %w)", len(ids)-(done-failed), len(ids), first)
	}
	return done, nil
}

// deleteOne deletes id, cancelling it first if it is not terminal.
func (c *cli) deleteOne(ctx context.Context, id flowfabric.ExecutionID) error {
	call := func(f func(context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return f(cctx)
	}
	del := func(cctx context.Context) error { return c.engine.Delete(cctx, id) }
	err := call(del)
	if !errors.Is(err, flowfabric.ErrNotTerminal) {
		return err
	}
	if err := call(func(cctx context.Context) error { return c.engine.Cancel(cctx, id, "flowfabric bench cleanup") }); err != nil &&
		!errors.Is(err, flowfabric.ErrNotFound) {
		return err
	}
	return call(del)
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(n)/d.Seconds()*10) / 10
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func latencyMS(lat []time.Duration) benchLatency {
	s := slices.Clone(lat)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	var m time.Duration
	if len(s) > 0 {
		m = s[len(s)-1]
	}
	return benchLatency{P50: ms(percentile(s, 50)), P90: ms(percentile(s, 90)), P99: ms(percentile(s, 99)), Max: ms(m)}
}

func (c *cli) printBench(r *benchReport) error {
	ms := func(v float64) string { return fmt.Sprintf("%.2f ms", v) }
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"server", r.Addr},
		{"lane", r.Lane},
		{"jobs", fmt.Sprintf("%d no-op, %d-byte payloads", r.Jobs, r.PayloadBytes)},
		{"workers", fmt.Sprintf("%d (%s: Workers x MaxConcurrent)", r.Workers, r.WorkerShape)},
		{"submit", fmt.Sprintf("%.0f jobs/s (%d submitters, SubmitMany of %d; %.3fs)", r.SubmitPerSec, r.Submitters, r.Batch, r.SubmitSecs)},
		{"throughput", fmt.Sprintf("%.0f jobs/s (%d jobs in %.3fs)", r.JobsPerSec, r.Completed, r.WallSeconds)},
		{"latency p50", ms(r.LatencyMS.P50)},
		{"latency p90", ms(r.LatencyMS.P90)},
		{"latency p99", ms(r.LatencyMS.P99)},
		{"latency max", ms(r.LatencyMS.Max)},
	}
	if r.Kept {
		rows = append(rows, [2]string{"executions", "kept (-keep): flowfabric delete -find -lane " + r.Lane + " -yes removes them"})
	} else {
		rows = append(rows, [2]string{"executions", fmt.Sprintf("%d deleted", r.Deleted)})
	}
	for _, row := range rows {
		_, _ = fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}
