package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// The environment of a worker process (see startWorker).
const (
	envAddrs    = "CHAOS_ADDRS"
	envPrefix   = "CHAOS_PREFIX"
	envLedger   = "CHAOS_LEDGER"
	envInstance = "CHAOS_INSTANCE"
	envLeaseMS  = "CHAOS_LEASE_MS"
	// envScriptCalls is the worker's valkeystore.Options.ScriptCalls:
	// startWorker alternates the default (functions where the server has
	// them) and EVALSHA, so every drain runs both ways on the same keys.
	envScriptCalls = "CHAOS_SCRIPT_CALLS"
)

// flowLane is the spread lane the drain's flows run on.
const flowLane = model.LaneID("flow")

// jobWork is how long each job's handler works.
const jobWork = 20 * time.Millisecond

type job struct {
	N int `json:"n"`
	// Fanout: the job (a flow node) first awaits two child jobs, and
	// completes only if both completed.
	Fanout bool `json:"fanout,omitempty"`
}

func (job) Kind() string { return "job" }

// ledger appends one line per event to a file shared by every process:
// "<unix ns> <event> <execution> <epoch> <instance>". Each line is one
// write on an O_APPEND file, so lines of concurrent processes do not mix
// and a killed process loses nothing it wrote.
type ledger struct {
	mu   sync.Mutex
	f    *os.File
	inst string
}

func (l *ledger) log(event string, id model.ExecutionID, epoch uint64) {
	line := fmt.Sprintf("%d %s %s %d %s\n", time.Now().UnixNano(), event, id, epoch, l.inst)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(line); err != nil {
		panic(err)
	}
}

// ledgerStore logs every acknowledged (not replayed) completion.
type ledgerStore struct {
	*valkeystore.Store
	l *ledger
}

func (s ledgerStore) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	r, err := s.Store.ExecutionComplete(ctx, p)
	if err == nil && !r.Replayed {
		s.l.log("completed", p.ID, p.Fence.LeaseEpoch)
	}
	return r, err
}

// TestWorkerProcess is a worker process's main: the chaos tests start the
// test binary again with -test.run=^TestWorkerProcess$ and the environment
// above; run directly, it skips. It works until its stdin closes (then it
// stops cleanly) or it is killed.
func TestWorkerProcess(t *testing.T) {
	addrs := os.Getenv(envAddrs)
	if addrs == "" {
		t.Skip("run by the chaos tests as a worker process")
	}
	leaseMS, err := strconv.Atoi(os.Getenv(envLeaseMS))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(os.Getenv(envLedger), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	l := &ledger{f: f, inst: os.Getenv(envInstance)}
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: strings.Split(addrs, ","), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := valkeystore.New(c, &valkeystore.Options{
		Prefix:      os.Getenv(envPrefix),
		ScriptCalls: valkeystore.ScriptCalls(os.Getenv(envScriptCalls)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := newEngine(ledgerStore{Store: s, l: l}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w := flowfabric.NewWorker(e, &flowfabric.WorkerConfig{
		InstanceID:    model.WorkerInstanceID(l.inst),
		LeaseTTL:      time.Duration(leaseMS) * time.Millisecond,
		PollInterval:  50 * time.Millisecond,
		MaxConcurrent: 4,
		DrainTimeout:  time.Second,
		Lanes:         []model.LaneID{model.DefaultLane, flowLane},
	})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[job](func(ctx context.Context, task *flowfabric.Task[job]) error {
		l.log("start", task.ID, task.LeaseEpoch)
		// "end" as the handler returns, whatever it returns: before the
		// completion or failure that releases a quota slot
		defer l.log("end", task.ID, task.LeaseEpoch)
		if task.Args.Fanout {
			if !task.Resumed {
				kid := &flowfabric.SubmitOpts{Lane: flowLane}
				return flowfabric.AwaitChildren(flowfabric.NewChild(job{N: -1}, kid), flowfabric.NewChild(job{N: -2}, kid))
			}
			kids, err := task.Children(ctx)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if k.State != model.PublicCompleted {
					return flowfabric.Permanent(fmt.Errorf("child %s is %s", k.ID, k.State))
				}
			}
			if len(kids) != 2 {
				return flowfabric.Permanent(fmt.Errorf("%d children", len(kids)))
			}
		}
		// the job's work takes a while, so faults land while handlers run
		t := time.NewTimer(jobWork)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.log("done", task.ID, task.LeaseEpoch)
		return nil
	}))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = w.Stop(stop) // the server may be gone: the error is expected then
	if err := e.Stop(stop); err != nil {
		t.Error(err)
	}
}

// newEngine is an engine with quick scanners, so a killed worker's leases
// are recovered within a fraction of a second of their expiry.
func newEngine(s model.Store, log *slog.Logger) *flowfabric.Engine {
	fast := flowfabric.TimerConfig{Interval: 50 * time.Millisecond}
	return flowfabric.New(s, &flowfabric.Config{Logger: log, Lanes: map[model.LaneID]flowfabric.LaneConfig{flowLane: {Spread: true}}, Scanners: flowfabric.ScannerConfig{
		SweepInterval:     500 * time.Millisecond,
		LeaseExpiry:       flowfabric.LeaseExpiryConfig{TimerConfig: fast},
		DelayedPromoter:   fast,
		AttemptTimeout:    fast,
		ExecutionDeadline: fast,
		Unblock:           flowfabric.UnblockConfig{Interval: 100 * time.Millisecond},
	}})
}
