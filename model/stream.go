package model

import (
	"context"
	"strconv"
	"time"
)

// StreamStore is implemented by stores that keep attempt output streams
// (lua-semantics §3 stream.lua, §5 "Streams"). It is optional, like
// FlowStore; both stores of this module implement it.
//
// Every attempt of an execution has its own stream, addressed by the
// execution and the attempt's index (Attempt.Index: 0 is the first
// attempt). Only the holder of the attempt's live lease appends to it
// (fenced); anyone reads it. A stream is opened by its first frame and
// closed when its attempt ends (completed, failed, retried, cancelled,
// timed out, reclaimed, recovered, skipped) or its lease is marked
// expired (§9 bug 15) or revoked. An attempt that pauses and resumes
// (suspend, delay, await children) keeps its stream open. A closed stream
// takes no frame and says when and why it closed.
type StreamStore interface {
	// StreamAppend appends one frame to the caller's attempt's stream.
	StreamAppend(ctx context.Context, p *StreamAppendParams) (*StreamAppendResult, error)
	// StreamRead reads frames of one attempt's stream after a cursor.
	StreamRead(ctx context.Context, p *StreamReadParams) (*StreamReadResult, error)
	// StreamSummary reads one attempt's summary document.
	StreamSummary(ctx context.Context, p *StreamSummaryParams) (*StreamSummaryResult, error)
}

// StreamNotifier is implemented by stores that can tell a reader, across
// processes and within milliseconds, that an attempt stream may have
// changed (a frame appended, the stream closed), so a tail need not poll.
type StreamNotifier interface {
	// WatchStream calls f whenever the stream of the execution's attempt
	// may have changed. f must not block and must not call the store.
	// Spurious calls are allowed; a notice may be lost, so a reader still
	// re-reads on a timer. The returned func stops the watch.
	WatchStream(id ExecutionID, attempt int, f func()) (stop func())
}

// StreamFrameNotifier is implemented by stores whose stream notices carry
// the frame that was appended, so a tail has it without reading the store
// again (tail latency is then one notice, not a notice and a read).
type StreamFrameNotifier interface {
	// WatchStreamFrames calls f after every change of the stream of the
	// execution's attempt, as WatchStream does, with the frame appended
	// when the change is an append of a frame whose payload is at most
	// MaxNoticeFrameBytes, and with nil otherwise (a close, a larger
	// frame, a lost notice). A frame it passes is the one stored. f must
	// not block and must not call the store.
	WatchStreamFrames(id ExecutionID, attempt int, f func(*Frame)) (stop func())
}

// MaxNoticeFrameBytes caps the payload of a frame a stream notice carries
// (larger ones are read from the store).
const MaxNoticeFrameBytes = 4096

// StreamMode says how a frame is kept.
type StreamMode string

// Stream modes.
const (
	// StreamDurable frames are kept with the execution; the stream keeps
	// its newest MaxLen frames (DefaultStreamMaxLen when 0).
	StreamDurable StreamMode = "durable"
	// StreamSummary frames are RFC 7396 JSON merge patches applied to the
	// attempt's summary document, whose version counts the patches; the
	// stream keeps the newest SummaryStreamMaxLen patches.
	StreamSummary StreamMode = "summary"
	// StreamBestEffort frames are for live viewers: the stream keeps the
	// newest K frames, K from the frame rate (see StreamAppendParams.TTL),
	// and while the stream has had no durable or summary frame every
	// frame of it expires 2 × TTL after the last best-effort one.
	StreamBestEffort StreamMode = "best_effort"
)

// Valid reports whether m is a known mode.
func (m StreamMode) Valid() bool {
	return m == StreamDurable || m == StreamSummary || m == StreamBestEffort
}

// Stream limits.
const (
	// MaxFramePayloadBytes caps one frame's payload; a larger one is
	// refused, never truncated.
	MaxFramePayloadBytes = 64 << 10
	// MaxSummaryBytes caps a summary document.
	MaxSummaryBytes = 256 << 10
	// MaxSummaryDepth caps a summary document's nesting.
	MaxSummaryDepth = 16
	// DefaultStreamMaxLen is a durable frame's MaxLen when it names none.
	DefaultStreamMaxLen = 10000
	// MaxStreamMaxLen bounds MaxLen.
	MaxStreamMaxLen = 1000000
	// SummaryStreamMaxLen is how many patch frames a summary append keeps.
	SummaryStreamMaxLen = 64
	// MaxStreamRead bounds a read's Count (§9 bug 14: larger is refused).
	MaxStreamRead = 10000
	// DefaultBestEffortTTL is a best-effort frame's TTL when it names none.
	DefaultBestEffortTTL = 30 * time.Second
	// BestEffortMinLen and BestEffortMaxLen bound the adaptive length K.
	BestEffortMinLen = 64
	BestEffortMaxLen = 16384
)

// StreamCloseReason says why a stream closed: the status its attempt
// ended with (AttemptStatus's names: "ended_success", "ended_failure",
// "ended_cancelled", "interrupted_reclaimed"), or one of the constants
// below.
type StreamCloseReason string

// Stream close reasons besides the attempt statuses.
const (
	// StreamClosedLeaseExpired: the lease was marked expired.
	StreamClosedLeaseExpired StreamCloseReason = "lease_expired"
	// StreamClosedLeaseRevoked: the lease was revoked.
	StreamClosedLeaseRevoked StreamCloseReason = "lease_revoked"
	// StreamClosedNoFrames: the attempt ended, or its lease was marked
	// expired or revoked, before it wrote a frame (ClosedAt is zero). A
	// stream closed by a lost lease stays closed if the attempt resumes
	// later under a new lease.
	StreamClosedNoFrames StreamCloseReason = "no_frames"
)

// Frame is one entry of an attempt stream.
type Frame struct {
	// Sequence numbers the stream's frames from 1, strictly rising, never
	// reused (a trimmed or expired frame's number is not handed out again).
	Sequence uint64
	// Time is when the frame was appended (millisecond precision).
	Time time.Time
	// Type names what the frame is (1–64 bytes of letters, digits, '_',
	// '.' or '-'), e.g. "token", "log", "step".
	Type string
	// Payload is stored as given, binary-safe.
	Payload []byte
	// Encoding optionally says how to read Payload ("json", "text",
	// "binary", ...; at most 64 bytes).
	Encoding string
	// CorrelationID optionally ties frames together (at most 256 bytes).
	CorrelationID string
	Mode          StreamMode
	// SummaryVersion is the summary document's version after this patch
	// (summary frames only).
	SummaryVersion uint64
}

// FrameCorrelationMaxBytes caps Frame.CorrelationID.
const FrameCorrelationMaxBytes = 256

// FrameEncodingMaxBytes caps Frame.Encoding.
const FrameEncodingMaxBytes = 64

// StreamAppendParams appends a frame to the stream of the attempt the
// fence holds. The lease must be live (not expired, not revoked) and the
// fence current, else ErrLeaseExpired, ErrLeaseRevoked or ErrStaleLease; a
// closed stream is ErrStreamClosed. Nothing changes on an error. An
// append is not idempotent: one whose reply was lost may have applied, and
// appending it again adds a second frame (CorrelationID lets readers tell).
//
// A summary frame (Mode StreamSummary) carries the patch as Payload and
// the document after the patch as Summary.Document; the store keeps the
// document only when its version still is Summary.BaseVersion, otherwise
// ErrSummaryConflict (the caller re-reads, re-applies and retries). The
// store does not apply the patch itself: the engine does, in Go, so both
// stores hold byte-identical documents (docs/ARCHITECTURE.md "Streams").
type StreamAppendParams struct {
	ID    ExecutionID
	Fence Fence
	Mode  StreamMode
	// Type, Payload, Encoding and CorrelationID as in Frame.
	Type          string
	Payload       []byte
	Encoding      string
	CorrelationID string
	// MaxLen (durable frames only; 0: DefaultStreamMaxLen) is how many
	// frames the stream keeps after this one, trimmed exactly.
	MaxLen int
	// TTL (best-effort frames only; 0: DefaultBestEffortTTL, else 1s–1h)
	// is how long the frame matters to a live viewer. The stream keeps
	// K = clamp(⌈rate × TTL × 2⌉, BestEffortMinLen, BestEffortMaxLen)
	// frames, rate being an exponential moving average (α 0.2) of the
	// best-effort frame rate.
	TTL time.Duration
	// Summary is required for summary frames and refused for others.
	Summary *SummaryUpdate
	Now     time.Time
}

// SummaryUpdate is the document a summary frame leads to.
type SummaryUpdate struct {
	// BaseVersion is the version the patch was applied to (0: no
	// document yet).
	BaseVersion uint64
	// Document is the JSON document after the patch (1–MaxSummaryBytes).
	Document []byte
}

// Validate checks every field.
func (p *StreamAppendParams) Validate(cfg PartitionConfig) error {
	if !p.Mode.Valid() {
		return invalidField("Mode", "unknown_mode")
	}
	if err := ValidateFrameType("Type", p.Type); err != nil {
		return err
	}
	if len(p.Payload) > MaxFramePayloadBytes {
		return OutOfRange("Payload", len(p.Payload), "0.."+strconv.Itoa(MaxFramePayloadBytes)+" bytes")
	}
	if len(p.Encoding) > FrameEncodingMaxBytes {
		return OutOfRange("Encoding", len(p.Encoding), "0.."+strconv.Itoa(FrameEncodingMaxBytes)+" bytes")
	}
	if len(p.CorrelationID) > FrameCorrelationMaxBytes {
		return OutOfRange("CorrelationID", len(p.CorrelationID), "0.."+strconv.Itoa(FrameCorrelationMaxBytes)+" bytes")
	}
	if p.MaxLen != 0 && (p.Mode != StreamDurable || p.MaxLen < 0 || p.MaxLen > MaxStreamMaxLen) {
		if p.Mode != StreamDurable {
			return invalidField("MaxLen", "durable_only")
		}
		return OutOfRange("MaxLen", p.MaxLen, "0.."+strconv.Itoa(MaxStreamMaxLen))
	}
	if p.TTL != 0 {
		if p.Mode != StreamBestEffort {
			return invalidField("TTL", "best_effort_only")
		}
		if err := checkDuration("TTL", p.TTL, time.Second, time.Hour); err != nil {
			return err
		}
		if p.TTL%time.Millisecond != 0 {
			return invalidField("TTL", "sub_millisecond")
		}
	}
	if (p.Summary != nil) != (p.Mode == StreamSummary) {
		if p.Summary == nil {
			return invalidField("Summary", "missing")
		}
		return invalidField("Summary", "summary_only")
	}
	if p.Summary != nil && (len(p.Summary.Document) == 0 || len(p.Summary.Document) > MaxSummaryBytes) {
		return OutOfRange("Summary.Document", len(p.Summary.Document), "1.."+strconv.Itoa(MaxSummaryBytes)+" bytes")
	}
	return checkFenced(cfg, p.ID, SourceWorker, p.Fence, p.Now)
}

// ValidateFrameType checks a frame type (field names it).
func ValidateFrameType(field, t string) error {
	return validName(field, t, 64, false)
}

// EffectiveTTL returns the TTL a best-effort append uses.
func (p *StreamAppendParams) EffectiveTTL() time.Duration {
	if p.TTL == 0 {
		return DefaultBestEffortTTL
	}
	return p.TTL
}

// EffectiveMaxLen returns how many frames the stream keeps after the
// append: MaxLen (or DefaultStreamMaxLen) for durable frames,
// SummaryStreamMaxLen for summary frames; best-effort frames use
// BestEffortLen instead.
func (p *StreamAppendParams) EffectiveMaxLen() int {
	switch p.Mode {
	case StreamSummary:
		return SummaryStreamMaxLen
	case StreamDurable:
		if p.MaxLen == 0 {
			return DefaultStreamMaxLen
		}
		return p.MaxLen
	}
	return 0
}

// BestEffortRate returns the best-effort frame rate estimate (in frames
// per 1000 s, an integer so both stores compute it alike) after a frame at
// nowMs, given the previous estimate and the previous best-effort frame's
// time (prevAt 0: the first one, seeded so that K starts at
// BestEffortMinLen).
func BestEffortRate(prev, prevAt, nowMs, ttlMs int64) int64 {
	if prevAt == 0 {
		return BestEffortMinLen * 1000000 / (2 * ttlMs)
	}
	dt := nowMs - prevAt
	if dt < 1 {
		dt = 1
	}
	inst := 1000000 / dt
	return (inst*2 + prev*8) / 10
}

// BestEffortLen returns K for a rate estimate (BestEffortRate) and a TTL
// in milliseconds.
func BestEffortLen(rate, ttlMs int64) int64 {
	k := (rate*ttlMs*2 + 999999) / 1000000
	return min(max(k, BestEffortMinLen), BestEffortMaxLen)
}

// StreamAppendResult reports an append.
type StreamAppendResult struct {
	// Sequence is the new frame's number.
	Sequence uint64
	// Frames is how many frames the stream now keeps.
	Frames int
	// SummaryVersion is the document's version after a summary frame (0
	// otherwise).
	SummaryVersion uint64
}

// StreamReadParams reads the frames of one attempt's stream whose
// sequence is above After, oldest first, at most Count (1–MaxStreamRead;
// anything else is refused, not clamped: §9 bug 14).
type StreamReadParams struct {
	ID ExecutionID
	// Attempt is the attempt's index (Attempt.Index: 0 is the first); an
	// index the execution has not reached is ErrAttemptNotFound.
	Attempt int
	After   uint64
	Count   int
	// ExcludeBestEffort skips best-effort frames (they still count
	// towards Count's scan, see StreamReadResult.Next).
	ExcludeBestEffort bool
	Now               time.Time
}

// Validate checks every field.
func (p *StreamReadParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if p.Attempt < 0 {
		return OutOfRange("Attempt", p.Attempt, "0..")
	}
	if p.Count < 1 || p.Count > MaxStreamRead {
		return OutOfRange("Count", p.Count, "1.."+strconv.Itoa(MaxStreamRead))
	}
	return checkNow(p.Now)
}

// StreamReadResult is one page of a stream.
type StreamReadResult struct {
	Frames []Frame
	// Next is the cursor for the next read: the sequence of the last
	// frame this read looked at (returned or skipped), After when none.
	Next uint64
	// LastSequence is the sequence of the stream's newest frame ever
	// appended (0: none), kept or not.
	LastSequence uint64
	// Closed says the stream takes no more frames; ClosedAt and
	// ClosedReason say when and why. An attempt whose stream was never
	// opened reads as closed (StreamClosedNoFrames) once the attempt has
	// ended or its lease was marked expired or revoked; a paused attempt
	// (suspended, delayed, awaiting children) reads as open. Closed never
	// goes back to false. ClosedAt is the closing call's Now: a caller
	// whose clock lags can close a stream at a time before its last
	// frame's (times are the callers', as everywhere in the stores).
	Closed       bool
	ClosedAt     time.Time
	ClosedReason StreamCloseReason
}

// StreamSummaryParams reads an attempt's summary document (Attempt as in
// StreamReadParams).
type StreamSummaryParams struct {
	ID      ExecutionID
	Attempt int
	Now     time.Time
}

// Validate checks every field.
func (p *StreamSummaryParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if p.Attempt < 0 {
		return OutOfRange("Attempt", p.Attempt, "0..")
	}
	return checkNow(p.Now)
}

// StreamSummaryResult is an attempt's summary document (empty, version
// 0, when no summary frame was appended).
type StreamSummaryResult struct {
	Document []byte
	// Version is the number of patches applied.
	Version uint64
	// FirstAppliedAt and UpdatedAt are the first and the last patch's
	// times.
	FirstAppliedAt time.Time
	UpdatedAt      time.Time
}
