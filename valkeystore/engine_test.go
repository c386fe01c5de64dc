package valkeystore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// These tests run the engine, its workers and its scanners unchanged on
// valkeystore, the way several processes share one server: each "process"
// has its own valkey-go client, store and engine.

// ledger records, across processes, which handlers run and which
// completions the store accepted.
type ledger struct {
	mu        sync.Mutex
	running   map[model.ExecutionID]uint64 // epoch of the handler in flight
	overlaps  []string
	completes map[model.ExecutionID]int
}

func newLedger() *ledger {
	return &ledger{running: map[model.ExecutionID]uint64{}, completes: map[model.ExecutionID]int{}}
}

func (l *ledger) enter(id model.ExecutionID, epoch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, busy := l.running[id]; busy {
		l.overlaps = append(l.overlaps, fmt.Sprintf("%s: epoch %d started while epoch %d ran", id, epoch, other))
	}
	l.running[id] = epoch
}

func (l *ledger) exit(id model.ExecutionID, epoch uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[id] == epoch {
		delete(l.running, id)
	}
}

// countingStore counts the completions the store accepted (not replays).
type countingStore struct {
	*Store
	l *ledger
}

func (c countingStore) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	r, err := c.Store.ExecutionComplete(ctx, p)
	if err == nil && !r.Replayed {
		c.l.mu.Lock()
		c.l.completes[p.ID]++
		c.l.mu.Unlock()
	}
	return r, err
}

type job struct {
	N int `json:"n"`
}

func (job) Kind() string { return "job" }

// fastEngine is an engine with quick scanners, for wall-clock tests.
func fastEngine(t *testing.T, s model.Store) *flowfabric.Engine {
	t.Helper()
	fast := flowfabric.TimerConfig{Interval: 20 * time.Millisecond}
	e := flowfabric.New(s, &flowfabric.Config{Scanners: flowfabric.ScannerConfig{
		SweepInterval:     200 * time.Millisecond,
		LeaseExpiry:       flowfabric.LeaseExpiryConfig{TimerConfig: fast},
		DelayedPromoter:   fast,
		AttemptTimeout:    fast,
		ExecutionDeadline: fast,
		Unblock:           flowfabric.UnblockConfig{Interval: 50 * time.Millisecond},
	}})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

func startWorker(t *testing.T, e *flowfabric.Engine, cfg *flowfabric.WorkerConfig, l *ledger) *flowfabric.Worker {
	t.Helper()
	w := flowfabric.NewWorker(e, cfg)
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[job](func(ctx context.Context, task *flowfabric.Task[job]) error {
		l.enter(task.ID, task.LeaseEpoch)
		defer l.exit(task.ID, task.LeaseEpoch)
		for range 50 { // a little work, so handlers of both processes overlap in time
			runtime.Gosched()
		}
		return nil
	}))
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w
}

// Two processes race on the same lanes: every execution runs under one
// lease holder at a time, none is lost, none completes twice; crashed work
// left by a third party is recovered; the duplicate-instance guard holds
// across processes; and a submission in one process wakes an idle worker in
// the other without a polling delay.
func TestEnginesShareOneServer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		newClient := b.server(t)
		prefix := fmt.Sprintf("mp%d", prefixSeq.Add(1))
		l := newLedger()
		open := func() *flowfabric.Engine {
			s := newStoreWith(t, newClient(), &Options{Prefix: prefix})
			return fastEngine(t, countingStore{Store: s, l: l})
		}
		engA, engB := open(), open()
		lanes := []model.LaneID{"a", "b"}
		for i, e := range []*flowfabric.Engine{engA, engA, engB, engB} {
			startWorker(t, e, &flowfabric.WorkerConfig{
				WorkerID: model.WorkerID(fmt.Sprintf("w%d", i)), Lanes: lanes, MaxConcurrent: 4,
				LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond,
			}, l)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		// a dead third process claimed some work and will never finish it
		ghost := newStoreWith(t, newClient(), &Options{Prefix: prefix})
		var ghosted []model.ExecutionID
		for i := range 3 {
			r, err := engA.Submit(ctx, job{N: -i}, &flowfabric.SubmitOpts{Lane: "ghost"})
			if err != nil {
				t.Fatal(err)
			}
			c, err := ghost.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{
				Partition: r.ID.Partition(), Lane: "ghost", ScanLimit: 10,
				LeaseRequest: model.LeaseRequest{WorkerID: "ghost", WorkerInstanceID: "ghost-1",
					LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{9, byte(i)})), AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{8, byte(i)})),
					LeaseTTL: 300 * time.Millisecond},
				Now: time.Now(),
			})
			if err != nil || c.Claimed == nil {
				t.Fatalf("ghost claim: %v %+v", err, c)
			}
			ghosted = append(ghosted, r.ID)
		}
		startWorker(t, engB, &flowfabric.WorkerConfig{WorkerID: "rescuer", Lanes: []model.LaneID{"ghost"}}, l)

		var ids []model.ExecutionID
		for i := range 200 {
			e := engA
			if i%2 == 1 {
				e = engB
			}
			r, err := e.Submit(ctx, job{N: i}, &flowfabric.SubmitOpts{Lane: lanes[i%len(lanes)], Priority: i % 3})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		for _, id := range append(ids, ghosted...) {
			s, err := engB.Wait(ctx, id, 20*time.Millisecond)
			if err != nil {
				t.Fatalf("wait %s: %v", id, err)
			}
			if s.PublicState != model.PublicCompleted {
				t.Fatalf("%s ended %s (%s)", id, s.PublicState, s.FailureReason)
			}
		}
		for _, id := range ghosted {
			s, _ := engA.Describe(ctx, id)
			if s.ReclaimCount != 1 || s.TotalAttempts != 2 {
				t.Errorf("ghosted %s: reclaims %d attempts %d", id, s.ReclaimCount, s.TotalAttempts)
			}
		}

		// the duplicate-instance guard across processes
		dupCfg := &flowfabric.WorkerConfig{WorkerID: "dup", InstanceID: "dup-1", Lanes: []model.LaneID{"dup"}}
		startWorker(t, engA, dupCfg, l)
		w := flowfabric.NewWorker(engB, dupCfg)
		flowfabric.AddHandler(w, flowfabric.HandlerFunc[job](func(context.Context, *flowfabric.Task[job]) error { return nil }))
		if err := w.Start(ctx); !errors.Is(err, flowfabric.ErrDuplicateWorker) {
			t.Fatalf("second process with the same instance id: %v", err)
		}

		// an idle worker in B, polling once an hour, is woken by A's submissions
		startWorker(t, engB, &flowfabric.WorkerConfig{WorkerID: "sleeper", Lanes: []model.LaneID{"wake"}, PollInterval: time.Hour}, l)
		for i := range 5 {
			r, err := engA.Submit(ctx, job{N: i}, &flowfabric.SubmitOpts{Lane: "wake"})
			if err != nil {
				t.Fatal(err)
			}
			if s, err := engA.Wait(ctx, r.ID, 20*time.Millisecond); err != nil || s.PublicState != model.PublicCompleted {
				t.Fatalf("wake %d: %v %v", i, s, err)
			}
		}

		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.overlaps) > 0 {
			t.Fatalf("two lease holders at once:\n%v", l.overlaps)
		}
		for _, id := range append(ids, ghosted...) {
			if n := l.completes[id]; n != 1 {
				t.Errorf("%s: %d accepted completions", id, n)
			}
		}
	})
}

// With AOF (appendfsync always), the server is killed mid-run and
// restarted: no acknowledged submission or completion is lost, the scripts
// load themselves again, and the run finishes.
func TestEngineSurvivesServerRestart(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	l := newLedger()
	s := newStoreWith(t, newClient(t, srv.Addr()), nil)
	e := fastEngine(t, countingStore{Store: s, l: l})
	startWorker(t, e, &flowfabric.WorkerConfig{LeaseTTL: 2 * time.Second, PollInterval: 20 * time.Millisecond}, l)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var acked []model.ExecutionID
	submit := func(n int) {
		for i := range n {
			r, err := e.Submit(ctx, job{N: i}, nil)
			if err != nil {
				continue // not acknowledged: may or may not exist
			}
			acked = append(acked, r.ID)
		}
	}
	submit(400) // workers run these while they are submitted: the kill lands mid-run
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	completedBefore := make([]model.ExecutionID, 0, len(l.completes))
	for id := range l.completes {
		completedBefore = append(completedBefore, id)
	}
	l.mu.Unlock()
	before := len(acked)
	submit(5) // the server is down: these fail, and are not counted
	t.Logf("%d completions acknowledged before the kill; %d of 5 submissions acknowledged while down",
		len(completedBefore), len(acked)-before)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, id := range completedBefore {
		snap, err := waitDescribe(ctx, e, id)
		if err != nil {
			t.Fatal(err)
		}
		if snap.PublicState != model.PublicCompleted {
			t.Fatalf("acknowledged completion of %s lost: %s", id, snap.PublicState)
		}
	}
	submit(50)
	for _, id := range acked {
		snap, err := e.Wait(ctx, id, 10*time.Millisecond)
		if err != nil {
			t.Fatalf("acknowledged submission %s: %v", id, err)
		}
		if snap.PublicState != model.PublicCompleted {
			t.Fatalf("%s ended %s", id, snap.PublicState)
		}
	}
	if len(acked) < 450 {
		t.Fatalf("only %d submissions acknowledged", len(acked))
	}
}

// waitDescribe describes id, retrying while the client reconnects.
func waitDescribe(_ context.Context, e *flowfabric.Engine, id model.ExecutionID) (*model.ExecutionSnapshot, error) {
	var s *model.ExecutionSnapshot
	err := reconnected(func() (err error) {
		s, err = e.Describe(context.Background(), id)
		return err
	})
	return s, err
}

// An operator's cancel in one process reaches the handler running in
// another at once, over the lease notice, with a cause the handler can
// test; the lease (10 minutes, renewed after 6 minutes) plays no part.
func TestCancelReachesHandlerAcrossProcesses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		newClient := b.server(t)
		prefix := fmt.Sprintf("cancel%d", prefixSeq.Add(1))
		workerSide := fastEngine(t, newStoreWith(t, newClient(), &Options{Prefix: prefix}))
		operatorSide := fastEngine(t, newStoreWith(t, newClient(), &Options{Prefix: prefix}))
		started := make(chan model.ExecutionID, 1)
		cause := make(chan error, 1)
		w := flowfabric.NewWorker(workerSide, &flowfabric.WorkerConfig{Lanes: []model.LaneID{"c"}, LeaseTTL: 10 * time.Minute})
		flowfabric.AddHandler(w, flowfabric.HandlerFunc[job](func(ctx context.Context, task *flowfabric.Task[job]) error {
			started <- task.ID
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}))
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop(context.Background()) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a failing test
		defer cancel()
		r, err := operatorSide.Submit(ctx, job{N: 1}, &flowfabric.SubmitOpts{Lane: "c"})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the handler did not start")
		}
		if err := operatorSide.Cancel(ctx, r.ID, "no longer wanted"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-cause:
			if !errors.Is(err, flowfabric.ErrExecutionCancelled) || !errors.Is(err, flowfabric.ErrLeaseLost) {
				t.Fatalf("handler context cause = %v, want ErrExecutionCancelled and ErrLeaseLost", err)
			}
		case <-ctx.Done():
			t.Fatal("the cancel did not reach the handler")
		}
	})
}
