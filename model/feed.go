package model

import (
	"context"
	"strconv"
	"time"
)

// FeedStore is implemented by stores that keep durable event feeds: per
// partition, numbered logs of the completions and the lease events of its
// executions, written in the same atomic step as the transition they
// record, so a subscriber that reads a feed from a cursor sees every event
// once, in order, for as long as the feed keeps it (FlowFabric's
// completion stream was pub/sub and lost events: D-089).
//
// Feeds are off unless the store is built with them (memstore.Options.Feeds,
// valkeystore.Options.Feeds): a store without them writes nothing, so a job
// pays nothing for a feed nobody reads. FeedRead of a feed the store does
// not keep is ErrFeedDisabled.
type FeedStore interface {
	// FeedEnabled reports whether the store keeps feed k.
	FeedEnabled(k FeedKind) bool
	// FeedRead reads one partition's feed after a cursor.
	FeedRead(ctx context.Context, p *FeedReadParams) (*FeedReadResult, error)
}

// FeedKind names a feed.
type FeedKind string

// Feeds.
const (
	// FeedCompletions has an event per execution that became terminal
	// (completed, failed, cancelled, expired, skipped); a replayed
	// execution that ends again has a second one.
	FeedCompletions FeedKind = "completions"
	// FeedLeases has an event per lease history entry (LeaseEventKind) and
	// per renewal (LeaseRenewed).
	FeedLeases FeedKind = "leases"
)

// Valid reports whether k is a known feed.
func (k FeedKind) Valid() bool { return k == FeedCompletions || k == FeedLeases }

// LeaseRenewed is the lease feed's event for a renewal (renewals are not in
// an execution's lease history).
const LeaseRenewed LeaseEventKind = "renewed"

// Feed limits.
const (
	// DefaultFeedLen is how many events each partition's feed keeps when
	// the store's options say nothing (the oldest are dropped).
	DefaultFeedLen = 10000
	// MaxFeedLen bounds a store's feed length option.
	MaxFeedLen = 1000000
	// MaxFeedRead bounds FeedReadParams.Count.
	MaxFeedRead = 1000
)

// Feeds says which feeds a store keeps and how long (a store option).
type Feeds struct {
	Completions bool
	Leases      bool
	// Len is how many events each partition's feed keeps (0:
	// DefaultFeedLen; at most MaxFeedLen).
	Len int
}

// Validate checks the option.
func (f Feeds) Validate() error {
	if f.Len < 0 || f.Len > MaxFeedLen {
		return OutOfRange("Feeds.Len", f.Len, "0.."+strconv.Itoa(MaxFeedLen))
	}
	return nil
}

// EffectiveLen returns Len or its default.
func (f Feeds) EffectiveLen() int {
	if f.Len == 0 {
		return DefaultFeedLen
	}
	return f.Len
}

// Enabled reports whether the option keeps feed k.
func (f Feeds) Enabled(k FeedKind) bool {
	switch k {
	case FeedCompletions:
		return f.Completions
	case FeedLeases:
		return f.Leases
	}
	return false
}

// FeedEvent is one event of a feed.
type FeedEvent struct {
	// Seq numbers the partition feed's events from 1, never reused.
	Seq uint64
	At  time.Time
	// Partition is the execution partition whose feed holds the event.
	Partition int
	Execution ExecutionID
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	// Flow is the flow the execution is a member of (zero: none).
	Flow FlowID

	// Completions: the outcome and the result's size in bytes.
	Outcome     TerminalOutcome
	ResultBytes int

	// Leases: what happened to the lease, its epoch, the attempt, the
	// holder instance and the reason the transition gave.
	Lease    LeaseEventKind
	Epoch    uint64
	Attempt  int
	Instance WorkerInstanceID
	Reason   string
}

// FeedReadParams reads partition Partition's feed Feed: events with a
// sequence above After, oldest first, at most Count (1–MaxFeedRead).
type FeedReadParams struct {
	Feed      FeedKind
	Partition int
	After     uint64
	Count     int
}

// Validate checks every field.
func (p *FeedReadParams) Validate(cfg PartitionConfig) error {
	if !p.Feed.Valid() {
		return invalidField("Feed", "unknown_feed")
	}
	if p.Partition < 0 || p.Partition >= cfg.FlowPartitions {
		return OutOfRange("Partition", p.Partition, "0.."+strconv.Itoa(cfg.FlowPartitions-1))
	}
	if p.Count < 1 || p.Count > MaxFeedRead {
		return OutOfRange("Count", p.Count, "1.."+strconv.Itoa(MaxFeedRead))
	}
	return nil
}

// FeedReadResult is one page of a feed.
type FeedReadResult struct {
	Events []FeedEvent
	// Next is the cursor for the next read: the last event's sequence,
	// After when none.
	Next uint64
	// Last is the sequence of the newest event ever written (0: none).
	Last uint64
	// Behind says events the cursor had not reached were dropped (the feed
	// keeps its newest events only) or the cursor is past Last (the feed
	// was reset): the reader missed events and should resynchronise. A
	// cursor of 0 means "from the oldest event kept" and is never behind.
	Behind bool
}

// FeedNotifier is implemented by stores that can tell a subscriber, across
// processes and within milliseconds, that a partition's feed has new
// events, so subscribers need not poll.
type FeedNotifier interface {
	// WatchFeed calls f with the partition whenever feed k may have new
	// events there (-1: any partition, as after a lost subscription). f
	// must not block and must not call the store. Spurious calls are
	// allowed; a notice may be lost. The returned func stops the watch.
	WatchFeed(k FeedKind, f func(partition int)) (stop func())
}

// FeedEventNotifier is implemented by stores whose feed notices carry the
// event that was appended, so a subscriber whose cursor the event
// continues has it without reading the store (the latency of an event is
// then one notice, not a notice and a read).
type FeedEventNotifier interface {
	// WatchFeedEvents calls f once for every event appended to feed k,
	// with its partition and the event as FeedRead returns it, in each
	// partition's order; and with partition -1 and nil when notices may
	// have been lost (a resubscription): the feed, not the notice, is the
	// truth. f must not block and must not call the store. The returned
	// func stops the watch.
	WatchFeedEvents(k FeedKind, f func(partition int, ev *FeedEvent)) (stop func())
}
