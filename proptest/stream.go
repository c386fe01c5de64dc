package proptest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Attempt output streams (model.StreamStore, model/stream.go): appends by
// the lease holder (its latest fence mostly, an older or corrupted one
// sometimes) in the three modes, with small durable MaxLens, best-effort
// TTLs and summary documents on the right or a wrong base version; a
// scenario that appends several frames to a running attempt in one step,
// lets a best-effort stream expire and reads it; reads and summary reads
// of any attempt (one past the end too) after any cursor.
//
// The machine keeps a model of what its successful appends imply per
// attempt stream: how many frames (LastSequence) and summary frames (the
// document's Version), whether it ever had a durable or summary frame,
// and when its best-effort frames expire otherwise. Every append's
// outcome is predicted from the observation before it (the fence order,
// with a closed stream refused first; the summary's base version; the
// sequence, summary version and kept frames of a success), every read is
// compared with the page the observed whole stream implies, and after
// every step every observed stream is compared with the model.

var (
	streamModes    = []model.StreamMode{model.StreamDurable, model.StreamSummary, model.StreamBestEffort}
	frameTypes     = []string{"token", "log", "step.v1", "Out-put_2"}
	framePayloads  = [][]byte{nil, {}, []byte("hello"), {0x00, 0xff, 0x80, '\n', 0x00}, []byte("ünïcødé"), []byte(`{"k":[1,2]}`)}
	frameEncodings = []string{"", "json", "text", "binary"}
	frameCorrIDs   = []string{"", "c1", "c2"}
	summaryDocs    = [][]byte{[]byte(`{}`), []byte(`{"a":1}`), []byte(`{"a":1,"b":[1,2]}`), []byte(`{"status":"ok","n":{"x":"ü"}}`)}
)

// streamRef names one attempt's stream.
type streamRef struct {
	id      model.ExecutionID
	attempt int
}

// refStream is what the machine's successful appends imply of one
// stream.
type refStream struct {
	appends   uint64 // LastSequence
	summaries uint64 // the summary's Version
	// persistent is set by a durable or summary frame; until then the
	// frames expire at expiresAt (2 × TTL after the last best-effort one).
	persistent bool
	expiresAt  time.Time
}

// streamModel is what the machine knows of the streams.
type streamModel struct {
	streams map[streamRef]*refStream
}

func newStreamModel() streamModel { return streamModel{streams: map[streamRef]*refStream{}} }

// streamOp adapts a model.StreamStore method to call's shape
// (checkOptional requires the interface).
func streamOp[P, R any](f func(model.StreamStore, context.Context, *P) (R, error)) func(model.Store, context.Context, *P) (R, error) {
	return optional(f)
}

// noteAppend records a successful append to attempt idx's stream.
func (m *machine) noteAppend(id model.ExecutionID, idx int, p *model.StreamAppendParams) {
	k := streamRef{id, idx}
	r := m.strm.streams[k]
	if r == nil {
		r = &refStream{}
		m.strm.streams[k] = r
	}
	r.appends++
	switch p.Mode {
	case model.StreamSummary:
		r.summaries++
		r.persistent, r.expiresAt = true, time.Time{}
	case model.StreamDurable:
		r.persistent, r.expiresAt = true, time.Time{}
	case model.StreamBestEffort:
		if !r.persistent {
			r.expiresAt = p.Now.Add(2 * p.EffectiveTTL())
		}
	}
}

// checkStreamModel checks the times of every observed stream (the
// machine's clock never falls: timeViolations) and compares the stream
// with the model: its LastSequence counts the appends, its summary
// Version the summary appends, and a stream that only ever had
// best-effort frames keeps them until 2 × TTL after the last one and none
// from then on (one that had a durable or summary frame keeps at least
// its newest).
func (m *machine) checkStreamModel() []string {
	var out []string
	o := m.obs[0]
	for _, id := range sortedExecIDs(o.Execs) {
		for i, so := range o.Execs[id].Streams {
			if so == nil || so.Read == nil || so.Summary == nil {
				continue // streamViolations
			}
			for _, msg := range so.timeViolations(o.Now) {
				out = append(out, fmt.Sprintf("%v: stream %d: %s", id, i, msg))
			}
			r := m.strm.streams[streamRef{id, i}]
			if r == nil {
				r = &refStream{}
			}
			bad := func(format string, args ...any) {
				out = append(out, fmt.Sprintf("%v: stream %d: ", id, i)+fmt.Sprintf(format, args...))
			}
			if so.Read.LastSequence != r.appends || so.Summary.Version != r.summaries {
				bad("last sequence %d, summary version %d; its %d appends (%d summary) say %d, %d",
					so.Read.LastSequence, so.Summary.Version, r.appends, r.summaries, r.appends, r.summaries)
			}
			kept := len(so.Read.Frames)
			switch {
			case r.appends == 0:
				if kept != 0 {
					bad("%d frames kept, none appended", kept)
				}
			case r.persistent:
				if kept == 0 {
					bad("no frame kept of a stream that had a durable or summary frame")
				}
			case !o.Now.Before(r.expiresAt):
				if kept != 0 {
					bad("%d best-effort frames kept at %v, they expired at %v", kept, o.Now, r.expiresAt)
				}
			case kept == 0:
				bad("no frame kept at %v, its best-effort frames expire at %v", o.Now, r.expiresAt)
			}
		}
	}
	return out
}

// streamDue lists the times best-effort streams expire.
func (m *machine) streamDue() []time.Time {
	var out []time.Time
	for _, r := range m.strm.streams {
		if !r.persistent && !r.expiresAt.IsZero() {
			out = append(out, r.expiresAt)
		}
	}
	return out
}

// ---- appends ----

// summaryVersion is the observed summary version of id's current
// attempt (0 when it has none).
func (m *machine) summaryVersion(id model.ExecutionID) uint64 {
	s := m.snap(id)
	if s == nil || s.CurrentAttempt == nil {
		return 0
	}
	if so := m.obs[0].Execs[id].stream(s.CurrentAttempt.Index); so != nil && so.Summary != nil {
		return so.Summary.Version
	}
	return 0
}

// drawStreamFence draws the fence of an append: mostly the latest one the
// holder was given, else one drawFence draws (older, corrupted, none,
// partial).
func (m *machine) drawStreamFence(t *rapid.T, id model.ExecutionID) model.Fence {
	if r := m.byID[id]; r != nil && len(r.fences) > 0 && chance(t, 60, "latest_fence") {
		return r.fences[len(r.fences)-1].fence
	}
	return m.drawFence(t, id)
}

// appendParams draws a valid append of mode (drawn when empty) to id's
// stream with fence f; a summary frame is mostly on the observed version.
func (m *machine) appendParams(t *rapid.T, id model.ExecutionID, f model.Fence, mode model.StreamMode) *model.StreamAppendParams {
	if mode == "" {
		mode = drawFrom(t, streamModes, "stream_mode")
	}
	p := &model.StreamAppendParams{
		ID: id, Fence: f, Mode: mode, Type: drawFrom(t, frameTypes, "frame_type"),
		Payload: slices.Clone(drawFrom(t, framePayloads, "frame_payload")), Encoding: drawFrom(t, frameEncodings, "frame_encoding"),
		CorrelationID: drawFrom(t, frameCorrIDs, "frame_corr"), Now: m.now(),
	}
	switch mode {
	case model.StreamDurable:
		if chance(t, 40, "max_len_set") {
			p.MaxLen = rapid.IntRange(1, 4).Draw(t, "max_len")
		}
	case model.StreamBestEffort:
		if chance(t, 40, "ttl_set") {
			p.TTL = ms(rapid.Int64Range(1000, 5000).Draw(t, "ttl_ms"))
		}
	case model.StreamSummary:
		base := m.summaryVersion(id)
		if chance(t, 15, "wrong_base") {
			if base > 0 && genBool.Draw(t, "base_below") {
				base--
			} else {
				base += uint64(rapid.IntRange(1, 2).Draw(t, "base_above"))
			}
		}
		p.Type = "summary"
		p.Summary = &model.SummaryUpdate{BaseVersion: base, Document: slices.Clone(drawFrom(t, summaryDocs, "summary_doc"))}
	}
	return p
}

// appendCorruptions is how many kinds of invalid input corruptAppend
// makes.
const appendCorruptions = 10

// corruptAppend makes one input of p invalid (kind k) and returns the
// field the refusal must name.
func corruptAppend(t *rapid.T, p *model.StreamAppendParams, k int) string {
	switch k {
	case 0:
		p.Mode = "loud"
		return "Mode"
	case 1:
		p.Type = drawFrom(t, []string{"", "has space", strings.Repeat("t", 65), "ü"}, "bad_type")
		return "Type"
	case 2:
		p.Payload = make([]byte, model.MaxFramePayloadBytes+1)
		return "Payload"
	case 3:
		p.Encoding = strings.Repeat("e", model.FrameEncodingMaxBytes+1)
		return "Encoding"
	case 4:
		p.CorrelationID = strings.Repeat("c", model.FrameCorrelationMaxBytes+1)
		return "CorrelationID"
	case 5:
		if p.Mode == model.StreamDurable {
			p.MaxLen = drawFrom(t, []int{-1, model.MaxStreamMaxLen + 1}, "bad_max_len")
		} else {
			p.MaxLen = 2 // durable frames only
		}
		return "MaxLen"
	case 6:
		if p.Mode == model.StreamBestEffort {
			p.TTL = drawFrom(t, []time.Duration{time.Second - time.Millisecond, time.Hour + time.Millisecond, 1500500 * time.Microsecond, -time.Second}, "bad_ttl")
		} else {
			p.TTL = 2 * time.Second // best-effort frames only
		}
		return "TTL"
	case 7:
		if p.Mode == model.StreamSummary {
			p.Summary = nil
		} else {
			p.Summary = &model.SummaryUpdate{Document: []byte(`{}`)}
		}
		return "Summary"
	case 8:
		p.Mode, p.MaxLen, p.TTL = model.StreamSummary, 0, 0
		p.Summary = &model.SummaryUpdate{Document: drawFrom(t, [][]byte{nil, make([]byte, model.MaxSummaryBytes+1)}, "bad_document")}
		return "Summary.Document"
	default:
		p.Now = time.Time{}
		return "Now"
	}
}

// expectInvalidField checks that a call with one invalid input was
// refused as a validation error naming that input.
func (m *machine) expectInvalidField(t *rapid.T, op, field string, err error) {
	t.Helper()
	var e *model.Error
	m.expect(t, errors.As(err, &e) && errors.Is(err, model.ErrValidation) && e.Field == field,
		"%s with an invalid %s: got %v, want a validation error naming %s", op, field, err, field)
}

// actStreamAppend appends to the stream of an execution under a lease,
// or sometimes of any execution with an attempt (whose stream may be
// closed).
func (m *machine) actStreamAppend(t *rapid.T) {
	want := isOwned(model.OwnershipLeased)
	if chance(t, 30, "stream_any_attempt") {
		want = hasAttempts
	}
	id := m.pickExec(t, want)
	p := m.appendParams(t, id, m.drawStreamFence(t, id), "")
	_, _ = m.streamAppend(t, p, invalid(t, appendCorruptions))
}

// streamAppend makes the append p (with one invalid input of kind bad
// when bad ≥ 0) and checks its answer against the observation before it:
// a closed stream of the fence's attempt when that is the current one is
// refused first (stream_closed), then the fence as every fenced worker
// operation (predictFenced), then a summary on another version than the
// document's (summary_version_conflict). A success is the next sequence,
// the next summary version, and keeps one frame more than before up to
// the mode's limit.
func (m *machine) streamAppend(t *rapid.T, p *model.StreamAppendParams, bad int) (*model.StreamAppendResult, error) {
	t.Helper()
	const op = "StreamAppend"
	field := ""
	if bad >= 0 {
		field = corruptAppend(t, p, bad)
	}
	prev := m.snap(p.ID)
	x := m.obs[0].Execs[p.ID]
	res, err := call(m, t, op, p, streamOp(model.StreamStore.StreamAppend))
	if bad >= 0 {
		if f := p.Fence; field == "Now" && (f.IsZero() || !f.IsComplete()) {
			field = "Fence" // checked before Now
		}
		m.expectInvalidField(t, op, field, err)
		return res, err
	}
	var cur *StreamObservation
	idx := -1
	if prev != nil && prev.CurrentAttempt != nil {
		idx = prev.CurrentAttempt.Index
		cur = x.stream(idx)
		m.expect(t, cur != nil && cur.Read != nil && cur.Summary != nil, "%s: the current attempt %d's stream was not observed", op, idx)
	}
	f := p.Fence
	switch {
	case !f.IsZero() && f.IsComplete() && cur != nil && f.AttemptID == prev.CurrentAttempt.ID && cur.Read.Closed:
		m.expect(t, errors.Is(err, model.ErrStreamClosed), "%s to the closed stream of the current attempt (%q at %v): %+v %v, want stream_closed",
			op, cur.Read.ClosedReason, cur.Read.ClosedAt, res, err)
		m.reached(op + " closed " + string(cur.Read.ClosedReason))
		return res, err
	case m.predictFenced(prev, f) != nil:
		m.checkFenced(t, op, prev, model.SourceWorker, f, false, false, err)
		return res, err
	case p.Mode == model.StreamSummary && p.Summary.BaseVersion != cur.Summary.Version:
		m.expect(t, errors.Is(err, model.ErrSummaryConflict), "%s of a summary on version %d, the document's is %d: %+v %v, want summary_version_conflict",
			op, p.Summary.BaseVersion, cur.Summary.Version, res, err)
		return res, err
	}
	if err != nil {
		m.fatalf(t, "%s with the current fence %+v to an open stream failed: %v", op, f, err)
	}
	m.noteAppend(p.ID, idx, p)
	var version uint64
	if p.Mode == model.StreamSummary {
		version = cur.Summary.Version + 1
	}
	m.expect(t, res.Sequence == cur.Read.LastSequence+1 && res.SummaryVersion == version,
		"%s: sequence %d, summary version %d; want %d, %d", op, res.Sequence, res.SummaryVersion, cur.Read.LastSequence+1, version)
	want := len(cur.Read.Frames) + 1
	switch p.Mode {
	case model.StreamDurable, model.StreamSummary:
		want = min(want, p.EffectiveMaxLen())
		m.expect(t, res.Frames == want, "%s of a %s frame (max len %d) after %d kept frames keeps %d, want %d",
			op, p.Mode, p.EffectiveMaxLen(), len(cur.Read.Frames), res.Frames, want)
		if res.Frames < len(cur.Read.Frames)+1 {
			m.reached(op + " trimmed")
		}
	case model.StreamBestEffort:
		// K adapts to the rate but is never below BestEffortMinLen.
		m.expect(t, res.Frames <= want && res.Frames >= min(want, model.BestEffortMinLen),
			"%s of a best-effort frame after %d kept frames keeps %d", op, len(cur.Read.Frames), res.Frames)
	}
	m.reached(op + " " + string(p.Mode))
	return res, err
}

// ---- the scenario ----

// actStreamScenario appends several frames of mixed modes (or only
// best-effort ones) to the stream of an execution under a live lease
// (built when there is none), then sometimes moves the clock to the
// stream's best-effort expiry (±1 ms), or closes the stream (the lease
// revoked, the attempt completed, the lease marked expired at its expiry)
// and appends once more, and reads it.
func (m *machine) actStreamScenario(t *rapid.T) {
	ids := m.leasedWhere(func(*model.ExecutionSnapshot) bool { return true })
	var id model.ExecutionID
	built := false
	switch {
	case len(ids) > 0:
		id = drawFrom(t, ids, "stream_exec")
	case m.awaitRoom():
		id, built = m.buildRunning(t), true
	default:
		m.actStreamAppend(t)
		return
	}
	s := m.snap(id)
	if s == nil || s.CurrentAttempt == nil || s.CurrentLease == nil {
		return
	}
	f, idx := currentFence(s), s.CurrentAttempt.Index
	var mode model.StreamMode
	if chance(t, 35, "best_effort_only") {
		mode = model.StreamBestEffort
	}
	ok := 0
	for range rapid.IntRange(2, 6).Draw(t, "frames") {
		if _, err := m.streamAppend(t, m.appendParams(t, id, f, mode), -1); err == nil {
			ok++
		}
		m.observeQuiet(t)
	}
	// Moving the clock after writes is safe only when the step changed no
	// execution before (its stamps must be Now; appends stamp nothing)
	// and some call succeeded (a step whose calls all failed is held to
	// the observation before it).
	canJump := ok > 0 && !built
	switch end := rapid.IntRange(0, 5).Draw(t, "stream_end"); {
	case end <= 2:
		if r := m.strm.streams[streamRef{id, idx}]; canJump && r != nil && !r.persistent {
			m.jumpAfterWrites(t, r.expiresAt.Add(ms(int64(rapid.IntRange(-1, 1).Draw(t, "expiry_off_ms")))))
		}
	case end == 3:
		res, err := call(m, t, "LeaseRevoke", &model.LeaseRevokeParams{ID: id, Reason: "stream", Now: m.now()}, model.Store.LeaseRevoke)
		m.expect(t, err == nil && res.Outcome == model.RevokeRevoked, "LeaseRevoke of a live lease: %+v %v", res, err)
		m.closedAppend(t, id, f, mode)
	case end == 4:
		p := &model.ExecutionCompleteParams{ID: id, Fence: f, Source: model.SourceWorker, Result: []byte("done"), Now: m.now()}
		prev := m.snap(id)
		res, err := call(m, t, "ExecutionComplete", p, model.Store.ExecutionComplete)
		m.checkFenced(t, "ExecutionComplete", prev, p.Source, p.Fence, false, err == nil && res.Replayed, err)
		m.closedAppend(t, id, f, mode)
	default:
		if !canJump {
			break
		}
		m.jumpAfterWrites(t, s.CurrentLease.ExpiresAt)
		res, err := call(m, t, "LeaseMarkExpired", &model.LeaseMarkExpiredParams{ID: id, Now: m.now()}, model.Store.LeaseMarkExpired)
		m.expect(t, err == nil && res.Outcome == model.MarkExpiredMarked, "LeaseMarkExpired at the lease's expiry: %+v %v", res, err)
		m.closedAppend(t, id, f, mode)
	}
	so := m.obs[0].Execs[id].stream(idx)
	if so != nil && so.Read != nil && so.Read.LastSequence > 0 && len(so.Read.Frames) == 0 {
		m.reached("StreamScenario expired")
	}
	p := &model.StreamReadParams{ID: id, Attempt: idx, After: m.drawAfter(t, so), Count: rapid.IntRange(1, 5).Draw(t, "count"),
		ExcludeBestEffort: genBool.Draw(t, "exclude_best_effort"), Now: m.now()}
	m.streamRead(t, p, -1)
	if chance(t, 30, "summary_read") {
		m.streamSummary(t, &model.StreamSummaryParams{ID: id, Attempt: idx, Now: m.now()}, -1)
	}
}

// jumpAfterWrites sets the clock to at when that is ahead and observes
// store A (see actStreamScenario for when that is safe).
func (m *machine) jumpAfterWrites(t *rapid.T, at time.Time) {
	t.Helper()
	if at.After(m.now()) {
		t.Logf("step %d: advance to %v", m.step, at)
		m.clock.Set(at)
		m.observeQuiet(t)
	}
}

// closedAppend observes store A after the stream of id's attempt was
// closed and appends once more with the fence it was written with (which
// streamAppend predicts to be refused: stream_closed).
func (m *machine) closedAppend(t *rapid.T, id model.ExecutionID, f model.Fence, mode model.StreamMode) {
	t.Helper()
	m.observeQuiet(t)
	_, _ = m.streamAppend(t, m.appendParams(t, id, f, mode), -1)
	m.observeQuiet(t)
}

// ---- reads ----

// drawStreamAttempt draws an attempt index of x: its current (last) one,
// any, the one past the end, or further.
func drawStreamAttempt(t *rapid.T, x *ExecObservation) int {
	n := 0
	if x != nil {
		n = len(x.Attempts)
	}
	switch k := rapid.IntRange(0, 9).Draw(t, "attempt_kind"); {
	case n > 0 && k <= 3:
		return n - 1
	case n > 0 && k <= 6:
		return drawIndex(t, n, "attempt")
	case k <= 8:
		return n
	}
	return n + rapid.IntRange(1, 3).Draw(t, "attempt_beyond")
}

// drawAfter draws a read cursor for the stream so: 0, a kept frame's
// sequence, LastSequence or beyond.
func (m *machine) drawAfter(t *rapid.T, so *StreamObservation) uint64 {
	var last uint64
	var frames []model.Frame
	if so != nil && so.Read != nil {
		last, frames = so.Read.LastSequence, so.Read.Frames
	}
	switch rapid.IntRange(0, 4).Draw(t, "after_kind") {
	case 0:
		return 0
	case 1, 2:
		if len(frames) > 0 {
			return drawFrom(t, frames, "after_frame").Sequence
		}
		return 0
	case 3:
		return last
	}
	return last + uint64(rapid.IntRange(1, 3).Draw(t, "after_beyond"))
}

// expectedPage is the page a read of after, count and excl returns,
// given the whole stream full.
func expectedPage(full *model.StreamReadResult, after uint64, count int, excl bool) *model.StreamReadResult {
	res := &model.StreamReadResult{Next: after, LastSequence: full.LastSequence, Closed: full.Closed, ClosedAt: full.ClosedAt,
		ClosedReason: full.ClosedReason}
	n := 0
	for _, f := range full.Frames {
		if f.Sequence <= after {
			continue
		}
		if n == count {
			break
		}
		n++
		res.Next = f.Sequence
		if excl && f.Mode == model.StreamBestEffort {
			continue
		}
		res.Frames = append(res.Frames, f)
	}
	return res
}

func hasAttempts(s *model.ExecutionSnapshot) bool { return s.TotalAttempts > 0 }

func (m *machine) actStreamRead(t *rapid.T) {
	id := m.pickExec(t, hasAttempts)
	x := m.obs[0].Execs[id]
	a := drawStreamAttempt(t, x)
	p := &model.StreamReadParams{ID: id, Attempt: a, After: m.drawAfter(t, x.stream(a)), Count: rapid.IntRange(1, 5).Draw(t, "count"),
		ExcludeBestEffort: genBool.Draw(t, "exclude_best_effort"), Now: m.now()}
	m.streamRead(t, p, invalid(t, 3))
}

// streamRead reads p (with one invalid input of kind bad when bad ≥ 0)
// and checks the answer against the observed whole stream.
func (m *machine) streamRead(t *rapid.T, p *model.StreamReadParams, bad int) {
	t.Helper()
	const op = "StreamRead"
	field := ""
	switch bad {
	case 0:
		p.Count, field = drawFrom(t, []int{0, -1, model.MaxStreamRead + 1}, "bad_count"), "Count"
	case 1:
		p.Attempt, field = drawFrom(t, []int{-1, -1 << 40}, "bad_attempt"), "Attempt"
	case 2:
		p.Now, field = time.Time{}, "Now"
	}
	x := m.obs[0].Execs[p.ID]
	res, err := call(m, t, op, p, streamOp(model.StreamStore.StreamRead))
	switch {
	case bad >= 0:
		m.expectInvalidField(t, op, field, err)
	case x == nil:
		m.expect(t, errors.Is(err, model.ErrNotFound), "%s of a missing execution: %+v %v", op, res, err)
	case p.Attempt >= len(x.Attempts):
		m.expect(t, errors.Is(err, model.ErrAttemptNotFound), "%s of attempt %d of %d: %+v %v, want attempt_not_found", op, p.Attempt, len(x.Attempts), res, err)
	default:
		so := x.stream(p.Attempt)
		m.expect(t, err == nil && so != nil && so.Read != nil, "%s of attempt %d failed: %v", op, p.Attempt, err)
		want := expectedPage(so.Read, p.After, p.Count, p.ExcludeBestEffort)
		m.expect(t, cmpEqual(res, want), "%s(after %d, count %d, exclude %v) = %+v, the observed stream %+v says %+v",
			op, p.After, p.Count, p.ExcludeBestEffort, *res, *so.Read, *want)
		switch {
		case res.Closed && res.ClosedReason == model.StreamClosedNoFrames:
			m.reached(op + " no_frames")
		case len(res.Frames) > 0 && res.Next < res.LastSequence:
			m.reached(op + " page")
		}
	}
}

func (m *machine) actStreamSummary(t *rapid.T) {
	id := m.pickExec(t, hasAttempts)
	m.streamSummary(t, &model.StreamSummaryParams{ID: id, Attempt: drawStreamAttempt(t, m.obs[0].Execs[id]), Now: m.now()}, invalid(t, 2))
}

// streamSummary reads p (with one invalid input of kind bad when bad ≥
// 0) and checks the answer against the observation.
func (m *machine) streamSummary(t *rapid.T, p *model.StreamSummaryParams, bad int) {
	t.Helper()
	const op = "StreamSummary"
	field := ""
	switch bad {
	case 0:
		p.Attempt, field = -1, "Attempt"
	case 1:
		p.Now, field = time.Time{}, "Now"
	}
	x := m.obs[0].Execs[p.ID]
	res, err := call(m, t, op, p, streamOp(model.StreamStore.StreamSummary))
	switch {
	case bad >= 0:
		m.expectInvalidField(t, op, field, err)
	case x == nil:
		m.expect(t, errors.Is(err, model.ErrNotFound), "%s of a missing execution: %+v %v", op, res, err)
	case p.Attempt >= len(x.Attempts):
		m.expect(t, errors.Is(err, model.ErrAttemptNotFound), "%s of attempt %d of %d: %+v %v, want attempt_not_found", op, p.Attempt, len(x.Attempts), res, err)
	default:
		so := x.stream(p.Attempt)
		m.expect(t, err == nil && so != nil && cmpEqual(res, so.Summary), "%s of attempt %d: %+v %v, observed %+v", op, p.Attempt, res, err, so)
		if res != nil && res.Version > 0 {
			m.reached(op + " document")
		}
	}
}
