package flowfabric

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/internal/mergepatch"
	"github.com/flowfabric/flowfabric/model"
)

// Attempt output streams: a running handler appends frames (tokens, log
// lines, steps) to its attempt's stream while it runs, and anyone watches
// them: ReadStream pages, TailStream waits for the next frames, Frames
// follows a stream until it closes. See model.StreamStore for what the
// stores keep.
type (
	// Frame is one entry of an attempt stream.
	Frame = model.Frame
	// StreamMode says how a frame is kept.
	StreamMode = model.StreamMode
	// StreamCloseReason says why a stream closed.
	StreamCloseReason = model.StreamCloseReason
)

// Stream modes.
const (
	StreamDurable    = model.StreamDurable
	StreamSummary    = model.StreamSummary
	StreamBestEffort = model.StreamBestEffort
)

// Stream errors.
var (
	// ErrStreamClosed: the attempt's stream is closed and takes no frame.
	ErrStreamClosed = model.ErrStreamClosed
	// ErrAttemptNotFound: the execution has no attempt of that index.
	ErrAttemptNotFound = model.ErrAttemptNotFound
)

// FrameOpts are the options of TaskInfo.AppendFrame; nil or the zero value
// appends a durable frame.
type FrameOpts struct {
	// Mode is StreamDurable (the zero value) or StreamBestEffort; summary
	// frames go through TaskInfo.PatchSummary.
	Mode StreamMode
	// Encoding optionally says how to read the payload ("json", "text").
	Encoding string
	// CorrelationID optionally ties frames together.
	CorrelationID string
	// MaxLen (durable frames) is how many frames the stream keeps
	// (0: model.DefaultStreamMaxLen).
	MaxLen int
	// TTL (best-effort frames) is how long the frame matters to a live
	// viewer (0: model.DefaultBestEffortTTL).
	TTL time.Duration
}

// AppendFrame appends a frame of type typ (1–64 bytes of letters, digits,
// '_', '.' or '-') with payload (at most model.MaxFramePayloadBytes; a
// larger one is refused, not cut) to the running attempt's stream and
// returns its sequence number. Only the attempt's lease holder appends: a
// lost lease is ErrLeaseLost, a closed stream ErrStreamClosed. On a
// TaskInfo built by hand it is an invalid-input error.
func (t *TaskInfo) AppendFrame(ctx context.Context, typ string, payload []byte, opts *FrameOpts) (uint64, error) {
	var o FrameOpts
	if opts != nil {
		o = *opts
	}
	if o.Mode == "" {
		o.Mode = StreamDurable
	}
	if o.Mode == StreamSummary {
		return 0, wrap("append frame", &model.Error{Code: model.CodeInvalidInput, Field: "FrameOpts.Mode",
			Detail: "summary frames are appended with PatchSummary"})
	}
	r, err := t.appendFrame(ctx, &model.StreamAppendParams{
		Mode: o.Mode, Type: typ, Payload: payload, Encoding: o.Encoding, CorrelationID: o.CorrelationID,
		MaxLen: o.MaxLen, TTL: o.TTL,
	})
	if err != nil {
		return 0, wrap("append frame", err)
	}
	return r.Sequence, nil
}

// summaryConflictRetries bounds PatchSummary's read-merge-write loop.
const summaryConflictRetries = 16

// PatchSummary applies patch, an RFC 7396 JSON merge patch (a null member
// deletes it, arrays replace; the string "__ff_null__" sets a member to
// null), to the attempt's summary document and appends it as a summary
// frame (type "summary", encoding "json-merge-patch"). It returns the
// document's new version, the number of patches applied. The document is
// merged here and stored canonical (compact, keys sorted), so every store
// holds the same bytes; concurrent patches of the same attempt are
// serialised by version (a patch that lost the race is re-applied on the
// newer document).
func (t *TaskInfo) PatchSummary(ctx context.Context, patch []byte) (uint64, error) {
	ss, err := t.streamStore()
	if err != nil {
		return 0, wrap("patch summary", err)
	}
	for range summaryConflictRetries {
		cur, err := ss.StreamSummary(ctx, &model.StreamSummaryParams{ID: t.ID, Attempt: t.Attempt, Now: t.w.engine.clock.Now()})
		if err != nil {
			return 0, wrap("patch summary", err)
		}
		doc, err := mergepatch.Apply(cur.Document, patch)
		if err != nil {
			return 0, wrap("patch summary", &model.Error{Code: model.CodeInvalidInput, Field: "patch", Detail: err.Error()})
		}
		r, err := t.appendFrame(ctx, &model.StreamAppendParams{
			Mode: StreamSummary, Type: "summary", Payload: patch, Encoding: "json-merge-patch",
			Summary: &model.SummaryUpdate{BaseVersion: cur.Version, Document: doc},
		})
		if errors.Is(err, model.ErrSummaryConflict) {
			continue
		}
		if err != nil {
			return 0, wrap("patch summary", err)
		}
		return r.SummaryVersion, nil
	}
	return 0, wrap("patch summary", fmt.Errorf("%w: %d attempts lost the race", model.ErrSummaryConflict, summaryConflictRetries))
}

// appendFrame fills in the task's fence and the time and appends.
func (t *TaskInfo) appendFrame(ctx context.Context, p *model.StreamAppendParams) (*model.StreamAppendResult, error) {
	ss, err := t.streamStore()
	if err != nil {
		return nil, err
	}
	if cause := t.leaseGone(); cause != nil {
		return nil, cause
	}
	p.ID, p.Fence, p.Now = t.ID, t.run.fence, t.w.engine.clock.Now()
	r, err := ss.StreamAppend(ctx, p)
	if errors.Is(err, model.ErrStaleLease) || errors.Is(err, model.ErrLeaseExpired) || errors.Is(err, model.ErrLeaseRevoked) || errors.Is(err, model.ErrNotActive) {
		return nil, fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	return r, err
}

func (t *TaskInfo) streamStore() (model.StreamStore, error) {
	if t.w == nil || t.run == nil {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "TaskInfo", Detail: "not_running"}
	}
	return t.w.engine.streamStore()
}

func (e *Engine) streamStore() (model.StreamStore, error) {
	ss, ok := e.store.(model.StreamStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store",
			Detail: fmt.Sprintf("%T does not implement model.StreamStore", e.store)}
	}
	return ss, nil
}

// StreamReadOpts are the options of ReadStream and TailStream.
type StreamReadOpts struct {
	// After is the cursor: frames with a higher sequence are read (0: from
	// the first the stream keeps).
	After uint64
	// Limit is how many frames are looked at (1–model.MaxStreamRead; 0:
	// 100). A larger one is refused, not cut.
	Limit int
	// ExcludeBestEffort leaves best-effort frames out (the cursor still
	// moves past them).
	ExcludeBestEffort bool
	// MaxWait (TailStream only) bounds the wait (0: 30 s; at most 5 min).
	MaxWait time.Duration
}

// StreamPage is one page of an attempt stream.
type StreamPage struct {
	Frames []Frame
	// Next is the cursor to pass as After for the following page.
	Next uint64
	// LastSequence is the newest frame's sequence ever appended.
	LastSequence uint64
	// Closed says no frame will follow those the stream holds; ClosedAt
	// and ClosedReason say when and why.
	Closed       bool
	ClosedAt     time.Time
	ClosedReason StreamCloseReason
	// Done says a reader has everything: the stream is closed and this
	// page reached its end.
	Done bool
}

// DefaultTailWait is TailStream's wait when StreamReadOpts.MaxWait is 0.
const DefaultTailWait = 30 * time.Second

// maxTailWait bounds StreamReadOpts.MaxWait.
const maxTailWait = 5 * time.Minute

// tailRecheck is how often a tail re-reads when no notice came (notices
// may be lost, and a store without model.StreamNotifier sends none).
const tailRecheck = time.Second

// ReadStream reads one page of the stream of the execution's attempt
// (attempt: its index, 0 for the first; TaskInfo.Attempt in a handler).
func (e *Engine) ReadStream(ctx context.Context, id ExecutionID, attempt int, opts *StreamReadOpts) (*StreamPage, error) {
	ss, err := e.streamStore()
	if err != nil {
		return nil, wrap("read stream", err)
	}
	o, err := streamOpts(opts, false)
	if err != nil {
		return nil, wrap("read stream", err)
	}
	p, err := readPage(ctx, e, ss, id, attempt, o)
	return p, wrap("read stream", err)
}

func streamOpts(opts *StreamReadOpts, tail bool) (StreamReadOpts, error) {
	var o StreamReadOpts
	if opts != nil {
		o = *opts
	}
	if o.Limit == 0 {
		o.Limit = 100
	}
	if !tail && o.MaxWait != 0 {
		return o, &model.Error{Code: model.CodeInvalidInput, Field: "MaxWait", Detail: "tail_only"}
	}
	if o.MaxWait < 0 || o.MaxWait > maxTailWait {
		return o, model.OutOfRange("MaxWait", o.MaxWait, "0.."+maxTailWait.String())
	}
	if o.MaxWait == 0 {
		o.MaxWait = DefaultTailWait
	}
	return o, nil
}

func readPage(ctx context.Context, e *Engine, ss model.StreamStore, id ExecutionID, attempt int, o StreamReadOpts) (*StreamPage, error) {
	r, err := ss.StreamRead(ctx, &model.StreamReadParams{
		ID: id, Attempt: attempt, After: o.After, Count: o.Limit, ExcludeBestEffort: o.ExcludeBestEffort, Now: e.clock.Now(),
	})
	if err != nil {
		return nil, err
	}
	return &StreamPage{
		Frames: r.Frames, Next: r.Next, LastSequence: r.LastSequence,
		Closed: r.Closed, ClosedAt: r.ClosedAt, ClosedReason: r.ClosedReason,
		// the end is reached when the newest frame was looked at, or when
		// nothing follows the cursor (trimmed or expired frames)
		Done: r.Closed && (r.Next >= r.LastSequence || r.Next == o.After),
	}, nil
}

// TailStream waits until the stream of the execution's attempt has frames
// after opts.After, or is closed, or opts.MaxWait has passed on the
// engine's clock, and returns that page (possibly empty, with the cursor
// moved past any best-effort frames it skipped). It holds no store
// connection while it waits: appends wake it through the store's
// notifications (model.StreamNotifier), with a re-read every second as the
// backstop, so tails never slow writers (FlowFabric's #204). An attempt
// that has not started yet is waited for (ErrAttemptNotFound once the
// execution is terminal without it).
func (e *Engine) TailStream(ctx context.Context, id ExecutionID, attempt int, opts *StreamReadOpts) (*StreamPage, error) {
	ss, err := e.streamStore()
	if err != nil {
		return nil, wrap("tail stream", err)
	}
	o, err := streamOpts(opts, true)
	if err != nil {
		return nil, wrap("tail stream", err)
	}
	w, stop := e.watchStream(id, attempt)
	defer stop()
	return e.tail(ctx, ss, id, attempt, o, w, true)
}

// streamWatch is a tail's watch of one stream: the signal its notices
// notify and, from a store whose notices carry frames
// (model.StreamFrameNotifier), the frames they brought that no read has
// returned yet (at most noticeFrames, oldest first).
type streamWatch struct {
	sig    *model.Signal
	mu     sync.Mutex
	frames []Frame
	// stale is set by a notice without a frame: the store must be read
	stale bool
}

// noticeFrames bounds the frames a watch keeps from notices.
const noticeFrames = 256

func (w *streamWatch) notice(f *Frame) {
	if f == nil {
		w.mu.Lock()
		w.stale = true
		w.mu.Unlock()
	} else {
		w.mu.Lock()
		if n := len(w.frames); n == 0 || w.frames[n-1].Sequence < f.Sequence {
			if n == noticeFrames {
				w.frames = append(w.frames[:0], w.frames[1:]...)
			}
			w.frames = append(w.frames, *f)
		}
		w.mu.Unlock()
	}
	w.sig.Notify()
}

// take returns the page the notices' frames make after the cursor: the
// frames that follow it without a gap (at most limit looked at), or nil
// when the next frame did not come by notice.
func (w *streamWatch) take(o StreamReadOpts) *StreamPage {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := 0
	for i < len(w.frames) && w.frames[i].Sequence <= o.After {
		i++
	}
	w.frames = w.frames[i:]
	if len(w.frames) == 0 || w.frames[0].Sequence != o.After+1 {
		return nil
	}
	p := &StreamPage{Next: o.After}
	n := 0
	for n < len(w.frames) && n < o.Limit && w.frames[n].Sequence == p.Next+1 {
		f := w.frames[n]
		p.Next, p.LastSequence = f.Sequence, f.Sequence
		if !o.ExcludeBestEffort || f.Mode != StreamBestEffort {
			p.Frames = append(p.Frames, f)
		}
		n++
	}
	w.frames = w.frames[n:]
	return p
}

// takeStale reports (and forgets) whether a notice without a frame came.
func (w *streamWatch) takeStale() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stale
	w.stale = false
	return st
}

// has reports whether a notice brought the frame of sequence seq.
func (w *streamWatch) has(seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.frames {
		if f.Sequence == seq {
			return true
		}
	}
	return false
}

// watchStream starts a watch of the stream (no notices without
// model.StreamNotifier) and returns it with the func that stops it.
func (e *Engine) watchStream(id ExecutionID, attempt int) (*streamWatch, func()) {
	w := &streamWatch{sig: e.clock.NewSignal()}
	if n, ok := e.store.(model.StreamFrameNotifier); ok {
		return w, n.WatchStreamFrames(id, attempt, w.notice)
	}
	if n, ok := e.store.(model.StreamNotifier); ok {
		return w, n.WatchStream(id, attempt, func() { w.notice(nil) })
	}
	return w, func() {}
}

// tail is TailStream with its watch already in place. A frame a notice
// brought is returned without reading the store. The store is read on the
// first look of a new watch (fresh is true), after a notice without a
// frame (a close, a large frame, a lost notice), when the next frame did
// not come by notice, and every tailRecheck without notices; a
// continuing watch whose notices bring every frame reads nothing.
func (e *Engine) tail(ctx context.Context, ss model.StreamStore, id ExecutionID, attempt int, o StreamReadOpts, w *streamWatch, fresh bool) (*StreamPage, error) {
	deadline := e.clock.Now().Add(o.MaxWait)
	read := fresh
	for {
		p := w.take(o)
		missing := false
		if p == nil && (read || w.takeStale() || !deadline.After(e.clock.Now())) {
			var err error
			p, err = readPage(ctx, e, ss, id, attempt, o)
			if errors.Is(err, model.ErrAttemptNotFound) {
				// the attempt has not started yet: wait for it (reading
				// again on each wake-up), unless the execution can no
				// longer start one
				missing = true
				p, err = &StreamPage{Next: o.After}, e.attemptMayStart(ctx, id, attempt)
				if err == nil {
					// it may have started since: the answer is the last read
					q, rerr := readPage(ctx, e, ss, id, attempt, o)
					switch {
					case rerr == nil:
						p, missing = q, false
					case !errors.Is(rerr, model.ErrAttemptNotFound):
						err = rerr
					}
				}
			}
			if err != nil {
				return nil, wrap("tail stream", err)
			}
		}
		read = missing
		left := deadline.Sub(e.clock.Now())
		if p != nil {
			if len(p.Frames) > 0 || p.Done || left <= 0 {
				return p, nil
			}
			o.After = p.Next
		}
		if w.has(o.After + 1) {
			continue // skipped best-effort frames; more came by notice
		}
		if left <= 0 {
			continue // read once more before answering
		}
		d := min(left, tailRecheck)
		start := e.clock.Now()
		if err := e.clock.Wait(ctx, d, w.sig); err != nil {
			return &StreamPage{Next: o.After}, wrap("tail stream", err)
		}
		if e.clock.Now().Sub(start) >= tailRecheck {
			read = true // no notice for a while: a notice may have been lost
		}
	}
}

// attemptMayStart returns ErrAttemptNotFound when the execution is
// terminal without the attempt (none it lacks will start), nil otherwise
// (it may start, or it started since the read that missed it).
func (e *Engine) attemptMayStart(ctx context.Context, id ExecutionID, attempt int) error {
	s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		return err
	}
	if s.PublicState.IsTerminal() && s.TotalAttempts <= attempt {
		return model.ErrAttemptNotFound
	}
	return nil
}

// Frames follows the stream of the execution's attempt from the frame
// after opts.After until the stream closes, yielding every frame once, in
// order. It stops at the first error (yielded with a zero Frame) or when
// the loop breaks or ctx ends.
func (e *Engine) Frames(ctx context.Context, id ExecutionID, attempt int, opts *StreamReadOpts) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		ss, err := e.streamStore()
		if err != nil {
			yield(Frame{}, wrap("tail stream", err))
			return
		}
		o, err := streamOpts(opts, true)
		if err != nil {
			yield(Frame{}, wrap("tail stream", err))
			return
		}
		o.MaxWait = DefaultTailWait
		// one watch for the whole iteration: a subscription per page would
		// cost the store a subscribe and an unsubscribe per wake-up
		w, stop := e.watchStream(id, attempt)
		defer stop()
		for read := true; ; {
			p, err := e.tail(ctx, ss, id, attempt, o, w, read)
			if err != nil {
				yield(Frame{}, err)
				return
			}
			for _, f := range p.Frames {
				if !yield(f, nil) {
					return
				}
			}
			o.After = p.Next
			if p.Done {
				return
			}
			// read the store again while it holds frames past the page
			// (a page read before the notices began, or cut by Limit)
			read = p.Next < p.LastSequence
		}
	}
}

// SummaryDoc is an attempt's summary document.
type SummaryDoc = model.StreamSummaryResult

// StreamSummary returns the summary document of the execution's attempt
// (empty, version 0, when no patch was applied).
func (e *Engine) StreamSummary(ctx context.Context, id ExecutionID, attempt int) (*SummaryDoc, error) {
	ss, err := e.streamStore()
	if err != nil {
		return nil, wrap("stream summary", err)
	}
	r, err := ss.StreamSummary(ctx, &model.StreamSummaryParams{ID: id, Attempt: attempt, Now: e.clock.Now()})
	return r, wrap("stream summary", err)
}
