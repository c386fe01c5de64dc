package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/flowfabric/flowfabric/model"
)

// Attempt output streams (model.StreamStore; valkeystore/lua/lib/stream.lua
// and the stream_*.lua scripts). Each attempt that appended a frame has a
// streamRec on its execution, keyed by attempt index; valkeystore keeps the
// same fields in the attempt's stream meta hash and the frames in a Redis
// stream beside it.

// streamRec is one attempt's stream.
type streamRec struct {
	// frames holds the kept frames, oldest first.
	frames  []model.Frame
	lastSeq uint64

	closed       bool
	closedAt     int64
	closedReason model.StreamCloseReason

	// persistent is set by the first durable or summary frame; until then
	// the frames expire at expiresAt (set by each best-effort frame).
	persistent bool
	expiresAt  int64
	// beRate and beAt are the best-effort rate estimate and the last
	// best-effort frame's time (model.BestEffortRate).
	beRate, beAt int64

	// doc is the summary document at version; docFirst and docAt are the
	// first and the last summary frame's times.
	doc             []byte
	version         uint64
	docFirst, docAt int64
}

// expired reports whether a never-persistent stream's frames are gone at
// now.
func (st *streamRec) expired(now int64) bool {
	return !st.persistent && st.expiresAt != 0 && now >= st.expiresAt
}

// streamKey names one attempt's stream, for notices; frame is the frame
// an append added (nil for a close).
type streamKey struct {
	id      model.ExecutionID
	attempt int
	frame   *model.Frame
}

// streamClosedState reports whether attempt idx's stream of e is closed,
// when and why; a stream never opened reads closed (no_frames) once its
// attempt ended or its lease was marked expired or revoked.
func streamClosedState(e *execution, idx int) (bool, int64, model.StreamCloseReason) {
	if st := e.streams[idx]; st != nil {
		return st.closed, st.closedAt, st.closedReason
	}
	if !e.attempts[idx].Status.IsOpen() {
		return true, 0, model.StreamClosedNoFrames
	}
	if idx == e.curAttempt && (e.ownershipState == model.OwnershipLeaseExpiredReclaimable || e.ownershipState == model.OwnershipLeaseRevoked) {
		return true, 0, model.StreamClosedNoFrames
	}
	return false, 0, ""
}

// closeStream closes the current attempt's stream, if it has an open one,
// with reason. Every attempt end (endAttempt) calls it, and
// closeLostStream.
func (s *Store) closeStream(e *execution, now int64, reason model.StreamCloseReason) {
	if e.curAttempt < 0 {
		return
	}
	st := e.streams[e.curAttempt]
	if st == nil || st.closed {
		return
	}
	st.closed, st.closedAt, st.closedReason = true, now, reason
	s.streamOut = append(s.streamOut, streamKey{e.id, e.curAttempt, nil})
}

// closeLostStream closes the current attempt's stream when its lease is
// marked expired or revoked: an open one with reason, and one never opened
// for good (no_frames), so that it stays closed if the attempt resumes
// later under a new lease (an operator's delay of a revoked execution).
func (s *Store) closeLostStream(e *execution, now int64, reason model.StreamCloseReason) {
	if e.curAttempt < 0 {
		return
	}
	if e.streams[e.curAttempt] != nil {
		s.closeStream(e, now, reason)
		return
	}
	if e.streams == nil {
		e.streams = make(map[int]*streamRec)
	}
	e.streams[e.curAttempt] = &streamRec{closed: true, closedReason: model.StreamClosedNoFrames}
	s.streamOut = append(s.streamOut, streamKey{e.id, e.curAttempt, nil})
}

// StreamAppend implements model.StreamStore.
func (s *Store) StreamAppend(ctx context.Context, p *model.StreamAppendParams) (*model.StreamAppendResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.StreamAppendResult, error) {
		now := ms(p.Now)
		if a := e.currentAttempt(); a != nil && a.ID == p.Fence.AttemptID {
			if closed, _, _ := streamClosedState(e, e.curAttempt); closed {
				return nil, model.ErrStreamClosed
			}
		}
		if err := validateLease(e, p.Fence, now); err != nil {
			return nil, err
		}
		st := e.streams[e.curAttempt]
		var version uint64
		if st != nil {
			version = st.version
		}
		if p.Mode == model.StreamSummary && p.Summary.BaseVersion != version {
			return nil, model.ErrSummaryConflict
		}
		if st == nil {
			st = &streamRec{}
			if e.streams == nil {
				e.streams = make(map[int]*streamRec)
			}
			e.streams[e.curAttempt] = st
		}
		if st.expired(now) {
			st.frames, st.expiresAt = nil, 0
		}
		st.lastSeq++
		f := model.Frame{
			Sequence: st.lastSeq, Time: tm(now), Type: p.Type, Payload: cloneBytes(p.Payload),
			Encoding: p.Encoding, CorrelationID: p.CorrelationID, Mode: p.Mode,
		}
		if f.Payload == nil {
			f.Payload = []byte{}
		}
		limit := int64(p.EffectiveMaxLen())
		switch p.Mode {
		case model.StreamDurable:
			st.persistent, st.expiresAt = true, 0
		case model.StreamSummary:
			st.persistent, st.expiresAt = true, 0
			st.version++
			st.doc = cloneBytes(p.Summary.Document)
			if st.docFirst == 0 {
				st.docFirst = now
			}
			st.docAt = now
			f.SummaryVersion = st.version
		case model.StreamBestEffort:
			ttl := p.EffectiveTTL().Milliseconds()
			st.beRate = model.BestEffortRate(st.beRate, st.beAt, now, ttl)
			st.beAt = now
			limit = model.BestEffortLen(st.beRate, ttl)
			if !st.persistent {
				st.expiresAt = now + 2*ttl
			}
		}
		st.frames = append(st.frames, f)
		if n := int64(len(st.frames)); n > limit {
			st.frames = slices.Delete(st.frames, 0, int(n-limit))
		}
		var nf *model.Frame
		if len(f.Payload) <= model.MaxNoticeFrameBytes {
			c := f
			c.Payload = cloneBytes(f.Payload)
			nf = &c
		}
		s.streamOut = append(s.streamOut, streamKey{e.id, e.curAttempt, nf})
		return &model.StreamAppendResult{Sequence: f.Sequence, Frames: len(st.frames), SummaryVersion: f.SummaryVersion}, nil
	})
}

// StreamRead implements model.StreamStore.
func (s *Store) StreamRead(ctx context.Context, p *model.StreamReadParams) (*model.StreamReadResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.StreamReadResult, error) {
		if p.Attempt >= len(e.attempts) {
			return nil, model.ErrAttemptNotFound
		}
		now := ms(p.Now)
		res := &model.StreamReadResult{Next: p.After}
		closed, at, why := streamClosedState(e, p.Attempt)
		res.Closed, res.ClosedAt, res.ClosedReason = closed, tm(at), why
		st := e.streams[p.Attempt]
		if st == nil {
			return res, nil
		}
		res.LastSequence = st.lastSeq
		if st.expired(now) {
			return res, nil
		}
		i := sort.Search(len(st.frames), func(i int) bool { return st.frames[i].Sequence > p.After })
		for n := 0; i < len(st.frames) && n < p.Count; i, n = i+1, n+1 {
			f := st.frames[i]
			res.Next = f.Sequence
			if p.ExcludeBestEffort && f.Mode == model.StreamBestEffort {
				continue
			}
			f.Payload = cloneBytes(f.Payload)
			res.Frames = append(res.Frames, f)
		}
		return res, nil
	})
}

// StreamSummary implements model.StreamStore.
func (s *Store) StreamSummary(ctx context.Context, p *model.StreamSummaryParams) (*model.StreamSummaryResult, error) {
	return withExec(s, ctx, p.Validate(s.cfg), p.ID, func(e *execution) (*model.StreamSummaryResult, error) {
		if p.Attempt >= len(e.attempts) {
			return nil, model.ErrAttemptNotFound
		}
		res := &model.StreamSummaryResult{}
		if st := e.streams[p.Attempt]; st != nil && st.version > 0 {
			res.Document, res.Version = cloneBytes(st.doc), st.version
			res.FirstAppliedAt, res.UpdatedAt = tm(st.docFirst), tm(st.docAt)
		}
		return res, nil
	})
}

// WatchStream implements model.StreamNotifier: f is called after every
// append to and the close of the attempt's stream, in the goroutine of the
// store call that made it, once the store's lock is released. f must not
// block and must not call the store.
func (s *Store) WatchStream(id model.ExecutionID, attempt int, f func()) (stop func()) {
	return s.WatchStreamFrames(id, attempt, func(*model.Frame) { f() })
}

// WatchStreamFrames implements model.StreamFrameNotifier, as WatchStream
// with the frame an append added (payloads up to MaxNoticeFrameBytes).
func (s *Store) WatchStreamFrames(id model.ExecutionID, attempt int, f func(*model.Frame)) (stop func()) {
	k := streamWatchKey{id, attempt}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.watchSeq++
	wid := s.watchSeq
	if s.streamWatchers[k] == nil {
		s.streamWatchers[k] = make(map[int]func(*model.Frame))
	}
	s.streamWatchers[k][wid] = f
	return func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		delete(s.streamWatchers[k], wid)
		if len(s.streamWatchers[k]) == 0 {
			delete(s.streamWatchers, k)
		}
	}
}

// streamWatchKey names one attempt's stream for its watchers.
type streamWatchKey struct {
	id      model.ExecutionID
	attempt int
}

// deliverStreams calls the watchers of the streams a transition changed,
// once per change, in order.
func (s *Store) deliverStreams(out []streamKey) {
	var calls []func()
	s.watchMu.Lock()
	for _, k := range out {
		fs := s.streamWatchers[streamWatchKey{k.id, k.attempt}]
		ids := make([]int, 0, len(fs))
		for id := range fs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			f, fr := fs[id], k.frame
			calls = append(calls, func() {
				if fr != nil {
					c := *fr
					c.Payload = cloneBytes(fr.Payload)
					f(&c)
					return
				}
				f(nil)
			})
		}
	}
	s.watchMu.Unlock()
	for _, f := range calls {
		f()
	}
}
