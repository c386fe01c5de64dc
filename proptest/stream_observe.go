package proptest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// What the machine observes and checks of attempt output streams
// (model.StreamStore, model/stream.go): every attempt's stream, read whole
// (StreamRead after 0, MaxStreamRead frames) with its summary document
// (StreamSummary). The rules below follow from the contract alone, so they
// hold for any store (and any engine writing frames, sim's too); the
// machine's own model of the appends it made (stream.go) adds the exact
// counts.

// StreamObservation is what model.StreamStore's reads show of one
// attempt's stream.
type StreamObservation struct {
	// Read is StreamRead of the whole stream (After 0, Count
	// MaxStreamRead): the kept frames, LastSequence and the close.
	Read *model.StreamReadResult
	// Summary is StreamSummary.
	Summary *model.StreamSummaryResult
}

// observeStreams reads the stream of every attempt of every listed
// execution of a model.StreamStore into ExecObservation.Streams (by
// attempt index).
func observeStreams(ctx context.Context, s model.Store, o *Observation) error {
	ss, ok := s.(model.StreamStore)
	if !ok {
		return nil
	}
	for id, x := range o.Execs {
		x.Streams = make([]*StreamObservation, 0, len(x.Attempts))
		for i := range x.Attempts {
			r, err := ss.StreamRead(ctx, &model.StreamReadParams{ID: id, Attempt: i, Count: model.MaxStreamRead, Now: o.Now})
			if err != nil {
				return fmt.Errorf("StreamRead(%v, attempt %d): %w", id, i, err)
			}
			sr, err := ss.StreamSummary(ctx, &model.StreamSummaryParams{ID: id, Attempt: i, Now: o.Now})
			if err != nil {
				return fmt.Errorf("StreamSummary(%v, attempt %d): %w", id, i, err)
			}
			x.Streams = append(x.Streams, &StreamObservation{Read: r, Summary: sr})
		}
	}
	return nil
}

// stream returns the observation of attempt i's stream, or nil.
func (x *ExecObservation) stream(i int) *StreamObservation {
	if x == nil || i < 0 || i >= len(x.Streams) {
		return nil
	}
	return x.Streams[i]
}

// streamCloseReasons are the close reasons that are not attempt statuses.
var streamCloseReasons = []model.StreamCloseReason{
	model.StreamClosedLeaseExpired, model.StreamClosedLeaseRevoked, model.StreamClosedNoFrames,
}

// streamViolations checks the streams of one observation:
//
//   - every attempt has its stream observed;
//   - the kept frames are the newest ones (a stream keeps its newest
//     frames, and expiry drops them all): sequences from 1, consecutive,
//     the last one LastSequence; a frame is valid (type, mode, payload size) and carries a summary
//     version exactly when it is a summary frame;
//   - the kept summary frames' versions are consecutive and the newest is
//     the document's Version; the document is set exactly when Version >
//     0, with both times (UpdatedAt the newest summary frame's time), and
//     Version ≤ LastSequence;
//   - a stream that is open says nothing of a close; a closed stream never
//     opened (LastSequence 0) reads no_frames with no time, an opened one a
//     reason other than no_frames and a time;
//   - an ended attempt's stream is closed; a reason that is an attempt
//     status is the attempt's own, at its end; the current attempt of an
//     active execution whose lease is marked expired or revoked has its
//     stream closed.
func (o *Observation) streamViolations() []string {
	var out []string
	for _, id := range sortedExecIDs(o.Execs) {
		x := o.Execs[id]
		if x.Streams == nil && len(x.Attempts) > 0 {
			continue // a store without model.StreamStore
		}
		bad := func(i int, format string, args ...any) {
			out = append(out, fmt.Sprintf("%v: stream %d: ", id, i)+fmt.Sprintf(format, args...))
		}
		if len(x.Streams) != len(x.Attempts) {
			out = append(out, fmt.Sprintf("%v: %d streams observed for %d attempts", id, len(x.Streams), len(x.Attempts)))
			continue
		}
		for i, so := range x.Streams {
			if so == nil || so.Read == nil || so.Summary == nil {
				bad(i, "not observed")
				continue
			}
			for _, msg := range so.violations() {
				bad(i, "%s", msg)
			}
			r, a := so.Read, x.Attempts[i]
			if !a.Status.IsOpen() && !r.Closed {
				bad(i, "attempt ended %s but its stream reads open", a.Status)
			}
			if r.Closed && !slices.Contains(streamCloseReasons, r.ClosedReason) {
				if st, ok := model.ParseAttemptStatus(string(r.ClosedReason)); !ok || st != a.Status || !r.ClosedAt.Equal(a.EndedAt) {
					bad(i, "closed at %v for %q, the attempt is %s since %v", r.ClosedAt, r.ClosedReason, a.Status, a.EndedAt)
				}
			}
			s := x.Snapshot
			if s != nil && a.Status.IsOpen() && s.CurrentAttempt != nil && s.CurrentAttempt.Index == i && s.State.LifecyclePhase == model.PhaseActive &&
				(s.State.OwnershipState == model.OwnershipLeaseExpiredReclaimable || s.State.OwnershipState == model.OwnershipLeaseRevoked) && !r.Closed {
				bad(i, "the lease is %v but the current attempt's stream reads open", s.State.OwnershipState)
			}
		}
	}
	return out
}

// violations checks one stream on its own (see streamViolations); its
// times are timeViolations'.
func (so *StreamObservation) violations() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	r, sum := so.Read, so.Summary
	var lastSummary *model.Frame
	for j := range r.Frames {
		f := &r.Frames[j]
		if j > 0 && f.Sequence != r.Frames[j-1].Sequence+1 {
			bad("frames %d then %d: the kept frames are not the newest ones", r.Frames[j-1].Sequence, f.Sequence)
		}
		if f.Sequence == 0 || f.Sequence > r.LastSequence {
			bad("frame %d, last sequence %d", f.Sequence, r.LastSequence)
		}
		if !f.Mode.Valid() || model.ValidateFrameType("Type", f.Type) != nil || len(f.Payload) > model.MaxFramePayloadBytes ||
			len(f.Encoding) > model.FrameEncodingMaxBytes || len(f.CorrelationID) > model.FrameCorrelationMaxBytes {
			bad("frame %d is not valid: mode %q type %q payload %d bytes", f.Sequence, f.Mode, f.Type, len(f.Payload))
		}
		if (f.Mode == model.StreamSummary) != (f.SummaryVersion > 0) {
			bad("frame %d of mode %s has summary version %d", f.Sequence, f.Mode, f.SummaryVersion)
		}
		if f.Mode == model.StreamSummary {
			if lastSummary != nil && f.SummaryVersion != lastSummary.SummaryVersion+1 {
				bad("summary frames %d (version %d) then %d (version %d)", lastSummary.Sequence, lastSummary.SummaryVersion, f.Sequence, f.SummaryVersion)
			}
			lastSummary = f
		}
	}
	if n := len(r.Frames); n > 0 && r.Frames[n-1].Sequence != r.LastSequence {
		bad("newest kept frame %d, last sequence %d: the kept frames are not the newest ones", r.Frames[n-1].Sequence, r.LastSequence)
	}
	if lastSummary != nil && (lastSummary.SummaryVersion != sum.Version || !lastSummary.Time.Equal(sum.UpdatedAt)) {
		bad("newest summary frame %d has version %d at %v, the document %d at %v", lastSummary.Sequence, lastSummary.SummaryVersion,
			lastSummary.Time, sum.Version, sum.UpdatedAt)
	}
	switch {
	case (sum.Version > 0) != (len(sum.Document) > 0):
		bad("summary version %d with a document of %d bytes", sum.Version, len(sum.Document))
	case sum.Version == 0 && (!sum.FirstAppliedAt.IsZero() || !sum.UpdatedAt.IsZero()):
		bad("summary without a version applied at %v..%v", sum.FirstAppliedAt, sum.UpdatedAt)
	case sum.Version > 0 && (sum.FirstAppliedAt.IsZero() || sum.UpdatedAt.IsZero()):
		bad("summary version %d applied at %v..%v", sum.Version, sum.FirstAppliedAt, sum.UpdatedAt)
	}
	if sum.Version > r.LastSequence {
		bad("summary version %d, last sequence %d", sum.Version, r.LastSequence)
	}
	switch {
	case !r.Closed:
		if !r.ClosedAt.IsZero() || r.ClosedReason != "" {
			bad("open, yet closed at %v for %q", r.ClosedAt, r.ClosedReason)
		}
	case r.LastSequence == 0:
		if r.ClosedReason != model.StreamClosedNoFrames || !r.ClosedAt.IsZero() {
			bad("never opened, closed at %v for %q, want no_frames without a time", r.ClosedAt, r.ClosedReason)
		}
	default:
		if r.ClosedReason == model.StreamClosedNoFrames || r.ClosedReason == "" || r.ClosedAt.IsZero() {
			bad("opened (last sequence %d), closed at %v for %q", r.LastSequence, r.ClosedAt, r.ClosedReason)
		}
	}
	return out
}

// timeViolations checks the times of one stream written by callers whose
// Now never falls (the machine's clock; sim's processes each have their
// own): frame times never fall and are not after now, the summary's
// first patch is not after its last, which is not after now, and a close
// is after the last frame and not after now.
func (so *StreamObservation) timeViolations(now time.Time) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	r, sum := so.Read, so.Summary
	for j, f := range r.Frames {
		if j > 0 && f.Time.Before(r.Frames[j-1].Time) {
			bad("frame %d at %v before frame %d at %v", f.Sequence, f.Time, r.Frames[j-1].Sequence, r.Frames[j-1].Time)
		}
		if f.Time.After(now) {
			bad("frame %d at %v after now %v", f.Sequence, f.Time, now)
		}
	}
	if sum.UpdatedAt.Before(sum.FirstAppliedAt) || sum.UpdatedAt.After(now) {
		bad("summary applied at %v..%v (now %v)", sum.FirstAppliedAt, sum.UpdatedAt, now)
	}
	if r.Closed && r.ClosedAt.After(now) {
		bad("closed at %v after now %v", r.ClosedAt, now)
	}
	if n := len(r.Frames); n > 0 && r.Closed && r.ClosedAt.Before(r.Frames[n-1].Time) {
		bad("closed at %v before its frame %d at %v", r.ClosedAt, r.Frames[n-1].Sequence, r.Frames[n-1].Time)
	}
	return out
}

// streamStepViolations checks the streams between two observations of
// one store:
//
//   - LastSequence never falls, Closed never goes back to false (also for
//     a stream never opened whose lease was lost before the attempt
//     resumed: a regression the machine found), the summary version never falls and a document of the same version is
//     the same (bytes and times);
//   - a frame keeps what it holds (a frame of the same sequence in both
//     is equal);
//   - without an append (LastSequence unchanged) the kept frames change
//     only by best-effort expiry: all of them go, and they were all
//     best-effort frames;
//   - a closed stream takes no frame: its LastSequence, close and
//     summary stay.
func streamStepViolations(prev, cur *Observation) []string {
	var out []string
	for _, id := range sortedExecIDs(prev.Execs) {
		px, cx := prev.Execs[id], cur.Execs[id]
		if cx == nil || px.Streams == nil || cx.Streams == nil {
			continue
		}
		for i, ps := range px.Streams {
			cs := cx.stream(i)
			if ps == nil || ps.Read == nil || ps.Summary == nil || cs == nil || cs.Read == nil || cs.Summary == nil {
				continue // lost attempts are StepViolations'
			}
			bad := func(format string, args ...any) {
				out = append(out, fmt.Sprintf("%v: stream %d: ", id, i)+fmt.Sprintf(format, args...))
			}
			pr, cr := ps.Read, cs.Read
			if cr.LastSequence < pr.LastSequence {
				bad("last sequence fell from %d to %d", pr.LastSequence, cr.LastSequence)
			}
			if pr.Closed && !cr.Closed {
				bad("closed (%q at %v) and now open again", pr.ClosedReason, pr.ClosedAt)
			}
			if pr.Closed && cr.Closed && (pr.ClosedReason != cr.ClosedReason || !pr.ClosedAt.Equal(cr.ClosedAt)) {
				bad("closed for %q at %v, now for %q at %v", pr.ClosedReason, pr.ClosedAt, cr.ClosedReason, cr.ClosedAt)
			}
			if pr.Closed && cr.LastSequence != pr.LastSequence {
				bad("closed, yet took frames: last sequence %d -> %d", pr.LastSequence, cr.LastSequence)
			}
			psum, csum := ps.Summary, cs.Summary
			switch {
			case csum.Version < psum.Version:
				bad("summary version fell from %d to %d", psum.Version, csum.Version)
			case csum.Version == psum.Version && !summaryEqual(psum, csum):
				bad("summary version %d changed its document: %+v -> %+v", psum.Version, *psum, *csum)
			case csum.Version > psum.Version && psum.Version > 0 && !csum.FirstAppliedAt.Equal(psum.FirstAppliedAt):
				bad("summary first applied at %v, now at %v", psum.FirstAppliedAt, csum.FirstAppliedAt)
			}
			for _, cf := range cr.Frames {
				if pf := frameOf(pr.Frames, cf.Sequence); pf != nil && !frameEqual(pf, &cf) {
					bad("frame %d changed: %+v -> %+v", cf.Sequence, *pf, cf)
				}
			}
			if cr.LastSequence == pr.LastSequence && !framesEqual(pr.Frames, cr.Frames) {
				allBE := len(cr.Frames) == 0
				for _, f := range pr.Frames {
					allBE = allBE && f.Mode == model.StreamBestEffort
				}
				if !allBE {
					bad("no frame appended (last sequence %d), yet the kept frames went from %s to %s", pr.LastSequence, seqs(pr.Frames), seqs(cr.Frames))
				}
			}
		}
	}
	return out
}

func frameOf(fs []model.Frame, seq uint64) *model.Frame {
	i, ok := slices.BinarySearchFunc(fs, seq, func(f model.Frame, s uint64) int { return cmpInt(int64(f.Sequence), int64(s)) })
	if !ok {
		return nil
	}
	return &fs[i]
}

func frameEqual(a, b *model.Frame) bool {
	x, y := *a, *b
	if !bytes.Equal(x.Payload, y.Payload) || !x.Time.Equal(y.Time) {
		return false
	}
	x.Payload, y.Payload, x.Time, y.Time = nil, nil, time.Time{}, time.Time{}
	return reflect.DeepEqual(x, y)
}

func framesEqual(a, b []model.Frame) bool {
	return slices.EqualFunc(a, b, func(x, y model.Frame) bool { return frameEqual(&x, &y) })
}

func summaryEqual(a, b *model.StreamSummaryResult) bool {
	return a.Version == b.Version && bytes.Equal(a.Document, b.Document) &&
		a.FirstAppliedAt.Equal(b.FirstAppliedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func seqs(fs []model.Frame) string {
	if len(fs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d..%d", fs[0].Sequence, fs[len(fs)-1].Sequence)
}

func sortedExecIDs(m map[model.ExecutionID]*ExecObservation) []model.ExecutionID {
	ids := make([]model.ExecutionID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, model.ExecutionID.Compare)
	return ids
}

// withoutStreams is x without its streams: a terminal record is frozen,
// but the best-effort frames of its attempts' streams still expire with
// time (streamStepViolations checks the streams).
func (x *ExecObservation) withoutStreams() ExecObservation {
	y := *x
	y.Streams = nil
	return y
}

// frozen is what of a terminal execution stays until a replay: all but
// its streams (closing and best-effort expiry go on) and its retention
// entry (a flow member's is dropped by the trimmer; the due checks tie
// the entry to the record).
func (x *ExecObservation) frozen() ExecObservation {
	y := x.withoutStreams()
	y.Indexes = slices.DeleteFunc(slices.Clone(y.Indexes), func(n string) bool { return n == "retention" })
	return y
}

// frozenSince is x.frozen() with the tags of prev (an earlier
// observation of the execution) and, when the tags changed, prev's
// LastMutationAt: tags change in any state (model.TagStore, tags.go),
// stamping LastMutationAt, which the step checks hold to the step's time.
func (x *ExecObservation) frozenSince(prev *ExecObservation) ExecObservation {
	y := x.frozen()
	if y.Snapshot == nil || prev.Snapshot == nil || maps.Equal(y.Snapshot.Tags, prev.Snapshot.Tags) {
		return y
	}
	s := *y.Snapshot
	s.Tags, s.LastMutationAt = prev.Snapshot.Tags, prev.Snapshot.LastMutationAt
	y.Snapshot = &s
	return y
}
