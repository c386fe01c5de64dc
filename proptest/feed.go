package proptest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Event feeds (model.FeedStore, model/feed.go). Feeds are a store option,
// so each sequence draws the feeds its stores are built with (drawFeeds:
// both feeds with the default length, or a small one so that trimming and
// Behind happen, sometimes one feed or none) and a NewStoreFunc wrapped in
// WithFeeds builds them so; a store whose NewStoreFunc is not wrapped keeps
// what it was built with. The machine reads a random partition's feed
// after a random cursor (FeedRead), and observes every feed whole after
// every step (feed_observe.go), where the new events are held to the
// step's transitions.

// WithFeeds returns a NewStoreFunc that builds each sequence's stores with
// newStore, passing the event feeds (the store option model.Feeds) the
// sequence drew:
//
//	proptest.RunStateMachine(t, proptest.WithFeeds(func(t testing.TB, f model.Feeds) model.Store {
//		return memstore.New(&memstore.Options{Feeds: f})
//	}), proptest.Options{})
//
// Called outside a sequence (with any other testing.TB) it passes no
// feeds. A differential run must wrap both NewStoreFuncs (the machine
// refuses stores that keep different feeds).
func WithFeeds(newStore func(t testing.TB, feeds model.Feeds) model.Store) NewStoreFunc {
	return func(t testing.TB) model.Store {
		var f model.Feeds
		if s, ok := t.(*sequenceTB); ok {
			s.built++
			f = s.feeds
		}
		return newStore(t, f)
	}
}

// drawFeeds draws the feeds of a sequence's stores. It shrinks to both
// feeds with the default length.
func drawFeeds(t *rapid.T) model.Feeds {
	both := func(n int) model.Feeds { return model.Feeds{Completions: true, Leases: true, Len: n} }
	switch k := genPercent.Draw(t, "feeds"); {
	case k < 40:
		return both(0)
	case k < 70:
		return both(8)
	case k < 85:
		return both(3)
	case k < 90:
		return model.Feeds{Completions: true, Len: 8}
	case k < 95:
		return model.Feeds{Leases: true, Len: 8}
	}
	return model.Feeds{}
}

// checkFeeds refuses stores that keep different feeds (a differential
// run with one NewStoreFunc not wrapped in WithFeeds) and returns the
// feeds they keep.
func checkFeeds(stores []model.Store) (model.Feeds, error) {
	var f0 model.Feeds
	for i, s := range stores {
		fs, ok := s.(model.FeedStore)
		if !ok {
			continue // checkOptional
		}
		f := model.Feeds{Completions: fs.FeedEnabled(model.FeedCompletions), Leases: fs.FeedEnabled(model.FeedLeases)}
		if i == 0 {
			f0 = f
		} else if f != f0 {
			return f0, fmt.Errorf("proptest: store %d keeps feeds %+v, store 0 %+v: wrap every NewStoreFunc in proptest.WithFeeds", i, f, f0)
		}
	}
	return f0, nil
}

// feedsBuilt records the feeds' length when every store was built with
// the sequence's feeds (WithFeeds); otherwise it is not known.
func (m *machine) feedsBuilt(tb *sequenceTB) {
	if tb.built == len(m.stores) && (m.feeds.Completions || m.feeds.Leases) {
		m.feedLen = tb.feeds.EffectiveLen()
	}
}

// noteFeedCall records what a successful call adds to the feeds beyond
// its lease history entries and transitions: a renewal's renewed event.
func (m *machine) noteFeedCall(p any) {
	if r, ok := p.(*model.LeaseRenewParams); ok {
		m.renewals = append(m.renewals, feedRenewal{id: r.ID, fence: r.Fence, at: r.Now})
	}
}

// feedOp adapts a model.FeedStore method to call's shape (checkOptional
// requires the interface).
func feedOp[P, R any](f func(model.FeedStore, context.Context, *P) (R, error)) func(model.Store, context.Context, *P) (R, error) {
	return optional(f)
}

// actFeedRead reads a random partition's feed after a cursor around the
// kept events (0, 1, a kept one, just below the oldest, the last, past
// it, far past it) and compares the answer with the page the observed
// whole feed implies; one read in twenty has an invalid count, partition
// or feed.
func (m *machine) actFeedRead(t *rapid.T) {
	p := &model.FeedReadParams{Feed: drawFrom(t, feedKinds, "feed"), Partition: drawIndex(t, m.cfg.FlowPartitions, "feed_partition")}
	fo := m.obs[0].Feeds[FeedKey{p.Partition, p.Feed}]
	var last, oldest uint64
	if fo != nil {
		last, oldest = fo.Last, fo.oldest()
	}
	switch k := rapid.IntRange(0, 7).Draw(t, "feed_after"); k {
	case 1:
		p.After = 1
	case 2:
		if fo != nil && len(fo.Events) > 0 {
			p.After = drawFrom(t, fo.Events, "feed_after_kept").Seq
		}
	case 3:
		p.After = oldest - min(oldest, uint64(rapid.IntRange(1, 2).Draw(t, "feed_below_oldest")))
	case 4:
		p.After = last
	case 5:
		p.After = last + 1
	case 6:
		p.After = drawFrom(t, []uint64{1 << 40, math.MaxUint64}, "feed_after_far")
	case 7:
		p.After = rapid.Uint64Range(0, last+2).Draw(t, "feed_after_any")
	}
	p.Count = rapid.IntRange(1, 5).Draw(t, "feed_count")
	if chance(t, 10, "feed_count_max") {
		p.Count = model.MaxFeedRead
	}
	const op = "FeedRead"
	field := ""
	switch invalid(t, 3) {
	case 0:
		p.Count, field = drawFrom(t, []int{0, -1, model.MaxFeedRead + 1}, "bad_count"), "Count"
	case 1:
		p.Partition, field = drawFrom(t, []int{-1, m.cfg.FlowPartitions, 1 << 20}, "bad_partition"), "Partition"
	case 2:
		p.Feed, field = drawFrom(t, []model.FeedKind{"", "bogus", "Completions"}, "bad_feed"), "Feed"
	}
	res, err := call(m, t, op, p, feedOp(model.FeedStore.FeedRead))
	switch {
	case field != "":
		m.expectInvalidField(t, op, field, err)
	case !m.feeds.Enabled(p.Feed):
		m.expect(t, errors.Is(err, model.ErrFeedDisabled), "%s of feed %s, which the stores do not keep: %+v %v, want feed_disabled", op, p.Feed, res, err)
	case fo == nil:
		m.expect(t, err == nil, "%s(%+v) failed: %v", op, *p, err)
	default:
		m.expect(t, err == nil, "%s(%+v) failed: %v", op, *p, err)
		want := expectedFeedPage(fo, p.After, p.Count)
		m.expect(t, cmpEqual(res, want), "%s(%s p%d after %d, count %d) = %+v, the observed feed (last %d, oldest kept %d) says %+v",
			op, p.Feed, p.Partition, p.After, p.Count, *res, fo.Last, fo.oldest(), *want)
		switch {
		case res.Behind:
			m.reached(op + " behind")
		case len(res.Events) > 0 && res.Next < res.Last:
			m.reached(op + " page")
		}
		if fo.oldest() > 1 {
			m.reached(op + " trimmed")
		}
	}
}

// expectedFeedPage is the page a read after after, at most count events,
// must return of the observed whole feed fo.
func expectedFeedPage(fo *FeedObservation, after uint64, count int) *model.FeedReadResult {
	res := &model.FeedReadResult{Next: after, Last: fo.Last,
		Behind: after > fo.Last || after > 0 && after+1 < fo.oldest()}
	for _, ev := range fo.Events {
		if ev.Seq > after && len(res.Events) < count {
			res.Events = append(res.Events, ev)
			res.Next = ev.Seq
		}
	}
	return res
}

// hostileFeed makes one FeedRead with hostile parameters: odd feeds,
// partitions, counts and cursors.
func (m *machine) hostileFeed(t *rapid.T) {
	cfg := m.cfg
	p := &model.FeedReadParams{Feed: hStr(t, "feed", feedKinds...), Partition: plausibleOr(t, "partition", genOddInt, 0, 1, 3),
		After: plausibleOr(t, "after", rapid.Uint64(), 0, 1, 8, 1<<40, math.MaxUint64), Count: plausibleOr(t, "count", genOddInt, 1, 5, model.MaxFeedRead, model.MaxFeedRead+1)}
	hostile(m, t, "FeedRead", p, func(p *model.FeedReadParams) error { return p.Validate(cfg) }, feedOp(model.FeedStore.FeedRead))
}

// checkFeedModel checks what only the machine's clock implies of the
// first store's feeds (feedTimeViolations) and notes the feed paths the
// observation reached.
func (m *machine) checkFeedModel() []string {
	o := m.obs[0]
	for _, fo := range o.Feeds {
		if fo == nil {
			continue
		}
		if fo.oldest() > 1 {
			m.reached("Feed trimmed")
		}
		done := map[model.ExecutionID]int{}
		for _, ev := range fo.Events {
			switch {
			case ev.Lease == model.LeaseRenewed:
				m.reached("Feed renewed")
			case ev.Outcome != 0:
				if done[ev.Execution]++; done[ev.Execution] == 2 {
					m.reached("Feed completed again")
				}
			}
		}
	}
	return o.feedTimeViolations()
}
