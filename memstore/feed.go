package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/flowfabric/flowfabric/model"
)

// Event feeds (model.FeedStore; valkeystore/lua/lib/feed.lua). Each
// partition keeps, for each feed the store was built with, its newest
// events; an event is added in the same step as the transition it
// records: terminate adds a completion, addHistory and a renewal a lease
// event.

// feedLog is one partition's feed: the kept events, oldest first, and the
// last sequence written.
type feedLog struct {
	events []model.FeedEvent
	last   uint64
}

// FeedEnabled implements model.FeedStore.
func (s *Store) FeedEnabled(k model.FeedKind) bool { return s.feeds.Enabled(k) }

// feedAdd appends ev (its execution fields are filled from e) to e's
// partition's feed k, keeping the newest events.
func (s *Store) feedAdd(e *execution, k model.FeedKind, now int64, ev model.FeedEvent) {
	p, _ := s.indexesOf(e)
	if p.feeds == nil {
		p.feeds = make(map[model.FeedKind]*feedLog)
	}
	l := p.feeds[k]
	if l == nil {
		l = &feedLog{}
		p.feeds[k] = l
	}
	l.last++
	ev.Seq, ev.At, ev.Partition = l.last, tm(now), e.id.Partition()
	ev.Execution, ev.Namespace, ev.Lane, ev.Kind, ev.Flow = e.id, e.namespace, e.lane, e.kind, s.flowOf[e.id]
	l.events = append(l.events, ev)
	s.feedOut = append(s.feedOut, feedNote{k, ev})
	if over := len(l.events) - s.feeds.EffectiveLen(); over > 0 {
		// drop the oldest; copy when the dropped head outgrows the kept
		// events so the array does not grow without bound
		l.events = l.events[over:]
		if cap(l.events) > 2*len(l.events)+64 {
			l.events = append([]model.FeedEvent(nil), l.events...)
		}
	}
}

// feedCompletion records e's terminal outcome (terminate).
func (s *Store) feedCompletion(e *execution, now int64, to model.TerminalOutcome) {
	if !s.feeds.Completions {
		return
	}
	ev := model.FeedEvent{Outcome: to}
	if to == model.OutcomeSuccess && e.hasResult {
		ev.ResultBytes = len(e.result)
	}
	s.feedAdd(e, model.FeedCompletions, now, ev)
}

// feedLease records a lease event of e (addHistory, renewals).
func (s *Store) feedLease(e *execution, now int64, kind model.LeaseEventKind, reason string) {
	if !s.feeds.Leases {
		return
	}
	ev := model.FeedEvent{Lease: kind, Epoch: e.epoch, Attempt: e.curAttempt, Reason: reason}
	if e.lease != nil {
		ev.Instance = e.lease.workerInstanceID
	}
	s.feedAdd(e, model.FeedLeases, now, ev)
}

// FeedRead implements model.FeedStore.
func (s *Store) FeedRead(ctx context.Context, p *model.FeedReadParams) (*model.FeedReadResult, error) {
	invalid := p.Validate(s.cfg)
	if invalid == nil && !s.feeds.Enabled(p.Feed) {
		invalid = model.ErrFeedDisabled
	}
	return withLock(s, ctx, invalid, func() (*model.FeedReadResult, error) {
		res := &model.FeedReadResult{Next: p.After}
		pt := s.parts[p.Partition]
		var l *feedLog
		if pt != nil && pt.feeds != nil {
			l = pt.feeds[p.Feed]
		}
		if l == nil {
			res.Behind = p.After > 0
			return res, nil
		}
		res.Last = l.last
		first := l.last + 1
		if len(l.events) > 0 {
			first = l.events[0].Seq
		}
		res.Behind = p.After > l.last || p.After > 0 && p.After+1 < first
		i := sort.Search(len(l.events), func(i int) bool { return l.events[i].Seq > p.After })
		for ; i < len(l.events) && len(res.Events) < p.Count; i++ {
			res.Events = append(res.Events, l.events[i])
			res.Next = l.events[i].Seq
		}
		return res, nil
	})
}

var _ model.FeedEventNotifier = (*Store)(nil)

// feedNote is a feed notice queued by a transition (delivered by unlock):
// the event appended.
type feedNote struct {
	kind model.FeedKind
	ev   model.FeedEvent
}

// feedWatcher is a WatchFeed (events false: called once per partition and
// transition) or WatchFeedEvents watcher (once per event).
type feedWatcher struct {
	f      func(partition int, ev *model.FeedEvent)
	events bool
}

// WatchFeed implements model.FeedNotifier: f is called after every
// transition that added events to feed k, with their partition, in the
// goroutine of the store call, once the store's lock is released. f must
// not block and must not call the store.
func (s *Store) WatchFeed(k model.FeedKind, f func(partition int)) (stop func()) {
	return s.watchFeed(k, feedWatcher{f: func(p int, _ *model.FeedEvent) { f(p) }})
}

// WatchFeedEvents implements model.FeedEventNotifier: f is called for
// every event added to feed k, in order, with a copy of the event, in the
// goroutine of the store call once the store's lock is released. An
// in-process notice is never lost.
func (s *Store) WatchFeedEvents(k model.FeedKind, f func(partition int, ev *model.FeedEvent)) (stop func()) {
	return s.watchFeed(k, feedWatcher{f: f, events: true})
}

func (s *Store) watchFeed(k model.FeedKind, w feedWatcher) (stop func()) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.watchSeq++
	id := s.watchSeq
	if s.feedWatchers[k] == nil {
		s.feedWatchers[k] = make(map[int]feedWatcher)
	}
	s.feedWatchers[k][id] = w
	return func() {
		s.watchMu.Lock()
		defer s.watchMu.Unlock()
		delete(s.feedWatchers[k], id)
	}
}

// deliverFeeds calls the feed watchers for the notices a transition
// queued: a WatchFeed watcher once per feed and partition, a
// WatchFeedEvents watcher once per event.
func (s *Store) deliverFeeds(out []feedNote) {
	var calls []func()
	s.watchMu.Lock()
	for i, n := range out {
		first := !slices.ContainsFunc(out[:i], func(o feedNote) bool { return o.kind == n.kind && o.ev.Partition == n.ev.Partition })
		fs := s.feedWatchers[n.kind]
		ids := make([]int, 0, len(fs))
		for id := range fs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			w, part := fs[id], n.ev.Partition
			switch {
			case w.events:
				ev := n.ev
				calls = append(calls, func() { w.f(part, &ev) })
			case first:
				calls = append(calls, func() { w.f(part, nil) })
			}
		}
	}
	s.watchMu.Unlock()
	for _, f := range calls {
		f()
	}
}
