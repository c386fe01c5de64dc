package valkeystore

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// Attempt output streams (model.StreamStore, model.StreamNotifier). Each
// operation is one script on the execution's partition; lua/lib/stream.lua
// holds what they share and describes the keys (keys.go lists them too).

// StreamAppend implements model.StreamStore.
func (s *Store) StreamAppend(ctx context.Context, p *model.StreamAppendParams) (*model.StreamAppendResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	keys, a := s.streamAppendInput(p)
	r, err := s.runArgv(ctx, scriptStreamAppend, keys, a)
	if err != nil {
		return nil, err
	}
	res := &model.StreamAppendResult{Sequence: r.u64("seq"), Frames: r.int("frames"), SummaryVersion: r.u64("version")}
	return res, r.err()
}

// streamAppendInput is stream_append's keys and arguments for p: the one
// key the script declares (not execKeys' fifteen) and its arguments
// without a map (argv), as a frame is appended per call and a tail waits
// on each (S13). TestStreamAppendInput checks it against what run sends.
func (s *Store) streamAppendInput(p *model.StreamAppendParams) ([]string, *argv) {
	var ttl int64
	if p.Mode == model.StreamBestEffort {
		ttl = p.EffectiveTTL().Milliseconds()
	}
	var base uint64
	var doc []byte
	if p.Summary != nil {
		base, doc = p.Summary.BaseVersion, p.Summary.Document
	}
	a := s.argv(scriptStreamAppend).put("now", timeArg(p.Now)).put("id", p.ID.String()).put("mode", string(p.Mode)).
		put("type", p.Type).put("payload", string(p.Payload)).put("encoding", p.Encoding).
		put("correlation", p.CorrelationID).put("max_len", numArg(p.EffectiveMaxLen())).put("ttl", numArg(ttl)).
		put("base_version", numArg(base)).put("doc", string(doc)).put("gc_slack", numArg(s.gcSlack)).
		put("lease_id", p.Fence.LeaseID.String()).put("epoch", numArg(p.Fence.LeaseEpoch)).put("attempt_id", p.Fence.AttemptID.String())
	return []string{s.keys.execBase(p.ID) + ":core"}, a
}

// StreamRead implements model.StreamStore.
func (s *Store) StreamRead(ctx context.Context, p *model.StreamReadParams) (*model.StreamReadResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptStreamRead, s.keys.execKeys(p.ID), args{
		"now": p.Now, "attempt": p.Attempt, "after": strconv.FormatUint(p.After, 10), "count": p.Count,
		"exclude_best_effort": p.ExcludeBestEffort,
	})
	if err != nil {
		return nil, err
	}
	res := &model.StreamReadResult{
		Next:         p.After,
		LastSequence: r.u64("last_seq"),
		Closed:       r.bool("closed"),
		ClosedAt:     r.time("closed_at"),
		ClosedReason: model.StreamCloseReason(r.str("closed_reason")),
	}
	if r.str("next") != "" {
		res.Next = r.u64("next")
	}
	for _, row := range r.rows("frames", 8) {
		f := model.Frame{
			Type: row[2], Payload: []byte(row[3]), Encoding: row[4], CorrelationID: row[5],
			Mode: model.StreamMode(row[6]),
		}
		var e1, e2, e3 error
		f.Sequence, e1 = strconv.ParseUint(row[0], 10, 64)
		ts, e2 := strconv.ParseInt(row[1], 10, 64)
		f.SummaryVersion, e3 = strconv.ParseUint(row[7], 10, 64)
		if e1 != nil || e2 != nil || e3 != nil || !f.Mode.Valid() {
			r.fail("field \"frames\": malformed frame %q", row)
			break
		}
		f.Time = model.FromMillis(ts)
		res.Frames = append(res.Frames, f)
	}
	return res, r.err()
}

// StreamSummary implements model.StreamStore.
func (s *Store) StreamSummary(ctx context.Context, p *model.StreamSummaryParams) (*model.StreamSummaryResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptStreamSummary, s.keys.execKeys(p.ID), args{"attempt": p.Attempt})
	if err != nil {
		return nil, err
	}
	res := &model.StreamSummaryResult{Version: r.u64("version")}
	if res.Version > 0 {
		res.Document = []byte(r.str("doc"))
		res.FirstAppliedAt, res.UpdatedAt = r.time("first"), r.time("at")
	}
	return res, r.err()
}

// Stream notices.
//
// stream_append and every close of a stream (lib/stream.lua) publish
// "<execution id>|<attempt index>" on the channel P:stream:T of the
// execution's partition T in the same atomic step. WatchStream subscribes
// to the partition's channel (one subscription per partition and store,
// shared by the watchers of all its streams) and calls a watcher for the
// messages naming its stream, and every watcher once after a
// resubscription (notices may have been lost meanwhile: a spurious call,
// which model.StreamNotifier allows). The trade-offs are those of the work
// notifications (notify.go): at most once, only to connected subscribers,
// and on a cluster PUBLISH reaches every node, so the subscription is
// pinned to the node of the partition's slot to hear its publishes
// first-hand.

// WatchStream implements model.StreamNotifier. It returns once the
// partition's subscription is confirmed (or after a few seconds if the
// server does not answer, in which case the subscription keeps being
// retried). f runs on the subscription's reader goroutine.
func (s *Store) WatchStream(id model.ExecutionID, attempt int, f func()) (stop func()) {
	return s.WatchStreamFrames(id, attempt, func(*model.Frame) { f() })
}

// WatchStreamFrames implements model.StreamFrameNotifier: an append's
// notice carries its frame when the payload is at most
// model.MaxNoticeFrameBytes (stream_append.lua).
func (s *Store) WatchStreamFrames(id model.ExecutionID, attempt int, f func(*model.Frame)) (stop func()) {
	part := id.Partition()
	want := id.String() + "|" + strconv.Itoa(attempt)
	return addWatch(s, s.streamWatches, part, func(msg string) {
		head, body, hasFrame := strings.Cut(msg, "\n")
		if head != want && msg != "" {
			return
		}
		if !hasFrame {
			f(nil)
			return
		}
		fr, ok := parseNoticeFrame(body)
		if !ok {
			f(nil)
			return
		}
		f(fr)
	}, func() subscription[string] {
		return subscription[string]{
			channel: s.keys.streamChannel(part),
			// bind the connection to the node of the partition's slot
			pin: func(ctx context.Context, dc valkey.DedicatedClient) error {
				return dc.Do(ctx, dc.B().Exists().Key(s.keys.idx(part)+"lanes").Build()).Error()
			},
			// a real message is never empty: "" is the lost notice
			parse: func(msg string) (string, bool) { return msg, msg != "" },
			lost:  "",
		}
	})
}

// parseNoticeFrame decodes the frame part of an append's notice:
// "<seq>|<ms>|<mode>|<version>|<#type>|<#encoding>|<#correlation>|" then
// the type, encoding, correlation id and payload back to back.
func parseNoticeFrame(body string) (*model.Frame, bool) {
	var n [7]string
	rest := body
	for i := range n {
		var ok bool
		if n[i], rest, ok = strings.Cut(rest, "|"); !ok {
			return nil, false
		}
	}
	seq, err1 := strconv.ParseUint(n[0], 10, 64)
	at, err2 := strconv.ParseInt(n[1], 10, 64)
	ver, err3 := strconv.ParseUint(n[3], 10, 64)
	lt, err4 := strconv.Atoi(n[4])
	le, err5 := strconv.Atoi(n[5])
	lc, err6 := strconv.Atoi(n[6])
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil || lt < 0 || le < 0 || lc < 0 || lt+le+lc > len(rest) {
		return nil, false
	}
	return &model.Frame{
		Sequence: seq, Time: model.FromMillis(at), Mode: model.StreamMode(n[2]), SummaryVersion: ver,
		Type: rest[:lt], Encoding: rest[lt : lt+le], CorrelationID: rest[lt+le : lt+le+lc],
		Payload: []byte(rest[lt+le+lc:]),
	}, true
}
