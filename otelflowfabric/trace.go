package otelflowfabric

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowfabric/flowfabric"
)

// Attribute keys of this package (the messaging ones come from semconv).
const (
	KeyExecutionID = attribute.Key("flowfabric.execution.id")
	KeyKind        = attribute.Key("flowfabric.kind")
	KeyLane        = attribute.Key("flowfabric.lane")
	KeyNamespace   = attribute.Key("flowfabric.namespace")
	KeyPriority    = attribute.Key("flowfabric.priority")
	KeyAttempt     = attribute.Key("flowfabric.attempt")
	KeyAttemptType = attribute.Key("flowfabric.attempt.type")
	KeyRetryCount  = attribute.Key("flowfabric.retry_count")
	KeyLeaseEpoch  = attribute.Key("flowfabric.lease.epoch")
	KeyOutcome     = attribute.Key("flowfabric.outcome")
	KeyRetryAt     = attribute.Key("flowfabric.retry_at")
	KeyResumeAt    = attribute.Key("flowfabric.resume_at")
	KeyReason      = attribute.Key("flowfabric.reason")
	KeyState       = attribute.Key("flowfabric.state")
	KeyScanner     = attribute.Key("flowfabric.scanner")
)

// Operation names (messaging.operation.name).
const (
	OperationSubmit  = "submit"
	OperationProcess = "process"
)

// SubmitHook returns the submit hook InstrumentEngine installs: it starts
// and ends a producer span "submit <lane>" (a child of the span in ctx),
// writes its trace context into the submission's metadata
// (s.Opts.Metadata, copied first when the caller passed one), and counts
// the submission in flowfabric.submitted. It never refuses a submission.
//
// The span marks the moment of submission: the engine calls hooks before
// it stores the execution, so the span carries no execution id and does
// not cover the store call, and a later hook or the store may still refuse
// the submission (it is counted all the same).
func (i *Instrumentation) SubmitHook() flowfabric.SubmitHook {
	return func(ctx context.Context, s *flowfabric.Submission) error {
		if s.Opts == nil {
			s.Opts = &flowfabric.SubmitOpts{}
		}
		lane := string(s.Opts.Lane)
		if lane == "" {
			lane = string(flowfabric.DefaultLane)
		}
		now := i.clock.Now()
		ctx, span := i.tracer.Start(ctx, OperationSubmit+" "+lane,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithTimestamp(now),
			trace.WithAttributes(i.withBase(
				semconv.MessagingSystemKey.String(System),
				semconv.MessagingOperationName(OperationSubmit),
				semconv.MessagingOperationTypeSend,
				semconv.MessagingDestinationName(lane),
				KeyKind.String(string(s.Kind)),
				KeyPriority.Int(s.Opts.Priority),
			)...))
		injectMetadata(ctx, i.prop, s.Opts)
		span.End(trace.WithTimestamp(now))
		i.m.submitted.Add(ctx, 1, metric.WithAttributeSet(i.laneKind(lane, string(s.Kind))))
		return nil
	}
}

// run is one run of a handler, from the middleware to OnOutcome.
type run struct {
	span  trace.Span
	start time.Time
	lane  string
	kind  string

	mu       sync.Mutex
	lostSeen bool // the lease loss was recorded (event and counter)
}

// middleware starts the attempt span and the run's bookkeeping; onOutcome
// ends them.
func (i *Instrumentation) middleware(next flowfabric.WorkFn) flowfabric.WorkFn {
	return func(ctx context.Context, t *flowfabric.TaskInfo) error {
		sc, bag := extractMetadata(i.prop, t)
		if bag.Len() > 0 {
			ctx = baggage.ContextWithBaggage(ctx, bag) // the submitter's baggage, for the handler
		}
		r := i.startRun(ctx, t, sc)
		ctx = trace.ContextWithSpan(ctx, r.span)
		// the lease taken away while the handler runs: an event at that
		// moment (a context ended for another reason records nothing)
		lossDone := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			defer close(lossDone)
			i.leaseLost(ctx, r, context.Cause(ctx))
		})
		defer func() {
			if !stop() {
				// it has started: let it record before OnOutcome ends the span
				<-lossDone
			}
		}()
		return next(ctx, t)
	}
}

// startRun starts the span of a run of t's handler and counts it.
// The span links to submit, the submit span's context, when it is valid.
func (i *Instrumentation) startRun(ctx context.Context, t *flowfabric.TaskInfo, submit trace.SpanContext) *run {
	now := i.clock.Now()
	lane, kind := string(t.Lane), string(t.Kind)
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithNewRoot(),
		trace.WithTimestamp(now),
		trace.WithAttributes(i.withBase(
			semconv.MessagingSystemKey.String(System),
			semconv.MessagingOperationName(OperationProcess),
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingDestinationName(lane),
			semconv.MessagingMessageID(t.ID.String()),
			KeyExecutionID.String(t.ID.String()),
			KeyKind.String(kind),
			KeyNamespace.String(string(t.Namespace)),
			KeyPriority.Int(t.Priority),
			KeyAttempt.Int(t.Attempt),
			KeyAttemptType.String(t.AttemptType.String()),
			KeyRetryCount.Int(t.RetryCount),
			KeyLeaseEpoch.String(strconv.FormatUint(t.LeaseEpoch, 10)),
		)...),
	}
	if submit.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: submit}))
	}
	_, span := i.tracer.Start(ctx, OperationProcess+" "+lane, opts...)
	if t.Resumed {
		span.AddEvent("flowfabric.resumed", trace.WithTimestamp(now))
	}
	r := &run{span: span, start: now, lane: lane, kind: kind}
	i.mu.Lock()
	i.runs[t] = r
	i.mu.Unlock()
	set := i.laneKind(lane, kind)
	i.m.claimed.Add(ctx, 1, metric.WithAttributeSet(set))
	if t.Attempt == 0 && !t.Resumed && !t.CreatedAt.IsZero() {
		if wait := now.Sub(t.CreatedAt); wait >= 0 {
			i.m.queueWait.Record(ctx, wait.Seconds(), metric.WithAttributeSet(set))
		}
	}
	return r
}

// leaseLost records, once per run, that its lease was taken away: an event
// on the span and flowfabric.lease.lost. Causes other than a lost lease
// (the worker stopping, the run ending) record nothing.
func (i *Instrumentation) leaseLost(ctx context.Context, r *run, cause error) {
	if !errors.Is(cause, flowfabric.ErrLeaseLost) {
		return
	}
	r.mu.Lock()
	seen := r.lostSeen
	r.lostSeen = true
	r.mu.Unlock()
	if seen {
		return
	}
	reason := lossReason(cause)
	r.span.AddEvent("flowfabric.lease_lost", trace.WithTimestamp(i.clock.Now()),
		trace.WithAttributes(KeyReason.String(reason), attribute.String("exception.message", cause.Error())))
	i.m.leaseLost.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(i.withBase(
		KeyLane.String(r.lane), KeyKind.String(r.kind), KeyReason.String(reason))...))
}

// lossReason names why a lease was lost, from the cause's chain.
func lossReason(cause error) string {
	switch {
	case errors.Is(cause, flowfabric.ErrExecutionCancelled):
		return "cancelled"
	case errors.Is(cause, context.DeadlineExceeded):
		return "timed_out"
	case errors.Is(cause, flowfabric.ErrLeaseRevoked):
		return "revoked"
	case errors.Is(cause, flowfabric.ErrLeaseExpired):
		return "expired"
	case errors.Is(cause, flowfabric.ErrNotActive):
		return "overridden"
	}
	return "other"
}

// onOutcome ends the span of t's run with what the engine recorded, and
// counts it.
func (i *Instrumentation) onOutcome(ctx context.Context, t *flowfabric.TaskInfo, o *flowfabric.AttemptOutcome) {
	i.mu.Lock()
	r := i.runs[t]
	delete(i.runs, t)
	i.mu.Unlock()
	if r == nil {
		return // the run did not go through this instrumentation's middleware
	}
	now := i.clock.Now()
	at := trace.WithTimestamp(now)
	span := r.span
	set := i.laneKind(r.lane, r.kind)
	outcome := o.Kind.String()
	switch o.Kind {
	case flowfabric.AttemptCompleted:
		span.SetStatus(codes.Ok, "")
		i.m.completed.Add(ctx, 1, metric.WithAttributeSet(set))
	case flowfabric.AttemptFailed:
		f := o.Failure
		category := ""
		err := errors.New("attempt failed")
		if f != nil {
			category = string(f.Category)
			if f.Err != nil {
				err = f.Err
			}
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(category))
		span.RecordError(err, at)
		span.SetStatus(codes.Error, err.Error())
		if f != nil && f.Retrying {
			outcome = "retrying"
			span.AddEvent("flowfabric.retry_scheduled", at, trace.WithAttributes(KeyRetryAt.String(f.RetryAt.UTC().Format(time.RFC3339Nano))))
			i.m.retried.Add(ctx, 1, metric.WithAttributes(i.withBase(
				KeyLane.String(r.lane), KeyKind.String(r.kind), semconv.ErrorTypeKey.String(category))...))
		} else {
			span.AddEvent("flowfabric.failed", at)
			i.m.failed.Add(ctx, 1, metric.WithAttributes(i.withBase(
				KeyLane.String(r.lane), KeyKind.String(r.kind), semconv.ErrorTypeKey.String(category))...))
		}
	case flowfabric.AttemptSnoozed:
		span.AddEvent("flowfabric.snoozed", at, trace.WithAttributes(KeyResumeAt.String(o.Until.UTC().Format(time.RFC3339Nano))))
	case flowfabric.AttemptSuspended:
		span.AddEvent("flowfabric.suspended", at)
	case flowfabric.AttemptAwaitingChildren:
		span.AddEvent("flowfabric.awaiting_children", at)
	case flowfabric.AttemptCancelled:
		var attrs []attribute.KeyValue
		if o.Err != nil {
			attrs = append(attrs, KeyReason.String(o.Err.Error()))
		}
		span.AddEvent("flowfabric.cancelled", at, trace.WithAttributes(attrs...))
		i.m.cancelled.Add(ctx, 1, metric.WithAttributeSet(set))
	case flowfabric.AttemptNotRecorded:
		err := o.Err
		if err == nil {
			err = errors.New("outcome not recorded")
		}
		i.leaseLost(ctx, r, err) // a loss the store's refusal revealed, if not seen already
		switch {
		case errors.Is(err, flowfabric.ErrExecutionCancelled):
			// an operator cancelled the execution while it ran: not a fault
			span.AddEvent("flowfabric.cancelled", at)
			i.m.cancelled.Add(ctx, 1, metric.WithAttributeSet(set))
		case errors.Is(err, flowfabric.ErrWorkerStopped):
			span.AddEvent("flowfabric.released", at) // handed back for another worker
		default:
			span.RecordError(err, at)
			span.SetStatus(codes.Error, "outcome not recorded: "+err.Error())
		}
	}
	span.SetAttributes(KeyOutcome.String(outcome))
	span.End(at)
	i.m.attemptDuration.Record(ctx, now.Sub(r.start).Seconds(), metric.WithAttributes(i.withBase(
		KeyLane.String(r.lane), KeyKind.String(r.kind), KeyOutcome.String(outcome))...))
}

// laneKind is the attribute set of most measurements.
func (i *Instrumentation) laneKind(lane, kind string) attribute.Set {
	return attribute.NewSet(i.withBase(KeyLane.String(lane), KeyKind.String(kind))...)
}
