package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowfabric/flowfabric/model"
)

// Event feeds (model.FeedStore, model/feed.go): per partition, numbered
// logs of the completions and the lease events of its executions, kept
// only when the store is built with them. A completion event per terminal
// transition (none for a retry, a second one after a replay); a lease
// event per lease history entry, in the same order and with the same
// fields, plus one per renewal; the event's execution fields and the Now
// of its transition; reads after a cursor, paged, with the newest
// sequence, and Behind when the feed dropped events the cursor had not
// reached or the cursor is past it; the newest Feeds.Len events kept;
// each execution's events in its own partition's feed; a validation error
// naming the field for every bad read. model.FeedNotifier is tested when
// the store has it.
//
// Feeds are a store option, so these tests need stores built with chosen
// feeds: wrap the NewStoreFunc in WithFeeds. A store without
// model.FeedStore, or whose NewStoreFunc is not wrapped, skips them.
func testFeeds(t *testing.T, newStore NewStoreFunc) {
	both := model.Feeds{Completions: true, Leases: true}
	for _, c := range []struct {
		name  string
		feeds model.Feeds
		run   func(*feedHarness)
	}{
		// options
		{"Disabled", model.Feeds{}, feedDisabled},
		{"CompletionsOnly", model.Feeds{Completions: true}, feedCompletionsOnly},
		{"LeasesOnly", model.Feeds{Leases: true}, feedLeasesOnly},
		// completions
		{"Complete", both, feedComplete},
		{"Fail", both, feedFail},
		{"Cancel", both, feedCancel},
		{"Expire", both, feedExpire},
		{"Replay", both, feedReplay},
		{"FlowSkip", both, feedFlowSkip},
		// leases
		{"LeaseRenewed", both, feedLeaseRenewed},
		{"LeaseExpiredReclaimed", both, feedLeaseExpiredReclaimed},
		{"LeaseRevokedRecovered", both, feedLeaseRevokedRecovered},
		{"LeaseCancelledDelayed", both, feedLeaseCancelledDelayed},
		{"LeaseResumed", both, feedLeaseResumed},
		{"LeaseMirrorsHistory", both, feedLeaseMirror},
		// reads
		{"Reads", both, feedReads},
		{"ReadValidation", both, feedReadValidation},
		{"Retention", model.Feeds{Completions: true, Leases: true, Len: 3}, feedRetention},
		{"Partitions", both, feedPartitions},
		// notifications
		{"Watch", both, feedWatchCalls},
		{"WatchStop", both, feedWatchStop},
		{"WatchEvents", both, feedWatchEvents},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, wrapped := setupFeeds(t, newStore, c.feeds)
			fs, ok := optionalOf[model.FeedStore](h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.FeedStore", h.s)
			}
			if !wrapped && c.feeds != (model.Feeds{}) {
				t.Skip("storetest: the NewStoreFunc does not choose the store's feeds; wrap it in storetest.WithFeeds")
			}
			for _, k := range []model.FeedKind{model.FeedCompletions, model.FeedLeases} {
				if got := fs.FeedEnabled(k); got != c.feeds.Enabled(k) {
					t.Fatalf("FeedEnabled(%s) = %v for a store built with %+v", k, got, c.feeds)
				}
			}
			c.run(&feedHarness{harness: h, fs: fs})
		})
	}
}

// WithFeeds returns a NewStoreFunc for Exercise that builds its stores
// with newStore, passing the feeds (the store option model.Feeds) a test
// of the Feeds group asks for, and no feeds to every other test:
//
//	storetest.Exercise(t, storetest.WithFeeds(func(t *testing.T, f model.Feeds) model.Store {
//		return memstore.New(&memstore.Options{Feeds: f})
//	}))
//
// Without it the Feeds tests skip.
func WithFeeds(newStore func(t *testing.T, feeds model.Feeds) model.Store) NewStoreFunc {
	return func(t *testing.T) model.Store {
		var f model.Feeds
		if v, ok := feedRequests.Load(t); ok {
			r := v.(*feedRequest)
			r.wrapped = true
			f = r.feeds
		}
		return newStore(t, f)
	}
}

// feedRequests holds, by test, the feeds a Feeds test asks of the store
// setup opens for it (NewStoreFunc has no other argument to carry them).
var feedRequests sync.Map // *testing.T → *feedRequest

type feedRequest struct {
	feeds   model.Feeds
	wrapped bool // a WithFeeds NewStoreFunc built the store
}

// setupFeeds is setup with a store built with feeds f; wrapped says
// whether the NewStoreFunc honoured them (WithFeeds).
func setupFeeds(t *testing.T, newStore NewStoreFunc, f model.Feeds) (*harness, bool) {
	t.Helper()
	r := &feedRequest{feeds: f}
	feedRequests.Store(t, r)
	defer feedRequests.Delete(t)
	h := setup(t, newStore)
	return h, r.wrapped
}

// feedHarness is a harness with the store's feed operations.
type feedHarness struct {
	*harness
	fs model.FeedStore
}

func (h *feedHarness) on(t *testing.T) *feedHarness {
	return &feedHarness{harness: h.harness.on(t), fs: h.fs}
}

var feedKinds = []model.FeedKind{model.FeedCompletions, model.FeedLeases}

func (h *feedHarness) read(k model.FeedKind, part int, after uint64, count int) *model.FeedReadResult {
	h.t.Helper()
	return call(h.fs.FeedRead(h.ctx, &model.FeedReadParams{Feed: k, Partition: part, After: after, Count: count})).must(h.t)
}

// wantRead reads feed k of part after a cursor and checks the sequences
// of the events, Next, Last and Behind.
func (h *feedHarness) wantRead(k model.FeedKind, part int, after uint64, count int, next, last uint64, behind bool, seqs ...uint64) *model.FeedReadResult {
	h.t.Helper()
	r := h.read(k, part, after, count)
	var got []uint64
	for _, ev := range r.Events {
		got = append(got, ev.Seq)
	}
	if !slices.Equal(got, seqs) || r.Next != next || r.Last != last || r.Behind != behind {
		h.t.Fatalf("FeedRead %s p%d after %d count %d: seqs %v next %d last %d behind %v; want seqs %v next %d last %d behind %v",
			k, part, after, count, got, r.Next, r.Last, r.Behind, seqs, next, last, behind)
	}
	return r
}

// events reads every event feed k of part keeps, oldest first, and
// checks that their sequences are consecutive and end at Last.
func (h *feedHarness) events(k model.FeedKind, part int) []model.FeedEvent {
	h.t.Helper()
	var evs []model.FeedEvent
	var after, last uint64
	for {
		r := h.read(k, part, after, model.MaxFeedRead)
		last = r.Last
		if len(r.Events) == 0 {
			break
		}
		if r.Next != r.Events[len(r.Events)-1].Seq {
			h.t.Fatalf("FeedRead %s p%d after %d: Next %d, last event %d", k, part, after, r.Next, r.Events[len(r.Events)-1].Seq)
		}
		evs = append(evs, r.Events...)
		after = r.Next
	}
	for i, ev := range evs {
		if i > 0 && ev.Seq != evs[i-1].Seq+1 {
			h.t.Fatalf("feed %s p%d: sequence %d follows %d", k, part, ev.Seq, evs[i-1].Seq)
		}
		if ev.Partition != part {
			h.t.Fatalf("feed %s p%d holds an event of partition %d: %+v", k, part, ev.Partition, ev)
		}
	}
	if len(evs) > 0 && evs[len(evs)-1].Seq != last {
		h.t.Fatalf("feed %s p%d: newest event %d, Last %d", k, part, evs[len(evs)-1].Seq, last)
	}
	return evs
}

// numbered numbers evs from first on.
func numbered(first uint64, evs ...model.FeedEvent) []model.FeedEvent {
	out := slices.Clone(evs)
	for i := range out {
		out[i].Seq = first + uint64(i)
	}
	return out
}

// wantFeed checks every event of feed k of part, sequences included.
func (h *feedHarness) wantFeed(k model.FeedKind, part int, want ...model.FeedEvent) {
	h.t.Helper()
	if d := cmp.Diff(want, h.events(k, part), cmpOpts...); d != "" {
		h.t.Fatalf("feed %s of partition %d (-want +got):\n%s", k, part, d)
	}
}

// of returns the events of execution id.
func of(evs []model.FeedEvent, id model.ExecutionID) []model.FeedEvent {
	var out []model.FeedEvent
	for _, ev := range evs {
		if ev.Execution == id {
			out = append(out, ev)
		}
	}
	return out
}

// ev is an event of id at: its execution fields, as describe shows them.
func (h *feedHarness) ev(id model.ExecutionID, at time.Time) model.FeedEvent {
	h.t.Helper()
	s := h.describe(id)
	return model.FeedEvent{
		At: at, Partition: id.Partition(), Execution: id,
		Namespace: s.Namespace, Lane: s.Lane, Kind: s.Kind, Flow: s.Flow,
	}
}

// done is the completion event of id at with outcome to and a result of n
// bytes.
func (h *feedHarness) done(id model.ExecutionID, at time.Time, to model.TerminalOutcome, n int) model.FeedEvent {
	h.t.Helper()
	ev := h.ev(id, at)
	ev.Outcome, ev.ResultBytes = to, n
	return ev
}

// leaseEv is the lease event of id at.
func (h *feedHarness) leaseEv(id model.ExecutionID, at time.Time, kind model.LeaseEventKind, epoch uint64, attempt int, inst model.WorkerInstanceID, reason string) model.FeedEvent {
	h.t.Helper()
	ev := h.ev(id, at)
	ev.Lease, ev.Epoch, ev.Attempt, ev.Instance, ev.Reason = kind, epoch, attempt, inst, reason
	return ev
}

var ignoreSeq = cmpopts.IgnoreFields(model.FeedEvent{}, "Seq")

// wantLeases checks the lease events of id in its partition's feed,
// ignoring sequences, and that they mirror its lease history.
func (h *feedHarness) wantLeases(id model.ExecutionID, want ...model.FeedEvent) {
	h.t.Helper()
	got := of(h.events(model.FeedLeases, id.Partition()), id)
	if d := cmp.Diff(want, got, append(slices.Clone(cmpOpts), ignoreSeq)...); d != "" {
		h.t.Fatalf("lease events of %v (-want +got):\n%s", id, d)
	}
	h.wantMirror(id)
}

// wantMirror checks that the lease events of id, less the renewals, are
// its lease history in order, field for field.
func (h *feedHarness) wantMirror(id model.ExecutionID) {
	h.t.Helper()
	var want []model.FeedEvent
	for _, le := range h.history(id) {
		want = append(want, h.leaseEv(id, le.At, le.Kind, le.LeaseEpoch, le.AttemptIndex, le.WorkerInstanceID, le.Reason))
	}
	var got []model.FeedEvent
	for _, ev := range of(h.events(model.FeedLeases, id.Partition()), id) {
		if ev.Lease != model.LeaseRenewed {
			got = append(got, ev)
		}
	}
	if d := cmp.Diff(want, got, append(slices.Clone(cmpOpts), ignoreSeq)...); d != "" {
		h.t.Fatalf("lease events of %v less renewals against its lease history (-history +feed):\n%s", id, d)
	}
}

// last returns the newest sequence of feed k of part.
func (h *feedHarness) last(k model.FeedKind, part int) uint64 {
	h.t.Helper()
	return h.read(k, part, 0, 1).Last
}

func (h *feedHarness) completeWith(id model.ExecutionID, f model.Fence, result string, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: f, Result: []byte(result), Now: now})).must(h.t)
}

func (h *feedHarness) renew(id model.ExecutionID, f model.Fence, now time.Time) {
	h.t.Helper()
	call(h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: f, LeaseTTL: leaseTTL, Now: now})).must(h.t)
}

func (h *feedHarness) replay(id model.ExecutionID, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionReplay(h.ctx, &model.ExecutionReplayParams{ID: id, Reason: "again", Now: now})).must(h.t)
}

func (h *feedHarness) expire(id model.ExecutionID, r model.ExpireReason, now time.Time) model.ExpireOutcome {
	h.t.Helper()
	return call(h.s.ExecutionExpire(h.ctx, &model.ExecutionExpireParams{ID: id, Reason: r, Now: now})).must(h.t).Outcome
}

// Options.

// feedDisabled: a store built without feeds keeps none; reading one is
// feed_disabled, before and after transitions that would add events.
func feedDisabled(h *feedHarness) {
	disabled := func() {
		h.t.Helper()
		for _, k := range feedKinds {
			_, err := h.fs.FeedRead(h.ctx, &model.FeedReadParams{Feed: k, Partition: h.p0, Count: 10})
			wantErr(h.t, err, model.ErrFeedDisabled)
		}
	}
	disabled()
	id, c := h.active(at(0))
	h.renew(id, c.Fence(), at(time.Second))
	h.completeWith(id, c.Fence(), "r", at(2*time.Second))
	h.cancelOp(h.create(at(0)), at(3*time.Second))
	disabled()
}

// feedCompletionsOnly: a store keeps the completions feed alone.
func feedCompletionsOnly(h *feedHarness) {
	id, c := h.active(at(0))
	h.completeWith(id, c.Fence(), "r", at(time.Second))
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1, h.done(id, at(time.Second), model.OutcomeSuccess, 1))...)
	_, err := h.fs.FeedRead(h.ctx, &model.FeedReadParams{Feed: model.FeedLeases, Partition: h.p0, Count: 10})
	wantErr(h.t, err, model.ErrFeedDisabled)
}

// feedLeasesOnly: a store keeps the lease feed alone.
func feedLeasesOnly(h *feedHarness) {
	id, c := h.active(at(0))
	h.completeWith(id, c.Fence(), "r", at(time.Second))
	h.wantFeed(model.FeedLeases, h.p0, numbered(1,
		h.leaseEv(id, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(time.Second), model.LeaseReleased, 1, 0, wA.Instance, "completed"),
	)...)
	_, err := h.fs.FeedRead(h.ctx, &model.FeedReadParams{Feed: model.FeedCompletions, Partition: h.p0, Count: 10})
	wantErr(h.t, err, model.ErrFeedDisabled)
}

// Completions.

// feedComplete: a completion is one event with the execution's fields,
// the transition's time and the result's size; a replayed completion and
// a refused one add none.
func feedComplete(h *feedHarness) {
	h.wantFeed(model.FeedCompletions, h.p0)
	x, cx := h.active(at(0), withNamespace(nsB), withLane(laneB))
	y, cy := h.active(at(0))
	h.wantFeed(model.FeedCompletions, h.p0)
	h.completeWith(x, cx.Fence(), "hello", at(2*time.Second))
	h.complete(y, cy.Fence(), at(3*time.Second))
	want := []model.FeedEvent{
		{Seq: 1, At: at(2 * time.Second), Partition: h.p0, Execution: x, Namespace: nsB, Lane: laneB, Kind: kindA,
			Outcome: model.OutcomeSuccess, ResultBytes: 5},
		{Seq: 2, At: at(3 * time.Second), Partition: h.p0, Execution: y, Namespace: nsA, Lane: laneA, Kind: kindA,
			Outcome: model.OutcomeSuccess},
	}
	h.wantFeed(model.FeedCompletions, h.p0, want...)

	res := call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: x, Fence: cx.Fence(), Result: []byte("hello"), Now: at(4 * time.Second)})).must(h.t)
	if !res.Replayed {
		h.t.Fatalf("the second completion of %v was not a replay: %+v", x, res)
	}
	stale := cy.Fence()
	stale.LeaseEpoch++
	_, err := h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: y, Fence: stale, Now: at(4 * time.Second)})
	if err == nil {
		h.t.Fatal("a completion with a stale fence was accepted")
	}
	h.wantFeed(model.FeedCompletions, h.p0, want...)
}

// feedFail: a failure for good is one event; a failure that schedules a
// retry is none, until the retry fails for good.
func feedFail(h *feedHarness) {
	x, cx := h.active(at(0))
	retry := model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Second}
	y, cy := h.active(at(0), withRetry(retry))
	if r := h.fail(x, cx.Fence(), model.FailurePermanent, at(time.Second)); r.Outcome != model.FailTerminal {
		h.t.Fatalf("fail %v: %+v", x, r)
	}
	if r := h.fail(y, cy.Fence(), model.FailureTransient, at(2*time.Second)); r.Outcome != model.FailRetryScheduled {
		h.t.Fatalf("fail %v: %+v", y, r)
	}
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1, h.done(x, at(time.Second), model.OutcomeFailed, 0))...)
	if got := h.promote(y, laneA, at(3*time.Second)); got != model.PromotePromoted {
		h.t.Fatalf("promote %v: %v", y, got)
	}
	cy = h.claim(y, wA, at(3*time.Second))
	if r := h.fail(y, cy.Fence(), model.FailureTransient, at(4*time.Second)); r.Outcome != model.FailTerminal {
		h.t.Fatalf("fail %v again: %+v", y, r)
	}
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1,
		h.done(x, at(time.Second), model.OutcomeFailed, 0),
		h.done(y, at(4*time.Second), model.OutcomeFailed, 0),
	)...)
	h.wantMirror(x)
	h.wantMirror(y)
}

// feedCancel: cancelling a runnable and an active execution is an event
// each.
func feedCancel(h *feedHarness) {
	r := h.create(at(0))
	a, _ := h.active(at(0))
	h.cancelOp(r, at(time.Second))
	h.cancelOp(a, at(2*time.Second))
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1,
		h.done(r, at(time.Second), model.OutcomeCancelled, 0),
		h.done(a, at(2*time.Second), model.OutcomeCancelled, 0),
	)...)
	h.wantLeases(r)
	h.wantLeases(a,
		h.leaseEv(a, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(a, at(2*time.Second), model.LeaseCancelled, 1, 0, wA.Instance, "stop"),
	)
}

// feedExpire: an attempt timeout without retries and a passed deadline
// end their executions expired, an event each; an attempt timeout that
// schedules a retry is none.
func feedExpire(h *feedHarness) {
	t1, _ := h.active(at(0), withTimeout(time.Minute))
	t2, _ := h.active(at(0), withTimeout(time.Minute), withRetry(model.RetryPolicy{MaxRetries: 1}))
	d := h.create(at(0), withDeadline(at(2*time.Minute)), withDelay(at(time.Hour)))
	if got := h.expire(t1, model.ExpireAttemptTimeout, at(time.Minute)); got != model.ExpireExpired {
		h.t.Fatalf("expire %v: %v", t1, got)
	}
	if got := h.expire(t2, model.ExpireAttemptTimeout, at(time.Minute)); got != model.ExpireRetryScheduled {
		h.t.Fatalf("expire %v: %v", t2, got)
	}
	if got := h.expire(d, model.ExpireExecutionDeadline, at(2*time.Minute)); got != model.ExpireExpired {
		h.t.Fatalf("expire %v: %v", d, got)
	}
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1,
		h.done(t1, at(time.Minute), model.OutcomeExpired, 0),
		h.done(d, at(2*time.Minute), model.OutcomeExpired, 0),
	)...)
	for _, id := range []model.ExecutionID{t1, t2, d} {
		h.wantMirror(id)
	}
}

// feedReplay: a replayed execution that ends again has a second event;
// the replay itself is a lease event (its history entry).
func feedReplay(h *feedHarness) {
	x, c := h.active(at(0))
	h.completeWith(x, c.Fence(), "a", at(time.Second))
	h.replay(x, at(2*time.Second))
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1, h.done(x, at(time.Second), model.OutcomeSuccess, 1))...)
	c2 := h.claim(x, wB, at(3*time.Second))
	h.completeWith(x, c2.Fence(), "abc", at(4*time.Second))
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1,
		h.done(x, at(time.Second), model.OutcomeSuccess, 1),
		h.done(x, at(4*time.Second), model.OutcomeSuccess, 3),
	)...)
	h.wantLeases(x,
		h.leaseEv(x, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(x, at(time.Second), model.LeaseReleased, 1, 0, wA.Instance, "completed"),
		h.leaseEv(x, at(2*time.Second), model.LeaseReplayed, 1, 0, "", "again"),
		h.leaseEv(x, at(3*time.Second), model.LeaseAcquired, 2, 1, wB.Instance, ""),
		h.leaseEv(x, at(4*time.Second), model.LeaseReleased, 2, 1, wB.Instance, "completed"),
	)
}

// feedFlowSkip: flow members' events name their flow; an upstream's
// failure that skips its downstream is two events, the failure first.
func feedFlowSkip(h *feedHarness) {
	flows, ok := optionalOf[model.FlowStore](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.FlowStore", h.s)
	}
	fh := &flowHarness{harness: h.harness, fs: flows}
	f := fh.newFlow(at(0), nil)
	a, b := fh.member(f, at(0)), fh.member(f, at(0))
	fh.stage(f, a, b, at(0))
	fh.seal(f, at(time.Second), 1, 0)
	fh.failHard(a, at(2*time.Second))
	fh.wantSkipped(b)
	g := fh.newFlow(at(0), nil)
	c := fh.member(g, at(0))
	fh.seal(g, at(time.Second), 1, 0)
	fh.succeed(c, []byte("ok"), at(4*time.Second))

	ev := func(id model.ExecutionID, fl model.FlowID, at time.Time, to model.TerminalOutcome, n int) model.FeedEvent {
		return model.FeedEvent{At: at, Partition: h.p0, Execution: id, Namespace: nsA, Lane: laneA, Kind: kindA, Flow: fl, Outcome: to, ResultBytes: n}
	}
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1,
		ev(a, f, at(3*time.Second), model.OutcomeFailed, 0),
		ev(b, f, at(3*time.Second), model.OutcomeSkipped, 0),
		ev(c, g, at(5*time.Second), model.OutcomeSuccess, 2),
	)...)
	inFlow := func(ev model.FeedEvent) model.FeedEvent {
		ev.Flow = f
		return ev
	}
	h.wantLeases(a,
		inFlow(h.leaseEv(a, at(2*time.Second), model.LeaseAcquired, 1, 0, wA.Instance, "")),
		inFlow(h.leaseEv(a, at(3*time.Second), model.LeaseReleased, 1, 0, wA.Instance, "failed")),
	)
	h.wantLeases(b)
}

// Leases.

// feedLeaseRenewed: a renewal is a lease event of the holder, not in the
// lease history.
func feedLeaseRenewed(h *feedHarness) {
	id, c := h.active(at(0))
	h.renew(id, c.Fence(), at(10*time.Second))
	h.renew(id, c.Fence(), at(20*time.Second))
	h.complete(id, c.Fence(), at(25*time.Second))
	h.wantLeases(id,
		h.leaseEv(id, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(10*time.Second), model.LeaseRenewed, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(20*time.Second), model.LeaseRenewed, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(25*time.Second), model.LeaseReleased, 1, 0, wA.Instance, "completed"),
	)
	// a refused renewal adds none
	_, err := h.s.LeaseRenew(h.ctx, &model.LeaseRenewParams{ID: id, Fence: c.Fence(), LeaseTTL: leaseTTL, Now: at(26 * time.Second)})
	if err == nil {
		h.t.Fatal("a renewal of a completed execution was accepted")
	}
	if got := h.last(model.FeedLeases, h.p0); got != 4 {
		h.t.Fatalf("lease feed Last %d after a refused renewal, want 4", got)
	}
}

// feedLeaseExpiredReclaimed: marking a lease expired and reclaiming it
// are events of the old holder; the reclaim's new lease is an acquisition
// of the next epoch and attempt.
func feedLeaseExpiredReclaimed(h *feedHarness) {
	id, _ := h.active(at(0))
	h.markExpired(id, at(leaseTTL))
	h.reclaimGrant(id, wB, at(leaseTTL))
	res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: id, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(leaseTTL + time.Second)})).must(h.t)
	if res.Outcome != model.ReclaimClaimed {
		h.t.Fatalf("reclaim: %+v", res)
	}
	h.complete(id, res.Claimed.Fence(), at(leaseTTL+2*time.Second))
	h.wantLeases(id,
		h.leaseEv(id, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(leaseTTL), model.LeaseExpired, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(leaseTTL+time.Second), model.LeaseReclaimed, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(leaseTTL+time.Second), model.LeaseAcquired, 2, 1, wB.Instance, ""),
		h.leaseEv(id, at(leaseTTL+2*time.Second), model.LeaseReleased, 2, 1, wB.Instance, "completed"),
	)
}

// feedLeaseRevokedRecovered: a revocation is an event of the holder with
// its reason; recovering a revoked lease (no holder left) and an expired
// one (its holder) is an event each.
func feedLeaseRevokedRecovered(h *feedHarness) {
	x, cx := h.active(at(0))
	call(h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: x, ExpectedLeaseID: cx.Lease.ID, Reason: "drain", Now: at(5 * time.Second)})).must(h.t)
	call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: x, Now: at(6 * time.Second)})).must(h.t)
	c2 := h.claim(x, wB, at(7*time.Second))
	h.fail(x, c2.Fence(), model.FailurePermanent, at(8*time.Second))
	h.wantLeases(x,
		h.leaseEv(x, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(x, at(5*time.Second), model.LeaseRevoked, 1, 0, wA.Instance, "drain"),
		h.leaseEv(x, at(6*time.Second), model.LeaseRecovered, 1, 0, "", "lease_revoked"),
		h.leaseEv(x, at(7*time.Second), model.LeaseAcquired, 2, 1, wB.Instance, ""),
		h.leaseEv(x, at(8*time.Second), model.LeaseReleased, 2, 1, wB.Instance, "failed"),
	)

	y, _ := h.active(at(10 * time.Second))
	h.markExpired(y, at(10*time.Second+leaseTTL))
	call(h.s.ExecutionRecover(h.ctx, &model.ExecutionRecoverParams{ID: y, Now: at(11*time.Second + leaseTTL)})).must(h.t)
	h.wantLeases(y,
		h.leaseEv(y, at(10*time.Second), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(y, at(10*time.Second+leaseTTL), model.LeaseExpired, 1, 0, wA.Instance, ""),
		h.leaseEv(y, at(11*time.Second+leaseTTL), model.LeaseRecovered, 1, 0, wA.Instance, "lease_expired"),
	)
}

// feedLeaseCancelledDelayed: a worker delay and cancelling an active
// execution end the lease with an event each; the claim after the delay
// resumes the attempt.
func feedLeaseCancelledDelayed(h *feedHarness) {
	x, cx := h.active(at(0))
	h.delay(x, cx.Fence(), at(time.Hour), at(time.Second))
	if got := h.promote(x, laneA, at(time.Hour)); got != model.PromotePromoted {
		h.t.Fatalf("promote %v: %v", x, got)
	}
	cx = h.claim(x, wB, at(time.Hour))
	h.complete(x, cx.Fence(), at(time.Hour+time.Second))
	h.wantLeases(x,
		h.leaseEv(x, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(x, at(time.Second), model.LeaseReleased, 1, 0, wA.Instance, "worker_delay"),
		h.leaseEv(x, at(time.Hour), model.LeaseResumed, 2, 0, wB.Instance, ""),
		h.leaseEv(x, at(time.Hour+time.Second), model.LeaseReleased, 2, 0, wB.Instance, "completed"),
	)

	y, _ := h.active(at(0))
	h.cancelOp(y, at(2*time.Second))
	h.wantLeases(y,
		h.leaseEv(y, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(y, at(2*time.Second), model.LeaseCancelled, 1, 0, wA.Instance, "stop"),
	)
}

// feedLeaseResumed: a suspension releases the lease; the claim after the
// resume is a resumed event of the same attempt at the next epoch.
func feedLeaseResumed(h *feedHarness) {
	ss, ok := suspendStoreOf(h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.SuspendStore", h.s)
	}
	sh := &suspendHarness{harness: h.harness, ss: ss}
	id, c := h.active(at(0))
	sh.suspend(sh.suspendParams(id, c.Fence(), model.SignalFor("go"), at(time.Second)))
	sh.resume(id, at(2*time.Second))
	rc := h.claim(id, wB, at(3*time.Second))
	h.complete(id, rc.Fence(), at(4*time.Second))
	h.wantLeases(id,
		h.leaseEv(id, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(id, at(time.Second), model.LeaseReleased, 1, 0, wA.Instance, "suspend"),
		h.leaseEv(id, at(3*time.Second), model.LeaseResumed, 2, 0, wB.Instance, ""),
		h.leaseEv(id, at(4*time.Second), model.LeaseReleased, 2, 0, wB.Instance, "completed"),
	)
}

// feedLeaseMirror: interleaved lease transitions of two executions are
// in the partition's feed in the order they happened, and each
// execution's events less its renewals are its lease history.
func feedLeaseMirror(h *feedHarness) {
	x, cx := h.active(at(0), withMaxReclaims(5))
	y, cy := h.active(at(time.Second))
	type step struct {
		id   model.ExecutionID
		kind model.LeaseEventKind
	}
	want := []step{{x, model.LeaseAcquired}, {y, model.LeaseAcquired}}
	h.renew(x, cx.Fence(), at(2*time.Second))
	want = append(want, step{x, model.LeaseRenewed})
	h.delay(y, cy.Fence(), at(time.Minute), at(3*time.Second))
	want = append(want, step{y, model.LeaseReleased})
	h.markExpired(x, at(2*time.Second+leaseTTL))
	want = append(want, step{x, model.LeaseExpired})
	h.promote(y, laneA, at(time.Minute))
	cy = h.claim(y, wB, at(time.Minute))
	want = append(want, step{y, model.LeaseResumed})
	h.reclaimGrant(x, wB, at(time.Minute))
	res := call(h.s.ExecutionReclaim(h.ctx, &model.ExecutionReclaimParams{ID: x, LeaseRequest: h.leaseReq(wB, leaseTTL), Now: at(time.Minute)})).must(h.t)
	want = append(want, step{x, model.LeaseReclaimed}, step{x, model.LeaseAcquired})
	h.completeWith(y, cy.Fence(), "y", at(time.Minute+time.Second))
	want = append(want, step{y, model.LeaseReleased})
	h.renew(x, res.Claimed.Fence(), at(time.Minute+2*time.Second))
	want = append(want, step{x, model.LeaseRenewed})
	h.revoke(x, at(time.Minute+3*time.Second))
	want = append(want, step{x, model.LeaseRevoked})
	h.replay(y, at(time.Minute+4*time.Second))
	want = append(want, step{y, model.LeaseReplayed})
	h.cancelOp(x, at(time.Minute+5*time.Second))
	want = append(want, step{x, model.LeaseCancelled})
	h.claim(y, wA, at(time.Minute+6*time.Second))
	want = append(want, step{y, model.LeaseAcquired})

	var got []step
	for _, ev := range h.events(model.FeedLeases, h.p0) {
		got = append(got, step{ev.Execution, ev.Lease})
	}
	if !slices.Equal(want, got) {
		names := map[model.ExecutionID]string{x: "x", y: "y"}
		show := func(ss []step) []string {
			var out []string
			for _, s := range ss {
				out = append(out, names[s.id]+":"+string(s.kind))
			}
			return out
		}
		h.t.Fatalf("lease feed order:\n got %v\nwant %v", show(got), show(want))
	}
	h.wantMirror(x)
	h.wantMirror(y)
}

// Reads.

// feedReads: reads after a cursor, paged by Count, with Next and Last; a
// cursor past Last is behind, 0 never is.
func feedReads(h *feedHarness) {
	for _, k := range feedKinds {
		h.wantRead(k, h.p0, 0, 10, 0, 0, false)
		h.wantRead(k, h.p0, 3, 10, 3, 0, true)
	}
	var ids []model.ExecutionID
	for i := range 5 {
		id, c := h.active(at(0))
		h.complete(id, c.Fence(), at(time.Duration(i+1)*time.Second))
		ids = append(ids, id)
	}
	k := model.FeedCompletions
	r := h.wantRead(k, h.p0, 0, model.MaxFeedRead, 5, 5, false, 1, 2, 3, 4, 5)
	for i, ev := range r.Events {
		if ev.Execution != ids[i] || !ev.At.Equal(at(time.Duration(i+1)*time.Second)) {
			h.t.Fatalf("event %d: %+v, want %v at %v", ev.Seq, ev, ids[i], at(time.Duration(i+1)*time.Second))
		}
	}
	h.wantRead(k, h.p0, 2, model.MaxFeedRead, 5, 5, false, 3, 4, 5)
	h.wantRead(k, h.p0, 2, 2, 4, 5, false, 3, 4)
	h.wantRead(k, h.p0, 5, 10, 5, 5, false)
	h.wantRead(k, h.p0, 6, 10, 6, 5, true)
	h.wantRead(k, h.p0, 1<<40, 10, 1<<40, 5, true)
	// paging one at a time reads every event once
	var after uint64
	var paged []model.FeedEvent
	for i := range 6 {
		r := h.read(k, h.p0, after, 1)
		if len(r.Events) == 0 {
			if i != 5 || r.Next != 5 || r.Behind {
				h.t.Fatalf("page %d after %d: %+v", i, after, r)
			}
			break
		}
		if len(r.Events) != 1 || r.Next != r.Events[0].Seq || r.Last != 5 || r.Behind {
			h.t.Fatalf("page %d after %d: %+v", i, after, r)
		}
		paged = append(paged, r.Events...)
		after = r.Next
	}
	wantEqual(h.t, "events paged one at a time", r.Events, paged)
	// the lease feed numbers its own events
	h.wantRead(model.FeedLeases, h.p0, 0, model.MaxFeedRead, 10, 10, false, seqRange(1, 10)...)
}

// feedReadValidation: every bad read is a validation error naming the
// field, and changes nothing.
func feedReadValidation(h *feedHarness) {
	id, c := h.active(at(0))
	h.complete(id, c.Fence(), at(time.Second))
	h.create(at(0))
	type view struct {
		World worldView
		Feeds [][]model.FeedEvent
	}
	look := func(h *feedHarness) view {
		v := view{World: h.world(at(time.Minute))}
		for _, k := range feedKinds {
			v.Feeds = append(v.Feeds, h.events(k, h.p0))
		}
		return v
	}
	before := look(h)
	valid := func() *model.FeedReadParams {
		return &model.FeedReadParams{Feed: model.FeedCompletions, Partition: h.p0, Count: 10}
	}
	for _, c := range []struct {
		name, field string
		mut         func(*model.FeedReadParams)
	}{
		{"feed_empty", "Feed", func(p *model.FeedReadParams) { p.Feed = "" }},
		{"feed_unknown", "Feed", func(p *model.FeedReadParams) { p.Feed = "signals" }},
		{"partition_negative", "Partition", func(p *model.FeedReadParams) { p.Partition = -1 }},
		{"partition_past_last", "Partition", func(p *model.FeedReadParams) { p.Partition = h.cfg.FlowPartitions }},
		{"count_zero", "Count", func(p *model.FeedReadParams) { p.Count = 0 }},
		{"count_negative", "Count", func(p *model.FeedReadParams) { p.Count = -1 }},
		{"count_over_max", "Count", func(p *model.FeedReadParams) { p.Count = model.MaxFeedRead + 1 }},
	} {
		h.t.Run(c.name, func(t *testing.T) {
			h := h.on(t)
			p := valid()
			c.mut(p)
			_, err := h.fs.FeedRead(h.ctx, p)
			if !errors.Is(err, model.ErrValidation) {
				t.Fatalf("err = %v, want a validation error", err)
			}
			e := modelErr(t, err, model.ErrInvalidInput)
			if e.Field != c.field {
				t.Fatalf("field %q, want %q (%v)", e.Field, c.field, err)
			}
			if e.Detail == "out_of_range" && (e.Got == "" || e.Want == "") {
				t.Fatalf("%v: an out-of-range error must say the rejected value and the accepted range", err)
			}
			if d := cmp.Diff(before, look(h), cmpOpts...); d != "" {
				t.Fatalf("store changed (-before +after):\n%s", d)
			}
		})
	}
	// the bounds themselves are valid
	p := valid()
	p.Count, p.Partition = model.MaxFeedRead, h.cfg.FlowPartitions-1
	call(h.fs.FeedRead(h.ctx, p)).must(h.t)
}

// feedRetention: a feed keeps its newest Feeds.Len events; a cursor whose
// next event was dropped is behind, and still reads the events kept after
// it.
func feedRetention(h *feedHarness) {
	for i := range 5 {
		id, c := h.active(at(0))
		h.complete(id, c.Fence(), at(time.Duration(i+1)*time.Second))
	}
	k := model.FeedCompletions
	h.wantRead(k, h.p0, 0, 10, 5, 5, false, 3, 4, 5)
	h.wantRead(k, h.p0, 1, 10, 5, 5, true, 3, 4, 5)
	h.wantRead(k, h.p0, 2, 10, 5, 5, false, 3, 4, 5)
	h.wantRead(k, h.p0, 4, 10, 5, 5, false, 5)
	h.wantRead(k, h.p0, 5, 10, 5, 5, false)
	h.wantRead(k, h.p0, 6, 10, 6, 5, true)
	h.wantRead(k, h.p0, 0, 1, 3, 5, false, 3)
	// ten lease events, three kept
	h.wantRead(model.FeedLeases, h.p0, 0, 10, 10, 10, false, 8, 9, 10)
	h.wantRead(model.FeedLeases, h.p0, 6, 10, 10, 10, true, 8, 9, 10)
	h.wantRead(model.FeedLeases, h.p0, 7, 10, 10, 10, false, 8, 9, 10)

	h.cancelOp(h.create(at(0)), at(6*time.Second))
	h.wantRead(k, h.p0, 0, 10, 6, 6, false, 4, 5, 6)
	h.wantRead(k, h.p0, 2, 10, 6, 6, true, 4, 5, 6)
	h.wantRead(k, h.p0, 3, 10, 6, 6, false, 4, 5, 6)
}

// feedPartitions: each execution's events are in its own partition's
// feed, numbered there.
func feedPartitions(h *feedHarness) {
	if h.p0 == h.p1 {
		h.t.Skip("storetest: the store has a single partition")
	}
	x, cx := h.active(at(0))
	y1, cy1 := h.active(at(0), inPartition(h.harness, h.p1))
	h.complete(y1, cy1.Fence(), at(time.Second))
	h.complete(x, cx.Fence(), at(2*time.Second))
	y2, _ := h.active(at(3*time.Second), inPartition(h.harness, h.p1))
	h.cancelOp(y2, at(4*time.Second))
	h.wantFeed(model.FeedCompletions, h.p0, numbered(1, h.done(x, at(2*time.Second), model.OutcomeSuccess, 0))...)
	h.wantFeed(model.FeedCompletions, h.p1, numbered(1,
		h.done(y1, at(time.Second), model.OutcomeSuccess, 0),
		h.done(y2, at(4*time.Second), model.OutcomeCancelled, 0),
	)...)
	h.wantFeed(model.FeedLeases, h.p0, numbered(1,
		h.leaseEv(x, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(x, at(2*time.Second), model.LeaseReleased, 1, 0, wA.Instance, "completed"),
	)...)
	h.wantFeed(model.FeedLeases, h.p1, numbered(1,
		h.leaseEv(y1, at(0), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(y1, at(time.Second), model.LeaseReleased, 1, 0, wA.Instance, "completed"),
		h.leaseEv(y2, at(3*time.Second), model.LeaseAcquired, 1, 0, wA.Instance, ""),
		h.leaseEv(y2, at(4*time.Second), model.LeaseCancelled, 1, 0, wA.Instance, "stop"),
	)...)
	if p2 := (h.p1 + 1) % h.cfg.FlowPartitions; p2 != h.p0 {
		for _, k := range feedKinds {
			h.wantRead(k, p2, 0, 10, 0, 0, false)
		}
	}
}

// Notifications.

// feedWatch collects the partitions of one WatchFeed's calls.
type feedWatch struct {
	ch chan int
}

func newFeedWatch() *feedWatch { return &feedWatch{ch: make(chan int, 64)} }

func (w *feedWatch) f(partition int) {
	select {
	case w.ch <- partition:
	default: // the reader re-reads the feed; a full buffer loses nothing it needs
	}
}

func (w *feedWatch) drain() {
	for {
		select {
		case <-w.ch:
		default:
			return
		}
	}
}

// until waits for calls until one for part (or -1, any partition) is
// followed by cond holding; the bound only ends a failing test (a notice
// may cross a network).
func (w *feedWatch) until(t *testing.T, what string, part int, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), noticeWait)
	defer cancel()
	for {
		select {
		case p := <-w.ch:
			if (p == part || p == -1) && cond() {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no feed notice for partition %d after %s", part, what)
		}
	}
}

func feedNotifierOf(h *feedHarness) model.FeedNotifier {
	h.t.Helper()
	n, ok := optionalOf[model.FeedNotifier](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.FeedNotifier", h.s)
	}
	return n
}

// feedWatchCalls: a watch of a feed is called with the partition of a
// transition that added events to it.
func feedWatchCalls(h *feedHarness) {
	n := feedNotifierOf(h)
	wc, wl := newFeedWatch(), newFeedWatch()
	stopC := n.WatchFeed(model.FeedCompletions, wc.f)
	stopL := n.WatchFeed(model.FeedLeases, wl.f)
	h.t.Cleanup(stopC)
	h.t.Cleanup(stopL)
	has := func(k model.FeedKind, part int, last uint64) func() bool {
		return func() bool { return h.last(k, part) >= last }
	}
	id, c := h.active(at(0))
	wl.until(h.t, "a claim", h.p0, has(model.FeedLeases, h.p0, 1))
	wl.drain()
	h.renew(id, c.Fence(), at(time.Second))
	wl.until(h.t, "a renewal", h.p0, has(model.FeedLeases, h.p0, 2))
	wc.drain()
	wl.drain()
	h.complete(id, c.Fence(), at(2*time.Second))
	wc.until(h.t, "a completion", h.p0, has(model.FeedCompletions, h.p0, 1))
	wl.until(h.t, "a release", h.p0, has(model.FeedLeases, h.p0, 3))
	if h.p1 != h.p0 {
		wc.drain()
		h.cancelOp(h.create(at(0), inPartition(h.harness, h.p1)), at(3*time.Second))
		wc.until(h.t, "a cancellation", h.p1, has(model.FeedCompletions, h.p1, 1))
	}
}

// feedWatchStop: a stopped watch is not called again; another watch of
// the same feed still is.
func feedWatchStop(h *feedHarness) {
	n := feedNotifierOf(h)
	first, second := newFeedWatch(), newFeedWatch()
	stop := n.WatchFeed(model.FeedCompletions, first.f)
	stop2 := n.WatchFeed(model.FeedCompletions, second.f)
	h.t.Cleanup(stop2)
	has := func(last uint64) func() bool {
		return func() bool { return h.last(model.FeedCompletions, h.p0) >= last }
	}
	h.cancelOp(h.create(at(0)), at(time.Second))
	for _, w := range []*feedWatch{first, second} {
		w.until(h.t, "the first cancellation", h.p0, has(1))
	}
	stop()
	first.drain()
	second.drain()
	h.cancelOp(h.create(at(0)), at(2*time.Second))
	second.until(h.t, "the second cancellation", h.p0, has(2))
	select {
	case p := <-first.ch:
		h.t.Fatalf("a stopped watch was called (partition %d)", p)
	default:
	}
}

// feedEventWatch collects one WatchFeedEvents watcher's calls.
type feedEventWatch struct {
	mu   sync.Mutex
	evs  map[int][]model.FeedEvent
	lost bool // a call with partition -1: notices may have been lost
	sig  chan struct{}
}

func newFeedEventWatch() *feedEventWatch {
	return &feedEventWatch{evs: map[int][]model.FeedEvent{}, sig: make(chan struct{}, 1)}
}

func (w *feedEventWatch) f(t *testing.T) func(int, *model.FeedEvent) {
	return func(p int, ev *model.FeedEvent) {
		w.mu.Lock()
		switch {
		case p < 0:
			w.lost = true
		case ev == nil:
			t.Errorf("WatchFeedEvents: partition %d without its event", p)
		default:
			w.evs[p] = append(w.evs[p], *ev)
		}
		w.mu.Unlock()
		select {
		case w.sig <- struct{}{}:
		default:
		}
	}
}

// feedWatchEvents: a WatchFeedEvents watcher is called once per event
// appended, in each partition's order, with the event FeedRead returns
// (field for field), for every kind of event both feeds hold.
func feedWatchEvents(h *feedHarness) {
	n, ok := optionalOf[model.FeedEventNotifier](h.harness)
	if !ok {
		h.t.Skipf("storetest: %T does not implement the optional model.FeedEventNotifier", h.s)
	}
	watches := map[model.FeedKind]*feedEventWatch{}
	for _, k := range feedKinds {
		w := newFeedEventWatch()
		watches[k] = w
		h.t.Cleanup(n.WatchFeedEvents(k, w.f(h.t)))
	}
	// a claim, a renewal, a completion with a result; a failure with a
	// retry, its reclaim and the final failure; a cancellation in another
	// partition
	id, c := h.active(at(0))
	h.renew(id, c.Fence(), at(time.Second))
	h.completeWith(id, c.Fence(), "four", at(2*time.Second))
	retry := model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed, Delay: time.Second}
	y, cy := h.active(at(3*time.Second), withRetry(retry))
	h.fail(y, cy.Fence(), model.FailureTransient, at(4*time.Second))
	h.promote(y, laneA, at(5*time.Second))
	cy = h.claim(y, wA, at(5*time.Second))
	h.fail(y, cy.Fence(), model.FailurePermanent, at(6*time.Second))
	h.cancelOp(h.create(at(0), inPartition(h.harness, h.p1)), at(7*time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), noticeWait)
	defer cancel()
	for _, k := range feedKinds {
		w := watches[k]
		for _, p := range []int{h.p0, h.p1} {
			want := h.events(k, p)
			for {
				w.mu.Lock()
				got, lost := slices.Clone(w.evs[p]), w.lost
				w.mu.Unlock()
				if len(got) > len(want) {
					h.t.Fatalf("feed %s p%d: %d notices for the feed's %d events: %+v", k, p, len(got), len(want), got)
				}
				if d := cmp.Diff(want[:len(got)], got, cmpOpts...); d != "" {
					h.t.Fatalf("feed %s p%d: the notices' events differ from the feed's (-feed +notices):\n%s", k, p, d)
				}
				if len(got) == len(want) || lost && len(got) < len(want) {
					break
				}
				select {
				case <-w.sig:
				case <-ctx.Done():
					h.t.Fatalf("feed %s p%d: the notices carried %d of the feed's %d events", k, p, len(got), len(want))
				}
			}
		}
	}
}
