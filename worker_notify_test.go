package flowfabric_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

// logRecorder is a slog handler that keeps every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []string // "LEVEL message key=value ..."
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, b.String())
	l.mu.Unlock()
	return nil
}

// at returns the records of level lvl and above.
func (l *logRecorder) at(lvl slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		for _, name := range []string{"DEBUG", "INFO", "WARN", "ERROR"} {
			var v slog.Level
			_ = v.UnmarshalText([]byte(name))
			if strings.HasPrefix(r, name+" ") && v >= lvl {
				out = append(out, r)
			}
		}
	}
	return out
}

// A running handler learns that its execution was taken away (operator
// cancel, revoke, attempt timeout) at once, with a cause it can test with
// errors.Is, and not at the lease's next renewal: simulated time does not
// move between the operator's call and the handler seeing it. An operator
// cancel or revoke is logged as what it is, at Info (an operator's act),
// an attempt timeout at Debug (a job's outcome, like a failure), with no
// warning.
func TestWorkerLeaseTakenAway(t *testing.T) {
	cases := []struct {
		name    string
		opts    *flowfabric.SubmitOpts
		act     func(h *flowfabrictest.Harness, id model.ExecutionID) error
		want    error
		logged  string
		instant bool // the handler sees it at the very instant of the act
	}{
		{"Cancel", nil, func(h *flowfabrictest.Harness, id model.ExecutionID) error {
			return h.Engine.Cancel(h.Ctx, id, "no longer wanted")
		}, flowfabric.ErrExecutionCancelled, "INFO execution cancelled", true},
		{"Revoke", nil, func(h *flowfabrictest.Harness, id model.ExecutionID) error {
			return h.Engine.RevokeLease(h.Ctx, id, "maintenance")
		}, flowfabric.ErrLeaseRevoked, "INFO lease revoked", true},
		{"AttemptTimeout", &flowfabric.SubmitOpts{AttemptTimeout: 5 * time.Second}, nil,
			context.DeadlineExceeded, "DEBUG attempt timed out", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := &logRecorder{}
			h := flowfabrictest.New(t, &flowfabrictest.Options{Engine: &flowfabric.Config{
				Logger: slog.New(logs),
				Scanners: flowfabric.ScannerConfig{
					LeaseExpiry: flowfabric.LeaseExpiryConfig{NoRecover: true},
				},
			}})
			cause := make(chan error, 1)
			var seenAt time.Time
			g := newGate(h.Clock)
			w := h.NewWorker(&flowfabric.WorkerConfig{LeaseTTL: 30 * time.Second})
			flowfabric.AddHandler(w, flowfabric.HandlerFunc[blocker](func(ctx context.Context, t *flowfabric.Task[blocker]) error {
				err := g.hold(ctx, t.Args.Key)
				seenAt = h.Clock.Now()
				cause <- err
				return err
			}))
			h.StartWorker(w)
			id := mustSubmit(t, h, blocker{Key: "x"}, c.opts)
			<-g.startedCh("x")
			start := h.Clock.Now()
			if c.act != nil {
				if err := c.act(h, id); err != nil {
					t.Fatal(err)
				}
			}
			h.RunUntil(func() bool { return len(cause) == 1 })
			err := <-cause
			if !errors.Is(err, flowfabric.ErrLeaseLost) || !errors.Is(err, c.want) {
				t.Fatalf("handler context cause = %v, want ErrLeaseLost and %v", err, c.want)
			}
			renewal := start.Add(20 * time.Second)

			if c.instant && !seenAt.Equal(start) {
				t.Fatalf("handler saw it %s after the act, want at once", seenAt.Sub(start))
			}
			if !seenAt.Before(renewal) {
				t.Fatalf("handler saw it at %s, the lease's renewal time", seenAt.Sub(start))
			}
			h.RunUntil(func() bool { return w.Running() == 0 })
			if warns := logs.at(slog.LevelWarn); len(warns) > 0 {
				t.Errorf("warnings logged:\n%s", strings.Join(warns, "\n"))
			}
			found := false
			for _, r := range logs.at(slog.LevelDebug) {
				found = found || strings.HasPrefix(r, c.logged)
			}
			if !found {
				t.Errorf("no %q log; logs:\n%s", c.logged, strings.Join(logs.at(slog.LevelDebug), "\n"))
			}
		})
	}
}

// cancelOnClaim is a store that has an operator cancel every execution
// the moment its claim commits, before the worker that claimed it has
// started the task: the lease notice overtakes the task's start.
type cancelOnClaim struct {
	model.Store
	ln        model.LeaseNotifier
	cancelled chan time.Time // when each cancel happened
}

func (s *cancelOnClaim) WatchLeases(wi model.WorkerInstanceID, f func(model.LeaseNotice)) func() {
	return s.ln.WatchLeases(wi, f)
}

func (s *cancelOnClaim) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	res, err := s.Store.ExecutionClaimNext(ctx, p)
	if err == nil && res.Claimed != nil {
		if _, cerr := s.Store.ExecutionCancel(ctx, &model.ExecutionCancelParams{
			ID: res.Claimed.ID, Reason: "overtaken", Source: model.SourceOperator, Now: p.Now,
		}); cerr != nil {
			return nil, cerr
		}
		s.cancelled <- p.Now
	}
	return res, err
}

// A notice that arrives before the task it concerns has started is kept
// and cancels the task as it starts, not at its lease's renewal.
func TestWorkerLeaseNoticeBeforeStart(t *testing.T) {
	cancelled := make(chan time.Time, 1)
	h := flowfabrictest.New(t, &flowfabrictest.Options{WrapStore: func(s *memstore.Store) model.Store {
		return &cancelOnClaim{Store: s, ln: s, cancelled: cancelled}
	}})
	cause := make(chan error, 1)
	var seenAt time.Time
	g := newGate(h.Clock)
	w := h.NewWorker(&flowfabric.WorkerConfig{LeaseTTL: 30 * time.Second})
	flowfabric.AddHandler(w, flowfabric.HandlerFunc[blocker](func(ctx context.Context, t *flowfabric.Task[blocker]) error {
		err := g.hold(ctx, t.Args.Key) // waits on the simulated clock
		seenAt = h.Clock.Now()
		cause <- err
		return err
	}))
	h.StartWorker(w)
	mustSubmit(t, h, blocker{Key: "x"}, nil)
	h.RunUntil(func() bool { return len(cause) == 1 })
	if err := <-cause; !errors.Is(err, flowfabric.ErrExecutionCancelled) || !errors.Is(err, flowfabric.ErrLeaseLost) {
		t.Fatalf("handler context cause = %v, want ErrExecutionCancelled and ErrLeaseLost", err)
	}
	if at := <-cancelled; !seenAt.Equal(at) {
		t.Fatalf("handler saw the cancel %s after it happened, want at once", seenAt.Sub(at))
	}
}
