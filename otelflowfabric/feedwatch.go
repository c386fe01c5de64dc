package otelflowfabric

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowfabric/flowfabric"
)

// WatchOpts tunes WatchEnded. The zero value (or nil) means the defaults.
type WatchOpts struct {
	// From is where to start reading the completions feed (nil: its head
	// when WatchEnded is called, so what ended before is not counted). A
	// program that saves cursors (flowfabric.FeedCursor.Advance) may
	// resume from one; a zero cursor starts at the oldest event kept.
	From *flowfabric.FeedCursor
}

// WatchEnded counts every execution that becomes terminal, wherever it
// ended (a worker, a scanner, an operator's cancel of waiting work, a
// flow's cancellation), in the counter flowfabric.executions.ended by
// flowfabric.lane, flowfabric.kind and flowfabric.outcome ("success",
// "failed", "cancelled", "expired", "skipped"; a replayed execution that
// ends again counts again). It reads the store's durable completions feed,
// which the store must keep (memstore.Options.Feeds,
// valkeystore.Options.Feeds), from opts.From (nil opts: its head at the
// call, so what ended before is not counted).
//
// It blocks until ctx ends, then returns nil; it returns at once an error
// that matches flowfabric.ErrFeedDisabled when the store keeps no
// completions feed, and any other error that ends the subscription. When
// the feed dropped events before they were read (flowfabric.ErrFeedBehind)
// the error goes to otel.Handle and counting goes on.
//
// Every engine on a store reads the same feed: run WatchEnded in one
// process of the cluster, or the sum over processes counts each end once
// per watcher.
func (i *Instrumentation) WatchEnded(ctx context.Context, engine *flowfabric.Engine, opts *WatchOpts) error {
	if engine == nil {
		return ErrNilEngine
	}
	var from flowfabric.FeedCursor
	if opts != nil && opts.From != nil {
		from = *opts.From
	} else {
		head, err := engine.FeedHead(ctx, flowfabric.FeedCompletions)
		if err != nil {
			return fmt.Errorf("otelflowfabric: watch ended: %w", err)
		}
		from = head
	}
	for ev, err := range engine.Subscribe(ctx, &flowfabric.SubscribeOpts{Feed: flowfabric.FeedCompletions, From: from}) {
		switch {
		case err == nil:
			i.m.ended.Add(ctx, 1, metric.WithAttributes(i.withBase(
				KeyLane.String(string(ev.Lane)), KeyKind.String(string(ev.Kind)), KeyOutcome.String(ev.Outcome.String()))...))
		case errors.Is(err, flowfabric.ErrFeedBehind):
			otel.Handle(fmt.Errorf("otelflowfabric: watch ended: %w", err))
		case ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("otelflowfabric: watch ended: %w", err)
		}
	}
	return nil
}
