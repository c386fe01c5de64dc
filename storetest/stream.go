package storetest

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// Attempt output streams (model.StreamStore, model/stream.go): every
// attempt has its own stream, appended to under the attempt's live lease
// (fenced; a closed stream refuses first, then the lease checks), read by
// anyone after a cursor; durable, summary and best-effort frames with
// their trims; best-effort expiry of a stream that never had a durable or
// summary frame; the summary document and its versions; when and why a
// stream closes (its attempt ends, its lease is marked expired or
// revoked; pausing keeps it open). Every refusal writes nothing. A store
// without the optional interface skips these tests; model.StreamNotifier
// is tested when the store has it.
func testStreams(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*streamHarness)
	}{
		// appends and their refusals
		{"AppendSequence", streamAppendSequence},
		{"AppendRefusedNotFound", streamAppendNotFound},
		{"AppendRefusedOrder", streamAppendRefusedOrder},
		{"AppendLeaseBoundary", streamAppendLeaseBoundary},
		{"AppendAfterRenew", streamAppendAfterRenew},
		{"BinaryPayloads", streamBinaryPayloads},
		{"PayloadMax", streamPayloadMax},
		// trims
		{"DurableMaxLen", streamDurableMaxLen},
		{"DurableDefaultMaxLen", streamDurableDefaultMaxLen},
		{"SummaryTrim", streamSummaryTrim},
		{"BestEffortFirstK", streamBestEffortFirstK},
		{"BestEffortAdaptiveK", streamBestEffortAdaptiveK},
		{"TrimsWholeStream", streamTrimsWholeStream},
		// best-effort expiry
		{"BestEffortExpiry", streamBestEffortExpiry},
		{"BestEffortExpiryFromLast", streamBestEffortExpiryFromLast},
		{"BestEffortAppendAfterExpiry", streamAppendAfterExpiry},
		{"DurablePersists", streamDurablePersists},
		{"SummaryPersists", streamSummaryPersists},
		// summaries
		{"SummaryNone", streamSummaryNone},
		{"SummaryVersions", streamSummaryVersions},
		{"SummaryConflict", streamSummaryConflict},
		{"SummaryStoredAsGiven", streamSummaryStoredAsGiven},
		// reads
		{"ReadPages", streamReadPages},
		{"ReadAfterTrim", streamReadAfterTrim},
		{"ReadExcludeBestEffort", streamReadExcludeBestEffort},
		{"ReadNotFound", streamReadNotFound},
		{"ReadAttemptNotFound", streamReadAttemptNotFound},
		{"ReadNeverOpenedLive", streamReadNeverOpenedLive},
		// closing
		{"CloseOnEnd", streamCloseOnEnd},
		{"CloseKeepsFirstReason", streamCloseKeepsFirst},
		{"RetryNewStream", streamRetryNewStream},
		{"SuspendKeepsOpen", streamSuspendKeepsOpen},
		{"DelayKeepsOpen", streamDelayKeepsOpen},
		{"LostLeaseClosesForGood", streamLostLeaseClosesForGood},
		{"AwaitChildrenKeepsOpen", streamAwaitChildrenKeepsOpen},
		// notifications
		{"WatchAppendAndClose", streamWatchAppendAndClose},
		{"WatchFramesCarry", streamWatchFramesCarry},
		{"WatchStop", streamWatchStop},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			st, ok := streamStoreOf(h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.StreamStore", h.s)
			}
			c.run(&streamHarness{harness: h, st: st})
		})
	}
	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		testStreamValidation(t, newStore)
	})
}

// optionalOf returns the store under test as the optional interface I,
// if it implements it (past partialStore).
func optionalOf[I any](h *harness) (I, bool) {
	var s model.Store = h.s
	if p, ok := h.s.(*partialStore); ok {
		s = p.Store
	}
	i, ok := s.(I)
	return i, ok
}

// streamStoreOf returns the store's model.StreamStore, if it has one.
func streamStoreOf(h *harness) (model.StreamStore, bool) {
	return optionalOf[model.StreamStore](h)
}

// streamHarness is a harness with the store's stream operations.
type streamHarness struct {
	*harness
	st model.StreamStore
}

func (h *streamHarness) on(t *testing.T) *streamHarness {
	return &streamHarness{harness: h.harness.on(t), st: h.st}
}

// frame is an append of a frame of mode to the stream of the attempt f
// holds, type "token".
func frame(id model.ExecutionID, f model.Fence, mode model.StreamMode, payload string, now time.Time) *model.StreamAppendParams {
	return &model.StreamAppendParams{ID: id, Fence: f, Mode: mode, Type: "token", Payload: []byte(payload), Now: now}
}

func durable(id model.ExecutionID, f model.Fence, payload string, now time.Time) *model.StreamAppendParams {
	return frame(id, f, model.StreamDurable, payload, now)
}

func bestEffort(id model.ExecutionID, f model.Fence, payload string, now time.Time) *model.StreamAppendParams {
	return frame(id, f, model.StreamBestEffort, payload, now)
}

// summaryFrame is a summary append: patch as the payload, doc as the
// document after it, applied to version base.
func summaryFrame(id model.ExecutionID, f model.Fence, base uint64, patch, doc string, now time.Time) *model.StreamAppendParams {
	p := frame(id, f, model.StreamSummary, patch, now)
	p.Type = "summary"
	p.Summary = &model.SummaryUpdate{BaseVersion: base, Document: []byte(doc)}
	return p
}

func (h *streamHarness) append(p *model.StreamAppendParams) *model.StreamAppendResult {
	h.t.Helper()
	return call(h.st.StreamAppend(h.ctx, p)).must(h.t)
}

// appended appends p and checks its sequence and the frames kept after it.
func (h *streamHarness) appended(p *model.StreamAppendParams, seq uint64, frames int) *model.StreamAppendResult {
	h.t.Helper()
	res := h.append(p)
	if res.Sequence != seq || res.Frames != frames {
		h.t.Fatalf("append %s at %v: sequence %d, frames %d; want sequence %d, frames %d", p.Mode, p.Now, res.Sequence, res.Frames, seq, frames)
	}
	return res
}

// refused appends p, expects want, and checks that nothing changed: the
// execution's reads and every attempt's stream and summary (read at
// p.Now).
func (h *streamHarness) refused(p *model.StreamAppendParams, want *model.Error) {
	h.t.Helper()
	before := h.streamView(p.ID, p.Now)
	h.unchanged(p.ID, func() {
		_, err := h.st.StreamAppend(h.ctx, p)
		wantErr(h.t, err, want)
	})
	if d := cmp.Diff(before, h.streamView(p.ID, p.Now), cmpOpts...); d != "" {
		h.t.Fatalf("refused append (%s) changed the streams of %v (-before +after):\n%s", want.Code, p.ID, d)
	}
}

// streamView is what the stream reads show of every attempt of id at now.
type streamView struct {
	Reads     []*model.StreamReadResult
	Summaries []*model.StreamSummaryResult
}

func (h *streamHarness) streamView(id model.ExecutionID, now time.Time) streamView {
	h.t.Helper()
	var v streamView
	for i := range h.attempts(id) {
		v.Reads = append(v.Reads, h.readAll(id, i, now))
		v.Summaries = append(v.Summaries, h.summary(id, i, now))
	}
	return v
}

func (h *streamHarness) read(p *model.StreamReadParams) *model.StreamReadResult {
	h.t.Helper()
	return call(h.st.StreamRead(h.ctx, p)).must(h.t)
}

// readAll reads up to MaxStreamRead frames of attempt's stream from the
// start.
func (h *streamHarness) readAll(id model.ExecutionID, attempt int, now time.Time) *model.StreamReadResult {
	h.t.Helper()
	return h.read(&model.StreamReadParams{ID: id, Attempt: attempt, Count: model.MaxStreamRead, Now: now})
}

func (h *streamHarness) summary(id model.ExecutionID, attempt int, now time.Time) *model.StreamSummaryResult {
	h.t.Helper()
	return call(h.st.StreamSummary(h.ctx, &model.StreamSummaryParams{ID: id, Attempt: attempt, Now: now})).must(h.t)
}

func seqs(fs []model.Frame) []uint64 {
	var out []uint64
	for _, f := range fs {
		out = append(out, f.Sequence)
	}
	return out
}

// seqRange returns from, from+1, …, to.
func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// wantSeqs reads attempt's whole stream at now and checks the sequences
// it keeps and its LastSequence.
func (h *streamHarness) wantSeqs(id model.ExecutionID, attempt int, now time.Time, last uint64, want ...uint64) *model.StreamReadResult {
	h.t.Helper()
	r := h.readAll(id, attempt, now)
	wantEqual(h.t, "sequences kept", want, seqs(r.Frames))
	if r.LastSequence != last {
		h.t.Fatalf("LastSequence %d, want %d", r.LastSequence, last)
	}
	return r
}

// wantOpen checks that attempt's stream reads open.
func (h *streamHarness) wantOpen(id model.ExecutionID, attempt int, now time.Time) {
	h.t.Helper()
	r := h.readAll(id, attempt, now)
	if r.Closed || !r.ClosedAt.IsZero() || r.ClosedReason != "" {
		h.t.Fatalf("stream %v/%d: closed %v at %v (%q), want open", id, attempt, r.Closed, r.ClosedAt, r.ClosedReason)
	}
}

// wantClosed checks that attempt's stream reads closed at closedAt (zero
// for a stream never opened) for reason.
func (h *streamHarness) wantClosed(id model.ExecutionID, attempt int, now time.Time, reason model.StreamCloseReason, closedAt time.Time) {
	h.t.Helper()
	r := h.readAll(id, attempt, now)
	if !r.Closed || !r.ClosedAt.Equal(closedAt) || r.ClosedReason != reason {
		h.t.Fatalf("stream %v/%d: closed %v at %v (%q), want closed at %v (%q)", id, attempt, r.Closed, r.ClosedAt, r.ClosedReason, closedAt, reason)
	}
}

// activeLong creates an execution and claims it for wA at now with a
// lease of ttl.
func (h *streamHarness) activeLong(now time.Time, ttl time.Duration) (model.ExecutionID, *model.ClaimResult) {
	h.t.Helper()
	id := h.create(now)
	return id, call(h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
		ID: id, LeaseRequest: h.leaseReq(wA, ttl), Now: now,
	})).must(h.t)
}

// retried runs attempt 0 of a new execution (claimed at 0, one durable
// frame at 1s), fails it with a retry at 2s and claims attempt 1 at 4s.
func (h *streamHarness) retried() (id model.ExecutionID, f0, f1 model.Fence) {
	h.t.Helper()
	id, c0 := h.active(at(0), withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Hour}))
	h.appended(durable(id, c0.Fence(), "a0", at(time.Second)), 1, 1)
	if res := h.fail(id, c0.Fence(), model.FailureTransient, at(2*time.Second)); res.Outcome != model.FailRetryScheduled {
		h.t.Fatalf("fail with a retry left: %+v", res)
	}
	call(h.s.ExecutionPromoteDelayed(h.ctx, &model.ExecutionPromoteDelayedParams{ID: id, Lane: laneA, Force: true, Now: at(3 * time.Second)})).must(h.t)
	c1 := h.claim(id, wA, at(4*time.Second))
	if c1.AttemptIndex != 1 {
		h.t.Fatalf("the retry claimed attempt %d, want 1", c1.AttemptIndex)
	}
	return id, c0.Fence(), c1.Fence()
}

// Appends.

// streamAppendSequence: frames are numbered 1, 2, 3… per stream, keep
// what was appended (type, payload, encoding, correlation id, mode) and
// the append's time at millisecond precision; the result counts the
// frames kept; LastSequence is the newest.
func streamAppendSequence(h *streamHarness) {
	id, c := h.active(at(0))
	p1 := durable(id, c.Fence(), `{"t":"hello"}`, at(time.Second+700*time.Microsecond))
	p1.Encoding, p1.CorrelationID, p1.Type = "json", "corr-1", "log.line"
	h.appended(p1, 1, 1)
	p2 := bestEffort(id, c.Fence(), "tok", at(2*time.Second))
	h.appended(p2, 2, 2)
	p3 := durable(id, c.Fence(), "three", at(2*time.Second))
	h.appended(p3, 3, 3)
	r := h.readAll(id, 0, at(3*time.Second))
	want := []model.Frame{
		{Sequence: 1, Time: at(time.Second), Type: "log.line", Payload: []byte(`{"t":"hello"}`), Encoding: "json", CorrelationID: "corr-1", Mode: model.StreamDurable},
		{Sequence: 2, Time: at(2 * time.Second), Type: "token", Payload: []byte("tok"), Mode: model.StreamBestEffort},
		{Sequence: 3, Time: at(2 * time.Second), Type: "token", Payload: []byte("three"), Mode: model.StreamDurable},
	}
	wantEqual(h.t, "frames", want, r.Frames)
	if r.Next != 3 || r.LastSequence != 3 || r.Closed {
		h.t.Fatalf("read: next %d last %d closed %v; want next 3, last 3, open", r.Next, r.LastSequence, r.Closed)
	}
	// another execution's stream numbers from 1
	id2, c2 := h.active(at(0))
	h.appended(durable(id2, c2.Fence(), "x", at(time.Second)), 1, 1)
}

// streamAppendNotFound: an execution that does not exist refuses an
// append with ErrNotFound.
func streamAppendNotFound(h *streamHarness) {
	_, c := h.active(at(0))
	_, err := h.st.StreamAppend(h.ctx, durable(h.newID(h.p0), c.Fence(), "x", at(time.Second)))
	wantErr(h.t, err, model.ErrNotFound)
}

// streamAppendRefusedOrder: a closed stream of the fence's attempt, when
// it is the execution's current attempt, refuses first
// (ErrStreamClosed); then the lease checks run in order: not active,
// revoked, expired (marked or due), stale fence. Nothing changes.
func streamAppendRefusedOrder(h *streamHarness) {
	cases := []struct {
		name string
		// make returns the execution, the fence and the time of the
		// refused append
		make func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time)
		want *model.Error
	}{
		{"ClosedBeforeNotActive", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
			h.complete(id, c.Fence(), at(2*time.Second))
			return id, c.Fence(), at(3 * time.Second)
		}, model.ErrStreamClosed},
		{"ClosedBeforeRevoked", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
			h.revoke(id, at(2*time.Second))
			return id, c.Fence(), at(3 * time.Second)
		}, model.ErrStreamClosed},
		{"ClosedBeforeExpired", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
			h.markExpired(id, at(leaseTTL))
			return id, c.Fence(), at(leaseTTL + time.Second)
		}, model.ErrStreamClosed},
		{"NeverOpenedClosed", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			h.revoke(id, at(2*time.Second))
			return id, c.Fence(), at(3 * time.Second)
		}, model.ErrStreamClosed},
		{"NotActiveDelayed", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
			h.delay(id, c.Fence(), at(time.Hour), at(2*time.Second))
			return id, c.Fence(), at(3 * time.Second)
		}, model.ErrNotActive},
		{"NotActiveOldAttemptTerminal", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f0, f1 := h.retried()
			h.complete(id, f1, at(5*time.Second))
			return id, f0, at(6 * time.Second)
		}, model.ErrNotActive},
		{"RevokedOldAttempt", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f0, _ := h.retried()
			h.revoke(id, at(5*time.Second))
			return id, f0, at(6 * time.Second)
		}, model.ErrLeaseRevoked},
		{"ExpiredMarkedOldAttempt", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f0, _ := h.retried()
			h.markExpired(id, at(4*time.Second+leaseTTL))
			return id, f0, at(5*time.Second + leaseTTL)
		}, model.ErrLeaseExpired},
		{"ExpiredDueOldAttempt", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f0, _ := h.retried()
			return id, f0, at(4*time.Second + leaseTTL)
		}, model.ErrLeaseExpired},
		{"ExpiredDue", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
			return id, c.Fence(), at(leaseTTL)
		}, model.ErrLeaseExpired},
		{"StaleOldAttempt", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f0, _ := h.retried()
			return id, f0, at(5 * time.Second)
		}, model.ErrStaleLease},
		{"StaleLeaseID", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			f := c.Fence()
			f.LeaseID = h.leaseID()
			return id, f, at(time.Second)
		}, model.ErrStaleLease},
		{"StaleEpoch", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, c := h.active(at(0))
			f := c.Fence()
			f.LeaseEpoch++
			return id, f, at(time.Second)
		}, model.ErrStaleLease},
		// the same three against an open stream: valkeystore's append
		// then checks the fence against the record's copy first
		{"StaleLeaseIDOpen", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f := h.opened()
			f.LeaseID = h.leaseID()
			return id, f, at(2 * time.Second)
		}, model.ErrStaleLease},
		{"StaleEpochOpen", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f := h.opened()
			f.LeaseEpoch++
			return id, f, at(2 * time.Second)
		}, model.ErrStaleLease},
		{"StaleAttemptIDOpen", func(h *streamHarness) (model.ExecutionID, model.Fence, time.Time) {
			id, f := h.opened()
			f.AttemptID = h.attemptID()
			return id, f, at(2 * time.Second)
		}, model.ErrStaleLease},
	}
	for _, c := range cases {
		h.t.Run(c.name, func(t *testing.T) {
			h := h.on(t)
			id, f, now := c.make(h)
			h.refused(durable(id, f, "refused", now), c.want)
			h.refused(bestEffort(id, f, "refused", now), c.want)
			h.refused(summaryFrame(id, f, 0, `{"a":1}`, `{"a":1}`, now), c.want)
		})
	}
}

// streamAppendLeaseBoundary: the lease holds until its expiry: an append
// 1ms before it is taken, one at it refused (ErrLeaseExpired).
func streamAppendLeaseBoundary(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(durable(id, c.Fence(), "last", at(leaseTTL-time.Millisecond)), 1, 1)
	h.refused(durable(id, c.Fence(), "late", at(leaseTTL)), model.ErrLeaseExpired)
	h.wantOpen(id, 0, at(leaseTTL))
}

// streamAppendAfterRenew: a renewed lease holds until its new expiry: an
// open stream takes a frame past the first expiry, and refuses one at the
// new expiry (ErrLeaseExpired); the renewal is what moves the boundary.
func streamAppendAfterRenew(h *streamHarness) {
	id, f := h.opened()
	call(h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: f, LeaseTTL: leaseTTL, Now: at(10 * time.Second)})).must(h.t)
	h.appended(durable(id, f, "renewed", at(leaseTTL)), 2, 2)
	h.appended(durable(id, f, "last", at(10*time.Second+leaseTTL-time.Millisecond)), 3, 3)
	h.refused(durable(id, f, "late", at(10*time.Second+leaseTTL)), model.ErrLeaseExpired)
	h.wantOpen(id, 0, at(10*time.Second+leaseTTL))
}

// opened returns an active execution whose attempt appended one durable
// frame at 1s, and its fence.
func (h *streamHarness) opened() (model.ExecutionID, model.Fence) {
	id, c := h.active(at(0))
	h.appended(durable(id, c.Fence(), "opened", at(time.Second)), 1, 1)
	return id, c.Fence()
}

// streamBinaryPayloads: payloads are kept byte for byte: every byte
// value, NUL, invalid UTF-8, empty.
func streamBinaryPayloads(h *streamHarness) {
	id, c := h.active(at(0))
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	payloads := [][]byte{all, {0}, []byte("a\x00b\x00"), []byte("\xff\xfe\xc3\x28\xed\xa0\x80"), {}, []byte("\r\n\x1b[0m")}
	for i, pl := range payloads {
		p := durable(id, c.Fence(), "", at(time.Second))
		p.Payload, p.Encoding = pl, "binary"
		h.appended(p, uint64(i+1), i+1)
	}
	r := h.readAll(id, 0, at(time.Second))
	if len(r.Frames) != len(payloads) {
		h.t.Fatalf("%d frames, want %d", len(r.Frames), len(payloads))
	}
	for i, f := range r.Frames {
		if !bytes.Equal(f.Payload, payloads[i]) {
			h.t.Fatalf("frame %d payload %q, want %q", f.Sequence, f.Payload, payloads[i])
		}
	}
}

// streamPayloadMax: a payload of exactly MaxFramePayloadBytes is kept; one
// byte more is refused (a validation error naming Payload) and nothing is
// stored.
func streamPayloadMax(h *streamHarness) {
	id, c := h.active(at(0))
	big := bytes.Repeat([]byte{0xA5, 0x00, 0x5A}, model.MaxFramePayloadBytes/3+1)
	p := durable(id, c.Fence(), "", at(time.Second))
	p.Payload = big[:model.MaxFramePayloadBytes]
	h.appended(p, 1, 1)
	r := h.readAll(id, 0, at(time.Second))
	if len(r.Frames) != 1 || !bytes.Equal(r.Frames[0].Payload, big[:model.MaxFramePayloadBytes]) {
		h.t.Fatalf("the largest payload was not kept as given")
	}
	p = durable(id, c.Fence(), "", at(time.Second))
	p.Payload = big[:model.MaxFramePayloadBytes+1]
	h.refused(p, model.ErrValidation)
	_, err := h.st.StreamAppend(h.ctx, p)
	if e := modelErr(h.t, err, model.ErrInvalidInput); e.Field != "Payload" {
		h.t.Fatalf("field %q, want Payload (%v)", e.Field, err)
	}
	h.wantSeqs(id, 0, at(time.Second), 1, 1)
}

// Trims.

// streamDurableMaxLen: a durable frame keeps exactly the newest MaxLen
// frames; sequences go on from the last one.
func streamDurableMaxLen(h *streamHarness) {
	id, c := h.active(at(0))
	for i, frames := range []int{1, 2, 3, 3, 3} {
		p := durable(id, c.Fence(), "x", at(time.Second))
		p.MaxLen = 3
		h.appended(p, uint64(i+1), frames)
	}
	h.wantSeqs(id, 0, at(time.Second), 5, 3, 4, 5)
	p := durable(id, c.Fence(), "y", at(time.Second))
	p.MaxLen = 1
	h.appended(p, 6, 1)
	h.wantSeqs(id, 0, at(time.Second), 6, 6)
	// MaxLen 0 is DefaultStreamMaxLen: nothing trimmed
	h.appended(durable(id, c.Fence(), "z", at(time.Second)), 7, 2)
	h.wantSeqs(id, 0, at(time.Second), 7, 6, 7)
}

// streamDurableDefaultMaxLen: without MaxLen a durable frame keeps the
// newest DefaultStreamMaxLen frames.
func streamDurableDefaultMaxLen(h *streamHarness) {
	id, c := h.active(at(0))
	n := model.DefaultStreamMaxLen + 1
	for i := 1; i <= n; i++ {
		res := h.append(durable(id, c.Fence(), "x", at(time.Second)))
		if res.Sequence != uint64(i) || res.Frames != min(i, model.DefaultStreamMaxLen) {
			h.t.Fatalf("append %d: %+v", i, res)
		}
	}
	r := h.readAll(id, 0, at(time.Second))
	wantEqual(h.t, "sequences kept", seqRange(2, uint64(n)), seqs(r.Frames))
	if r.Next != uint64(n) || r.LastSequence != uint64(n) {
		h.t.Fatalf("next %d last %d, want %d", r.Next, r.LastSequence, n)
	}
}

// streamSummaryTrim: a summary frame keeps the newest SummaryStreamMaxLen
// frames of the stream, of every mode.
func streamSummaryTrim(h *streamHarness) {
	id, c := h.active(at(0))
	n := model.SummaryStreamMaxLen + 6
	for i := 1; i <= n; i++ {
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), uint64(i), i)
	}
	h.appended(summaryFrame(id, c.Fence(), 0, `{"a":1}`, `{"a":1}`, at(time.Second)), uint64(n+1), model.SummaryStreamMaxLen)
	h.wantSeqs(id, 0, at(time.Second), uint64(n+1), seqRange(uint64(n+2-model.SummaryStreamMaxLen), uint64(n+1))...)
}

// streamBestEffortFirstK: a stream's first best-effort frame has K =
// BestEffortMinLen, whatever the TTL; K counts every frame of the stream.
func streamBestEffortFirstK(h *streamHarness) {
	for _, ttl := range []time.Duration{0, time.Second, time.Hour} {
		id, c := h.active(at(0))
		n := model.BestEffortMinLen + 3
		for i := 1; i <= n; i++ {
			h.appended(durable(id, c.Fence(), "x", at(time.Second)), uint64(i), i)
		}
		p := bestEffort(id, c.Fence(), "b", at(time.Second))
		p.TTL = ttl
		h.appended(p, uint64(n+1), model.BestEffortMinLen)
		h.wantSeqs(id, 0, at(time.Second), uint64(n+1), seqRange(uint64(n+2-model.BestEffortMinLen), uint64(n+1))...)
	}
}

// streamBestEffortAdaptiveK: each best-effort frame keeps the newest K
// frames, K = BestEffortLen of the rate estimate BestEffortRate updates
// with every best-effort frame: a burst raises K above
// BestEffortMinLen, a slow spell lowers it and the stream is trimmed to
// it.
func streamBestEffortAdaptiveK(h *streamHarness) {
	id, c := h.activeLong(at(0), time.Hour)
	const ttl = time.Second
	ttlMs := ttl.Milliseconds()
	var gaps []time.Duration
	for range 150 {
		gaps = append(gaps, 5*time.Millisecond)
	}
	for range 25 {
		gaps = append(gaps, 700*time.Millisecond)
	}
	for range 20 {
		gaps = append(gaps, 37*time.Millisecond)
	}
	now := at(time.Second)
	var rate, prevAt int64
	kept, maxK, minAfterMax := 0, int64(0), int64(model.BestEffortMaxLen)
	for i, g := range gaps {
		now = now.Add(g)
		nowMs := now.UnixMilli()
		rate = model.BestEffortRate(rate, prevAt, nowMs, ttlMs)
		prevAt = nowMs
		k := model.BestEffortLen(rate, ttlMs)
		kept = min(kept+1, int(k))
		p := bestEffort(id, c.Fence(), "b", now)
		p.TTL = ttl
		h.appended(p, uint64(i+1), kept)
		maxK = max(maxK, k)
		if maxK > k {
			minAfterMax = min(minAfterMax, k)
		}
	}
	if maxK <= model.BestEffortMinLen || minAfterMax >= 150 {
		h.t.Fatalf("the schedule does not exercise K: max %d, min after it %d", maxK, minAfterMax)
	}
	n := uint64(len(gaps))
	h.wantSeqs(id, 0, now, n, seqRange(n-uint64(kept)+1, n)...)
}

// streamTrimsWholeStream: a durable frame's MaxLen trims best-effort
// frames too, and a best-effort frame's K trims durable frames.
func streamTrimsWholeStream(h *streamHarness) {
	id, c := h.active(at(0))
	for i := 1; i <= 5; i++ {
		h.appended(bestEffort(id, c.Fence(), "b", at(time.Second)), uint64(i), i)
	}
	p := durable(id, c.Fence(), "d", at(time.Second))
	p.MaxLen = 2
	h.appended(p, 6, 2)
	r := h.wantSeqs(id, 0, at(time.Second), 6, 5, 6)
	if r.Frames[0].Mode != model.StreamBestEffort || r.Frames[1].Mode != model.StreamDurable {
		h.t.Fatalf("modes kept: %s, %s", r.Frames[0].Mode, r.Frames[1].Mode)
	}
}

// Best-effort expiry.

// beTTL is a best-effort append with TTL 1s.
func beTTL(id model.ExecutionID, f model.Fence, now time.Time) *model.StreamAppendParams {
	p := bestEffort(id, f, "b", now)
	p.TTL = time.Second
	return p
}

// streamBestEffortExpiry: a stream of best-effort frames only reads empty
// from 2 × TTL after its last frame on; LastSequence stays and the
// stream stays open.
func streamBestEffortExpiry(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(beTTL(id, c.Fence(), at(time.Second)), 1, 1)
	h.appended(beTTL(id, c.Fence(), at(time.Second)), 2, 2)
	h.wantSeqs(id, 0, at(3*time.Second-time.Millisecond), 2, 1, 2)
	r := h.wantSeqs(id, 0, at(3*time.Second), 2)
	if r.Next != 0 || r.Closed {
		h.t.Fatalf("an expired stream: next %d closed %v, want next 0, open", r.Next, r.Closed)
	}
	h.wantSeqs(id, 0, at(time.Hour), 2)
}

// streamBestEffortExpiryFromLast: every best-effort frame pushes the
// expiry of the whole stream to 2 × TTL after it.
func streamBestEffortExpiryFromLast(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(beTTL(id, c.Fence(), at(time.Second)), 1, 1)
	h.appended(beTTL(id, c.Fence(), at(2500*time.Millisecond)), 2, 2)
	h.wantSeqs(id, 0, at(4500*time.Millisecond-time.Millisecond), 2, 1, 2)
	h.wantSeqs(id, 0, at(4500*time.Millisecond), 2)
}

// streamAppendAfterExpiry: an append after the expiry starts from an
// empty stream and goes on numbering; a durable one makes it persistent.
func streamAppendAfterExpiry(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(beTTL(id, c.Fence(), at(time.Second)), 1, 1)
	h.appended(beTTL(id, c.Fence(), at(3*time.Second)), 2, 1)
	h.wantSeqs(id, 0, at(3*time.Second), 2, 2)
	h.appended(durable(id, c.Fence(), "d", at(5*time.Second)), 3, 1)
	h.wantSeqs(id, 0, at(time.Hour), 3, 3)
}

// streamDurablePersists: one durable frame ends the expiry for good,
// also of the best-effort frames before and after it.
func streamDurablePersists(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(beTTL(id, c.Fence(), at(time.Second)), 1, 1)
	h.appended(durable(id, c.Fence(), "d", at(1100*time.Millisecond)), 2, 2)
	h.appended(beTTL(id, c.Fence(), at(1200*time.Millisecond)), 3, 3)
	h.wantSeqs(id, 0, at(time.Hour), 3, 1, 2, 3)
}

// streamSummaryPersists: a summary frame ends the expiry too.
func streamSummaryPersists(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(beTTL(id, c.Fence(), at(time.Second)), 1, 1)
	h.appended(summaryFrame(id, c.Fence(), 0, `{"a":1}`, `{"a":1}`, at(1100*time.Millisecond)), 2, 2)
	h.appended(beTTL(id, c.Fence(), at(1200*time.Millisecond)), 3, 3)
	h.wantSeqs(id, 0, at(time.Hour), 3, 1, 2, 3)
}

// Summaries.

// streamSummaryNone: an attempt without a summary frame has an empty
// document, version 0 and no times, also with durable frames.
func streamSummaryNone(h *streamHarness) {
	id, c := h.active(at(0))
	wantEqual(h.t, "summary before any frame", model.StreamSummaryResult{}, *h.summary(id, 0, at(time.Second)))
	h.appended(durable(id, c.Fence(), "d", at(time.Second)), 1, 1)
	wantEqual(h.t, "summary after a durable frame", model.StreamSummaryResult{}, *h.summary(id, 0, at(time.Second)))
}

// streamSummaryVersions: each summary frame raises the version by one;
// the frame carries the patch and the new version; the summary keeps the
// last document, the first and the last patch's times.
func streamSummaryVersions(h *streamHarness) {
	id, c := h.active(at(0))
	r1 := h.appended(summaryFrame(id, c.Fence(), 0, `{"a":1}`, `{"a":1}`, at(time.Second)), 1, 1)
	h.appended(durable(id, c.Fence(), "d", at(2*time.Second)), 2, 2)
	r2 := h.appended(summaryFrame(id, c.Fence(), 1, `{"b":2}`, `{"a":1,"b":2}`, at(3*time.Second+400*time.Microsecond)), 3, 3)
	if r1.SummaryVersion != 1 || r2.SummaryVersion != 2 {
		h.t.Fatalf("summary versions %d, %d; want 1, 2", r1.SummaryVersion, r2.SummaryVersion)
	}
	wantEqual(h.t, "summary", model.StreamSummaryResult{
		Document: []byte(`{"a":1,"b":2}`), Version: 2, FirstAppliedAt: at(time.Second), UpdatedAt: at(3 * time.Second),
	}, *h.summary(id, 0, at(4*time.Second)))
	r := h.readAll(id, 0, at(4*time.Second))
	wantEqual(h.t, "frames", []model.Frame{
		{Sequence: 1, Time: at(time.Second), Type: "summary", Payload: []byte(`{"a":1}`), Mode: model.StreamSummary, SummaryVersion: 1},
		{Sequence: 2, Time: at(2 * time.Second), Type: "token", Payload: []byte("d"), Mode: model.StreamDurable},
		{Sequence: 3, Time: at(3 * time.Second), Type: "summary", Payload: []byte(`{"b":2}`), Mode: model.StreamSummary, SummaryVersion: 2},
	}, r.Frames)
}

// streamSummaryConflict: a summary frame whose base version is not the
// document's (behind or ahead) is refused with ErrSummaryConflict and
// changes nothing.
func streamSummaryConflict(h *streamHarness) {
	id, c := h.active(at(0))
	h.refused(summaryFrame(id, c.Fence(), 1, `{"a":1}`, `{"a":1}`, at(time.Second)), model.ErrSummaryConflict)
	h.appended(summaryFrame(id, c.Fence(), 0, `{"a":1}`, `{"a":1}`, at(time.Second)), 1, 1)
	h.refused(summaryFrame(id, c.Fence(), 0, `{"a":2}`, `{"a":2}`, at(2*time.Second)), model.ErrSummaryConflict)
	h.refused(summaryFrame(id, c.Fence(), 2, `{"a":2}`, `{"a":2}`, at(2*time.Second)), model.ErrSummaryConflict)
	h.appended(summaryFrame(id, c.Fence(), 1, `{"a":2}`, `{"a":2}`, at(2*time.Second)), 2, 2)
	wantEqual(h.t, "summary", model.StreamSummaryResult{
		Document: []byte(`{"a":2}`), Version: 2, FirstAppliedAt: at(time.Second), UpdatedAt: at(2 * time.Second),
	}, *h.summary(id, 0, at(3*time.Second)))
}

// streamSummaryStoredAsGiven: the store keeps the document as given; it
// does not apply the patch itself.
func streamSummaryStoredAsGiven(h *streamHarness) {
	id, c := h.active(at(0))
	doc := `{ "z" : [1, 2], "a":{"nested":null}}`
	h.appended(summaryFrame(id, c.Fence(), 0, `{"x":1}`, doc, at(time.Second)), 1, 1)
	if s := h.summary(id, 0, at(time.Second)); string(s.Document) != doc || s.Version != 1 {
		h.t.Fatalf("summary %q version %d, want %q version 1", s.Document, s.Version, doc)
	}
	r := h.readAll(id, 0, at(time.Second))
	if len(r.Frames) != 1 || string(r.Frames[0].Payload) != `{"x":1}` {
		h.t.Fatalf("the patch frame: %+v", r.Frames)
	}
}

// Reads.

// streamReadPages: a read returns frames after After, oldest first,
// Count at most; Next is the last frame's sequence, After when there is
// none.
func streamReadPages(h *streamHarness) {
	id, c := h.active(at(0))
	for i := 1; i <= 5; i++ {
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), uint64(i), i)
	}
	pages := []struct {
		after     uint64
		count     int
		want      []uint64
		wantAfter uint64
	}{
		{0, 2, []uint64{1, 2}, 2},
		{2, 2, []uint64{3, 4}, 4},
		{4, 2, []uint64{5}, 5},
		{5, 2, nil, 5},
		{3, 1, []uint64{4}, 4},
		{0, model.MaxStreamRead, []uint64{1, 2, 3, 4, 5}, 5},
		{9, 3, nil, 9},
	}
	for _, pg := range pages {
		r := h.read(&model.StreamReadParams{ID: id, Attempt: 0, After: pg.after, Count: pg.count, Now: at(2 * time.Second)})
		wantEqual(h.t, "page", pg.want, seqs(r.Frames))
		if r.Next != pg.wantAfter || r.LastSequence != 5 {
			h.t.Fatalf("read after %d count %d: next %d last %d, want next %d last 5", pg.after, pg.count, r.Next, r.LastSequence, pg.wantAfter)
		}
	}
}

// streamReadAfterTrim: a cursor before the frames kept reads from the
// oldest kept.
func streamReadAfterTrim(h *streamHarness) {
	id, c := h.active(at(0))
	for i := 1; i <= 5; i++ {
		p := durable(id, c.Fence(), "x", at(time.Second))
		p.MaxLen = 3
		h.append(p)
	}
	r := h.read(&model.StreamReadParams{ID: id, Attempt: 0, After: 1, Count: 2, Now: at(time.Second)})
	wantEqual(h.t, "page", []uint64{3, 4}, seqs(r.Frames))
	if r.Next != 4 || r.LastSequence != 5 {
		h.t.Fatalf("next %d last %d, want 4, 5", r.Next, r.LastSequence)
	}
}

// streamReadExcludeBestEffort: ExcludeBestEffort leaves best-effort
// frames out of the answer, but they count towards Count and move Next.
func streamReadExcludeBestEffort(h *streamHarness) {
	id, c := h.active(at(0))
	modes := []model.StreamMode{model.StreamDurable, model.StreamBestEffort, model.StreamBestEffort, model.StreamDurable, model.StreamBestEffort}
	for i, m := range modes {
		h.appended(frame(id, c.Fence(), m, "x", at(time.Second)), uint64(i+1), i+1)
	}
	pages := []struct {
		after    uint64
		count    int
		want     []uint64
		wantNext uint64
	}{
		{0, 3, []uint64{1}, 3},
		{3, 3, []uint64{4}, 5},
		{1, 2, nil, 3},
		{0, 10, []uint64{1, 4}, 5},
		{5, 10, nil, 5},
	}
	for _, pg := range pages {
		r := h.read(&model.StreamReadParams{ID: id, After: pg.after, Count: pg.count, ExcludeBestEffort: true, Now: at(time.Second)})
		wantEqual(h.t, "page without best-effort frames", pg.want, seqs(r.Frames))
		if r.Next != pg.wantNext || r.LastSequence != 5 {
			h.t.Fatalf("read after %d count %d: next %d last %d, want next %d last 5", pg.after, pg.count, r.Next, r.LastSequence, pg.wantNext)
		}
	}
	r := h.read(&model.StreamReadParams{ID: id, After: 0, Count: 3, Now: at(time.Second)})
	wantEqual(h.t, "page with best-effort frames", []uint64{1, 2, 3}, seqs(r.Frames))
}

// streamReadNotFound: reading a stream or summary of an execution that
// does not exist is ErrNotFound.
func streamReadNotFound(h *streamHarness) {
	missing := h.newID(h.p0)
	_, err := h.st.StreamRead(h.ctx, &model.StreamReadParams{ID: missing, Count: 10, Now: at(time.Second)})
	wantErr(h.t, err, model.ErrNotFound)
	_, err = h.st.StreamSummary(h.ctx, &model.StreamSummaryParams{ID: missing, Now: at(time.Second)})
	wantErr(h.t, err, model.ErrNotFound)
}

// streamReadAttemptNotFound: an attempt index the execution has not
// reached is ErrAttemptNotFound, for reads and summaries.
func streamReadAttemptNotFound(h *streamHarness) {
	id := h.create(at(0))
	wantNoAttempt := func(attempt int) {
		h.t.Helper()
		_, err := h.st.StreamRead(h.ctx, &model.StreamReadParams{ID: id, Attempt: attempt, Count: 10, Now: at(time.Second)})
		wantErr(h.t, err, model.ErrAttemptNotFound)
		_, err = h.st.StreamSummary(h.ctx, &model.StreamSummaryParams{ID: id, Attempt: attempt, Now: at(time.Second)})
		wantErr(h.t, err, model.ErrAttemptNotFound)
	}
	wantNoAttempt(0)
	h.claim(id, wA, at(time.Second))
	h.readAll(id, 0, at(time.Second))
	wantNoAttempt(1)
	wantNoAttempt(1000)
}

// streamReadNeverOpenedLive: a running attempt without frames reads open
// and empty.
func streamReadNeverOpenedLive(h *streamHarness) {
	id, _ := h.active(at(0))
	r := h.read(&model.StreamReadParams{ID: id, After: 7, Count: 10, Now: at(time.Second)})
	wantEqual(h.t, "empty stream", model.StreamReadResult{Next: 7}, *r)
}

// Closing.

// streamCloseOnEnd: the stream closes when its attempt ends (with the
// attempt's status) or its lease is marked expired or revoked, at that
// transition's time; a stream never opened reads closed "no_frames" at
// no time. A closed stream of the current attempt refuses appends with
// ErrStreamClosed.
func streamCloseOnEnd(h *streamHarness) {
	cases := []struct {
		name   string
		opts   []createOpt
		when   time.Time
		do     func(h *streamHarness, id model.ExecutionID, f model.Fence, now time.Time)
		reason model.StreamCloseReason
	}{
		{"Complete", nil, at(2 * time.Second), func(h *streamHarness, id model.ExecutionID, f model.Fence, now time.Time) {
			h.complete(id, f, now)
		}, "ended_success"},
		{"Fail", nil, at(2 * time.Second), func(h *streamHarness, id model.ExecutionID, f model.Fence, now time.Time) {
			h.fail(id, f, model.FailurePermanent, now)
		}, "ended_failure"},
		{"Retry", []createOpt{withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Hour})}, at(2 * time.Second),
			func(h *streamHarness, id model.ExecutionID, f model.Fence, now time.Time) {
				if res := h.fail(id, f, model.FailureTransient, now); res.Outcome != model.FailRetryScheduled {
					h.t.Fatalf("fail with a retry left: %+v", res)
				}
			}, "ended_failure"},
		{"Cancel", nil, at(2 * time.Second), func(h *streamHarness, id model.ExecutionID, _ model.Fence, now time.Time) {
			h.cancelOp(id, now)
		}, "ended_cancelled"},
		{"WorkerCancel", nil, at(2 * time.Second), func(h *streamHarness, id model.ExecutionID, f model.Fence, now time.Time) {
			call(h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{ID: id, Fence: f, Reason: "mine", Now: now})).must(h.t)
		}, "ended_cancelled"},
		{"AttemptTimeout", []createOpt{withTimeout(2 * time.Second)}, at(2 * time.Second), func(h *streamHarness, id model.ExecutionID, _ model.Fence, now time.Time) {
			res := call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: now})).must(h.t)
			if res.Outcome != model.ExpireExpired {
				h.t.Fatalf("expire: %+v", res)
			}
		}, "ended_failure"},
		{"LeaseMarkedExpired", nil, at(leaseTTL), func(h *streamHarness, id model.ExecutionID, _ model.Fence, now time.Time) {
			h.markExpired(id, now)
		}, model.StreamClosedLeaseExpired},
		{"LeaseRevoked", nil, at(2 * time.Second), func(h *streamHarness, id model.ExecutionID, _ model.Fence, now time.Time) {
			h.revoke(id, now)
		}, model.StreamClosedLeaseRevoked},
	}
	for _, c := range cases {
		for _, opened := range []bool{true, false} {
			name := c.name + "/Opened"
			if !opened {
				name = c.name + "/NeverOpened"
			}
			h.t.Run(name, func(t *testing.T) {
				h := h.on(t)
				id, cr := h.active(at(0), c.opts...)
				if opened {
					h.appended(durable(id, cr.Fence(), "x", at(time.Second)), 1, 1)
				}
				h.wantOpen(id, 0, c.when)
				c.do(h, id, cr.Fence(), c.when.Add(300*time.Microsecond))
				after := c.when.Add(time.Second)
				if opened {
					h.wantClosed(id, 0, after, c.reason, c.when)
				} else {
					h.wantClosed(id, 0, after, model.StreamClosedNoFrames, time.Time{})
				}
				if atts := h.attempts(id); atts[0].Status.IsOpen() {
					// a lease marked expired or revoked leaves the attempt open
					if c.reason != model.StreamClosedLeaseExpired && c.reason != model.StreamClosedLeaseRevoked {
						t.Fatalf("attempt 0 still open: %+v", atts[0])
					}
				} else if got := model.StreamCloseReason(atts[0].Status.String()); got != c.reason {
					t.Fatalf("attempt 0 ended %q, the stream's reason is %q", got, c.reason)
				}
				// the fence's attempt is the current one: the stream refuses
				want := model.ErrStreamClosed
				if cur := h.describe(id).CurrentAttempt; cur == nil || cur.ID != cr.AttemptID {
					want = model.ErrNotActive
				}
				h.refused(durable(id, cr.Fence(), "late", after), want)
				h.refused(bestEffort(id, cr.Fence(), "late", after), want)
			})
		}
	}
}

// streamCloseKeepsFirst: a stream closes once: the recovery or reclaim
// that ends an attempt whose lease was marked expired or revoked leaves
// the stream's close (reason and time) as it was, and the next attempt
// has an open stream of its own.
func streamCloseKeepsFirst(h *streamHarness) {
	h.t.Run("MarkedExpiredThenRecover", func(t *testing.T) {
		h := h.on(t)
		id, c := h.active(at(0))
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
		h.markExpired(id, at(leaseTTL))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(leaseTTL + time.Second)})).must(t)
		h.wantClosed(id, 0, at(leaseTTL+2*time.Second), model.StreamClosedLeaseExpired, at(leaseTTL))
		c1 := h.claim(id, wA, at(leaseTTL+2*time.Second))
		if c1.AttemptIndex != 1 {
			t.Fatalf("recovered as attempt %d, want 1", c1.AttemptIndex)
		}
		h.wantOpen(id, 1, at(leaseTTL+2*time.Second))
		h.appended(durable(id, c1.Fence(), "y", at(leaseTTL+3*time.Second)), 1, 1)
		h.wantClosed(id, 0, at(leaseTTL+3*time.Second), model.StreamClosedLeaseExpired, at(leaseTTL))
	})
	h.t.Run("RevokedThenRecover", func(t *testing.T) {
		h := h.on(t)
		id, c := h.active(at(0))
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
		h.revoke(id, at(2*time.Second))
		call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: id, Now: at(3 * time.Second)})).must(t)
		h.wantClosed(id, 0, at(4*time.Second), model.StreamClosedLeaseRevoked, at(2*time.Second))
	})
	h.t.Run("MarkedExpiredThenReclaim", func(t *testing.T) {
		h := h.on(t)
		skipWithout[model.GrantReclaimer](h.harness)
		id, c := h.active(at(0))
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
		h.markExpired(id, at(leaseTTL))
		h.reclaimGrant(id, wB, at(leaseTTL+time.Second))
		res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL + 2*time.Second)})).must(t)
		if res.Outcome != model.ReclaimClaimed || res.Claimed == nil || res.Claimed.AttemptIndex != 1 {
			t.Fatalf("reclaim: %+v", res)
		}
		h.wantClosed(id, 0, at(leaseTTL+3*time.Second), model.StreamClosedLeaseExpired, at(leaseTTL))
		h.wantOpen(id, 1, at(leaseTTL+3*time.Second))
		h.appended(durable(id, res.Claimed.Fence(), "y", at(leaseTTL+3*time.Second)), 1, 1)
		// the old fence names an attempt that is no longer current: the
		// lease checks answer
		h.refused(durable(id, c.Fence(), "late", at(leaseTTL+3*time.Second)), model.ErrStaleLease)
	})
	h.t.Run("CloseThenCancel", func(t *testing.T) {
		h := h.on(t)
		id, c := h.active(at(0))
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
		h.revoke(id, at(2*time.Second))
		h.cancelOp(id, at(3*time.Second))
		h.wantClosed(id, 0, at(4*time.Second), model.StreamClosedLeaseRevoked, at(2*time.Second))
	})
}

// streamRetryNewStream: a retry's attempt has its own stream numbered
// from 1 and its own summary; the failed attempt's stays readable and
// closed.
func streamRetryNewStream(h *streamHarness) {
	id, f0, f1 := h.retried()
	h.wantClosed(id, 0, at(5*time.Second), "ended_failure", at(2*time.Second))
	h.wantOpen(id, 1, at(5*time.Second))
	h.wantSeqs(id, 1, at(5*time.Second), 0)
	h.appended(durable(id, f1, "a1", at(5*time.Second)), 1, 1)
	h.appended(summaryFrame(id, f1, 0, `{"n":1}`, `{"n":1}`, at(5*time.Second)), 2, 2)
	r0 := h.wantSeqs(id, 0, at(6*time.Second), 1, 1)
	if string(r0.Frames[0].Payload) != "a0" {
		h.t.Fatalf("attempt 0's frame: %q", r0.Frames[0].Payload)
	}
	r1 := h.wantSeqs(id, 1, at(6*time.Second), 2, 1, 2)
	if string(r1.Frames[0].Payload) != "a1" {
		h.t.Fatalf("attempt 1's frame: %q", r1.Frames[0].Payload)
	}
	wantEqual(h.t, "attempt 0's summary", model.StreamSummaryResult{}, *h.summary(id, 0, at(6*time.Second)))
	if s := h.summary(id, 1, at(6*time.Second)); s.Version != 1 {
		h.t.Fatalf("attempt 1's summary: %+v", s)
	}
	h.refused(durable(id, f0, "old", at(6*time.Second)), model.ErrStaleLease)
	h.complete(id, f1, at(7*time.Second))
	h.wantClosed(id, 1, at(8*time.Second), "ended_success", at(7*time.Second))
	h.wantClosed(id, 0, at(8*time.Second), "ended_failure", at(2*time.Second))
}

// streamSuspendKeepsOpen: a suspended attempt's stream stays open (the
// append is refused by the lease check, not closed); resumed by a signal
// and claimed again, the same attempt appends under its new lease and
// the sequence goes on. The old lease's fence is stale.
func streamSuspendKeepsOpen(h *streamHarness) {
	ss, ok := suspendStoreOf(h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.SuspendStore", h.s)
	}
	sh := &suspendHarness{harness: h.harness, ss: ss}
	for _, opened := range []bool{true, false} {
		name := "Opened"
		if !opened {
			name = "NeverOpened"
		}
		h.t.Run(name, func(t *testing.T) {
			h, sh := h.on(t), &suspendHarness{harness: sh.harness.on(t), ss: ss}
			id, c := h.active(at(0))
			var n uint64
			if opened {
				h.appended(durable(id, c.Fence(), "before", at(time.Second)), 1, 1)
				n = 1
			}
			p := sh.suspendParams(id, c.Fence(), model.SignalFor("go"), at(2*time.Second))
			sh.suspend(p)
			h.wantOpen(id, 0, at(3*time.Second))
			h.refused(durable(id, c.Fence(), "paused", at(3*time.Second)), model.ErrNotActive)
			sh.sent(sh.signalParams(id, p.Waitpoint, at(2*time.Second), "go", at(4*time.Second)), model.SignalResumed, "", model.PublicWaiting)
			h.wantOpen(id, 0, at(5*time.Second))
			rc := h.claim(id, wB, at(6*time.Second))
			if !rc.Resumed || rc.AttemptIndex != 0 || rc.AttemptID != c.AttemptID {
				t.Fatalf("claim after the resume: %+v, want attempt 0 resumed", rc)
			}
			h.appended(durable(id, rc.Fence(), "after", at(7*time.Second)), n+1, int(n+1))
			h.refused(durable(id, c.Fence(), "stale", at(7*time.Second)), model.ErrStaleLease)
			h.wantOpen(id, 0, at(7*time.Second))
			h.complete(id, rc.Fence(), at(8*time.Second))
			h.wantClosed(id, 0, at(9*time.Second), "ended_success", at(8*time.Second))
			h.wantSeqs(id, 0, at(9*time.Second), n+1, seqRange(1, n+1)...)
		})
	}
}

// streamDelayKeepsOpen: a delayed attempt's stream stays open; promoted
// and claimed again, the same attempt appends on.
func streamDelayKeepsOpen(h *streamHarness) {
	id, c := h.active(at(0))
	h.appended(durable(id, c.Fence(), "before", at(time.Second)), 1, 1)
	h.delay(id, c.Fence(), at(10*time.Second), at(2*time.Second))
	h.wantOpen(id, 0, at(3*time.Second))
	if st := h.promote(id, laneA, at(10*time.Second)); st != model.PromotePromoted {
		h.t.Fatalf("promote: %s", st)
	}
	h.wantOpen(id, 0, at(10*time.Second))
	rc := h.claim(id, wB, at(11*time.Second))
	if !rc.Resumed || rc.AttemptIndex != 0 {
		h.t.Fatalf("claim after the delay: %+v, want attempt 0 resumed", rc)
	}
	h.appended(durable(id, rc.Fence(), "after", at(12*time.Second)), 2, 2)
	h.wantOpen(id, 0, at(12*time.Second))
}

// streamLostLeaseClosesForGood: a stream closed by a lost lease stays
// closed when the attempt resumes under a new lease (an operator's delay
// of a revoked or expired execution), whether or not it had frames; the
// resumed holder's appends are refused. (The property test found a never
// opened stream reading open again.)
func streamLostLeaseClosesForGood(h *streamHarness) {
	for _, frames := range []bool{false, true} {
		for _, lost := range []model.StreamCloseReason{model.StreamClosedLeaseRevoked, model.StreamClosedLeaseExpired} {
			id, c := h.active(at(0))
			lostAt := at(2 * time.Second)
			if lost == model.StreamClosedLeaseExpired {
				lostAt = lostAt.Add(time.Hour) // past the lease's expiry
			}
			why, when := model.StreamClosedNoFrames, time.Time{}
			if frames {
				h.appended(durable(id, c.Fence(), "before", at(time.Second)), 1, 1)
				why, when = lost, lostAt
			}
			if lost == model.StreamClosedLeaseRevoked {
				h.revoke(id, lostAt)
			} else {
				h.markExpired(id, lostAt)
			}
			h.wantClosed(id, 0, at(3*time.Hour), why, when)
			call(h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Source: model.SourceOperator,
				DelayUntil: at(4 * time.Hour), Now: at(3 * time.Hour)})).must(h.t)
			h.wantClosed(id, 0, at(3*time.Hour), why, when)
			if st := h.promote(id, laneA, at(4*time.Hour)); st != model.PromotePromoted {
				h.t.Fatalf("promote: %s", st)
			}
			rc := h.claim(id, wB, at(4*time.Hour))
			if !rc.Resumed || rc.AttemptIndex != 0 {
				h.t.Fatalf("claim after the delay: %+v, want attempt 0 resumed", rc)
			}
			h.wantClosed(id, 0, at(4*time.Hour), why, when)
			h.refused(durable(id, rc.Fence(), "after", at(4*time.Hour)), model.ErrStreamClosed)
		}
	}
}

// streamAwaitChildrenKeepsOpen: a flow member awaiting its children
// keeps its stream open; released by the child's end and claimed again,
// the same attempt appends on.
func streamAwaitChildrenKeepsOpen(h *streamHarness) {
	fs, ok := optionalOf[model.FlowStore](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.FlowStore", h.s)
	}
	fh := &flowHarness{harness: h.harness, fs: fs}
	f, x := fh.soloFlow()
	c := h.claim(x, wA, at(2*time.Second))
	h.appended(durable(x, c.Fence(), "before", at(2*time.Second)), 1, 1)
	p := fh.awaitChildren(x, c.Fence(), 1, time.Time{}, at(3*time.Second))
	fh.awaitOK(p, f, 1)
	h.wantOpen(x, 0, at(4*time.Second))
	h.refused(durable(x, c.Fence(), "paused", at(4*time.Second)), model.ErrNotActive)
	fh.succeed(p.Children[0].Create.ID, nil, at(5*time.Second))
	h.wantOpen(x, 0, at(7*time.Second))
	rc := h.claim(x, wA, at(7*time.Second))
	if !rc.Resumed || rc.AttemptIndex != c.AttemptIndex {
		h.t.Fatalf("claim after the children: %+v, want attempt %d resumed", rc, c.AttemptIndex)
	}
	h.appended(durable(x, rc.Fence(), "after", at(8*time.Second)), 2, 2)
	h.wantOpen(x, 0, at(8*time.Second))
}

// Notifications.

// streamWatch collects the calls of one WatchStream.
type streamWatch struct {
	ch chan struct{}
}

func newStreamWatch() *streamWatch { return &streamWatch{ch: make(chan struct{}, 1)} }

func (w *streamWatch) f() {
	select {
	case w.ch <- struct{}{}:
	default: // one pending call is enough: the reader re-reads
	}
}

// drain forgets the calls so far.
func (w *streamWatch) drain() {
	for {
		select {
		case <-w.ch:
		default:
			return
		}
	}
}

// until waits for calls until cond holds after one; the bound only ends a
// failing test (a notice may cross a network).
func (w *streamWatch) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), noticeWait)
	defer cancel()
	for {
		select {
		case <-w.ch:
			if cond() {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no stream notice after %s", what)
		}
	}
}

func streamNotifierOf(h *streamHarness) model.StreamNotifier {
	h.t.Helper()
	n, ok := optionalOf[model.StreamNotifier](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.StreamNotifier", h.s)
	}
	return n
}

// streamWatchFramesCarry: a frame watch (model.StreamFrameNotifier) gets
// each small appended frame exactly as a read returns it, in order; a
// frame over MaxNoticeFrameBytes and the close come without one.
func streamWatchFramesCarry(h *streamHarness) {
	n, ok := optionalOf[model.StreamFrameNotifier](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.StreamFrameNotifier", h.s)
	}
	id, c := h.active(at(0))
	got := make(chan *model.Frame, 16)
	stop := n.WatchStreamFrames(id, 0, func(f *model.Frame) { got <- f })
	h.t.Cleanup(stop)
	next := func(what string) *model.Frame {
		h.t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), noticeWait)
		defer cancel()
		select {
		case f := <-got:
			return f
		case <-ctx.Done():
			h.t.Fatalf("no notice after %s", what)
		}
		return nil
	}
	small := &model.StreamAppendParams{ID: id, Fence: c.Fence(), Mode: model.StreamBestEffort, Type: "tok.en",
		Payload: []byte("a|b\n\x00\xff"), Encoding: "bin|ary", CorrelationID: "c\n1", Now: at(time.Second)}
	h.appended(small, 1, 1)
	empty := durable(id, c.Fence(), "", at(time.Second))
	h.appended(empty, 2, 2)
	frames := h.readAll(id, 0, at(time.Second)).Frames
	for i, what := range []string{"a small frame", "an empty frame"} {
		if f := next(what); f == nil || !reflect.DeepEqual(*f, frames[i]) {
			h.t.Fatalf("%s: the notice's frame %+v, the store's %+v", what, f, frames[i])
		}
	}
	big := durable(id, c.Fence(), strings.Repeat("x", model.MaxNoticeFrameBytes+1), at(2*time.Second))
	h.appended(big, 3, 3)
	if f := next("a large frame"); f != nil {
		h.t.Fatalf("a frame over MaxNoticeFrameBytes came by notice: %d", f.Sequence)
	}
	h.complete(id, c.Fence(), at(3*time.Second))
	if f := next("the close"); f != nil {
		h.t.Fatalf("the close's notice carried a frame: %+v", f)
	}
}

// streamWatchAppendAndClose: a watch of an attempt's stream is called
// after an append and after the stream closes.
func streamWatchAppendAndClose(h *streamHarness) {
	n := streamNotifierOf(h)
	id, c := h.active(at(0))
	w := newStreamWatch()
	stop := n.WatchStream(id, 0, w.f)
	h.t.Cleanup(stop)
	for i := uint64(1); i <= 3; i++ {
		w.drain()
		h.appended(durable(id, c.Fence(), "x", at(time.Second)), i, int(i))
		w.until(h.t, "an append", func() bool { return h.readAll(id, 0, at(time.Second)).LastSequence >= i })
	}
	w.drain()
	h.complete(id, c.Fence(), at(2*time.Second))
	w.until(h.t, "the close", func() bool { return h.readAll(id, 0, at(2*time.Second)).Closed })
}

// streamWatchStop: a stopped watch is not called again; another watch of
// the same stream still is.
func streamWatchStop(h *streamHarness) {
	n := streamNotifierOf(h)
	id, c := h.active(at(0))
	first, second := newStreamWatch(), newStreamWatch()
	stop := n.WatchStream(id, 0, first.f)
	stop2 := n.WatchStream(id, 0, second.f)
	h.t.Cleanup(stop2)
	h.appended(durable(id, c.Fence(), "x", at(time.Second)), 1, 1)
	for _, w := range []*streamWatch{first, second} {
		w.until(h.t, "the first append", func() bool { return h.readAll(id, 0, at(time.Second)).LastSequence >= 1 })
	}
	stop()
	first.drain()
	second.drain()
	h.appended(durable(id, c.Fence(), "y", at(time.Second)), 2, 2)
	second.until(h.t, "the second append", func() bool { return h.readAll(id, 0, at(time.Second)).LastSequence >= 2 })
	h.complete(id, c.Fence(), at(2*time.Second))
	second.until(h.t, "the close", func() bool { return h.readAll(id, 0, at(2*time.Second)).Closed })
	select {
	case <-first.ch:
		h.t.Fatal("a stopped watch was called")
	default:
	}
}
