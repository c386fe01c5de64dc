package valkeystore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// Differential tests of the event feeds (model.FeedStore): a pair built
// with feeds (newFeedPair) compares, after every step, both feeds of every
// partition it tracks, read whole and from the cursors around the kept
// events' ends (so trimming and Behind are compared too). The random
// differential runs half its seeds with feeds, a short Len among them;
// the suspension, terminal, lease, expiry and admission differentials run
// with both feeds; the tests here add flows (events of several executions
// in one script, in the order memstore makes them) and retention read
// from every cursor.

var bothFeeds = model.Feeds{Completions: true, Leases: true}

func feedStoreOf(s model.Store) model.FeedStore { return s.(model.FeedStore) }

// compareFeeds compares the tracked partitions' feeds (pair.compareState
// calls it when the pair has feeds).
func (p *pair) compareFeeds(label string) {
	p.t.Helper()
	ctx := context.Background()
	read := func(rp *model.FeedReadParams) {
		p.t.Helper()
		mr, merr := feedStoreOf(p.mem).FeedRead(ctx, rp)
		vr, verr := feedStoreOf(p.vk).FeedRead(ctx, rp)
		if d := errDiff(merr, verr); d != "" {
			p.t.Fatalf("%s: feed read %+v: errors differ: %s", label, *rp, d)
		}
		if d := cmp.Diff(mr, vr, cmpOpts); d != "" {
			p.t.Fatalf("%s: feed read %+v differs (-memstore +valkeystore):\n%s", label, *rp, d)
		}
	}
	for _, k := range []model.FeedKind{model.FeedCompletions, model.FeedLeases} {
		if p.mem.FeedEnabled(k) != p.vk.FeedEnabled(k) {
			p.t.Fatalf("%s: FeedEnabled(%s) differs", label, k)
		}
		for _, part := range p.parts {
			whole := &model.FeedReadParams{Feed: k, Partition: part, Count: model.MaxFeedRead}
			read(whole)
			if !p.mem.FeedEnabled(k) {
				continue
			}
			r, err := feedStoreOf(p.mem).FeedRead(ctx, whole)
			if err != nil {
				p.t.Fatal(err)
			}
			first := r.Last + 1
			if len(r.Events) > 0 {
				first = r.Events[0].Seq
			}
			cursors := []uint64{1, 2, r.Last - 1, r.Last, r.Last + 1, r.Last + 5}
			if first > 2 {
				cursors = append(cursors, first-2, first-1, first)
			}
			for _, after := range cursors {
				if after <= r.Last+5 { // r.Last-1 wraps when Last is 0
					read(&model.FeedReadParams{Feed: k, Partition: part, After: after, Count: 1})
					read(&model.FeedReadParams{Feed: k, Partition: part, After: after, Count: 2})
				}
			}
		}
	}
}

// TestFeedFlows: a flow member's success satisfies an any-of group that
// cancels its running sibling, whose cancellation skips the sibling's
// downstream, all in one script; a hard failure skips a chain; a flow
// cancel ends running and held members at once. Each feed must list those
// events in memstore's order, with the flow.
func TestFeedFlows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		cfg := model.PartitionConfig{FlowPartitions: 2}
		p := newFeedPair(t, b, cfg, bothFeeds)
		var sq seq
		fl := func(s model.Store) model.FlowStore { return s.(model.FlowStore) }
		rev := uint64(0)
		newFlow := func(now time.Time, n int) (model.FlowID, []model.ExecutionID) {
			f := model.FlowID(sq.uuid())
			ok(p, "flow_create", func(s model.Store) (*model.FlowCreateResult, error) {
				return fl(s).FlowCreate(bg, &model.FlowCreateParams{Flow: f, Now: now})
			})
			var ids []model.ExecutionID
			for range n {
				id := sq.exec(cfg.FlowPartition(f))
				create(p, createP(id, now))
				r := ok(p, "flow_add_member", func(s model.Store) (*model.FlowAddMemberResult, error) {
					return fl(s).FlowAddMember(bg, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: now})
				})
				rev = r.GraphRevision
				ids = append(ids, id)
			}
			return f, ids
		}
		stage := func(f model.FlowID, up, down model.ExecutionID, now time.Time) {
			r := ok(p, "edge_stage", func(s model.Store) (*model.EdgeStageResult, error) {
				return fl(s).EdgeStage(bg, &model.EdgeStageParams{Flow: f, Edge: model.EdgeID(sq.uuid()), Upstream: up,
					Downstream: down, ExpectedGraphRevision: rev, Now: now})
			})
			rev = r.GraphRevision
		}
		seal := func(f model.FlowID, now time.Time) {
			ok(p, "flow_seal", func(s model.Store) (*model.FlowSealResult, error) {
				return fl(s).FlowSeal(bg, &model.FlowSealParams{Flow: f, Now: now})
			})
		}

		// a, b → c (any of, cancel the rest); b → d; x runs alone
		f, m := newFlow(at(0), 5)
		a, bb, c, d, x := m[0], m[1], m[2], m[3], m[4]
		ok(p, "group_set", func(s model.Store) (*model.EdgeGroupSetResult, error) {
			return fl(s).EdgeGroupSet(bg, &model.EdgeGroupSetParams{Flow: f, Downstream: c,
				Policy: model.EdgeGroupPolicy{Kind: model.GroupAnyOf, OnSatisfied: model.SiblingsCancelRemaining}, Now: at(0)})
		})
		stage(f, a, c, at(0))
		stage(f, bb, c, at(0))
		stage(f, bb, d, at(0))
		seal(f, at(time.Second))
		ca := grantAndClaim(p, a, sq.req("wi1", time.Hour), at(2*time.Second))
		grantAndClaim(p, bb, sq.req("wi2", time.Hour), at(2*time.Second))
		cx := grantAndClaim(p, x, sq.req("wi3", time.Hour), at(2*time.Second))
		ok(p, "renew", func(s model.Store) (*model.LeaseRenewResult, error) {
			return s.LeaseRenew(bg, &model.LeaseRenewParams{ID: x, Fence: cx.Fence(), LeaseTTL: time.Hour, Now: at(3 * time.Second)})
		})
		// a's success: a, then b cancelled by the flow, then d skipped
		ok(p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: a, Fence: ca.Fence(),
				Result: []byte("\x00done"), Now: at(4 * time.Second)})
		})
		// c was released: claim it, then cancel the whole flow with c and
		// x running
		grantAndClaim(p, c, sq.req("wi1", time.Hour), at(5*time.Second))

		// u → v → w: u's hard failure skips v, which skips w
		g, n := newFlow(at(6*time.Second), 3)
		stage(g, n[0], n[1], at(6*time.Second))
		stage(g, n[1], n[2], at(6*time.Second))
		seal(g, at(6*time.Second))
		cu := grantAndClaim(p, n[0], sq.req("wi2", time.Hour), at(7*time.Second))
		ok(p, "fail", func(s model.Store) (*model.ExecutionFailResult, error) {
			return s.ExecutionFail(bg, &model.ExecutionFailParams{ID: n[0], Fence: cu.Fence(), Reason: "no",
				Category: model.FailurePermanent, Now: at(8 * time.Second)})
		})

		ok(p, "flow_cancel", func(s model.Store) (*model.FlowCancelResult, error) {
			return fl(s).FlowCancel(bg, &model.FlowCancelParams{Flow: f, Policy: model.CancelAll, Reason: "stop",
				Now: at(9 * time.Second)})
		})

		// the events are there, in the order memstore gave them: in one
		// script, a's success, b's cancellation by the group, d's skip;
		// then the flow cancel's, in member order
		name := map[model.ExecutionID]string{a: "a", bb: "b", c: "c", d: "d", x: "x", n[0]: "u", n[1]: "v", n[2]: "w"}
		for fid, want := range map[model.FlowID]string{
			f: "a:success b:cancelled d:skipped c:cancelled x:cancelled",
			g: "u:failed v:skipped w:skipped",
		} {
			r, err := p.vk.FeedRead(bg, &model.FeedReadParams{Feed: model.FeedCompletions, Partition: cfg.FlowPartition(fid),
				Count: model.MaxFeedRead})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range r.Events {
				if ev.Flow == fid {
					got = append(got, name[ev.Execution]+":"+ev.Outcome.String())
				}
			}
			if g := strings.Join(got, " "); g != want {
				t.Errorf("flow %s's completions %s, want %s", fid, g, want)
			}
		}
	})
}

// TestFeedRetention: a feed keeping 3 events, read from every cursor with
// every count after each of a run of transitions (the pair's own
// comparison reads around the ends only).
func TestFeedRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newFeedPair(t, b, model.PartitionConfig{FlowPartitions: 1}, model.Feeds{Completions: true, Leases: true, Len: 3})
		var sq seq
		readAll := func(label string) {
			for _, k := range []model.FeedKind{model.FeedCompletions, model.FeedLeases} {
				for after := range uint64(12) {
					for count := 1; count <= 4; count++ {
						rp := &model.FeedReadParams{Feed: k, Partition: 0, After: after, Count: count}
						mr, merr := p.mem.FeedRead(bg, rp)
						vr, verr := p.vk.FeedRead(bg, rp)
						if d := errDiff(merr, verr); d != "" {
							t.Fatalf("%s: %+v: errors differ: %s", label, *rp, d)
						}
						if d := cmp.Diff(mr, vr, cmpOpts); d != "" {
							t.Fatalf("%s: %+v differs (-memstore +valkeystore):\n%s", label, *rp, d)
						}
					}
				}
			}
		}
		readAll("empty")
		for i := range 4 {
			id := sq.exec(0)
			create(p, createP(id, at(0)))
			c := grantAndClaim(p, id, sq.req("wi1", time.Hour), at(time.Duration(i)*time.Second))
			readAll(fmt.Sprint("claim ", i))
			ok(p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) {
				return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: c.Fence(),
					Result: []byte(strings.Repeat("r", i)), Now: at(time.Duration(i) * time.Second)})
			})
			readAll(fmt.Sprint("complete ", i))
		}
	})
}

// TestFeedsOffWriteNothing: a store without feeds (or with one) writes no
// key of a feed it does not keep, and a read of it is feed_disabled
// before anything is sent.
func TestFeedsOffWriteNothing(t *testing.T) {
	for _, feeds := range []model.Feeds{{}, {Completions: true}, {Leases: true}} {
		t.Run(fmt.Sprintf("%+v", feeds), func(t *testing.T) {
			c := miniredisClient(t)
			s := newStoreWith(t, c, &Options{Feeds: feeds, Partitions: model.PartitionConfig{FlowPartitions: 1}})
			var sq seq
			id := sq.exec(0)
			if _, err := s.ExecutionCreate(bg, createP(id, at(0))); err != nil {
				t.Fatal(err)
			}
			cr, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi1", ttl), Now: at(0)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.LeaseRenew(bg, &model.LeaseRenewParams{ID: id, Fence: cr.Fence(), LeaseTTL: ttl, Now: at(1)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: cr.Fence(), Now: at(2)}); err != nil {
				t.Fatal(err)
			}
			for _, k := range []model.FeedKind{model.FeedCompletions, model.FeedLeases} {
				n, err := c.Do(bg, c.B().Exists().Key(s.keys.eventFeed(0, k)).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if want := feeds.Enabled(k); (n == 1) != want {
					t.Errorf("feed %s exists: %v, want %v", k, n == 1, want)
				}
				_, err = s.FeedRead(bg, &model.FeedReadParams{Feed: k, Partition: 0, Count: 1})
				if feeds.Enabled(k) != (err == nil) || err != nil && !errors.Is(err, model.ErrFeedDisabled) {
					t.Errorf("read %s: %v", k, err)
				}
			}
		})
	}
}

// TestWatchFeedAfterRestart: a feed's watchers hear -1 (any partition)
// once the subscription is back after the server restarted, and
// partitions again after.
func TestWatchFeedAfterRestart(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	opts := &Options{Prefix: "feedrestart", Feeds: bothFeeds, Partitions: model.PartitionConfig{FlowPartitions: 4}}
	s := newStoreWith(t, newClient(t, srv.Addr()), opts)
	ch := make(chan int, 100)
	stop := s.WatchFeed(model.FeedCompletions, func(part int) { ch <- part })
	defer stop()
	next := func(what string) int {
		t.Helper()
		select {
		case p := <-ch:
			return p
		case <-time.After(10 * time.Second):
			t.Fatalf("no call: %s", what)
			return 0
		}
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := next("after restart"); got != -1 {
		t.Fatalf("after restart: %d, want -1", got)
	}
	s = newStoreWith(t, newClient(t, srv.Addr()), opts)
	var sq seq
	id := sq.exec(3)
	if _, err := s.ExecutionCreate(bg, createP(id, at(0))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: id, Source: model.SourceOperator, Reason: "x", Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	if got := next("cancel"); got != 3 {
		t.Fatalf("cancel: %d, want partition 3", got)
	}
}

// waitingStore tells parked when Engine.Wait reads the feed after finding
// its execution not terminal (its only reads of MaxFeedRead events), just
// before it waits for a notice.
type waitingStore struct {
	*Store
	parked chan struct{}
}

func (w waitingStore) FeedRead(ctx context.Context, p *model.FeedReadParams) (*model.FeedReadResult, error) {
	if p.Count == model.MaxFeedRead {
		select {
		case w.parked <- struct{}{}:
		default:
		}
	}
	return w.Store.FeedRead(ctx, p)
}

// TestEngineFeedsAcrossProcesses: one process runs the jobs, another
// follows the completions feed from its head and waits for each job with
// an hour's backstop; a job finishes only once the wait is parked, so
// only the store's feed notice can end it in time. The subscriber sees
// each completion once.
func TestEngineFeedsAcrossProcesses(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		newClient := b.server(t)
		opts := &Options{Prefix: fmt.Sprintf("feeds%d", prefixSeq.Add(1)), Feeds: bothFeeds}
		engA := fastEngine(t, newStoreWith(t, newClient(), opts))
		parked := make(chan struct{}, 1)
		engB := fastEngine(t, waitingStore{Store: newStoreWith(t, newClient(), opts), parked: parked})
		release := make(chan struct{})
		w := flowfabric.NewWorker(engA, &flowfabric.WorkerConfig{WorkerID: "w", Lanes: []model.LaneID{"feeds"}})
		flowfabric.AddHandler(w, flowfabric.HandlerFunc[job](func(ctx context.Context, _ *flowfabric.Task[job]) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop(context.Background()) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		head, err := engB.FeedHead(ctx, flowfabric.FeedCompletions)
		if err != nil {
			t.Fatal(err)
		}
		const n = 3
		got := make(chan flowfabric.FeedEvent, n)
		done := make(chan struct{})
		go func() {
			defer close(done)
			k := 0
			for ev, err := range engB.Subscribe(ctx, &flowfabric.SubscribeOpts{From: head}) {
				if err != nil {
					t.Errorf("subscribe: %v", err)
					return
				}
				got <- ev
				if k++; k == n {
					return
				}
			}
		}()
		want := make(map[model.ExecutionID]bool)
		for i := range n {
			r, err := engA.Submit(ctx, job{N: i}, &flowfabric.SubmitOpts{Lane: "feeds"})
			if err != nil {
				t.Fatal(err)
			}
			want[r.ID] = true
			waited := make(chan error, 1)
			go func() {
				s, err := engB.Wait(ctx, r.ID, time.Hour)
				if err == nil && s.PublicState != model.PublicCompleted {
					err = fmt.Errorf("ended %s", s.PublicState)
				}
				waited <- err
			}()
			select {
			case <-parked:
			case <-ctx.Done():
				t.Fatal("the wait never read the feed")
			}
			release <- struct{}{}
			if err := <-waited; err != nil {
				t.Fatalf("wait %s: %v", r.ID, err)
			}
		}
		<-done
		close(got)
		for ev := range got {
			if !want[ev.Execution] || ev.Outcome != model.OutcomeSuccess || ev.Kind != "job" {
				t.Errorf("event %+v", ev)
			}
			delete(want, ev.Execution)
		}
		if len(want) != 0 {
			t.Errorf("no event for %v", want)
		}
	})
}
