package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowfabric/flowfabric"
)

// frameView is a line of tail -json.
type frameView struct {
	Seq           uint64    `json:"seq"`
	Time          time.Time `json:"time"`
	Type          string    `json:"type"`
	Mode          string    `json:"mode,omitempty"`
	Encoding      string    `json:"encoding,omitempty"`
	CorrelationID string    `json:"correlation_id,omitempty"`
	Payload       *string   `json:"payload,omitempty"`
	PayloadBase64 []byte    `json:"payload_base64,omitempty"`
}

func tailCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	attempt := fs.Int("attempt", -1, "the attempt's index, 0 for the first (default: the latest)")
	after := fs.Uint64("after", 0, "start after this frame sequence (0: from the first kept)")
	noBestEffort := fs.Bool("no-best-effort", false, "leave best-effort frames out")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("tail takes one execution id, got %d arguments", len(args))
		}
		id, err := parseID(args[0])
		if err != nil {
			return err
		}
		a := *attempt
		if a < 0 {
			s, err := c.engine.Describe(ctx, id)
			if err != nil {
				return err
			}
			a = max(s.TotalAttempts-1, 0)
		}
		n := 0
		for f, err := range c.engine.Frames(ctx, id, a, &flowfabric.StreamReadOpts{After: *after, ExcludeBestEffort: *noBestEffort}) {
			if err != nil {
				if ctx.Err() != nil {
					return nil // interrupted (ctrl-C or -timeout): not a failure
				}
				return err
			}
			n++
			v := frameView{Seq: f.Sequence, Time: f.Time, Type: f.Type, Mode: string(f.Mode), Encoding: f.Encoding, CorrelationID: f.CorrelationID}
			if utf8.Valid(f.Payload) {
				p := string(f.Payload)
				v.Payload = &p
			} else {
				v.PayloadBase64 = f.Payload
			}
			if c.g.json {
				if err := c.printJSONLine(v); err != nil {
					return err
				}
				continue
			}
			payload := fmt.Sprintf("(%d bytes, binary)", len(f.Payload))
			if v.Payload != nil {
				payload = strings.TrimRight(*v.Payload, "\n")
			}
			_, _ = fmt.Fprintf(c.stdout, "%d\t%s\t%s\t%s\n", f.Sequence, f.Time.UTC().Format("15:04:05.000"), f.Type, payload)
		}
		if ctx.Err() != nil {
			return nil
		}
		if !c.g.json {
			_, _ = fmt.Fprintf(c.stderr, "stream of %s attempt %d closed (%d frames)\n", id, a, n)
		}
		return nil
	}
}

// eventView is a line of watch -json.
type eventView struct {
	Seq         uint64    `json:"seq"`
	Partition   int       `json:"partition"`
	At          time.Time `json:"at"`
	Execution   string    `json:"execution"`
	Namespace   string    `json:"namespace"`
	Lane        string    `json:"lane"`
	Kind        string    `json:"kind"`
	Flow        string    `json:"flow,omitempty"`
	Outcome     string    `json:"outcome"`
	ResultBytes int       `json:"result_bytes"`
	// Cursor resumes the watch after this event (-from).
	Cursor string `json:"cursor"`
}

func watchCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	lanes := fs.String("lane", "", "only these lanes, comma-separated")
	kinds := fs.String("kind", "", "only these kinds, comma-separated")
	from := fs.String("from", "", "resume from a cursor a previous watch printed; \"start\" for the oldest events kept (default: from now)")
	count := fs.Int("count", 0, "stop after this many events (0: until interrupted)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("watch takes no arguments, got %q", args)
		}
		if !c.store.FeedEnabled(flowfabric.FeedCompletions) {
			return usagef("watch: the completions feed is not enabled: pass -feeds completions (or FLOWFABRIC_FEEDS), " +
				"as the engine processes writing to this server have it in valkeystore.Options.Feeds")
		}
		if *count < 0 {
			return usagef("-count: want 0 or more, got %d", *count)
		}
		var cur flowfabric.FeedCursor
		var err error
		switch *from {
		case "":
			if cur, err = c.engine.FeedHead(ctx, flowfabric.FeedCompletions); err != nil {
				return err
			}
		case "start":
		default:
			if cur, err = flowfabric.ParseFeedCursor(*from); err != nil {
				return fmt.Errorf("-from: %w", err)
			}
		}
		filter := &flowfabric.FeedFilter{}
		if c.nsGiven {
			filter.Namespace = c.engine.Namespace()
		}
		for l := range strings.SplitSeq(*lanes, ",") {
			if l != "" {
				filter.Lanes = append(filter.Lanes, flowfabric.LaneID(l))
			}
		}
		for k := range strings.SplitSeq(*kinds, ",") {
			if k != "" {
				filter.Kinds = append(filter.Kinds, flowfabric.Kind(k))
			}
		}
		_, _ = fmt.Fprintf(c.stderr, "watching completions from cursor %q\n", cur.String())
		if *from == "" && cur.String() == "" {
			_, _ = fmt.Fprintln(c.stderr, "no completion is in the feed yet: if the engine processes do not keep the completions feed (valkeystore.Options.Feeds), none will come")
		}
		n := 0
		for ev, err := range c.engine.Subscribe(ctx, &flowfabric.SubscribeOpts{Feed: flowfabric.FeedCompletions, From: cur, Filter: filter}) {
			if errors.Is(err, flowfabric.ErrFeedBehind) {
				_, _ = fmt.Fprintf(c.stderr, "warning: %v\n", err)
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil // interrupted (ctrl-C or -timeout): not a failure
				}
				return err
			}
			cur = cur.Advance(ev)
			v := eventView{Seq: ev.Seq, Partition: ev.Partition, At: ev.At, Execution: ev.Execution.String(),
				Namespace: string(ev.Namespace), Lane: string(ev.Lane), Kind: string(ev.Kind), Outcome: ev.Outcome.String(),
				ResultBytes: ev.ResultBytes, Cursor: cur.String()}
			if !ev.Flow.IsZero() {
				v.Flow = ev.Flow.String()
			}
			if c.g.json {
				if err := c.printJSONLine(v); err != nil {
					return err
				}
			} else {
				_, _ = fmt.Fprintf(c.stdout, "%s\t%s\t%s\t%s\t%s\n", ev.At.UTC().Format(time.RFC3339), v.Outcome, v.Execution, v.Lane, v.Kind)
			}
			if n++; *count > 0 && n >= *count {
				if !c.g.json {
					_, _ = fmt.Fprintf(c.stderr, "resume with -from %q\n", cur.String())
				}
				return nil
			}
		}
		return nil
	}
}
