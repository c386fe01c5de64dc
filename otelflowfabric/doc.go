// Package otelflowfabric instruments a flowfabric engine and its workers
// with OpenTelemetry: a span per submission and per run of a handler, and
// metrics of submissions, attempts, their outcomes and durations, the
// executions per state and lane, lease losses and scanner passes.
//
// It is a module of its own (github.com/flowfabric/flowfabric/otelflowfabric)
// so that the engine's module does not depend on OpenTelemetry.
//
// # Wiring
//
// Create one Instrumentation per process and hand it the configurations
// before the engine and its workers are built:
//
//	inst := otelflowfabric.New(nil) // the global TracerProvider, MeterProvider and propagator
//	cfg := &flowfabric.Config{}
//	inst.InstrumentEngine(cfg)      // submit hook (span, metadata, counter) and scanner pass durations
//	engine := flowfabric.New(store, cfg)
//	reg, err := inst.ObserveEngine(engine) // executions per state and lane (observable gauge)
//	defer reg.Unregister()
//	wcfg := &flowfabric.WorkerConfig{}
//	inst.InstrumentWorker(wcfg)     // outermost middleware and outcome hook: attempt spans and metrics
//	w := flowfabric.NewWorker(engine, wcfg)
//
// InstrumentEngine appends a submit hook; put hooks that change the lane or
// the kind before it (earlier in Config.SubmitHooks) so the span and the
// counter name the final ones.
//
// # Traces
//
// Each submission (Submit, SubmitRaw, each entry of SubmitMany and each
// node of SubmitFlow) gets a span of kind producer named "submit <lane>",
// a child of the span in the submitting context. Its W3C trace context
// (the configured propagator's fields) is written into the submission's
// metadata (SubmitOpts.Metadata; a map the caller passed is copied, never
// changed) and travels with the execution to every attempt. With a
// propagator that carries baggage (propagation.Baggage), the submitter's
// baggage travels the same way and is in the handler's context.
//
// Each run of a handler gets a span of kind consumer named
// "process <lane>". It starts a new trace and is linked to the submit span
// (read back from TaskInfo.Metadata), not a child of it: an execution may
// run many times over hours or days, long after the submitting trace ended,
// and a link is how OpenTelemetry's messaging conventions relate the
// processing of a message to its creation. The handler's context carries
// the attempt span, so spans the handler starts are its children. The span
// ends when the engine has recorded what became of the run
// (WorkerConfig.OnOutcome), so its duration covers the handler, the other
// middleware and the store call.
//
// Attributes follow the messaging semantic conventions:
// messaging.system "flowfabric", messaging.operation.name ("submit",
// "process") and messaging.operation.type ("send", "process"),
// messaging.destination.name (the lane), messaging.message.id (the
// execution id, on attempt spans), plus flowfabric.kind,
// flowfabric.namespace, flowfabric.priority, flowfabric.execution.id,
// flowfabric.attempt, flowfabric.attempt.type, flowfabric.retry_count,
// flowfabric.lease.epoch and flowfabric.outcome.
//
// Events on the attempt span: "flowfabric.resumed" (the run resumed a
// snoozed, suspended or awaiting attempt), "flowfabric.lease_lost" (when the
// lease was taken away, with its cause), "flowfabric.retry_scheduled" (with
// flowfabric.retry_at), "flowfabric.failed" (failed for good),
// "flowfabric.snoozed" (with flowfabric.resume_at), "flowfabric.suspended",
// "flowfabric.awaiting_children", "flowfabric.cancelled" and
// "flowfabric.released" (the worker stopped and handed the execution
// back). A failed
// attempt has status Error, its error recorded as an exception event and
// error.type set to its failure category ("panic" for a panic, whose stack
// is in the recorded error).
//
// # Metrics
//
// Counters, by flowfabric.lane and flowfabric.kind, of what this process
// did (sum them over processes; each event is counted once, by the process
// where it happened):
//
//	flowfabric.submitted                     submissions seen by the submit hook
//	flowfabric.claimed                       runs of a handler started (attempts claimed, resumed runs too)
//	flowfabric.completed                     executions completed
//	flowfabric.retried                       failed attempts with a retry scheduled
//	flowfabric.failed                        executions failed for good (attribute error.type: the category)
//	flowfabric.cancelled                     executions cancelled by their handler, or by an operator while running
//	flowfabric.lease.lost                    runs whose lease was taken away (attribute flowfabric.reason)
//
// These are the outcomes a worker records. What a scanner records instead
// (an attempt timeout: flowfabric.lease.lost with reason "timed_out" and
// then a retry or an expired execution; a crashed worker's lease expiry;
// an execution deadline) and an operator's cancel of an execution no
// worker runs show in the flowfabric.executions gauge below.
//
// Histograms, in seconds:
//
//	flowfabric.attempt.duration              a run from its start to its recorded outcome (attribute flowfabric.outcome)
//	flowfabric.queue.wait                    a first attempt's start minus the execution's creation (it includes a Delay or RunAt)
//	flowfabric.scanner.pass.duration         a background scanner's pass (attribute flowfabric.scanner)
//
// And, from Engine.Counts on every collection, the observable gauge
// flowfabric.executions by flowfabric.namespace, flowfabric.lane and
// flowfabric.state (the public state); a lane and state seen once is
// reported as 0 when it empties. Count also executions the workers of this
// process never see (cancelled while waiting, expired): one process in
// the cluster, or a dedicated one, should call ObserveEngine, since every
// engine sharing a store reports the same numbers.
//
// For the ends of every execution, however they came about, WatchEnded
// reads the store's durable completions feed (the store must keep it) and
// counts flowfabric.executions.ended by lane, kind and flowfabric.outcome;
// like the gauge, run it in one process per cluster.
//
// Durations are read from Options.Clock (the wall clock by default; a
// test passes the engine's simulated clock), and so are the timestamps of
// spans and events.
package otelflowfabric
