// Package scan holds the background scanners. Each scanner is a RunOnce
// that does one bounded pass and returns counts; Runner runs them as
// goroutines the host starts and stops.
//
// Timer scanners (lease expiry, delayed promotion, attempt timeout,
// execution deadline) walk one partition-level index each. A pass visits a
// partition only when something there is due: each scan returns the
// partition's next due time, the engine hints the times it schedules, and
// the Sweeper reads every partition's next due times (one call per
// partition) to pick up work other processes scheduled. Run by a Runner, a
// timer scanner sleeps until the earliest due time it knows (at most its
// interval), and a hint earlier than that wakes it. Within a partition
// a pass handles one batch and keeps an exclusive cursor, so entries it
// cannot act on never hold back the ones behind them, and N due entries are
// handled in ceil(N / batch) passes.
package scan

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Result counts what one pass did.
type Result struct {
	// Partitions is how many partitions the pass visited.
	Partitions int
	// Scanned is how many index entries it read.
	Scanned int
	// Acted is how many transitions it made.
	Acted int
	// Errors is how many items failed.
	Errors int
	// More is true when some partition still has due work beyond this
	// pass's batch.
	More bool
}

// Scanner is one background scanner.
type Scanner interface {
	// Name identifies the scanner in logs and metrics.
	Name() string
	// Interval is the pause between passes.
	Interval() time.Duration
	// RunOnce does one bounded pass.
	RunOnce(ctx context.Context) (Result, error)
}

// Hinter is implemented by scanners that accept hints about when a
// partition has something due.
type Hinter interface {
	Hint(partition int, at time.Time)
}

// DefaultBatch is how many due entries a timer scanner handles per
// partition visit.
const DefaultBatch = 50

// never is the next-due value of a partition with nothing scheduled.
const never = math.MaxInt64

// walker walks one timer index over every partition with per-partition
// cursors and next-due times.
type walker struct {
	index  model.IndexKind
	batch  int
	filter model.ScannerFilter

	mu      sync.Mutex
	nextDue []int64 // ms; never: nothing until a hint or the sweeper's
	// hinted is the earliest hint since the partition's current scan began
	// (never: none); the scan's own finding is merged with it, so a hint
	// that arrives during a scan is never lost.
	hinted   []int64
	cursors  []*model.DueCursor
	failures map[model.ExecutionID]*failure
	// retry is how long a partition whose scan failed waits before it is
	// tried again (the scanner's interval).
	retry time.Duration
	// planned is when (ms) the scanner's loop next wakes by itself;
	// math.MinInt64 while it is not waiting. A hint earlier than it wakes
	// the loop through wake.
	planned int64
	wake    func()
}

// failure tracks an item that keeps failing so it is skipped for a while
// instead of being retried every pass.
type failure struct {
	count     int
	skipUntil int // pass number
}

const (
	failuresBeforeSkip = 3
	skipPasses         = 10
	maxTrackedFailures = 10000
)

func newWalker(parts int, index model.IndexKind, batch int, retry time.Duration) *walker {
	w := &walker{
		index:    index,
		retry:    retry,
		planned:  math.MinInt64,
		batch:    batch,
		nextDue:  make([]int64, parts),
		hinted:   make([]int64, parts),
		cursors:  make([]*model.DueCursor, parts),
		failures: make(map[model.ExecutionID]*failure),
	}
	for i := range w.nextDue {
		w.nextDue[i] = never
		w.hinted[i] = never
	}
	return w
}

// Hint records that partition has something due at at, and wakes the
// scanner's loop when that is earlier than it planned to wake.
func (w *walker) Hint(partition int, at time.Time) {
	if partition < 0 || partition >= len(w.nextDue) {
		return
	}
	ms := at.UnixMilli()
	w.mu.Lock()
	w.nextDue[partition] = min(w.nextDue[partition], ms)
	w.hinted[partition] = min(w.hinted[partition], ms)
	wake := w.wake
	if ms >= w.planned {
		wake = nil
	} else {
		w.planned = ms
	}
	w.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// plan returns how long the scanner's loop may wait after a pass: until
// the earliest due time it knows, and at most interval. Until the next
// pass, a hint earlier than that wakes the loop.
func (w *walker) plan(now time.Time, interval time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := interval
	if due := slices.Min(w.nextDue); due != never {
		d = min(d, time.UnixMilli(due).Sub(now))
	}
	d = max(d, 0)
	w.planned = now.Add(d).UnixMilli()
	if d == 0 {
		w.planned = math.MinInt64 // runs again at once
	}
	return d
}

func (w *walker) setWake(f func()) {
	w.mu.Lock()
	w.wake = f
	w.mu.Unlock()
}

// scanFunc reads due entries.
type scanFunc func(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error)

// pass visits the partitions that are due and calls handle for each due
// item; handle reports whether it made a transition.
func (w *walker) pass(ctx context.Context, now time.Time, passNo int, scan scanFunc,
	handle func(ctx context.Context, it model.DueItem) (bool, error)) (Result, error) {
	nowMs := now.UnixMilli()
	retryAt := now.Add(w.retry).UnixMilli()
	w.mu.Lock()
	w.planned = math.MinInt64 // in a pass: hints are merged after each scan
	if len(w.failures) > maxTrackedFailures {
		clear(w.failures)
	}
	todo := make([]int, 0, 8)
	for p, due := range w.nextDue {
		if due <= nowMs {
			todo = append(todo, p)
		}
	}
	w.mu.Unlock()

	var res Result
	for _, p := range todo {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		w.mu.Lock()
		cursor := w.cursors[p]
		w.hinted[p] = never // hints from here on are merged after the scan
		w.mu.Unlock()
		out, err := scan(ctx, &model.IndexScanDueParams{
			Partition: p, Index: w.index, Now: now, After: cursor, Limit: w.batch, Filter: w.filter,
		})
		res.Partitions++
		if err != nil {
			res.Errors++
			w.mu.Lock()
			// tried again after the interval (or a hint), not in a tight loop
			w.nextDue[p] = min(retryAt, w.hinted[p])
			w.mu.Unlock()
			continue
		}
		res.Scanned += len(out.Items)
		partErrs := 0
		for _, it := range out.Items {
			if w.skipped(it.ID, passNo) {
				continue
			}
			acted, err := handle(ctx, it)
			if err != nil {
				res.Errors++
				partErrs++
				w.fail(it.ID, passNo)
				continue
			}
			w.ok(it.ID)
			if acted {
				res.Acted++
			}
		}
		w.mu.Lock()
		if last := lastSeen(out); out.More && last != nil {
			w.cursors[p] = last
			w.nextDue[p] = nowMs
			res.More = true
		} else {
			w.cursors[p] = nil
			switch {
			case partErrs > 0:
				w.nextDue[p] = retryAt // retry what failed after the interval
			case out.NextDueAt.IsZero():
				w.nextDue[p] = never
			default:
				w.nextDue[p] = out.NextDueAt.UnixMilli()
			}
		}
		// a hint that arrived during the scan may name work the scan did
		// not see
		w.nextDue[p] = min(w.nextDue[p], w.hinted[p])
		w.mu.Unlock()
	}
	return res, nil
}

func (w *walker) skipped(id model.ExecutionID, passNo int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.failures[id]
	return f != nil && f.skipUntil > passNo
}

func (w *walker) fail(id model.ExecutionID, passNo int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.failures[id]
	if f == nil {
		f = &failure{}
		w.failures[id] = f
	}
	f.count++
	if f.count >= failuresBeforeSkip {
		f.count = 0
		f.skipUntil = passNo + skipPasses
	}
}

func (w *walker) ok(id model.ExecutionID) {
	w.mu.Lock()
	delete(w.failures, id)
	w.mu.Unlock()
}

// lastSeen is the cursor past what a scan examined: the entries a filter
// left out count, so they never hold back the ones behind them.
func lastSeen(out *model.IndexScanDueResult) *model.DueCursor {
	if out.LastSeen != nil {
		return out.LastSeen
	}
	if n := len(out.Items); n > 0 {
		return &model.DueCursor{DueAt: out.Items[n-1].DueAt, ID: out.Items[n-1].ID}
	}
	return nil
}
