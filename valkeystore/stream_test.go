package valkeystore

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Differential tests of the attempt streams (model.StreamStore): every
// append, read and summary, and every operation that closes a stream, on
// memstore and valkeystore (every backend), with each tracked execution's
// streams compared in full after every step.

// streamOf is s's model.StreamStore.
func streamOf(s model.Store) model.StreamStore { return s.(model.StreamStore) }

// streamPair compares, after each step, every attempt's stream (read
// whole at now, with and without best-effort frames) and summary of the
// executions it tracks.
type streamPair struct {
	*pair
	execs []model.ExecutionID
	now   time.Time
}

func (sp *streamPair) compareStreams(label string) {
	sp.t.Helper()
	for _, id := range sp.execs {
		attempts, err := sp.vk.AttemptList(bg, &model.AttemptListParams{ID: id})
		if err != nil {
			sp.t.Fatalf("%s: attempts: %v", label, err)
		}
		// one index past the last: attempt_not_found on both
		for i := 0; i <= len(attempts.Attempts); i++ {
			for _, excl := range []bool{false, true} {
				rp := &model.StreamReadParams{ID: id, Attempt: i, Count: model.MaxStreamRead, ExcludeBestEffort: excl, Now: sp.now}
				mr, merr := streamOf(sp.mem).StreamRead(bg, rp)
				vr, verr := streamOf(sp.vk).StreamRead(bg, rp)
				if d := errDiff(merr, verr); d != "" {
					sp.t.Fatalf("%s: read %s/%d: errors differ: %s", label, id, i, d)
				}
				if d := cmp.Diff(mr, vr); d != "" {
					sp.t.Fatalf("%s: read %s/%d differs (-memstore +valkeystore):\n%s", label, id, i, d)
				}
			}
			sm := &model.StreamSummaryParams{ID: id, Attempt: i, Now: sp.now}
			mr, merr := streamOf(sp.mem).StreamSummary(bg, sm)
			vr, verr := streamOf(sp.vk).StreamSummary(bg, sm)
			if d := errDiff(merr, verr); d != "" {
				sp.t.Fatalf("%s: summary %s/%d: errors differ: %s", label, id, i, d)
			}
			if d := cmp.Diff(mr, vr); d != "" {
				sp.t.Fatalf("%s: summary %s/%d differs (-memstore +valkeystore):\n%s", label, id, i, d)
			}
		}
	}
}

// step runs op on both stores like do (want "" for success, else the
// error code), then compares the streams at now.
func step[R any](sp *streamPair, name string, want model.Code, now time.Time, op func(s model.Store) (R, error)) R {
	sp.t.Helper()
	r, err := do(sp.pair, name, op)
	if model.CodeOf(err) != want {
		sp.t.Fatalf("step %d %s: error %v, want code %q", sp.steps, name, err, want)
	}
	sp.now = now
	sp.compareStreams(fmt.Sprintf("step %d %s", sp.steps, name))
	return r
}

func (sp *streamPair) track(id model.ExecutionID) {
	sp.pair.track(id)
	sp.execs = append(sp.execs, id)
}

// frameP is an append of mode at now.
func frameP(id model.ExecutionID, f model.Fence, mode model.StreamMode, payload string, now time.Time) *model.StreamAppendParams {
	return &model.StreamAppendParams{ID: id, Fence: f, Mode: mode, Type: "log", Payload: []byte(payload), Now: now}
}

func appendOp(p *model.StreamAppendParams) func(s model.Store) (*model.StreamAppendResult, error) {
	return func(s model.Store) (*model.StreamAppendResult, error) { return streamOf(s).StreamAppend(bg, p) }
}

func newStreamPair(t *testing.T, b backend) *streamPair {
	return &streamPair{pair: newPair(t, b, model.PartitionConfig{FlowPartitions: 3})}
}

// TestStreamModes: frames of the three modes, trimming, summaries and
// their conflicts, reads after a cursor and without best-effort frames,
// and the close at completion.
func TestStreamModes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		sp := newStreamPair(t, b)
		var sq seq
		a := sq.exec(1)
		sp.track(a)
		create(sp.pair, createP(a, at(0)))
		r := grantAndClaim(sp.pair, a, sq.req("wi1", time.Hour), at(time.Second))
		f := r.Fence()
		for i := range 4 {
			p := frameP(a, f, model.StreamDurable, fmt.Sprint("d", i), at(2*time.Second))
			p.MaxLen = 3
			p.Encoding, p.CorrelationID = "text", "corr-"+fmt.Sprint(i%2)
			step(sp, "durable", "", at(2*time.Second), appendOp(p))
		}
		empty := frameP(a, f, model.StreamDurable, "", at(3*time.Second))
		empty.Type = "step.end-1"
		step(sp, "empty payload", "", at(3*time.Second), appendOp(empty))
		binary := frameP(a, f, model.StreamDurable, "\x00\xff\"\\\n{}", at(3*time.Second))
		step(sp, "binary payload", "", at(3*time.Second), appendOp(binary))

		sum := func(base uint64, doc string, now time.Time) *model.StreamAppendParams {
			p := frameP(a, f, model.StreamSummary, `{"patch":1}`, now)
			p.Summary = &model.SummaryUpdate{BaseVersion: base, Document: []byte(doc)}
			return p
		}
		step(sp, "summary 1", "", at(4*time.Second), appendOp(sum(0, `{"a":1}`, at(4*time.Second))))
		step(sp, "summary conflict", model.CodeSummaryConflict, at(4*time.Second), appendOp(sum(0, `{"a":2}`, at(5*time.Second))))
		step(sp, "summary conflict ahead", model.CodeSummaryConflict, at(4*time.Second), appendOp(sum(1<<63, `{"a":2}`, at(5*time.Second))))
		step(sp, "summary 2", "", at(5*time.Second), appendOp(sum(1, `{"a":2, "b":"\u00e9"}`, at(5*time.Second))))

		for i := range 3 {
			now := at(6*time.Second + time.Duration(i)*100*time.Millisecond)
			step(sp, "best effort", "", now, appendOp(frameP(a, f, model.StreamBestEffort, fmt.Sprint("b", i), now)))
		}
		// persistent now: best-effort frames no longer expire
		step(sp, "read later", "", at(time.Hour), appendOp(frameP(a, f, model.StreamBestEffort, "late", at(10*time.Minute))))

		// cursors
		for _, after := range []uint64{0, 3, 7, 11, 12, 100, 1<<64 - 1} {
			for _, count := range []int{1, 2, 5} {
				for _, excl := range []bool{false, true} {
					rp := &model.StreamReadParams{ID: a, After: after, Count: count, ExcludeBestEffort: excl, Now: at(time.Hour)}
					step(sp, fmt.Sprintf("read after %d count %d excl %v", after, count, excl), "", at(time.Hour),
						func(s model.Store) (*model.StreamReadResult, error) { return streamOf(s).StreamRead(bg, rp) })
				}
			}
		}

		// errors: stale fences, an unknown execution
		stale := f
		stale.LeaseEpoch++
		step(sp, "stale epoch", model.CodeStaleLease, at(time.Hour), appendOp(frameP(a, stale, model.StreamDurable, "x", at(10*time.Minute))))
		other := f
		other.AttemptID = sq.attempt()
		step(sp, "other attempt", model.CodeStaleLease, at(time.Hour), appendOp(frameP(a, other, model.StreamDurable, "x", at(10*time.Minute))))
		step(sp, "unknown", model.CodeExecutionNotFound, at(time.Hour), appendOp(frameP(sq.exec(1), f, model.StreamDurable, "x", at(10*time.Minute))))
		step(sp, "expired lease", model.CodeLeaseExpired, at(time.Hour), appendOp(frameP(a, f, model.StreamDurable, "x", at(2*time.Hour))))

		step(sp, "complete", "", at(time.Hour), func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: a, Fence: f, Now: at(11 * time.Minute)})
		})
		step(sp, "append closed", model.CodeStreamClosed, at(time.Hour), appendOp(frameP(a, f, model.StreamDurable, "x", at(12*time.Minute))))
		// the attempt is the fence's: its closed stream answers first
		step(sp, "append closed, stale epoch", model.CodeStreamClosed, at(time.Hour), appendOp(frameP(a, stale, model.StreamDurable, "x", at(12*time.Minute))))
		step(sp, "append closed, other attempt", model.CodeExecutionNotActive, at(time.Hour), appendOp(frameP(a, other, model.StreamDurable, "x", at(12*time.Minute))))
	})
}

// TestStreamBestEffort: the adaptive length, the logical expiry of a
// never-persistent stream, and appends after it.
func TestStreamBestEffort(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		sp := newStreamPair(t, b)
		var sq seq
		a := sq.exec(2)
		sp.track(a)
		create(sp.pair, createP(a, at(0)))
		f := grantAndClaim(sp.pair, a, sq.req("wi1", 24*time.Hour), at(time.Second)).Fence()
		be := func(ttl time.Duration, now time.Time) *model.StreamAppendParams {
			p := frameP(a, f, model.StreamBestEffort, "x", now)
			p.TTL = ttl
			return p
		}
		// a burst: K grows past the first 64 frames kept
		now := at(time.Minute)
		for i := range 150 {
			now = now.Add(time.Duration(i%3) * time.Millisecond)
			r := step(sp, "burst", "", now, appendOp(be(time.Second, now)))
			if i == 149 && r.Frames <= model.BestEffortMinLen {
				t.Fatalf("after a burst the stream keeps %d frames, want more than %d", r.Frames, model.BestEffortMinLen)
			}
		}
		// just before and at the expiry (2 × TTL after the last frame)
		sp.now = now.Add(2*time.Second - time.Millisecond)
		sp.compareStreams("before expiry")
		sp.now = now.Add(2 * time.Second)
		sp.compareStreams("at expiry")
		// an append after the expiry starts over, the sequence goes on
		later := now.Add(time.Hour)
		r := step(sp, "after expiry", "", later, appendOp(be(time.Hour, later)))
		if r.Frames != 1 || r.Sequence != 151 {
			t.Fatalf("append after expiry: %+v, want sequence 151 and 1 frame", r)
		}
		// a slow rate, the default TTL, time going backwards
		for i, d := range []time.Duration{time.Minute, 0, -time.Second, 7 * time.Minute} {
			later = later.Add(d)
			step(sp, fmt.Sprint("slow ", i), "", later, appendOp(be(0, later)))
		}
		// a durable frame makes it persistent: nothing expires any more
		step(sp, "durable", "", later.Add(20*time.Hour), appendOp(frameP(a, f, model.StreamDurable, "d", later)))
		step(sp, "best effort after durable", "", later.Add(20*time.Hour), appendOp(be(time.Second, later.Add(time.Second))))
	})
}

// TestStreamCloses: every way an attempt's stream closes (or reads
// closed without frames), and which ways keep it open.
func TestStreamCloses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		sp := newStreamPair(t, b)
		var sq seq
		durable := func(id model.ExecutionID, f model.Fence, now time.Time) func(s model.Store) (*model.StreamAppendResult, error) {
			return appendOp(frameP(id, f, model.StreamDurable, "x", now))
		}
		newExec := func(retries int) model.ExecutionID {
			id := sq.exec(1)
			sp.track(id)
			c := createP(id, at(0))
			c.RetryPolicy = model.RetryPolicy{MaxRetries: retries}
			c.MaxReclaims = 3
			c.AttemptTimeout = time.Minute
			create(sp.pair, c)
			return id
		}
		fail := func(id model.ExecutionID, f model.Fence, now time.Time) func(s model.Store) (*model.ExecutionFailResult, error) {
			return func(s model.Store) (*model.ExecutionFailResult, error) {
				return s.ExecutionFail(bg, &model.ExecutionFailParams{ID: id, Fence: f, Reason: "boom", Category: model.FailureTransient, Now: now})
			}
		}

		// a retry ends attempt 0 (with and without frames); attempt 1 opens
		a := newExec(2)
		step(sp, "read before any attempt", model.CodeAttemptNotFound, at(0), func(s model.Store) (*model.StreamReadResult, error) {
			return streamOf(s).StreamRead(bg, &model.StreamReadParams{ID: a, Count: 1, Now: at(0)})
		})
		f0 := grantAndClaim(sp.pair, a, sq.req("wi1", ttl), at(time.Second)).Fence()
		step(sp, "append 0", "", at(time.Second), durable(a, f0, at(time.Second)))
		step(sp, "fail 0", "", at(2*time.Second), fail(a, f0, at(2*time.Second)))
		step(sp, "append after retry", model.CodeStreamClosed, at(2*time.Second), durable(a, f0, at(2*time.Second)))
		// promote a retry's delayed execution, then claim its next attempt
		retry := func(id model.ExecutionID, now time.Time) model.Fence {
			t.Helper()
			step(sp, "promote", "", now, func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
				return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: id, Lane: lane, Force: true, Now: now})
			})
			return grantAndClaim(sp.pair, id, sq.req("wi1", ttl), now).Fence()
		}
		now := at(3 * time.Second)
		f1 := retry(a, now)
		step(sp, "append 0 with attempt 1 live", model.CodeStaleLease, now, durable(a, f0, now))
		step(sp, "fail 1 without frames", "", now, fail(a, f1, now))
		now = at(4 * time.Second)
		f2 := retry(a, now)
		step(sp, "append 2", "", now, durable(a, f2, now))
		step(sp, "cancel", "", now, func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: a, Source: model.SourceOperator, Reason: "stop", Now: now})
		})

		// a lease marked expired closes; the reclaim ends the attempt but
		// keeps the first reason; the new attempt's stream opens
		x := newExec(0)
		fx := grantAndClaim(sp.pair, x, sq.req("wi1", ttl), at(time.Second)).Fence()
		step(sp, "append x", "", at(time.Second), durable(x, fx, at(time.Second)))
		step(sp, "mark x", "", at(time.Minute), func(s model.Store) (*model.LeaseMarkExpiredResult, error) {
			return s.LeaseMarkExpired(bg, &model.LeaseMarkExpiredParams{ID: x, Now: at(time.Minute)})
		})
		step(sp, "append x marked", model.CodeStreamClosed, at(time.Minute), durable(x, fx, at(time.Minute)))
		step(sp, "reclaim grant x", "", at(time.Minute), func(s model.Store) (*model.ReclaimGrantIssueResult, error) {
			return s.(model.GrantReclaimer).ReclaimGrantIssue(bg, &model.ReclaimGrantIssueParams{ID: x, WorkerID: "w-wi2",
				WorkerInstanceID: "wi2", GrantTTL: time.Minute, Now: at(time.Minute)})
		})
		rq := sq.req("wi2", ttl)
		rx := step(sp, "reclaim x", "", at(time.Minute), func(s model.Store) (*model.ExecutionReclaimResult, error) {
			return s.(model.GrantReclaimer).ExecutionReclaim(bg, &model.ExecutionReclaimParams{ID: x, LeaseRequest: rq, Now: at(time.Minute)})
		})
		fx1 := rx.Claimed.Fence()
		step(sp, "append x 1", "", at(time.Minute), durable(x, fx1, at(time.Minute)))
		// a revoke closes too; recovery ends the attempt
		step(sp, "revoke x", "", at(time.Minute), func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: x, Reason: "ops", Now: at(time.Minute)})
		})
		step(sp, "append x revoked", model.CodeStreamClosed, at(time.Minute), durable(x, fx1, at(time.Minute)))
		step(sp, "recover x", "", at(2*time.Minute), func(s model.Store) (*model.ExecutionRecoverResult, error) {
			return s.ExecutionRecover(bg, &model.ExecutionRecoverParams{ID: x, Now: at(2 * time.Minute)})
		})

		// no frames: marked expired and revoked attempts read closed
		// (no_frames) before their attempt ends
		y := newExec(0)
		fy := grantAndClaim(sp.pair, y, sq.req("wi1", ttl), at(time.Second)).Fence()
		step(sp, "mark y", "", at(time.Minute), func(s model.Store) (*model.LeaseMarkExpiredResult, error) {
			return s.LeaseMarkExpired(bg, &model.LeaseMarkExpiredParams{ID: y, Now: at(time.Minute)})
		})
		step(sp, "append y marked", model.CodeStreamClosed, at(time.Minute), durable(y, fy, at(time.Minute)))
		step(sp, "recover y", "", at(time.Minute), func(s model.Store) (*model.ExecutionRecoverResult, error) {
			return s.ExecutionRecover(bg, &model.ExecutionRecoverParams{ID: y, Now: at(time.Minute)})
		})
		fy1 := grantAndClaim(sp.pair, y, sq.req("wi1", ttl), at(2*time.Minute)).Fence()
		step(sp, "revoke y", "", at(2*time.Minute), func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: y, Reason: "ops", Now: at(2 * time.Minute)})
		})
		step(sp, "append y revoked", model.CodeStreamClosed, at(2*time.Minute), durable(y, fy1, at(2*time.Minute)))

		// a worker's delay pauses the attempt: the stream stays open, and
		// the holder's fence meets the phase, not a closed stream
		z := newExec(0)
		fz := grantAndClaim(sp.pair, z, sq.req("wi1", ttl), at(time.Second)).Fence()
		step(sp, "append z", "", at(time.Second), durable(z, fz, at(time.Second)))
		step(sp, "delay z", "", at(time.Second), func(s model.Store) (*model.ExecutionDelayResult, error) {
			return s.ExecutionDelay(bg, &model.ExecutionDelayParams{ID: z, Fence: fz, DelayUntil: at(time.Minute), Now: at(time.Second)})
		})
		step(sp, "append z delayed", model.CodeExecutionNotActive, at(time.Second), durable(z, fz, at(2*time.Second)))
		step(sp, "promote z", "", at(time.Minute), func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: z, Lane: lane, Now: at(time.Minute)})
		})
		fz1 := grantAndClaim(sp.pair, z, sq.req("wi1", ttl), at(time.Minute)).Fence()
		step(sp, "append z resumed", "", at(time.Minute), durable(z, fz1, at(time.Minute)))
		step(sp, "expire z", "", at(time.Hour), func(s model.Store) (*model.ExecutionExpireResult, error) {
			return s.ExecutionExpire(bg, &model.ExecutionExpireParams{ID: z, Reason: model.ExpireAttemptTimeout, Now: at(time.Hour)})
		})

		// the reasons the differential compared
		for _, w := range []struct {
			id      model.ExecutionID
			attempt int
			reason  model.StreamCloseReason
		}{
			{a, 0, "ended_failure"}, {a, 1, model.StreamClosedNoFrames}, {a, 2, "ended_cancelled"},
			{x, 0, model.StreamClosedLeaseExpired}, {x, 1, model.StreamClosedLeaseRevoked},
			{y, 0, model.StreamClosedNoFrames}, {y, 1, model.StreamClosedNoFrames}, {z, 0, "ended_failure"},
		} {
			r, err := sp.vk.StreamRead(bg, &model.StreamReadParams{ID: w.id, Attempt: w.attempt, Count: 1, Now: at(time.Hour)})
			if err != nil || !r.Closed || r.ClosedReason != w.reason {
				t.Errorf("%s attempt %d: %+v, %v; want closed (%s)", w.id, w.attempt, r, err, w.reason)
			}
		}
	})
}

// TestStreamRecordField: the record's stream_open is set by an attempt's
// first frame and cleared by the close, which the meta records (an
// execution that never appends pays nothing: TestHotPathCommands).
func TestStreamRecordField(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		id := sq.exec(1)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		core := s.keys.execKeys(id)["core"]
		n := func() string {
			t.Helper()
			v, err := c.Do(bg, c.B().Hget().Key(core).Field("n").Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// stream_open is the hot number before ret_ok (0: no retention),
		// md (0: no metadata) and fl (0: in no flow)
		if got := n(); !strings.HasSuffix(got, ",0,0,0,0]") {
			t.Fatalf("record n = %s before any frame, want stream_open 0 before ret_ok 0, md 0 and fl 0", got)
		}
		if _, err := s.StreamAppend(bg, frameP(id, r.Fence(), model.StreamDurable, "x", at(time.Second))); err != nil {
			t.Fatal(err)
		}
		if got := n(); !strings.HasSuffix(got, ",1,0,0,0]") {
			t.Fatalf("record n = %s after a frame of attempt 0, want stream_open 1 before ret_ok 0, md 0 and fl 0", got)
		}
		if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Now: at(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if got := n(); !strings.HasSuffix(got, ",0,0,0,0]") {
			t.Fatalf("record n = %s after the close, want stream_open 0 before ret_ok 0, md 0 and fl 0", got)
		}
		base := s.keys.execBase(id)
		if typ, _ := c.Do(bg, c.B().Type().Key(base+":stream:0").Build()).ToString(); typ != "stream" {
			t.Fatalf("%s:stream:0 is a %s, want a stream", base, typ)
		}
		meta, err := c.Do(bg, c.B().Hgetall().Key(base+":stream:0:meta").Build()).AsStrMap()
		if err != nil || meta["closed"] != "1" || meta["closed_reason"] != "ended_success" || meta["last_seq"] != "1" {
			t.Fatalf("%s:stream:0:meta = %v (%v)", base, meta, err)
		}
	})
}

// TestWatchStreamFilters: a stream's watcher hears its own stream only,
// though the partition's watchers share one subscription.
func TestWatchStreamFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, nil)
		var sq seq
		claim := func(id model.ExecutionID) model.Fence {
			t.Helper()
			if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
				t.Fatal(err)
			}
			r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return r.Fence()
		}
		a, x := sq.exec(3), sq.exec(3)
		fa, fx := claim(a), claim(x)
		var calls atomic.Int64
		stopA := s.WatchStream(a, 0, func() { calls.Add(1) })
		defer stopA()
		stopA1 := s.WatchStream(a, 1, func() { calls.Add(1) })
		defer stopA1()
		heard := make(chan struct{}, 16)
		wait := func() {
			t.Helper()
			select {
			case <-heard:
			case <-time.After(10 * time.Second):
				t.Fatal("x's watcher was not called")
			}
		}
		stopX := s.WatchStream(x, 0, func() { heard <- struct{}{} })
		defer stopX()
		// a's watchers, registered first, see each message before x's
		// watcher is called with it
		if _, err := s.StreamAppend(bg, frameP(x, fx, model.StreamDurable, "x", at(time.Second))); err != nil {
			t.Fatal(err)
		}
		wait()
		if n := calls.Load(); n != 0 {
			t.Fatalf("a's watchers were called %d times for x's append", n)
		}
		if _, err := s.StreamAppend(bg, frameP(a, fa, model.StreamDurable, "a", at(time.Second))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StreamAppend(bg, frameP(x, fx, model.StreamDurable, "x", at(time.Second))); err != nil {
			t.Fatal(err)
		}
		wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("a's watchers were called %d times for one append to a's attempt 0, want 1", n)
		}
	})
}

// TestWatchStreamFramesCarry: an append's notice carries the frame as the
// store keeps it (binary payload, every field) while the payload is at most
// model.MaxNoticeFrameBytes; a larger frame's notice and a close's carry
// none.
func TestWatchStreamFramesCarry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, nil)
		var sq seq
		id := sq.exec(2)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *model.Frame, 16)
		stop := s.WatchStreamFrames(id, 0, func(f *model.Frame) { got <- f })
		defer stop()
		next := func() *model.Frame {
			t.Helper()
			select {
			case f := <-got:
				return f
			case <-time.After(10 * time.Second):
				t.Fatal("no notice")
			}
			return nil
		}
		small := &model.StreamAppendParams{ID: id, Fence: r.Fence(), Mode: model.StreamBestEffort, Type: "tok.en",
			Payload: []byte("a|b\n\x00\xff"), Encoding: "bin|ary", CorrelationID: "c\n1", Now: at(2 * time.Second)}
		if _, err := s.StreamAppend(bg, small); err != nil {
			t.Fatal(err)
		}
		f := next()
		page, err := s.StreamRead(bg, &model.StreamReadParams{ID: id, Attempt: 0, Count: 10, Now: at(2 * time.Second)})
		if err != nil || len(page.Frames) != 1 {
			t.Fatalf("read: %+v %v", page, err)
		}
		if f == nil || !reflect.DeepEqual(*f, page.Frames[0]) {
			t.Fatalf("the notice's frame %+v, the store's %+v", f, page.Frames[0])
		}
		big := *small
		big.Mode, big.Payload, big.Now = model.StreamDurable, make([]byte, model.MaxNoticeFrameBytes+1), at(3*time.Second)
		if _, err := s.StreamAppend(bg, &big); err != nil {
			t.Fatal(err)
		}
		if f := next(); f != nil {
			t.Fatalf("a frame over MaxNoticeFrameBytes came by notice: seq %d", f.Sequence)
		}
		if _, err := s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: id, Reason: "x", Now: at(4 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if f := next(); f != nil {
			t.Fatalf("a close's notice carried a frame: %+v", f)
		}
	})
}

func TestParseNoticeFrameRefusesGarbage(t *testing.T) {
	for _, body := range []string{"", "1|2|durable|0|1|0|0|", "x|2|durable|0|0|0|0|", "1|2|durable|0|9|0|0|abc", "1|2|durable|0|-1|0|0|"} {
		if f, ok := parseNoticeFrame(body); ok {
			t.Errorf("parseNoticeFrame(%q) = %+v, want refused", body, f)
		}
	}
}

// TestStreamAppendInput checks that StreamAppend's lean arguments (argv,
// one key) are what run would send for the same call, in every mode, with
// the store's automatic arguments, and that argv refuses an undeclared or
// repeated argument and runArgv a missing one.
func TestStreamAppendInput(t *testing.T) {
	for _, feeds := range []model.Feeds{{}, {Completions: true, Leases: true}} {
		s := newStoreWith(t, miniredisClient(t), &Options{Feeds: feeds})
		var sq seq
		id := sq.exec(3)
		fence := model.Fence{LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{1})), LeaseEpoch: 12, AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{2}))}
		for _, p := range []*model.StreamAppendParams{
			{ID: id, Fence: fence, Mode: model.StreamDurable, Type: "tok", Payload: []byte("a\x00b"), Encoding: "bin", CorrelationID: "c-1", MaxLen: 7, Now: at(time.Second)},
			{ID: id, Fence: fence, Mode: model.StreamBestEffort, Type: "tok", Payload: nil, TTL: 3 * time.Second, Now: at(0)},
			{ID: id, Fence: fence, Mode: model.StreamSummary, Type: "summary", Payload: []byte(`{"a":1}`), Encoding: "json-merge-patch",
				Summary: &model.SummaryUpdate{BaseVersion: 4, Document: []byte(`{"a":1,"b":2}`)}, Now: time.Time{}},
		} {
			var ttl int64
			if p.Mode == model.StreamBestEffort {
				ttl = p.EffectiveTTL().Milliseconds()
			}
			var base uint64
			var doc []byte
			if p.Summary != nil {
				base, doc = p.Summary.BaseVersion, p.Summary.Document
			}
			wantKeys, wantArgs := s.scriptInput(scriptStreamAppend, s.keys.execKeys(p.ID), fenceArgs(args{
				"now": p.Now, "id": p.ID, "mode": string(p.Mode), "type": p.Type, "payload": p.Payload,
				"encoding": p.Encoding, "correlation": p.CorrelationID, "max_len": p.EffectiveMaxLen(),
				"ttl": ttl, "base_version": base, "doc": doc, "gc_slack": s.gcSlack,
			}, p.Fence))
			keys, a := s.streamAppendInput(p)
			if !slices.Equal(keys, wantKeys) || !slices.Equal(a.as, wantArgs) {
				t.Errorf("feeds %+v, %s: keys %q args %q, run would send %q %q", feeds, p.Mode, keys, a.as, wantKeys, wantArgs)
			}
		}
	}
	s := newStoreWith(t, miniredisClient(t), nil)
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		f()
	}
	mustPanic("undeclared", func() { s.argv(scriptStreamAppend).put("nope", "1") })
	mustPanic("twice", func() { s.argv(scriptStreamAppend).put("now", "1").put("now", "2") })
	mustPanic("missing", func() {
		_, _ = s.runArgv(bg, scriptStreamAppend, []string{"k"}, s.argv(scriptStreamAppend).put("now", "1"))
	})
}

// TestStreamOlderFormat: a stream stored before the server numbered
// frames (entry ids <seq>-0, a meta without fmt, no sp in X:core) reads
// the same and takes every kind of frame after the change, numbered on
// from its meta, without ever taking the fast path (sp stays unset);
// streams created since are server-numbered (fmt 2). Both stores are
// compared after every step.
func TestStreamOlderFormat(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		sp := newStreamPair(t, b)
		var sq seq
		a := sq.exec(1)
		sp.track(a)
		create(sp.pair, createP(a, at(0)))
		r := grantAndClaim(sp.pair, a, sq.req("wi1", time.Hour), at(time.Second))
		f := r.Fence()
		for i := range 3 {
			step(sp, "durable", "", at(2*time.Second), appendOp(frameP(a, f, model.StreamDurable, fmt.Sprint("d", i), at(2*time.Second))))
		}
		c, base := sp.vk.client, sp.vk.keys.execBase(a)
		key, meta, core := base+":stream:0", base+":stream:0:meta", base+":core"
		hget := func(k, field string) string {
			t.Helper()
			v, err := c.Do(bg, c.B().Hget().Key(k).Field(field).Build()).ToString()
			if err != nil && !valkey.IsValkeyNil(err) {
				t.Fatal(err)
			}
			return v
		}
		if got := hget(meta, "fmt"); got != "2" {
			t.Fatalf("a new stream's meta fmt %q, want 2", got)
		}
		if got := hget(core, "sp"); got != "0" {
			t.Fatalf("a persistent new stream's sp %q, want 0", got)
		}
		// rewrite it as the older format stored it
		rows, err := c.Do(bg, c.B().Xrange().Key(key).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		cmds := valkey.Commands{c.B().Del().Key(key).Build()}
		var last string
		for _, row := range rows {
			last = strings.TrimPrefix(row.ID, "0-")
			fv := c.B().Xadd().Key(key).Id(last + "-0").FieldValue()
			for _, name := range []string{"t", "p", "e", "c", "m", "ts", "v"} {
				fv = fv.FieldValue(name, row.FieldValues[name])
			}
			cmds = append(cmds, fv.Build())
		}
		cmds = append(cmds,
			c.B().Hdel().Key(meta).Field("fmt").Build(),
			c.B().Hset().Key(meta).FieldValue().FieldValue("last_seq", last).FieldValue("len", fmt.Sprint(len(rows))).Build(),
			c.B().Hdel().Key(core).Field("sp").Build())
		for _, r := range c.DoMulti(bg, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
		sp.compareStreams("older format")
		step(sp, "durable", "", at(3*time.Second), appendOp(frameP(a, f, model.StreamDurable, "d3", at(3*time.Second))))
		sum := frameP(a, f, model.StreamSummary, `{"a":1}`, at(4*time.Second))
		sum.Summary = &model.SummaryUpdate{Document: []byte(`{"a":1}`)}
		step(sp, "summary", "", at(4*time.Second), appendOp(sum))
		step(sp, "best effort", "", at(5*time.Second), appendOp(frameP(a, f, model.StreamBestEffort, "b", at(5*time.Second))))
		for i := range 3 {
			p := frameP(a, f, model.StreamDurable, fmt.Sprint("t", i), at(6*time.Second))
			p.MaxLen = 4
			step(sp, "durable trimmed", "", at(6*time.Second), appendOp(p))
		}
		if got := hget(core, "sp"); got != "" {
			t.Fatalf("an older stream's sp %q, want none (its frames are numbered from its meta)", got)
		}
		ids, err := c.Do(bg, c.B().Xrange().Key(key).Start("-").End("+").Build()).AsXRange()
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range ids {
			if !strings.HasSuffix(row.ID, "-0") || strings.HasPrefix(row.ID, "0-") {
				t.Fatalf("older stream's entry %s, want <seq>-0", row.ID)
			}
		}
		step(sp, "complete", "", at(7*time.Second), func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: a, Fence: f, Now: at(7 * time.Second)})
		})
	})
}
