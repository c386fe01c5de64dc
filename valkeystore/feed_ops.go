package valkeystore

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// Event feeds (model.FeedStore, model.FeedNotifier). A store built with
// Options.Feeds keeps them: terminate (lua/lib/index.lua) appends to the
// completions feed, add_history (lua/lib/attempt.lua) and lease_renew.lua
// to the leases feed, in the step of the transition they record;
// lua/lib/feed.lua describes the streams (I:feed:<feed>, keys.go) and how
// the scripts learn which feeds are on. A store without feeds runs no
// feed command.

// FeedEnabled implements model.FeedStore.
func (s *Store) FeedEnabled(k model.FeedKind) bool { return s.feeds.Enabled(k) }

// feedWidth is how many strings a row of feed_read holds for feed k: the
// sequence, then the entry's values (lua/lib/feed.lua).
func feedWidth(k model.FeedKind) int {
	if k == model.FeedCompletions {
		return 1 + 8
	}
	return 1 + 11
}

// FeedRead implements model.FeedStore.
func (s *Store) FeedRead(ctx context.Context, p *model.FeedReadParams) (*model.FeedReadResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	if !s.feeds.Enabled(p.Feed) {
		return nil, model.ErrFeedDisabled
	}
	r, err := s.run(ctx, scriptFeedRead, map[string]string{"feed": s.keys.eventFeed(p.Partition, p.Feed)},
		args{"after": p.After, "count": p.Count})
	if err != nil {
		return nil, err
	}
	res := &model.FeedReadResult{Next: p.After, Last: r.u64("last")}
	for _, row := range r.rows("rows", feedWidth(p.Feed)) {
		ev, err := feedEvent(p.Feed, p.Partition, row)
		if err != nil {
			r.fail("field \"rows\": malformed event %q: %v", row, err)
			break
		}
		res.Events = append(res.Events, ev)
		res.Next = ev.Seq
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	// The kept events' sequences are consecutive and the newest is never
	// trimmed, so the first event read is the oldest kept whenever the
	// cursor is below it, and none is read when the cursor is at or past
	// the last.
	res.Behind = p.After > res.Last ||
		p.After > 0 && len(res.Events) > 0 && p.After+1 < res.Events[0].Seq
	return res, nil
}

// feedEvent decodes a feed_read row of feed k in partition part.
func feedEvent(k model.FeedKind, part int, row []string) (model.FeedEvent, error) {
	ev := model.FeedEvent{Partition: part, Namespace: model.Namespace(row[3]), Lane: model.LaneID(row[4]),
		Kind: model.Kind(row[5])}
	var e1, e2, e3, e4, e5, e6 error
	ev.Seq, e1 = strconv.ParseUint(row[0], 10, 64)
	at, e2 := strconv.ParseInt(row[1], 10, 64)
	ev.At = model.FromMillis(at)
	ev.Execution, e3 = model.ParseExecutionID(row[2])
	if row[6] != "" {
		ev.Flow, e4 = model.ParseFlowID(row[6])
	}
	if k == model.FeedCompletions {
		var ok bool
		if ev.Outcome, ok = model.ParseTerminalOutcome(row[7]); !ok {
			e5 = errors.New("unknown outcome")
		}
		ev.ResultBytes, e6 = strconv.Atoi(row[8])
	} else {
		ev.Lease = model.LeaseEventKind(row[7])
		ev.Epoch, e5 = strconv.ParseUint(row[8], 10, 64)
		ev.Attempt, e6 = strconv.Atoi(row[9])
		ev.Instance, ev.Reason = model.WorkerInstanceID(row[10]), row[11]
	}
	return ev, errors.Join(e1, e2, e3, e4, e5, e6)
}

// Feed notices.
//
// Every append to feed k publishes the event on P:feed:<feed> in the same
// atomic step (lua/lib/feed.lua): "<partition>\n<seq>" then
// "|<length>:<value>" for each of the entry's values. WatchFeed and
// WatchFeedEvents subscribe to the feed's channel (one subscription per
// feed and store, shared by its watchers) and call the watchers with each
// notice, and with partition -1 after a resubscription (notices may have
// been lost meanwhile). The trade-offs are those of the work
// notifications (notify.go): at most once, only to connected subscribers;
// the feed, not the notice, is the truth. On a cluster PUBLISH reaches
// every node, and a feed's partitions live on all of them, so the
// subscription is not pinned. A feed the store does not keep has no
// events: watching it subscribes to nothing.

// feedNotice is a parsed feed notice: the partition (-1: notices may have
// been lost) and the event it carries (nil when it could not be decoded).
type feedNotice struct {
	partition int
	ev        *model.FeedEvent
}

// WatchFeed implements model.FeedNotifier. It returns once the feed's
// subscription is confirmed (or after a few seconds if the server does
// not answer, in which case the subscription keeps being retried). f runs
// on the subscription's reader goroutine, once per event appended.
func (s *Store) WatchFeed(k model.FeedKind, f func(partition int)) (stop func()) {
	return s.WatchFeedEvents(k, func(p int, _ *model.FeedEvent) { f(p) })
}

// WatchFeedEvents implements model.FeedEventNotifier, as WatchFeed does,
// passing the event each notice carries.
func (s *Store) WatchFeedEvents(k model.FeedKind, f func(partition int, ev *model.FeedEvent)) (stop func()) {
	if !s.feeds.Enabled(k) {
		return func() {}
	}
	return addWatch(s, s.feedWatches, k, func(n feedNotice) { f(n.partition, n.ev) }, func() subscription[feedNotice] {
		return subscription[feedNotice]{
			channel: s.keys.feedChannel(k),
			parse: func(msg string) (feedNotice, bool) {
				return parseFeedNotice(k, s.cfg.FlowPartitions, msg), true
			},
			lost: feedNotice{partition: -1}, // events may have been added meanwhile, on any partition
		}
	})
}

// parseFeedNotice decodes a notice of feed k; a partition out of range is
// read as -1 (read every partition), an event that does not decode as
// none (read the partition).
func parseFeedNotice(k model.FeedKind, partitions int, msg string) feedNotice {
	head, body, _ := strings.Cut(msg, "\n")
	p, err := strconv.Atoi(head)
	if err != nil || p < 0 || p >= partitions {
		return feedNotice{partition: -1}
	}
	n := feedNotice{partition: p}
	seq, rest, ok := strings.Cut(body, "|")
	row := []string{seq}
	for ok && rest != "" {
		var l string
		if l, rest, ok = strings.Cut(rest, ":"); !ok {
			break
		}
		size, err := strconv.Atoi(l)
		if err != nil || size < 0 || size > len(rest) {
			ok = false
			break
		}
		row = append(row, rest[:size])
		rest = rest[size:]
		if rest != "" {
			if rest[0] != '|' {
				ok = false
				break
			}
			rest = rest[1:]
		}
	}
	if ok && len(row) == feedWidth(k) {
		if ev, err := feedEvent(k, p, row); err == nil {
			n.ev = &ev
		}
	}
	return n
}
