package flowfabric

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Event feeds: every completion and every lease event, per partition, in
// the order the store made them, durable and resumable from a cursor (see
// model.FeedStore). A store keeps them only when built with them:
// memstore.Options.Feeds, valkeystore.Options.Feeds.
type (
	// FeedKind names a feed: FeedCompletions or FeedLeases.
	FeedKind = model.FeedKind
	// FeedEvent is one event of a feed.
	FeedEvent = model.FeedEvent
	// Feeds says which feeds a store keeps (a store option).
	Feeds = model.Feeds
)

// Feeds.
const (
	FeedCompletions = model.FeedCompletions
	FeedLeases      = model.FeedLeases
)

var (
	// ErrFeedDisabled: the store was not built to keep that feed.
	ErrFeedDisabled = model.ErrFeedDisabled
	// ErrFeedBehind: the subscriber's cursor fell behind what a partition's
	// feed keeps (or the feed was reset), so events were missed; the
	// subscription goes on from the oldest event kept. A *FeedBehindError
	// says which partition.
	ErrFeedBehind = errors.New("flowfabric: feed: the cursor fell behind the feed; events were missed")
)

// FeedBehindError reports a gap in one partition's feed.
type FeedBehindError struct {
	Feed      FeedKind
	Partition int
	// After is the cursor the subscriber had; the feed kept nothing
	// between it and the oldest event it still holds.
	After uint64
}

func (e *FeedBehindError) Error() string {
	return fmt.Sprintf("flowfabric: feed %s partition %d: the cursor %d fell behind the feed; events were missed", e.Feed, e.Partition, e.After)
}

// Is makes errors.Is(err, ErrFeedBehind) true.
func (e *FeedBehindError) Is(target error) bool { return target == ErrFeedBehind }

// FeedCursor is a subscriber's position: per partition, the sequence of
// the last event it has seen. The zero value starts at the oldest events
// the feeds keep. Save String() and resume with ParseFeedCursor.
type FeedCursor struct {
	seqs map[int]uint64
}

// Seq returns the cursor's position in partition p.
func (c FeedCursor) Seq(p int) uint64 { return c.seqs[p] }

// Advance returns the cursor moved past ev.
func (c FeedCursor) Advance(ev FeedEvent) FeedCursor {
	if ev.Seq <= c.seqs[ev.Partition] {
		return c
	}
	n := FeedCursor{seqs: maps.Clone(c.seqs)}
	if n.seqs == nil {
		n.seqs = map[int]uint64{}
	}
	n.seqs[ev.Partition] = ev.Seq
	return n
}

// String encodes the cursor ("p:seq,p:seq", partitions in order; "" for
// the zero cursor).
func (c FeedCursor) String() string {
	ps := slices.Sorted(maps.Keys(c.seqs))
	var b strings.Builder
	for _, p := range ps {
		if c.seqs[p] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(p) + ":" + strconv.FormatUint(c.seqs[p], 10))
	}
	return b.String()
}

// ParseFeedCursor decodes a cursor written by FeedCursor.String.
func ParseFeedCursor(s string) (FeedCursor, error) {
	c := FeedCursor{seqs: map[int]uint64{}}
	if s == "" {
		return c, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		ps, ss, ok := strings.Cut(part, ":")
		p, err1 := strconv.Atoi(ps)
		seq, err2 := strconv.ParseUint(ss, 10, 64)
		if !ok || err1 != nil || err2 != nil || p < 0 {
			return FeedCursor{}, &model.Error{Code: model.CodeInvalidInput, Field: "cursor", Detail: "malformed",
				Got: strconv.Quote(part), Want: "partition:seq pairs separated by commas"}
		}
		c.seqs[p] = seq
	}
	return c, nil
}

// FeedFilter keeps the events that match every field set.
type FeedFilter struct {
	Namespace Namespace
	Lanes     []LaneID
	Kinds     []Kind
	Flow      FlowID
	// Tags must all be on the execution (read with Describe once per
	// execution and cached while the subscription runs).
	Tags map[string]string
}

func (f *FeedFilter) match(ctx context.Context, e *Engine, ev *FeedEvent, tags map[ExecutionID]map[string]string) (bool, error) {
	if f == nil {
		return true, nil
	}
	if f.Namespace != "" && ev.Namespace != f.Namespace ||
		len(f.Lanes) > 0 && !slices.Contains(f.Lanes, ev.Lane) ||
		len(f.Kinds) > 0 && !slices.Contains(f.Kinds, ev.Kind) ||
		!f.Flow.IsZero() && ev.Flow != f.Flow {
		return false, nil
	}
	if len(f.Tags) == 0 {
		return true, nil
	}
	t, ok := tags[ev.Execution]
	if !ok {
		s, err := e.store.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: ev.Execution})
		switch {
		case errors.Is(err, model.ErrNotFound):
		case err != nil:
			return false, err
		default:
			t = s.Tags
		}
		if len(tags) > 4096 {
			clear(tags) // bounded memory
		}
		tags[ev.Execution] = t
	}
	for k, v := range f.Tags {
		if t[k] != v {
			return false, nil
		}
	}
	return true, nil
}

// SubscribeOpts configures Subscribe.
type SubscribeOpts struct {
	// Feed is FeedCompletions (the zero value) or FeedLeases.
	Feed FeedKind
	// From is where to start (zero: the oldest events kept). Use
	// Engine.FeedHead for "only what happens from now on".
	From FeedCursor
	// Filter keeps matching events (nil: all).
	Filter *FeedFilter
	// Partitions limits the subscription (nil: all).
	Partitions []int
	// PageSize is how many events are read per partition and call
	// (1–model.MaxFeedRead; 0: 100); a subscriber holds at most one page
	// per partition.
	PageSize int
}

// feedRecheck is how often a subscription re-reads when no notice came.
const feedRecheck = time.Second

// feedWake collects the partitions the store's notices named since the
// last look, so a subscriber re-reads those only (one partition per
// completion, not all of them); a lost notice (-1) and the recheck timer
// ask for every partition.
//
// With a store whose notices carry the events (model.FeedEventNotifier),
// a wake watching for events also keeps them, per partition in arrival
// order, so a subscriber hands out the events that continue its cursor
// without reading the store; a partition whose notices left a gap, or
// whose events came while the wake already kept maxNoticeEvents, is read
// instead.
type feedWake struct {
	sig    *model.Signal
	mu     sync.Mutex
	dirty  map[int]bool
	all    bool
	events map[int][]FeedEvent // nil: the wake does not keep events
	kept   int                 // the events in events
}

// maxNoticeEvents bounds the events a wake keeps between two looks (all
// partitions together); beyond it their partitions are read.
const maxNoticeEvents = 1000

// watchFeed watches feed k; with events, the wake keeps the events the
// notices carry (takeEvents).
func (e *Engine) watchFeed(k FeedKind, events bool) (*feedWake, func()) {
	w := &feedWake{sig: e.clock.NewSignal(), dirty: map[int]bool{}, all: true}
	if n, ok := e.store.(model.FeedEventNotifier); ok && events {
		w.events = map[int][]FeedEvent{}
		return w, n.WatchFeedEvents(k, w.noticeEvent)
	}
	if n, ok := e.store.(model.FeedNotifier); ok {
		return w, n.WatchFeed(k, w.notice)
	}
	return w, func() {}
}

func (w *feedWake) notice(p int) { w.noticeEvent(p, nil) }

func (w *feedWake) noticeEvent(p int, ev *FeedEvent) {
	w.mu.Lock()
	switch {
	case p < 0:
		w.all = true
	case ev == nil || w.events == nil || w.kept >= maxNoticeEvents:
		w.dirty[p] = true
	default:
		w.events[p] = append(w.events[p], *ev)
		w.kept++
	}
	w.mu.Unlock()
	w.sig.Notify()
}

// takeEvents returns the partitions of parts the notices brought events
// of, in order, with those events, and forgets them.
func (w *feedWake) takeEvents(parts []int) ([]int, map[int][]FeedEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) == 0 {
		return nil, nil
	}
	var ps []int
	out := make(map[int][]FeedEvent)
	for _, p := range parts {
		if evs := w.events[p]; len(evs) > 0 {
			ps = append(ps, p)
			out[p] = evs
		}
	}
	clear(w.events)
	w.kept = 0
	return ps, out
}

// readLater asks for partition p to be read at the next look.
func (w *feedWake) readLater(p int) {
	w.mu.Lock()
	w.dirty[p] = true
	w.mu.Unlock()
}

// todo returns the partitions of parts to read now and forgets them.
func (w *feedWake) todo(parts []int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	all := w.all
	w.all = false
	if all {
		clear(w.dirty)
		return slices.Clone(parts)
	}
	var out []int
	for _, p := range parts {
		if w.dirty[p] {
			out = append(out, p)
		}
	}
	clear(w.dirty)
	return out
}

// wait waits for a notice or the recheck interval (capped by left); after
// the interval every partition is read again.
func (w *feedWake) wait(ctx context.Context, e *Engine, left time.Duration) error {
	d := min(left, feedRecheck)
	start := e.clock.Now()
	if err := e.clock.Wait(ctx, d, w.sig); err != nil {
		return err
	}
	if e.clock.Now().Sub(start) >= feedRecheck {
		w.mu.Lock()
		w.all = true
		w.mu.Unlock()
	}
	return nil
}

func (e *Engine) feedStore(k FeedKind) (model.FeedStore, error) {
	fs, ok := e.store.(model.FeedStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store",
			Detail: fmt.Sprintf("%T does not implement model.FeedStore", e.store)}
	}
	if !k.Valid() {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Feed", Detail: "unknown_feed"}
	}
	if !fs.FeedEnabled(k) {
		return nil, fmt.Errorf("%w: the store keeps no %s feed (build it with Feeds)", model.ErrFeedDisabled, k)
	}
	return fs, nil
}

// FeedHead returns a cursor at the newest event of every partition's feed
// k: a subscription from it sees only what happens afterwards.
func (e *Engine) FeedHead(ctx context.Context, k FeedKind) (FeedCursor, error) {
	fs, err := e.feedStore(k)
	if err != nil {
		return FeedCursor{}, wrap("feed head", err)
	}
	c := FeedCursor{seqs: map[int]uint64{}}
	for p := range e.Partitions() {
		r, err := fs.FeedRead(ctx, &model.FeedReadParams{Feed: k, Partition: p, After: 0, Count: 1})
		if err != nil {
			return FeedCursor{}, wrap("feed head", err)
		}
		c.seqs[p] = r.Last
	}
	return c, nil
}

// Subscribe yields the events of a feed, partition by partition in turn,
// each partition's in order, from opts.From, and waits for more when it
// has yielded everything: it ends only when ctx ends (yielding ctx's
// error) or the loop breaks. Each event comes once; save
// cursor.Advance(ev) to resume after a restart without losing or repeating
// any (inside what the feed keeps). A cursor that fell behind yields a
// *FeedBehindError (errors.Is ErrFeedBehind) and goes on from the oldest
// event kept; any other error ends the subscription. Notices from the
// store (model.FeedNotifier) wake it; it re-reads every second without
// them.
func (e *Engine) Subscribe(ctx context.Context, opts *SubscribeOpts) iter.Seq2[FeedEvent, error] {
	var o SubscribeOpts
	if opts != nil {
		o = *opts
	}
	if o.Feed == "" {
		o.Feed = FeedCompletions
	}
	return func(yield func(FeedEvent, error) bool) {
		fs, err := e.feedStore(o.Feed)
		if err == nil && (o.PageSize < 0 || o.PageSize > model.MaxFeedRead) {
			err = model.OutOfRange("PageSize", o.PageSize, "0.."+strconv.Itoa(model.MaxFeedRead))
		}
		parts := o.Partitions
		if parts == nil {
			parts = make([]int, e.Partitions())
			for i := range parts {
				parts[i] = i
			}
		}
		for _, p := range parts {
			if err == nil && (p < 0 || p >= e.Partitions()) {
				err = model.OutOfRange("Partitions", p, "0.."+strconv.Itoa(e.Partitions()-1))
			}
		}
		if err != nil {
			yield(FeedEvent{}, wrap("subscribe", err))
			return
		}
		if o.PageSize == 0 {
			o.PageSize = 100
		}
		cur := maps.Clone(o.From.seqs)
		if cur == nil {
			cur = map[int]uint64{}
		}
		wake, stop := e.watchFeed(o.Feed, true)
		defer stop()
		tags := map[ExecutionID]map[string]string{}
		// deliver moves the cursor past ev and yields it if the filter
		// keeps it; false: the subscription ends
		deliver := func(p int, ev FeedEvent) bool {
			cur[p] = ev.Seq
			ok, err := o.Filter.match(ctx, e, &ev, tags)
			if err != nil {
				yield(FeedEvent{}, wrap("subscribe", err))
				return false
			}
			return !ok || yield(ev, nil)
		}
		for {
			// the events the notices carried that continue the cursor;
			// any other (a gap: a notice lost; an event read already, or
			// a feed that was reset) has the partition read below
			ps, evs := wake.takeEvents(parts)
			for _, p := range ps {
				for _, ev := range evs[p] {
					if ev.Seq != cur[p]+1 {
						wake.readLater(p)
						break
					}
					if !deliver(p, ev) {
						return
					}
				}
			}
			// read the partitions the notices named (all of them at first,
			// after a lost notice and on the recheck timer), each again
			// while its pages come full
			for todo := wake.todo(parts); len(todo) > 0; {
				var again []int
				for _, p := range todo {
					r, err := fs.FeedRead(ctx, &model.FeedReadParams{Feed: o.Feed, Partition: p, After: cur[p], Count: o.PageSize})
					if err != nil {
						yield(FeedEvent{}, wrap("subscribe", err))
						return
					}
					if r.Behind {
						if !yield(FeedEvent{}, &FeedBehindError{Feed: o.Feed, Partition: p, After: cur[p]}) {
							return
						}
						// go on from the oldest event kept (or from the
						// feed's new start after a reset)
						cur[p] = 0
						if len(r.Events) > 0 && r.Events[0].Seq > 0 {
							cur[p] = r.Events[0].Seq - 1
						}
						again = append(again, p)
						continue
					}
					for _, ev := range r.Events {
						if !deliver(p, ev) {
							return
						}
					}
					if len(r.Events) == o.PageSize {
						again = append(again, p)
					}
				}
				todo = again
			}
			if err := wake.wait(ctx, e, feedRecheck); err != nil {
				yield(FeedEvent{}, err)
				return
			}
		}
	}
}

// ReadFeedOpts configures ReadFeed.
type ReadFeedOpts struct {
	// Feed is FeedCompletions (the zero value) or FeedLeases.
	Feed FeedKind
	// From is the cursor (zero: the oldest events kept).
	From FeedCursor
	// Filter keeps matching events (nil: all); filtered events still move
	// the cursor.
	Filter *FeedFilter
	// Limit caps the events returned (1–model.MaxFeedRead; 0: 100).
	Limit int
	// MaxWait is how long to wait for an event when there is none
	// (0: answer at once; at most 5 min).
	MaxWait time.Duration
}

// FeedPage is one answer of ReadFeed.
type FeedPage struct {
	Events []FeedEvent
	// Cursor is where the next read starts.
	Cursor FeedCursor
	// Behind lists the partitions whose feed had dropped events the cursor
	// had not reached (the page goes on from the oldest kept).
	Behind []FeedBehindError
}

// ReadFeed returns the events after opts.From, partition by partition, at
// most opts.Limit, waiting up to opts.MaxWait when there is none: the
// long-poll form of Subscribe, for callers that keep the cursor themselves
// (the HTTP API). Events from several partitions are not in a global
// order; each partition's are in order.
func (e *Engine) ReadFeed(ctx context.Context, opts *ReadFeedOpts) (*FeedPage, error) {
	var o ReadFeedOpts
	if opts != nil {
		o = *opts
	}
	if o.Feed == "" {
		o.Feed = FeedCompletions
	}
	fs, err := e.feedStore(o.Feed)
	if err != nil {
		return nil, wrap("read feed", err)
	}
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit < 0 || o.Limit > model.MaxFeedRead {
		return nil, wrap("read feed", model.OutOfRange("Limit", o.Limit, "0.."+strconv.Itoa(model.MaxFeedRead)))
	}
	if o.MaxWait < 0 || o.MaxWait > maxTailWait {
		return nil, wrap("read feed", model.OutOfRange("MaxWait", o.MaxWait, "0.."+maxTailWait.String()))
	}
	var wake *feedWake
	if o.MaxWait > 0 {
		var stop func()
		wake, stop = e.watchFeed(o.Feed, false)
		defer stop()
		wake.todo(nil) // the first look reads every partition anyway
	}
	parts := make([]int, e.Partitions())
	for i := range parts {
		parts[i] = i
	}
	page := &FeedPage{Cursor: FeedCursor{seqs: maps.Clone(o.From.seqs)}}
	if page.Cursor.seqs == nil {
		page.Cursor.seqs = map[int]uint64{}
	}
	cur := page.Cursor.seqs
	tags := map[ExecutionID]map[string]string{}
	deadline := e.clock.Now().Add(o.MaxWait)
	todo := parts
	for {
		for _, p := range todo {
			left := o.Limit - len(page.Events)
			if left == 0 {
				break
			}
			r, err := fs.FeedRead(ctx, &model.FeedReadParams{Feed: o.Feed, Partition: p, After: cur[p], Count: left})
			if err != nil {
				return nil, wrap("read feed", err)
			}
			if r.Behind {
				page.Behind = append(page.Behind, FeedBehindError{Feed: o.Feed, Partition: p, After: cur[p]})
				cur[p] = 0
				if len(r.Events) > 0 {
					cur[p] = r.Events[0].Seq - 1
				}
				if r, err = fs.FeedRead(ctx, &model.FeedReadParams{Feed: o.Feed, Partition: p, After: cur[p], Count: left}); err != nil {
					return nil, wrap("read feed", err)
				}
			}
			for _, ev := range r.Events {
				cur[p] = ev.Seq
				ok, err := o.Filter.match(ctx, e, &ev, tags)
				if err != nil {
					return nil, wrap("read feed", err)
				}
				if ok {
					page.Events = append(page.Events, ev)
				}
			}
		}
		left := deadline.Sub(e.clock.Now())
		if len(page.Events) > 0 || left <= 0 || wake == nil {
			return page, nil
		}
		if err := wake.wait(ctx, e, left); err != nil {
			return page, wrap("read feed", err)
		}
		// from now on the partitions the notices name (every one after a
		// lost notice or the recheck)
		todo = wake.todo(parts)
	}
}
