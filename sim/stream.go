package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/mergepatch"
	"github.com/flowfabric/flowfabric/model"
)

// Attempt output streams in the simulation (issue 13). The store wrapper
// faults the model.StreamStore calls like any other (StreamAppend, a
// worker's fenced call, may also be delivered again much later) and
// passes WatchStream through to memstore's, dropping or duplicating the
// notices as the seed says (Faults.DropStream, DupStream), as it does
// work notices.
//
// Workload: a kind, "stream", appends 2–6 frames, sometimes waiting
// between two (durable mostly, sometimes best-effort with a short or the
// default TTL, sometimes a TaskInfo.PatchSummary), then succeeds, or fails
// (a retry: a new attempt, a new stream), or snoozes once (the attempt
// pauses and resumes with its stream open, and its resumed run appends
// more). Any other handler (every kind, the suspending and spending ones
// too) first appends one or two durable frames one time in six, so streams
// close by every way an attempt ends or pauses. A handler retries an
// append or a patch whose reply was lost (a transport error), with the
// same payload: payloads name the append ("x3/a0/r1/f2": execution,
// attempt index, handler run within the attempt, append), so a lost reply
// that had applied, a call delivered twice or late shows as a second copy.
// An observer actor (a driver actor, like the outside world of
// sim/suspend.go) follows streams through Engine.ReadStream from its
// cursor a page at a time, or through Engine.TailStream with a wait of up
// to 10 s (a clock Wait woken by the stream notices), sometimes leaving
// best-effort frames out, sometimes on an attempt that has not started
// yet.
//
// Checks: every StreamAppend the store applied (after): it came from the
// live lease (as the outcomes), found its stream open, got the sequence
// after the stream's last, and a summary frame the version after the
// stream's last, from the base it named; an append to a closed stream is
// refused as closed, and only such an append; a summary conflict found
// another version. After every call: a stream it closed closed at the
// call's Now (the stores take Now as given: a call whose Now is older than
// the stream's last frame, from a stalled caller or a slow request, closes
// it before that frame's time; counted as StaleCloses, and that stream's
// frames are not checked against ClosedAt). Every page the observer reads:
// its sequences rise past the cursor, each frame is the one the store
// applied at that sequence (payload, mode, time), LastSequence counts the
// frames applied, no best-effort frame when they were left out, no frame
// after ClosedAt, and a stream once closed keeps its last sequence, its
// time and its reason. Every checkpoint and at the end, over every stream
// a handler ran for: the same of the whole stream; every frame applied,
// and every acknowledged append at its acknowledged sequence with its
// payload, is kept (durable and summary frames, and best-effort ones
// appended once the stream was persistent: earlier ones may have expired;
// only while the stream holds at most 64 frames, the fewest a trim keeps);
// the sequences a stream's handlers were acknowledged rise in the order
// they appended; the frames of one handler run are in the order it
// appended them; the summary's version is the number of summary frames
// applied (at least the patches acknowledged, at most the summary appends
// sent), its document the applied patches merged in order
// (internal/mergepatch), and the stream's summary frames number
// 1..version. Over every attempt of every acknowledged execution: one that
// ended reads closed, with its status as the reason or
// lease_expired/lease_revoked (no_frames, with no ClosedAt, when it never
// appended); a stream closed by its lease is not of an attempt that holds
// a lease again. An append is not idempotent by contract
// (model.StreamAppendParams): a second copy of one payload (a lost reply
// that had applied and the handler's retry, a call delivered twice or
// late) is counted (StreamStats.Duplicates), not reported.

var (
	_ model.StreamStore    = (*Store)(nil)
	_ model.StreamNotifier = (*Store)(nil)
)

func (s *Store) strm() model.StreamStore { return s.Store.(model.StreamStore) }

// StreamAppend implements model.StreamStore.
func (s *Store) StreamAppend(ctx context.Context, p *model.StreamAppendParams) (*model.StreamAppendResult, error) {
	return call(s, "StreamAppend", p, s.strm().StreamAppend)
}

// StreamRead implements model.StreamStore.
func (s *Store) StreamRead(ctx context.Context, p *model.StreamReadParams) (*model.StreamReadResult, error) {
	return call(s, "StreamRead", p, s.strm().StreamRead)
}

// StreamSummary implements model.StreamStore.
func (s *Store) StreamSummary(ctx context.Context, p *model.StreamSummaryParams) (*model.StreamSummaryResult, error) {
	return call(s, "StreamSummary", p, s.strm().StreamSummary)
}

// WatchStream implements model.StreamNotifier: a notice reaches a live
// process's watch (synchronously, in the store call that caused it, as
// memstore delivers it), or is dropped or duplicated as the seed says.
// The returned stop is memstore's (a tail defers it, and a proc ended by
// Sched.Close runs its deferred calls concurrently with others).
func (s *Store) WatchStream(id model.ExecutionID, attempt int, f func()) (stop func()) {
	w := s.w
	owner := w.owner()
	return s.Store.(model.StreamNotifier).WatchStream(id, attempt, func() {
		if w.sched.Dead(owner) {
			return
		}
		n := 1
		if fs := w.faults(); fs != nil {
			switch r := w.rng.IntN(1000); {
			case r < fs.DropStream:
				n = 0
			case r < fs.DropStream+fs.DupStream:
				n = 2
			}
		}
		if n != 1 {
			w.logf("stream notice %s/a%d to process %d: %s", w.alias(id), attempt, owner, map[int]string{0: "dropped", 2: "duplicated"}[n])
		}
		for range n {
			f()
		}
	})
}

// StreamStats count what the stream workload did in a run.
type StreamStats struct {
	// Appends and Patches count the appends (durable and best-effort) and
	// the PatchSummary calls acknowledged to handlers; Retries those a
	// handler repeated after a transport error; Refused those refused
	// (lease lost, stream closed).
	Appends, Patches, Retries, Refused int
	// Applied counts the frames the store appended (a repeated delivery's
	// included).
	Applied int
	// Duplicates counts, in the streams at the end, the extra copies of
	// one append's payload (a lost reply that had applied and the
	// handler's retry, a call delivered twice or late): appends are not
	// idempotent, so this is not a violation.
	Duplicates int
	// Pages and Tails count the observer's reads and tails; Streams the
	// streams checked at the end, ClosedByLease those closed by a lease
	// expiry mark or a revoke, Expired those whose best-effort frames had
	// all expired.
	Pages, Tails, Streams, ClosedByLease, Expired int
	// StaleCloses counts the streams closed by a call whose Now was older
	// than their last frame's time (a stalled caller, a slow request): their
	// ClosedAt is before that frame's time.
	StaleCloses int
}

// Add adds o's counts to s.
func (s *StreamStats) Add(o StreamStats) {
	s.Appends += o.Appends
	s.Patches += o.Patches
	s.Retries += o.Retries
	s.Refused += o.Refused
	s.Applied += o.Applied
	s.Duplicates += o.Duplicates
	s.Pages += o.Pages
	s.Tails += o.Tails
	s.Streams += o.Streams
	s.ClosedByLease += o.ClosedByLease
	s.Expired += o.Expired
	s.StaleCloses += o.StaleCloses
}

// streamKey names one attempt's stream.
type streamKey struct {
	id      model.ExecutionID
	attempt int
}

// appliedFrame is a frame the store appended (seen by the after hook).
type appliedFrame struct {
	seq     uint64
	mode    model.StreamMode
	payload string
	at      time.Time
	// persistent: the stream had a durable or summary frame before this
	// one (a best-effort frame appended then never expires)
	persistent bool
}

// ackedAppend is an append acknowledged to a handler.
type ackedAppend struct {
	seq     uint64
	mode    model.StreamMode
	payload string
}

// appendID names one append of a handler: its run and its index.
type appendID struct{ run, i int }

// streamRec is what the world knows of one attempt's stream.
type streamRec struct {
	applied []appliedFrame // in the store's order: applied[k].seq is k+1
	// patches are the summary patches applied, in order
	patches [][]byte
	// sentSummaries counts the summary appends that reached the store
	sentSummaries int
	acked         []ackedAppend // in acknowledgement order
	ackedPatches  int
	lastVersion   uint64 // the last version acknowledged to a handler
	runs          int    // handler runs started in the attempt
	ids           map[string]appendID
	// closed: a read saw the stream closed, at its last sequence
	closed    bool
	closedSeq uint64
	closedAt  time.Time
	closedWhy model.StreamCloseReason
	// staleClose: the call that closed the stream carried a Now older
	// than the stream's last frame (a stalled caller, a slow request), so
	// ClosedAt is before that frame's time
	staleClose bool
}

// streamState is the world's stream part.
type streamState struct {
	recs map[streamKey]*streamRec
	keys []streamKey // in first-seen order
	// execs are the acknowledged executions of kind stream
	execs []model.ExecutionID
	// cursor is the observer's cursor per stream
	cursor map[streamKey]uint64
	// open are the streams with frames not yet seen closed, in first
	// append order: every call's after hook looks for the ones it closed
	open []streamKey
	// pre is the stream an append is about to change (its attempt's
	// index, its read and summary; ok false: not read)
	pre struct {
		ok      bool
		key     streamKey
		current bool // the fence's attempt is the current one
		read    *model.StreamReadResult
		version uint64
	}
	stats StreamStats
}

func newStreamState() streamState {
	return streamState{recs: map[streamKey]*streamRec{}, cursor: map[streamKey]uint64{}}
}

// rec returns k's record, made on first use.
func (w *world) streamRec(k streamKey) *streamRec {
	r := w.str.recs[k]
	if r == nil {
		r = &streamRec{ids: map[string]appendID{}}
		w.str.recs[k] = r
		w.str.keys = append(w.str.keys, k)
	}
	return r
}

func (w *world) streamName(k streamKey) string {
	return fmt.Sprintf("%s/a%d", w.alias(k.id), k.attempt)
}

type handlerFunc = func(ctx context.Context, info *flowfabric.TaskInfo) error

// streamHandler is the handler of kind stream (see the top of this file).
func (w *world) streamHandler(lease time.Duration) handlerFunc {
	return func(ctx context.Context, info *flowfabric.TaskInfo) error {
		if err := w.appendFrames(ctx, info, 2+w.rng.IntN(5), true, lease); err != nil {
			return err
		}
		switch r := w.rng.IntN(10); {
		case r == 0 && !info.Resumed:
			// a pause: the attempt resumes with its stream open
			return flowfabric.Snooze(w.dur(time.Second, 3*time.Second))
		case r == 1:
			return errors.New("stream flaky") // a retry: a new attempt, a new stream
		}
		return nil
	}
}

// streamTrack wraps a handler of another kind: one time in six it first
// appends one or two durable frames.
func (w *world) streamTrack(h handlerFunc, lease time.Duration) handlerFunc {
	if w.o.NoStreams {
		return h
	}
	return func(ctx context.Context, info *flowfabric.TaskInfo) error {
		if w.rng.IntN(6) == 0 {
			if err := w.appendFrames(ctx, info, 1+w.rng.IntN(2), false, lease); err != nil {
				return err
			}
		}
		return h(ctx, info)
	}
}

// appendFrames is one handler run's appends: n frames, all durable unless
// mixed. It returns the error that ends the run (a lost lease, a closed
// stream, a transport error the retries did not get past, a cancelled
// context).
func (w *world) appendFrames(ctx context.Context, info *flowfabric.TaskInfo, n int, mixed bool, lease time.Duration) error {
	k := streamKey{info.ID, info.Attempt}
	rec := w.streamRec(k)
	rec.runs++
	run := rec.runs
	for i := range n {
		// a wait between frames, one time in three (the clock moves only
		// when no goroutine can run, so a waiting handler may wait until
		// the drain; appends back to back meet the faults)
		if i > 0 && w.rng.IntN(3) == 0 {
			if err := w.sched.Wait(ctx, w.dur(time.Millisecond, lease/2), nil); err != nil {
				return context.Cause(ctx)
			}
		}
		payload := fmt.Sprintf("%s/r%d/f%d", w.streamName(k), run, i)
		rec.ids[payload] = appendID{run, i}
		mode := model.StreamDurable
		if mixed {
			switch r := w.rng.IntN(10); {
			case r >= 8:
				mode = model.StreamSummary
			case r >= 6:
				mode = model.StreamBestEffort
			}
		}
		var ttl time.Duration
		if mode == model.StreamBestEffort && w.rng.IntN(2) == 0 {
			ttl = w.dur(time.Second, 5*time.Second)
		}
		var seq uint64
		var err error
		for try := 0; ; try++ {
			switch mode {
			case model.StreamSummary:
				patch := fmt.Sprintf(`{"step":%d,"r%df%d":%q}`, i, run, i, payload)
				seq, err = info.PatchSummary(ctx, []byte(patch))
			default:
				typ := "step"
				if mode == model.StreamBestEffort {
					typ = "token"
				}
				seq, err = info.AppendFrame(ctx, typ, []byte(payload), &flowfabric.FrameOpts{Mode: mode, TTL: ttl, CorrelationID: payload})
			}
			if !errors.Is(err, errTransport) || try == 2 {
				break
			}
			w.str.stats.Retries++
		}
		if err != nil {
			w.logf("%s %s appends %s (%s): %s", w.who(), w.streamName(k), payload, mode, errCode(err))
			if errors.Is(err, flowfabric.ErrLeaseLost) || errors.Is(err, model.ErrStreamClosed) {
				w.str.stats.Refused++
			}
			return err
		}
		if mode == model.StreamSummary {
			w.ackPatch(k, rec, seq)
		} else {
			w.ackAppend(k, rec, ackedAppend{seq: seq, mode: mode, payload: payload})
		}
	}
	return nil
}

// ackAppend records an append acknowledged to a handler: the sequences a
// stream's handlers are acknowledged rise in the order they appended.
func (w *world) ackAppend(k streamKey, rec *streamRec, a ackedAppend) {
	w.str.stats.Appends++
	if n := len(rec.acked); n > 0 && a.seq <= rec.acked[n-1].seq {
		w.violate("%s: append %s acknowledged at sequence %d, after %s at %d", w.streamName(k), a.payload, a.seq,
			rec.acked[n-1].payload, rec.acked[n-1].seq)
	}
	rec.acked = append(rec.acked, a)
}

// ackPatch records a PatchSummary acknowledged to a handler.
func (w *world) ackPatch(k streamKey, rec *streamRec, v uint64) {
	w.str.stats.Patches++
	rec.ackedPatches++
	if v <= rec.lastVersion {
		w.violate("%s: a summary patch acknowledged at version %d, after one at %d", w.streamName(k), v, rec.lastVersion)
	}
	rec.lastVersion = v
}

// beforeStream reads the stream a StreamAppend is about to change.
func (w *world) beforeStream(op string, p any) {
	pre := &w.str.pre
	pre.ok = false
	ap, ok := p.(*model.StreamAppendParams)
	if !ok {
		return
	}
	ctx := context.Background()
	s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: ap.ID})
	if err != nil || s.CurrentAttempt == nil {
		return
	}
	k := streamKey{ap.ID, s.CurrentAttempt.Index}
	rd, err := w.raw.StreamRead(ctx, &model.StreamReadParams{ID: ap.ID, Attempt: k.attempt, After: math.MaxUint64, Count: 1, Now: ap.Now})
	if err != nil {
		w.violate("%s: StreamRead: %v", w.streamName(k), err)
		return
	}
	sum, err := w.raw.StreamSummary(ctx, &model.StreamSummaryParams{ID: ap.ID, Attempt: k.attempt, Now: ap.Now})
	if err != nil {
		w.violate("%s: StreamSummary: %v", w.streamName(k), err)
		return
	}
	pre.ok, pre.key, pre.current, pre.read, pre.version = true, k, s.CurrentAttempt.ID == ap.Fence.AttemptID, rd, sum.Version
	if ap.Mode == model.StreamSummary && pre.current {
		w.streamRec(k).sentSummaries++
	}
}

// afterStream checks a StreamAppend just applied, with its real reply,
// and, after any call, the closing of the streams it closed.
func (w *world) afterStream(op string, p any, r any, err error) {
	w.afterAppend(p, r, err)
	if len(w.str.open) > 0 {
		w.closedBy(op, p)
	}
}

// closedBy finds the open streams the call p just applied closed: each
// must have closed at the call's Now. A call whose Now is older than the
// stream's last frame (its caller stalled, or its request was slow)
// closes it before that frame's time: the stores take Now as given; the
// stream is marked, and its frames are then not checked against ClosedAt.
func (w *world) closedBy(op string, p any) {
	var now time.Time
	hasNow := false
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		if f := field(v.Elem(), "Now"); f.IsValid() && f.Type() == timeType {
			now, hasNow = f.Interface().(time.Time), true
		}
	}
	ctx := context.Background()
	for i := 0; i < len(w.str.open); {
		k := w.str.open[i]
		rd, err := w.raw.StreamRead(ctx, &model.StreamReadParams{ID: k.id, Attempt: k.attempt, After: math.MaxUint64, Count: 1, Now: w.sched.now})
		if err != nil || !rd.Closed {
			i++
			continue
		}
		w.str.open = slices.Delete(w.str.open, i, i+1)
		rec := w.str.recs[k]
		if hasNow && !rd.ClosedAt.Equal(time.UnixMilli(now.UnixMilli())) {
			w.violate("%s: closed (%s) by %s at %v, ClosedAt %v", w.streamName(k), rd.ClosedReason, op, now.Sub(start), rd.ClosedAt.Sub(start))
		}
		if n := len(rec.applied); n > 0 && rd.ClosedAt.Before(rec.applied[n-1].at) {
			rec.staleClose = true
			w.str.stats.StaleCloses++
			w.logf("%s closed (%s) by %s with a Now %v older than its last frame's", w.streamName(k), rd.ClosedReason, op,
				rec.applied[n-1].at.Sub(rd.ClosedAt))
		}
	}
}

// afterAppend checks a StreamAppend just applied, with its real reply.
func (w *world) afterAppend(p any, r any, err error) {
	ap, ok := p.(*model.StreamAppendParams)
	pre := &w.str.pre
	if !ok || !pre.ok || !pre.current {
		return
	}
	k, name := pre.key, w.streamName(pre.key)
	switch {
	case err != nil && pre.read.Closed && !errors.Is(err, model.ErrStreamClosed):
		w.violate("%s: an append to the closed stream (%s) answered %s, want stream_closed", name, pre.read.ClosedReason, errCode(err))
		return
	case errors.Is(err, model.ErrStreamClosed):
		if !pre.read.Closed {
			w.violate("%s: append refused as closed while the stream was open", name)
		}
		return
	case errors.Is(err, model.ErrSummaryConflict):
		if ap.Summary.BaseVersion == pre.version {
			w.violate("%s: summary patch on version %d refused as a conflict at version %d", name, ap.Summary.BaseVersion, pre.version)
		}
		return
	case err != nil:
		return
	}
	res := r.(*model.StreamAppendResult)
	rec := w.streamRec(k)
	if pre.read.Closed {
		w.violate("%s: a closed stream (%s) took frame %d", name, pre.read.ClosedReason, res.Sequence)
	}
	if res.Sequence != pre.read.LastSequence+1 || res.Sequence != uint64(len(rec.applied)+1) {
		w.violate("%s: append got sequence %d; the stream's last was %d, %d frames applied", name, res.Sequence,
			pre.read.LastSequence, len(rec.applied))
	}
	persistent := false
	for _, f := range rec.applied {
		persistent = persistent || f.mode != model.StreamBestEffort
	}
	rec.applied = append(rec.applied, appliedFrame{seq: res.Sequence, mode: ap.Mode, payload: string(ap.Payload),
		at:         time.UnixMilli(ap.Now.UnixMilli()), // the stores keep milliseconds
		persistent: persistent})
	w.str.stats.Applied++
	if len(rec.applied) == 1 {
		w.str.open = append(w.str.open, k)
	}
	if ap.Mode == model.StreamSummary {
		if ap.Summary.BaseVersion != pre.version {
			w.violate("%s: summary patch on version %d taken at version %d", name, ap.Summary.BaseVersion, pre.version)
		}
		rec.patches = append(rec.patches, ap.Payload)
		if res.SummaryVersion != pre.version+1 || res.SummaryVersion != uint64(len(rec.patches)) {
			w.violate("%s: summary patch on version %d got version %d (%d patches applied)", name, pre.version, res.SummaryVersion,
				len(rec.patches))
		}
	}
}

// streamObserver takes one step of the observer through p's engine: one
// page of a stream from its cursor, read or tailed.
func (w *world) streamObserver(p *process) {
	if len(w.str.keys) == 0 {
		return
	}
	// mostly a stream not yet seen closed
	var open []streamKey
	for _, k := range w.str.keys {
		if !w.str.recs[k].closed {
			open = append(open, k)
		}
	}
	k := pick(w, w.str.keys)
	if len(open) > 0 && w.rng.IntN(4) > 0 {
		k = pick(w, open)
	}
	if len(w.str.execs) > 0 && w.rng.IntN(5) == 0 {
		// an attempt that may not have started yet
		id := pick(w, w.str.execs)
		k = streamKey{id, 0}
		for _, x := range w.str.keys {
			if x.id == id && x.attempt >= k.attempt {
				k.attempt = x.attempt + 1
			}
		}
	}
	after := w.str.cursor[k]
	if w.rng.IntN(8) == 0 {
		after = 0 // from the start again
	}
	o := &flowfabric.StreamReadOpts{After: after, Limit: 1 + w.rng.IntN(8), ExcludeBestEffort: w.rng.IntN(4) == 0}
	tail := w.rng.IntN(3) == 0
	if tail {
		o.MaxWait = w.dur(500*time.Millisecond, 10*time.Second)
	}
	ctx := context.Background()
	w.spawn(p, func() {
		var page *flowfabric.StreamPage
		var err error
		what := "reads"
		if tail {
			what = "tails"
			page, err = p.engine.TailStream(ctx, k.id, k.attempt, o)
		} else {
			page, err = p.engine.ReadStream(ctx, k.id, k.attempt, o)
		}
		if err != nil {
			w.logf("P%d observer %s %s after %d: %s", p.n, what, w.streamName(k), after, errCode(err))
			return
		}
		if tail {
			w.str.stats.Tails++
		} else {
			w.str.stats.Pages++
		}
		w.logf("P%d observer %s %s after %d: %d frames, next %d, last %d%s", p.n, what, w.streamName(k), after, len(page.Frames),
			page.Next, page.LastSequence, closedDesc(page.Closed, page.ClosedReason, page.Done))
		w.checkPage(k, o, page)
		w.str.cursor[k] = max(w.str.cursor[k], page.Next)
	})
}

func closedDesc(closed bool, why model.StreamCloseReason, done bool) string {
	if !closed {
		return ""
	}
	if done {
		return ", closed (" + string(why) + "), done"
	}
	return ", closed (" + string(why) + ")"
}

// checkPage checks one page a reader got (read at the store just before:
// no other proc ran since).
func (w *world) checkPage(k streamKey, o *flowfabric.StreamReadOpts, page *flowfabric.StreamPage) {
	name := w.streamName(k)
	rec := w.str.recs[k]
	var applied []appliedFrame
	if rec != nil {
		applied = rec.applied
	}
	if page.LastSequence != uint64(len(applied)) {
		w.violate("%s: a reader finds last sequence %d, %d frames were applied", name, page.LastSequence, len(applied))
	}
	if page.Next < o.After {
		w.violate("%s: a read after %d moves the cursor back to %d", name, o.After, page.Next)
	}
	last := o.After
	for _, f := range page.Frames {
		if f.Sequence <= last {
			w.violate("%s: a read after %d returns sequence %d after %d", name, o.After, f.Sequence, last)
		}
		last = f.Sequence
		w.checkFrame(name, applied, f)
		if o.ExcludeBestEffort && f.Mode == model.StreamBestEffort {
			w.violate("%s: a read leaving best-effort frames out returns frame %d", name, f.Sequence)
		}
		if page.Closed && !page.ClosedAt.IsZero() && f.Time.After(page.ClosedAt) && (rec == nil || !rec.staleClose) {
			w.violate("%s: frame %d at %v is after the stream closed at %v", name, f.Sequence, f.Time.Sub(start), page.ClosedAt.Sub(start))
		}
	}
	if len(page.Frames) > 0 && page.Next < last {
		w.violate("%s: a read returns frames up to %d and the cursor %d", name, last, page.Next)
	}
	if page.Done && !page.Closed {
		w.violate("%s: a read reports done on an open stream", name)
	}
	if page.Closed && rec != nil {
		w.sawClosed(k, rec, page.LastSequence, page.ClosedAt, page.ClosedReason)
	}
}

// checkFrame checks that f is the frame the store applied at its sequence.
func (w *world) checkFrame(name string, applied []appliedFrame, f model.Frame) {
	if f.Sequence == 0 || f.Sequence > uint64(len(applied)) {
		w.violate("%s: frame %d (%q) was never appended", name, f.Sequence, f.Payload)
		return
	}
	a := applied[f.Sequence-1]
	if string(f.Payload) != a.payload || f.Mode != a.mode || !f.Time.Equal(a.at) {
		w.violate("%s: frame %d is %s %q at %v, the store appended %s %q at %v", name, f.Sequence, f.Mode, f.Payload,
			f.Time.Sub(start), a.mode, a.payload, a.at.Sub(start))
	}
}

// sawClosed records that a read found k closed; a stream once closed
// keeps its last sequence, its time and its reason.
func (w *world) sawClosed(k streamKey, rec *streamRec, last uint64, at time.Time, why model.StreamCloseReason) {
	if !rec.closed {
		rec.closed, rec.closedSeq, rec.closedAt, rec.closedWhy = true, last, at, why
		return
	}
	if last != rec.closedSeq || !at.Equal(rec.closedAt) || why != rec.closedWhy {
		w.violate("%s: closed (%s) at sequence %d, now reads closed (%s) at sequence %d", w.streamName(k), rec.closedWhy,
			rec.closedSeq, why, last)
	}
}

// checkStreams checks every stream a handler ran for, and the closing of
// every attempt of the acknowledged executions (see the top of this
// file). final: after the drain (the duplicate and close statistics are
// counted then).
func (w *world) checkStreams(final bool) {
	ctx := context.Background()
	now := w.sched.now
	ids := append([]model.ExecutionID(nil), w.acked...)
	seen := map[model.ExecutionID]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, k := range w.str.keys {
		if !seen[k.id] {
			seen[k.id] = true
			ids = append(ids, k.id)
		}
	}
	for _, id := range sortedIDs(ids) {
		al, err := w.raw.AttemptList(ctx, &model.AttemptListParams{ID: id})
		if err != nil {
			continue // reported by the invariants when acknowledged
		}
		snap, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
		if err != nil {
			continue
		}
		for _, a := range al.Attempts {
			k := streamKey{id, a.Index}
			rd, err := w.raw.StreamRead(ctx, &model.StreamReadParams{ID: id, Attempt: a.Index, Count: model.MaxStreamRead, Now: now})
			if err != nil {
				w.violate("%s: StreamRead: %v", w.streamName(k), err)
				continue
			}
			w.checkClosing(k, a, snap, rd)
			if rec := w.str.recs[k]; rec != nil {
				w.checkStream(k, rec, rd, final)
			} else if rd.LastSequence != 0 {
				w.violate("%s: holds %d frames no handler appended", w.streamName(k), rd.LastSequence)
			}
		}
	}
}

// checkClosing checks that attempt a's stream is closed when a ended, by
// a reason its end or its lease gives, and closed by its lease only when
// the attempt no longer runs under a lease.
func (w *world) checkClosing(k streamKey, a model.Attempt, snap *model.ExecutionSnapshot, rd *model.StreamReadResult) {
	name := w.streamName(k)
	byLease := rd.ClosedReason == model.StreamClosedLeaseExpired || rd.ClosedReason == model.StreamClosedLeaseRevoked
	switch {
	case !a.Status.IsOpen() && !rd.Closed:
		w.violate("%s: the attempt ended (%s) and its stream is open", name, a.Status)
	case !rd.Closed:
	case rd.LastSequence == 0:
		if rd.ClosedReason != model.StreamClosedNoFrames || !rd.ClosedAt.IsZero() {
			w.violate("%s: a stream never opened reads closed (%s) at %v", name, rd.ClosedReason, rd.ClosedAt)
		}
	case rd.ClosedReason == model.StreamCloseReason(a.Status.String()) && !a.Status.IsOpen():
	case byLease:
		if a.Status.IsOpen() && snap.CurrentAttempt != nil && snap.CurrentAttempt.Index == a.Index &&
			snap.State.OwnershipState == model.OwnershipLeased {
			w.violate("%s: the stream closed (%s) and the attempt (%s) holds a lease again (e%d)", name, rd.ClosedReason, a.Status,
				snap.LeaseEpoch)
		}
	default:
		w.violate("%s: the stream closed (%s) and the attempt is %s", name, rd.ClosedReason, a.Status)
	}
	if rd.Closed && rd.LastSequence > 0 && rd.ClosedAt.IsZero() {
		w.violate("%s: the stream closed (%s) without a time", name, rd.ClosedReason)
	}
}

// checkStream checks one stream against what was applied and
// acknowledged (rd: the whole stream, read now).
func (w *world) checkStream(k streamKey, rec *streamRec, rd *model.StreamReadResult, final bool) {
	ctx := context.Background()
	name := w.streamName(k)
	if rd.LastSequence != uint64(len(rec.applied)) {
		w.violate("%s: last sequence %d, %d frames were applied", name, rd.LastSequence, len(rec.applied))
	}
	if rd.Closed {
		w.sawClosed(k, rec, rd.LastSequence, rd.ClosedAt, rd.ClosedReason)
	}
	// the frames kept: rising, each the one applied, none after the close
	kept := map[uint64]bool{}
	var last uint64
	firstOf := map[string]bool{}
	lastIn := map[int]int{} // a run's last append index found, by run
	dups := 0
	for _, f := range rd.Frames {
		if f.Sequence <= last {
			w.violate("%s: sequence %d after %d", name, f.Sequence, last)
		}
		last = f.Sequence
		kept[f.Sequence] = true
		w.checkFrame(name, rec.applied, f)
		if rd.Closed && !rd.ClosedAt.IsZero() && f.Time.After(rd.ClosedAt) && !rec.staleClose {
			w.violate("%s: frame %d at %v is after the stream closed at %v", name, f.Sequence, f.Time.Sub(start), rd.ClosedAt.Sub(start))
		}
		// the frames of a handler run are in the order it appended them;
		// a second copy of a payload (a repeated delivery, or a retry
		// after a lost reply) is counted, not checked: an append is not
		// idempotent (model.StreamAppendParams)
		p := string(f.Payload)
		if firstOf[p] {
			dups++
			continue
		}
		firstOf[p] = true
		id, ok := rec.ids[p]
		if !ok {
			continue
		}
		if prev, ok := lastIn[id.run]; ok && id.i <= prev {
			w.violate("%s: frame %d (%s) follows the run's append %d", name, f.Sequence, p, prev)
		}
		lastIn[id.run] = id.i
	}
	// what was applied and acknowledged is kept, while no trim can have
	// run (a summary frame keeps the newest 64 frames, a best-effort one
	// at least 64, a durable one 10000): best-effort frames only when the
	// stream was persistent before them (earlier ones may have expired)
	untrimmed := len(rec.applied) <= model.SummaryStreamMaxLen
	allBE := len(rec.applied) > 0
	for _, a := range rec.applied {
		allBE = allBE && a.mode == model.StreamBestEffort
		if untrimmed && (a.mode != model.StreamBestEffort || a.persistent) && !kept[a.seq] {
			w.violate("%s: frame %d (%s %s) was appended and is gone", name, a.seq, a.mode, a.payload)
		}
	}
	for _, a := range rec.acked {
		persistent := a.seq <= uint64(len(rec.applied)) && rec.applied[a.seq-1].persistent
		if untrimmed && (a.mode != model.StreamBestEffort || persistent) && !kept[a.seq] {
			w.violate("%s: acknowledged append %s (%s) at sequence %d is not in the stream", name, a.payload, a.mode, a.seq)
		}
		if a.seq == 0 || a.seq > uint64(len(rec.applied)) || rec.applied[a.seq-1].payload != a.payload {
			w.violate("%s: append %s acknowledged at sequence %d, which the store gave another frame", name, a.payload, a.seq)
		}
	}
	// the summary: its version counts the patches applied, its document
	// is them merged in order, the summary frames number 1..version
	sum, err := w.raw.StreamSummary(ctx, &model.StreamSummaryParams{ID: k.id, Attempt: k.attempt, Now: w.sched.now})
	if err != nil {
		w.violate("%s: StreamSummary: %v", name, err)
		return
	}
	if sum.Version != uint64(len(rec.patches)) || sum.Version < uint64(rec.ackedPatches) || sum.Version > uint64(rec.sentSummaries) {
		w.violate("%s: summary version %d: %d patches applied, %d acknowledged, %d sent", name, sum.Version, len(rec.patches),
			rec.ackedPatches, rec.sentSummaries)
	}
	var doc []byte
	for _, p := range rec.patches {
		if doc, err = mergepatch.Apply(doc, p); err != nil {
			w.violate("%s: patch %s does not apply: %v", name, p, err)
			return
		}
	}
	if !bytes.Equal(doc, sum.Document) {
		w.violate("%s: summary document %s, the patches applied merge to %s", name, sum.Document, doc)
	}
	if untrimmed {
		var v uint64
		for _, f := range rd.Frames {
			if f.Mode == model.StreamSummary {
				v++
				if f.SummaryVersion != v {
					w.violate("%s: summary frame %d has version %d, want %d", name, f.Sequence, f.SummaryVersion, v)
				}
			}
		}
		if v != sum.Version {
			w.violate("%s: %d summary frames, version %d", name, v, sum.Version)
		}
	}
	if final {
		w.str.stats.Streams++
		w.str.stats.Duplicates += dups
		if rd.ClosedReason == model.StreamClosedLeaseExpired || rd.ClosedReason == model.StreamClosedLeaseRevoked {
			w.str.stats.ClosedByLease++
		}
		if allBE && len(rd.Frames) == 0 {
			w.str.stats.Expired++
		}
	}
}

// describeStreamParams summarises a stream call's parameters ("": not
// one).
func describeStreamParams(w *world, p any) string {
	switch pp := p.(type) {
	case *model.StreamAppendParams:
		d := fmt.Sprintf("%s e%d %s", w.alias(pp.ID), pp.Fence.LeaseEpoch, pp.Mode)
		if pp.Summary != nil {
			return d + fmt.Sprintf(" base v%d %s", pp.Summary.BaseVersion, pp.Payload)
		}
		return d + fmt.Sprintf(" %s %q", pp.Type, pp.Payload)
	case *model.StreamReadParams:
		d := fmt.Sprintf("%s/a%d after %d count %d", w.alias(pp.ID), pp.Attempt, pp.After, pp.Count)
		if pp.ExcludeBestEffort {
			d += " no best-effort"
		}
		return d
	case *model.StreamSummaryParams:
		return fmt.Sprintf("%s/a%d", w.alias(pp.ID), pp.Attempt)
	}
	return ""
}

// describeStreamResult summarises a stream call's result ("": not one).
func describeStreamResult(r any) string {
	switch rr := r.(type) {
	case *model.StreamAppendResult:
		if rr.SummaryVersion > 0 {
			return fmt.Sprintf("ok seq %d frames %d v%d", rr.Sequence, rr.Frames, rr.SummaryVersion)
		}
		return fmt.Sprintf("ok seq %d frames %d", rr.Sequence, rr.Frames)
	case *model.StreamReadResult:
		var seqs []string
		for _, f := range rr.Frames {
			seqs = append(seqs, fmt.Sprint(f.Sequence))
		}
		return fmt.Sprintf("ok frames [%s] next %d last %d%s", strings.Join(seqs, " "), rr.Next, rr.LastSequence,
			closedDesc(rr.Closed, rr.ClosedReason, false))
	case *model.StreamSummaryResult:
		return fmt.Sprintf("ok v%d", rr.Version)
	}
	return ""
}
