package sim

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/proptest"
)

// Suspension in the simulation (issue 11). The store wrapper faults the
// model.SuspendStore calls like any other (the fenced ones, WaitpointCreate
// and ExecutionSuspend, may also be delivered again much later); three
// handler kinds suspend:
//
//	sus       suspends on a fresh waitpoint for a signal named "go"
//	          (sometimes operator-only, or timeout-only: a durable sleep)
//	prewait   creates a pending waitpoint first and hands its token to the
//	          outside world (sometimes a second one it never suspends on,
//	          with a short TTL, for the expiry scanner), maybe waits a
//	          little (the answer may come first: the AlreadySatisfied
//	          path), then suspends on it, on a fresh one with SignalOn it,
//	          or on AllOf both
//	approve2  suspends for CountOf(2, DistinctSources, "approve"), on a
//	          fresh waitpoint or on a pending one created first
//
// each sometimes with a timeout (every behaviour), a reason, and a resume
// delay. Resumed, a handler reads TaskInfo.Signals, checks them and
// completes with their payloads.
//
// The outside world is a driver actor: it learns tokens from the handlers
// (the registry below) and from Engine.Waitpoints, delivers signals (the
// wanted names, noise, distinct approvers, fresh idempotency keys, reused
// ones, now and then a short dedup TTL), repeats earlier deliveries
// exactly, delivers to waitpoints that closed, and acts as an operator
// (Engine.Resume, Engine.Cancel of suspended executions). At the drain it
// answers every open suspension with what its condition asks: the signals,
// through Engine.Waitpoints' tokens (three times in four), or an operator
// Resume (otherwise, and always for operator-only); a timeout-only one
// waits for its timeout. An answer is repeated if the suspension is still
// open 30 simulated seconds later.
//
// Checks: every call (after): a signal the store took (not a duplicate)
// found its waitpoint pending (effect buffered) or active (accepted,
// resumed or ignored), never closed; a refusal as closed found it closed
// and was not a redelivery within the key's TTL; a duplicate names the
// first delivery of its key, within its TTL; a second delivery with a key
// seen on the waitpoint within its TTL is never counted again; an
// AlreadySatisfied suspend's signals satisfy its condition; a suspend
// leaves the execution suspended and a resume leaves it runnable; Suspend
// and WaitpointCreate are fenced writes, accepted only from the live lease
// (as the outcomes). A resumed handler: its attempt is the one its last
// suspension paused; when a signal (or buffered signals) closed it, the
// signals the handler reads satisfy the condition and include the one whose
// delivery reported "resumed"; no key counted twice. Every checkpoint: the
// suspension and waitpoint rules of internal/invariant (here only for an
// execution proptest's Observation did not read the suspension of; its
// Violations apply them otherwise), distinct signal ids per waitpoint (a
// delivery the network repeated replays: seed 1102 found the stores
// storing it twice) and no key counted twice within
// its TTL; a timeout fired when due and by its behaviour. The drain: every
// acknowledged execution ends, suspended ones included.

var _ model.SuspendStore = (*Store)(nil)

func (s *Store) susp() model.SuspendStore { return s.Store.(model.SuspendStore) }

// WaitpointCreate implements model.SuspendStore.
func (s *Store) WaitpointCreate(ctx context.Context, p *model.WaitpointCreateParams) (*model.WaitpointCreateResult, error) {
	return call(s, "WaitpointCreate", p, s.susp().WaitpointCreate)
}

// ExecutionSuspend implements model.SuspendStore.
func (s *Store) ExecutionSuspend(ctx context.Context, p *model.ExecutionSuspendParams) (*model.ExecutionSuspendResult, error) {
	return call(s, "Suspend", p, s.susp().ExecutionSuspend)
}

// SignalDeliver implements model.SuspendStore.
func (s *Store) SignalDeliver(ctx context.Context, p *model.SignalDeliverParams) (*model.SignalDeliverResult, error) {
	return call(s, "Signal", p, s.susp().SignalDeliver)
}

// ExecutionResume implements model.SuspendStore.
func (s *Store) ExecutionResume(ctx context.Context, p *model.ExecutionResumeParams) (*model.ExecutionResumeResult, error) {
	return call(s, "Resume", p, s.susp().ExecutionResume)
}

// SuspensionExpire implements model.SuspendStore.
func (s *Store) SuspensionExpire(ctx context.Context, p *model.SuspensionExpireParams) (*model.SuspensionExpireResult, error) {
	return call(s, "SuspensionExpire", p, s.susp().SuspensionExpire)
}

// WaitpointExpire implements model.SuspendStore.
func (s *Store) WaitpointExpire(ctx context.Context, p *model.WaitpointExpireParams) (*model.WaitpointExpireResult, error) {
	return call(s, "WaitpointExpire", p, s.susp().WaitpointExpire)
}

// SuspensionDescribe implements model.SuspendStore (a read the engine
// makes: TaskInfo.Signals, Engine.Suspension; faulted as Describe is).
func (s *Store) SuspensionDescribe(ctx context.Context, p *model.SuspensionDescribeParams) (*model.SuspensionSnapshot, error) {
	return call(s, "SuspensionDescribe", p, s.susp().SuspensionDescribe)
}

// WaitpointList implements model.SuspendStore (a read the engine makes:
// Engine.Waitpoints).
func (s *Store) WaitpointList(ctx context.Context, p *model.WaitpointListParams) (*model.WaitpointListResult, error) {
	return call(s, "WaitpointList", p, s.susp().WaitpointList)
}

// SuspendedList implements model.SuspendStore (not called by the engine's
// own paths).
func (s *Store) SuspendedList(ctx context.Context, p *model.SuspendedListParams) (*model.SuspendedListResult, error) {
	return s.susp().SuspendedList(ctx, p)
}

// SignalFeed implements model.SuspendStore (a read the engine's own paths
// do not call: no faults).
func (s *Store) SignalFeed(ctx context.Context, p *model.SignalFeedParams) (*model.SignalFeedResult, error) {
	return s.susp().SignalFeed(ctx, p)
}

// waitpointKeys signs the simulated engines' tokens (every process shares
// it, as a deployment must).
var waitpointKeys = func() *flowfabric.KeyRing {
	r, err := flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "sim", Secret: []byte("the simulator's fixed waitpoint secret, not a real one")})
	if err != nil {
		panic(err)
	}
	return r
}()

// suspendKinds are the handler kinds that suspend.
var suspendKinds = []model.Kind{"sus", "prewait", "approve2"}

// sources are the outside world's approvers.
var sources = []string{"approver:alice", "approver:bob", "approver:carol"}

// wantName is the signal name a kind's conditions read.
func wantName(k model.Kind) string {
	if k == "approve2" {
		return "approve"
	}
	return "go"
}

// knownToken is a waitpoint token the outside world learned.
type knownToken struct {
	exec  model.ExecutionID
	wp    model.WaitpointID
	token string
	name  string // the name the condition reads
	keys  []string
}

// sentSignal is a delivery the outside world made, kept to repeat it.
type sentSignal struct {
	tok *knownToken
	in  flowfabric.SignalInput
}

// dedupKey names an idempotency key on one waitpoint.
type dedupKey struct {
	wp  model.WaitpointID
	key string
}

// firstDelivery is the delivery that a key's later deliveries duplicate.
type firstDelivery struct {
	signal model.SignalID
	until  time.Time // the end of its dedup TTL
}

// resumeSignal is the signal whose delivery resumed a suspension.
type resumeSignal struct {
	susp   model.SuspensionID
	signal model.SignalID
}

// outboxItem is a delivery the outside world will make soon, at each
// step with probability 3/4 (the answer to a token a handler just sent
// out, which may come before the handler suspends).
type outboxItem struct {
	tok    *knownToken
	source string
}

// suspendState is the world's suspension part.
type suspendState struct {
	kindOf  map[model.ExecutionID]model.Kind
	susIDs  []model.ExecutionID // executions of suspend kinds, in first-run order
	tokens  []*knownToken
	tokenOf map[model.WaitpointID]*knownToken
	sent    []sentSignal
	outbox  []outboxItem
	nsig    int
	first   map[dedupKey]firstDelivery
	// stored are the signal ids a delivery stored (a replay must name
	// one).
	stored   map[model.SignalID]bool
	resumed  map[model.ExecutionID]resumeSignal
	answered map[model.SuspensionID]time.Time // drain answers
	preWP    *model.WaitpointSnapshot         // the waitpoint before a SignalDeliver
	preSusp  *model.SuspensionSnapshot        // the suspension before a SuspensionExpire
	// lastNow is, per waitpoint, the latest Now of a delivery the store
	// applied: the store forgets a key once a delivery's Now is past its
	// TTL, so a later delivery carrying an older Now (a stalled caller)
	// may find it forgotten.
	lastNow map[model.WaitpointID]time.Time
	// forgot holds the signals stored with a key the store had already
	// forgotten that way (countedTwice lets them be).
	forgot map[model.SignalID]bool
	stats  SuspendStats
}

// SuspendStats count what the suspension workload did in a run.
type SuspendStats struct {
	// Suspended counts suspends that parked, AlreadySatisfied those the
	// buffered signals satisfied at once.
	Suspended, AlreadySatisfied int
	// Signals counts signals the store took (not duplicates); Resumed
	// those that resumed; Duplicates deliveries answered as duplicates;
	// Closed deliveries refused by a closed waitpoint.
	Signals, Resumed, Duplicates, Closed int
	// OperatorResumes, Timeouts (fired: fail, cancel, expire, resume or
	// escalate) and ResumedRuns (handlers that ran resumed and checked
	// their signals).
	OperatorResumes, Timeouts, ResumedRuns int
}

// Add adds o's counts to s.
func (s *SuspendStats) Add(o SuspendStats) {
	s.Suspended += o.Suspended
	s.AlreadySatisfied += o.AlreadySatisfied
	s.Signals += o.Signals
	s.Resumed += o.Resumed
	s.Duplicates += o.Duplicates
	s.Closed += o.Closed
	s.OperatorResumes += o.OperatorResumes
	s.Timeouts += o.Timeouts
	s.ResumedRuns += o.ResumedRuns
}

func newSuspendState() suspendState {
	return suspendState{
		kindOf: map[model.ExecutionID]model.Kind{}, tokenOf: map[model.WaitpointID]*knownToken{},
		first: map[dedupKey]firstDelivery{}, resumed: map[model.ExecutionID]resumeSignal{}, stored: map[model.SignalID]bool{},
		answered: map[model.SuspensionID]time.Time{}, lastNow: map[model.WaitpointID]time.Time{},
		forgot: map[model.SignalID]bool{},
	}
}

// learn records a token the outside world now knows.
func (w *world) learn(id model.ExecutionID, wp model.WaitpointID, token, name, from string) *knownToken {
	if t := w.sus.tokenOf[wp]; t != nil {
		return t
	}
	t := &knownToken{exec: id, wp: wp, token: token, name: name}
	w.sus.tokens = append(w.sus.tokens, t)
	w.sus.tokenOf[wp] = t
	w.logf("outside world learns a token of %s (%s)", w.alias(id), from)
	return t
}

// register notes an execution of a suspend kind when its handler runs.
func (w *world) register(id model.ExecutionID, k model.Kind) {
	if _, ok := w.sus.kindOf[id]; !ok {
		w.sus.kindOf[id] = k
		w.sus.susIDs = append(w.sus.susIDs, id)
	}
}

// suspendOpts draws a suspension's options.
func (w *world) suspendOpts() (*flowfabric.SuspendOpts, string) {
	o := &flowfabric.SuspendOpts{}
	var desc []string
	if w.rng.IntN(3) == 0 {
		o.Reason = flowfabric.SuspendReason(1 + w.rng.IntN(5))
		desc = append(desc, "reason "+o.Reason.String())
	}
	if w.rng.IntN(3) == 0 {
		o.Timeout = w.dur(2*time.Second, time.Minute)
		if w.rng.IntN(10) == 0 {
			o.Timeout = w.dur(time.Minute, 5*time.Minute)
		}
		o.OnTimeout = flowfabric.TimeoutBehavior(w.rng.IntN(6)) // 0: the default (fail)
		desc = append(desc, fmt.Sprintf("timeout %v→%s", o.Timeout, map[bool]string{true: "default", false: o.OnTimeout.String()}[o.OnTimeout == 0]))
	}
	if w.rng.IntN(4) == 0 {
		o.Resume.Delay = w.dur(100*time.Millisecond, 3*time.Second)
		desc = append(desc, fmt.Sprintf("resume delay %v", o.Resume.Delay))
	}
	return o, strings.Join(desc, ", ")
}

// suspendHandler returns the handler of suspend kind k.
func (w *world) suspendHandler(k model.Kind) func(ctx context.Context, info *flowfabric.TaskInfo) error {
	return func(ctx context.Context, info *flowfabric.TaskInfo) error {
		w.register(info.ID, k)
		if info.Resumed {
			return w.resumedRun(ctx, info)
		}
		opts, desc := w.suspendOpts()
		var cond flowfabric.ResumeCondition
		var shape string
		// pending creates a pending waitpoint and hands its token out.
		pending := func(ttl time.Duration) (*flowfabric.Waitpoint, error) {
			wp, err := info.CreateWaitpoint(ctx, &flowfabric.WaitpointOpts{TTL: ttl})
			if err != nil {
				return nil, err
			}
			w.learn(info.ID, wp.ID, wp.Token, wantName(k), "from its handler")
			return wp, nil
		}
		// answerSoon lets the outside world answer t soon, and maybe
		// waits for it before suspending.
		answerSoon := func(wp *flowfabric.Waitpoint) error {
			t := w.sus.tokenOf[wp.ID]
			n := 1
			if k == "approve2" {
				n = 2
			}
			wait := time.Duration(0)
			if w.rng.IntN(3) > 0 {
				wait = w.dur(500*time.Millisecond, 3*time.Second)
			}
			first := w.rng.IntN(len(sources))
			for i := range n {
				w.sus.outbox = append(w.sus.outbox, outboxItem{tok: t, source: sources[(first+i)%len(sources)]})
			}
			if wait > 0 {
				if err := w.sched.Wait(ctx, wait, nil); err != nil {
					return context.Cause(ctx)
				}
			}
			return nil
		}
		switch k {
		case "sus":
			cond, shape = flowfabric.SignalFor("go"), "signal go"
			switch w.rng.IntN(10) {
			case 0:
				cond, shape = flowfabric.OperatorOnly(), "operator only"
			case 1:
				if opts.Timeout > 0 && opts.OnTimeout != flowfabric.TimeoutEscalate {
					cond, shape = flowfabric.TimeoutOnly(), "timeout only"
				}
			}
		case "prewait":
			wp, err := pending(w.dur(time.Minute, 10*time.Minute))
			if err != nil {
				return err
			}
			if w.rng.IntN(3) == 0 {
				// a second one it never suspends on: it expires pending
				if _, err := pending(w.dur(time.Second, 20*time.Second)); err != nil {
					return err
				}
			}
			if err := answerSoon(wp); err != nil {
				return err
			}
			switch w.rng.IntN(3) {
			case 0:
				cond, shape = flowfabric.SignalFor("go"), "signal go on its pending waitpoint"
				opts.Waitpoint = wp
			case 1:
				cond, shape = flowfabric.SignalOn(wp.ID, "go"), "signal go on the pending waitpoint (own fresh)"
			default:
				cond, shape = flowfabric.AllOf(flowfabric.SignalOn(wp.ID, "go"), flowfabric.SignalFor("go")), "all of the pending and a fresh waitpoint"
			}
		case "approve2":
			cond, shape = flowfabric.CountOf(2, flowfabric.DistinctSources, "approve"), "2 approvers"
			if w.rng.IntN(2) == 0 {
				wp, err := pending(w.dur(time.Minute, 10*time.Minute))
				if err != nil {
					return err
				}
				if err := answerSoon(wp); err != nil {
					return err
				}
				if w.rng.IntN(2) == 0 {
					opts.Waitpoint = wp
					shape = "2 approvers on its pending waitpoint"
				} else {
					cond, shape = flowfabric.CountOf(2, flowfabric.DistinctSources, "approve", wp.ID), "2 approvers on the pending waitpoint (own fresh)"
				}
			}
		}
		w.logf("%s %s (%s) suspends: %s %s", w.who(), w.alias(info.ID), k, shape, desc)
		return flowfabric.Suspend(cond, opts)
	}
}

// resumedRun is a suspend kind's handler run after its suspension ended:
// it reads and checks its signals and completes with their payloads.
func (w *world) resumedRun(ctx context.Context, info *flowfabric.TaskInfo) error {
	sigs, err := info.Signals(ctx)
	if err != nil {
		return err // a transport error: fail the attempt
	}
	a := w.alias(info.ID)
	if x, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: info.ID}); err != nil ||
		x.State.LifecyclePhase != model.PhaseActive || x.LeaseEpoch != info.LeaseEpoch {
		// a stale run (its process stalled past its lease): the
		// execution went on without it; its outcome will be refused
		w.logf("%s %s resumed under a lost lease e%d", w.who(), a, info.LeaseEpoch)
		return nil
	}
	w.sus.stats.ResumedRuns++
	sp, err := w.raw.SuspensionDescribe(context.Background(), &model.SuspensionDescribeParams{ID: info.ID})
	if err != nil {
		w.violate("%s runs resumed (attempt %d) without a suspension: %v", a, info.Attempt, errCode(err))
		return nil
	}
	if sp.AttemptIndex != info.Attempt || sp.ClosedAt.IsZero() {
		w.violate("%s runs resumed in attempt %d; its last suspension paused attempt %d, closed %v", a, info.Attempt,
			sp.AttemptIndex, !sp.ClosedAt.IsZero())
	}
	switch sp.ClosedBy {
	case model.ClosedBySignal, model.ClosedSatisfied:
		if !sp.Condition.Satisfied(sp.Waitpoint, delivered(sigs)) {
			w.violate("%s resumed (%s) but the %d signals it reads do not satisfy its condition %s", a, sp.ClosedBy, len(sigs), sp.Condition.Kind)
		}
	}
	if rs, ok := w.sus.resumed[info.ID]; ok && rs.susp == sp.ID && !slices.ContainsFunc(sigs, func(s model.SignalRecord) bool { return s.ID == rs.signal }) {
		w.violate("%s resumed by signal %s, which the resumed handler does not read", a, rs.signal)
	}
	if msg := w.countedTwice(sigs); msg != "" {
		w.violate("%s reads %s", a, msg)
	}
	var parts []string
	for _, s := range sigs {
		parts = append(parts, s.Name+"="+string(s.Payload))
	}
	w.logf("%s %s resumed (%s) reads %d signals: %s", w.who(), a, sp.ClosedBy, len(sigs), strings.Join(parts, ","))
	return info.SetResult([]byte(strings.Join(parts, ",")))
}

// delivered is what a condition reads of sigs.
func delivered(sigs []model.SignalRecord) []model.DeliveredSignal {
	out := make([]model.DeliveredSignal, len(sigs))
	for i := range sigs {
		out[i] = sigs[i].Delivered()
	}
	return out
}

// countedTwice finds, in signals of one suspension or waitpoint, a signal
// id stored twice or an idempotency key counted twice on one waitpoint
// within its dedup TTL ("" when none).
func (w *world) countedTwice(sigs []model.SignalRecord) string {
	ids := map[model.SignalID]bool{}
	keys := map[dedupKey]time.Time{}
	for _, s := range sigs {
		if ids[s.ID] {
			return fmt.Sprintf("signal %s stored twice (on waitpoint %s)", s.ID, s.Waitpoint)
		}
		ids[s.ID] = true
		if s.IdempotencyKey == "" {
			continue
		}
		k := dedupKey{s.Waitpoint, s.IdempotencyKey}
		if at, ok := keys[k]; ok && !w.sus.forgot[s.ID] && s.DeliveredAt.Before(at.Add(keyTTL(s.IdempotencyKey))) {
			return fmt.Sprintf("idempotency key %q counted twice on waitpoint %s (%v apart)", s.IdempotencyKey, s.Waitpoint, s.DeliveredAt.Sub(at))
		}
		keys[k] = s.DeliveredAt
	}
	return ""
}

// shortTTL is the dedup TTL of keys named "t…"; the others use the default.
const shortTTL = 2 * time.Second

func keyTTL(key string) time.Duration {
	if strings.HasPrefix(key, "t") {
		return shortTTL
	}
	return model.DefaultSignalDedupTTL
}

// outsideTick makes some of the outside world's pending answers.
func (w *world) outsideTick() {
	live := w.live()
	if len(live) == 0 {
		return
	}
	for i := 0; i < len(w.sus.outbox); {
		it := w.sus.outbox[i]
		if w.rng.IntN(4) == 0 {
			i++
			continue
		}
		w.sus.outbox = slices.Delete(w.sus.outbox, i, i+1)
		in := w.signalInput(it.tok, true)
		in.Source = it.source
		w.deliver(pick(w, live), it.tok, in)
	}
}

// signalInput draws a signal for t: mostly the name it waits for, a
// random approver, an idempotency key fresh, reused or none. right asks
// for a proper answer: the name it waits for, a fresh key.
func (w *world) signalInput(t *knownToken, right bool) flowfabric.SignalInput {
	w.sus.nsig++
	in := flowfabric.SignalInput{Name: t.name, Source: pick(w, sources), Payload: []byte(fmt.Sprintf("s%d", w.sus.nsig))}
	if !right && w.rng.IntN(5) == 0 {
		in.Name = "noise"
	}
	r := w.rng.IntN(8)
	if right && r >= 5 {
		r = 0 // a proper answer: a fresh key
	}
	switch {
	case r < 4:
		in.IdempotencyKey = fmt.Sprintf("k%d", w.sus.nsig)
	case r < 5:
		in.IdempotencyKey = fmt.Sprintf("t%d", w.sus.nsig)
		in.DedupTTL = shortTTL
	case r < 7 && len(t.keys) > 0:
		// the same key again (a webhook's retry, maybe with another body)
		in.IdempotencyKey = pick(w, t.keys)
		if strings.HasPrefix(in.IdempotencyKey, "t") {
			in.DedupTTL = shortTTL
		}
	}
	if in.IdempotencyKey != "" && !slices.Contains(t.keys, in.IdempotencyKey) {
		t.keys = append(t.keys, in.IdempotencyKey)
	}
	return in
}

// deliver delivers in with t's token through p's engine, in a proc of p.
func (w *world) deliver(p *process, t *knownToken, in flowfabric.SignalInput) {
	w.sus.sent = append(w.sus.sent, sentSignal{tok: t, in: in})
	if len(w.sus.sent) > 64 {
		w.sus.sent = w.sus.sent[1:]
	}
	w.spawn(p, func() {
		d, err := p.engine.DeliverSignal(context.Background(), t.token, &in)
		if err != nil {
			w.logf("P%d outside world signal %s %s key %q to %s: %s", p.n, in.Name, in.Source, in.IdempotencyKey, w.alias(t.exec), errCode(err))
			return
		}
		w.logf("P%d outside world signal %s %s key %q to %s: %s%s, %s", p.n, in.Name, in.Source, in.IdempotencyKey, w.alias(t.exec),
			d.Effect, map[bool]string{true: " (" + d.Ignored + ")", false: ""}[d.Ignored != ""], d.State)
	})
}

// outside takes one step of the outside world through p's engine.
func (w *world) outside(p *process) {
	ctx := context.Background()
	switch r := w.rng.IntN(20); {
	case r < 8:
		if len(w.sus.tokens) == 0 {
			return
		}
		t := pick(w, w.sus.tokens)
		w.deliver(p, t, w.signalInput(t, false))
	case r < 12:
		// learn the tokens of a suspended execution's open waitpoints
		if len(w.sus.susIDs) == 0 {
			return
		}
		id := pick(w, w.sus.susIDs)
		w.spawn(p, func() {
			wps, err := p.engine.Waitpoints(ctx, id)
			if err != nil {
				w.logf("P%d outside world waitpoints of %s: %s", p.n, w.alias(id), errCode(err))
				return
			}
			for _, wp := range wps {
				if wp.Token != "" {
					w.learn(id, wp.ID, wp.Token, wantName(w.sus.kindOf[id]), "by Engine.Waitpoints")
				}
			}
		})
	case r < 14:
		// an earlier delivery again, exactly (a retried webhook)
		if len(w.sus.sent) == 0 {
			return
		}
		s := pick(w, w.sus.sent)
		w.deliver(p, s.tok, s.in)
	case r < 16:
		// a waitpoint that closed
		var closed []*knownToken
		for _, t := range w.sus.tokens {
			if wp := w.rawWaitpoint(t.exec, t.wp); wp != nil && wp.State == model.WaitpointClosed {
				closed = append(closed, t)
			}
		}
		if len(closed) == 0 {
			return
		}
		t := pick(w, closed)
		w.deliver(p, t, w.signalInput(t, true))
	case r < 18:
		if w.o.NoOperator {
			return
		}
		id, ok := w.pickSuspended(true)
		if !ok {
			return
		}
		w.spawn(p, func() { w.logf("P%d operator resume %s: %s", p.n, w.alias(id), errCode(p.engine.Resume(ctx, id))) })
	default:
		if w.o.NoOperator {
			return
		}
		id, ok := w.pickSuspended(false)
		if !ok {
			return
		}
		w.spawn(p, func() {
			w.logf("P%d operator cancel suspended %s: %s", p.n, w.alias(id), errCode(p.engine.Cancel(ctx, id, "operator")))
		})
	}
}

// pickSuspended picks an execution of a suspend kind that is suspended
// now (any of them, sometimes, when orAny is true).
func (w *world) pickSuspended(orAny bool) (model.ExecutionID, bool) {
	var ids []model.ExecutionID
	for _, id := range w.sus.susIDs {
		if s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: id}); err == nil &&
			s.State.LifecyclePhase == model.PhaseSuspended {
			ids = append(ids, id)
		}
	}
	if orAny && len(w.sus.susIDs) > 0 && (len(ids) == 0 || w.rng.IntN(4) == 0) {
		return pick(w, w.sus.susIDs), true
	}
	if len(ids) == 0 {
		return model.ExecutionID{}, false
	}
	return pick(w, ids), true
}

// rawWaitpoint reads one waitpoint from the real store (nil: none).
func (w *world) rawWaitpoint(id model.ExecutionID, wp model.WaitpointID) *model.WaitpointSnapshot {
	res, err := w.raw.WaitpointList(context.Background(), &model.WaitpointListParams{ID: id})
	if err != nil {
		return nil
	}
	for i := range res.Waitpoints {
		if res.Waitpoints[i].ID == wp {
			return &res.Waitpoints[i]
		}
	}
	return nil
}

// beforeSuspend reads what a suspension call is about to change.
func (w *world) beforeSuspend(op string, p any) {
	w.sus.preWP, w.sus.preSusp = nil, nil
	switch pp := p.(type) {
	case *model.SignalDeliverParams:
		w.sus.preWP = w.rawWaitpoint(pp.Execution, pp.Waitpoint)
	case *model.SuspensionExpireParams:
		if sp, err := w.raw.SuspensionDescribe(context.Background(), &model.SuspensionDescribeParams{ID: pp.ID}); err == nil {
			w.sus.preSusp = sp
		}
	}
}

// afterSuspend checks a suspension call just applied, with its real reply.
func (w *world) afterSuspend(op string, p any, r any, err error) {
	ctx := context.Background()
	switch op {
	case "Signal":
		sp := p.(*model.SignalDeliverParams)
		res, _ := r.(*model.SignalDeliverResult)
		w.afterSignal(sp, res, err)
	case "Suspend":
		sp := p.(*model.ExecutionSuspendParams)
		res, _ := r.(*model.ExecutionSuspendResult)
		if err != nil || res == nil || res.Replayed {
			return
		}
		a := w.alias(sp.ID)
		switch res.Outcome {
		case model.SuspendAlreadySatisfied:
			w.sus.stats.AlreadySatisfied++
			if !sp.Condition.Satisfied(sp.Waitpoint, delivered(res.Signals)) {
				w.violate("%s suspend already satisfied by %d signals that do not satisfy its condition", a, len(res.Signals))
			}
			if msg := w.countedTwice(res.Signals); msg != "" {
				w.violate("%s suspend already satisfied: %s", a, msg)
			}
		case model.Suspended:
			w.sus.stats.Suspended++
			if s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: sp.ID}); err != nil || s.State.LifecyclePhase != model.PhaseSuspended {
				w.violate("%s suspend reported suspended, but the execution is not", a)
			}
		}
	case "Resume":
		if err != nil {
			return
		}
		w.sus.stats.OperatorResumes++
		id := p.(*model.ExecutionResumeParams).ID
		if s, err := w.raw.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id}); err != nil || s.State.LifecyclePhase != model.PhaseRunnable {
			w.violate("%s resumed by an operator, but it is not runnable", w.alias(id))
		}
	case "SuspensionExpire":
		res, _ := r.(*model.SuspensionExpireResult)
		if err != nil || res == nil || res.Outcome < model.SuspensionExpireFailed {
			return
		}
		w.sus.stats.Timeouts++
		pp, pre := p.(*model.SuspensionExpireParams), w.sus.preSusp
		want := map[model.TimeoutBehavior]model.SuspensionExpireOutcome{
			model.TimeoutFail: model.SuspensionExpireFailed, model.TimeoutCancel: model.SuspensionExpireCancelled,
			model.TimeoutExpire: model.SuspensionExpireExpired, model.TimeoutAutoResume: model.SuspensionExpireResumed,
			model.TimeoutEscalate: model.SuspensionExpireEscalated,
		}
		b := model.TimeoutFail
		if pre != nil && pre.TimeoutBehavior != 0 {
			b = pre.TimeoutBehavior
		}
		switch {
		case pre == nil || !pre.ClosedAt.IsZero() || pre.TimeoutAt.IsZero():
			w.violate("%s timed out (%s) without an open suspension with a timeout", w.alias(pp.ID), res.Outcome)
		case pp.Now.Before(pre.TimeoutAt):
			w.violate("%s timed out (%s) %v before its timeout", w.alias(pp.ID), res.Outcome, pre.TimeoutAt.Sub(pp.Now))
		case want[b] != res.Outcome:
			w.violate("%s timed out %s, its behaviour is %s", w.alias(pp.ID), res.Outcome, b)
		}
	}
}

// afterSignal checks one applied SignalDeliver.
func (w *world) afterSignal(p *model.SignalDeliverParams, res *model.SignalDeliverResult, err error) {
	a := w.alias(p.Execution)
	pre := w.sus.preWP
	k := dedupKey{p.Waitpoint, p.IdempotencyKey}
	first, seen := w.sus.first[k]
	// a key an earlier delivery's later Now let the store forget is not
	// within its TTL for this one (long runs, seeds 17, 27, 39, 97)
	forgotten := seen && !w.sus.lastNow[p.Waitpoint].Before(first.until)
	if p.Now.After(w.sus.lastNow[p.Waitpoint]) {
		w.sus.lastNow[p.Waitpoint] = p.Now
	}
	within := seen && !forgotten && p.Now.Before(first.until.Add(-time.Millisecond))
	past := seen && p.Now.After(first.until.Add(time.Millisecond))
	if err != nil {
		if model.CodeOf(err) == model.CodeWaitpointClosed {
			w.sus.stats.Closed++
			if pre == nil || pre.State != model.WaitpointClosed {
				w.violate("signal to %s refused as closed by a waitpoint that was %v", a, wpState(pre))
			}
			if within {
				w.violate("signal to %s with key %q refused as closed within the key's TTL (a duplicate of %s)", a, p.IdempotencyKey, first.signal)
			}
		}
		return
	}
	if res.Effect == model.SignalDuplicate {
		w.sus.stats.Duplicates++
		switch {
		case p.IdempotencyKey == "":
			w.violate("signal to %s without a key answered as a duplicate", a)
		case !seen:
			w.violate("signal to %s with key %q answered as a duplicate of %s, a key never taken", a, p.IdempotencyKey, res.Signal)
		case first.signal != res.Signal:
			w.violate("signal to %s with key %q: a duplicate of %s, but the key's first delivery was %s", a, p.IdempotencyKey, res.Signal, first.signal)
		case past:
			w.violate("signal to %s with key %q answered as a duplicate %v after the key's TTL", a, p.IdempotencyKey, p.Now.Sub(first.until))
		}
		return
	}
	if res.Replayed {
		// the same delivery applied again (the network repeated it)
		if res.Signal != p.Signal || !w.sus.stored[p.Signal] {
			w.violate("signal %s to %s replayed as %s, a signal never stored", p.Signal, a, res.Signal)
		}
		return
	}
	w.sus.stored[res.Signal] = true
	if forgotten {
		w.sus.forgot[res.Signal] = true
	}
	w.sus.stats.Signals++
	if within {
		w.violate("signal to %s with key %q counted twice within the key's TTL (first %s, now %s %s)", a, p.IdempotencyKey,
			first.signal, res.Signal, res.Effect)
	}
	if p.IdempotencyKey != "" {
		ttl := p.DedupTTL
		if ttl == 0 {
			ttl = model.DefaultSignalDedupTTL
		}
		w.sus.first[k] = firstDelivery{signal: res.Signal, until: p.Now.Add(ttl)}
	}
	switch {
	case pre == nil || pre.State == model.WaitpointClosed:
		w.violate("signal to %s taken (%s) by a waitpoint that was %v", a, res.Effect, wpState(pre))
	case pre.State == model.WaitpointPending && res.Effect != model.SignalBuffered:
		w.violate("signal to %s on a pending waitpoint: %s, want buffered", a, res.Effect)
	case pre.State == model.WaitpointActive && res.Effect == model.SignalBuffered:
		w.violate("signal to %s on an active waitpoint: buffered", a)
	}
	if res.Effect == model.SignalResumed {
		w.sus.stats.Resumed++
		sp, err := w.raw.SuspensionDescribe(context.Background(), &model.SuspensionDescribeParams{ID: p.Execution})
		switch {
		case err != nil:
			w.violate("signal resumed %s, which has no suspension: %v", a, errCode(err))
		case sp.ClosedBy != model.ClosedBySignal:
			w.violate("signal resumed %s, whose last suspension closed by %s", a, sp.ClosedBy)
		default:
			w.sus.resumed[p.Execution] = resumeSignal{susp: sp.ID, signal: res.Signal}
		}
	}
}

func wpState(wp *model.WaitpointSnapshot) string {
	if wp == nil {
		return "missing"
	}
	return wp.State.String()
}

// answerSuspended is the outside world at the drain: each open suspension
// of the executions left gets what its condition asks for (see the top of
// this file), once, and again 30 seconds later if it is still open.
func (w *world) answerSuspended(left []*model.ExecutionSnapshot) {
	ctx := context.Background()
	live := w.live()
	if len(live) == 0 {
		return
	}
	for _, s := range left {
		if s.State.LifecyclePhase != model.PhaseSuspended {
			continue
		}
		sp, err := w.raw.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: s.ID})
		if err != nil || !sp.ClosedAt.IsZero() || sp.Condition.Kind == model.CondTimeout {
			continue // a timeout-only suspension ends by its timeout
		}
		if t, ok := w.sus.answered[sp.ID]; ok && w.sched.now.Before(t.Add(30*time.Second)) {
			continue
		}
		w.sus.answered[sp.ID] = w.sched.now
		if !sp.TimeoutAt.IsZero() && w.rng.IntN(2) == 0 {
			w.sus.answered[sp.ID] = sp.TimeoutAt // its timeout ends it (or escalates it: answered later)
			continue
		}
		p, id, susp := pick(w, live), s.ID, sp.ID
		if sp.Condition.Kind == model.CondOperator || w.rng.IntN(4) == 0 {
			w.spawn(p, func() {
				w.logf("P%d drain: operator resume %s: %s", p.n, w.alias(id), errCode(p.engine.Resume(ctx, id)))
			})
			continue
		}
		need := needed(&sp.Condition, sp.Waitpoint)
		w.spawn(p, func() {
			wps, err := p.engine.Waitpoints(ctx, id)
			if err != nil {
				w.logf("P%d drain: waitpoints of %s: %s", p.n, w.alias(id), errCode(err))
				return
			}
			for i, n := range need {
				tok := ""
				for _, wp := range wps {
					if wp.ID == n.wp {
						tok = wp.Token
					}
				}
				in := &flowfabric.SignalInput{Name: n.name, Source: fmt.Sprintf("drain:%d", i), Payload: []byte("drain"),
					IdempotencyKey: fmt.Sprintf("drain-%s-%d", susp, i)}
				d, err := p.engine.DeliverSignal(ctx, tok, in)
				if err != nil {
					w.logf("P%d drain: signal %s to %s: %s", p.n, n.name, w.alias(id), errCode(err))
					continue
				}
				w.logf("P%d drain: signal %s to %s: %s", p.n, n.name, w.alias(id), d.Effect)
			}
		})
	}
}

// need is a signal a condition waits for.
type need struct {
	wp   model.WaitpointID
	name string
}

// needed lists signals that satisfy c (own: the suspension's own
// waitpoint), each from its own source.
func needed(c *model.ResumeCondition, own model.WaitpointID) []need {
	name := func() string {
		if c.Name == "" {
			return "any"
		}
		return c.Name
	}
	switch c.Kind {
	case model.CondSignal:
		wp := c.Waitpoint
		if wp.IsZero() {
			wp = own
		}
		return []need{{wp, name()}}
	case model.CondCount:
		var out []need
		for i := range c.N {
			wp := own
			if len(c.Waitpoints) > 0 {
				wp = c.Waitpoints[i%len(c.Waitpoints)]
			}
			out = append(out, need{wp, name()})
		}
		return out
	case model.CondAllOf:
		var out []need
		for i := range c.Of {
			out = append(out, needed(&c.Of[i], own)...)
		}
		return out
	}
	return nil
}

// checkSuspendState checks the suspension and waitpoint state of every
// observed acknowledged execution (see the top of this file): the rules
// of internal/invariant that proptest's Observation skips without a
// SuspendView, over the indexes it observed.
func (w *world) checkSuspendState(o *proptest.Observation) {
	ctx := context.Background()
	for _, id := range sortedIDs(w.acked) {
		eo := o.Execs[id]
		if eo == nil {
			continue
		}
		view := &invariant.SuspendView{}
		if sp, err := w.raw.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: id}); err == nil {
			view.Suspension = sp
		} else if model.CodeOf(err) != model.CodeSuspensionNotFound {
			w.violate("%s: SuspensionDescribe: %v", w.alias(id), err)
		}
		res, err := w.raw.WaitpointList(ctx, &model.WaitpointListParams{ID: id})
		if err != nil {
			w.violate("%s: WaitpointList: %v", w.alias(id), err)
			continue
		}
		view.Waitpoints = res.Waitpoints
		if f := field(reflect.ValueOf(eo).Elem(), "Suspend"); !f.IsValid() || f.IsNil() {
			// proptest did not read the suspension (its Violations then
			// skip these rules): apply them here
			x := &invariant.Exec{ID: id, Snapshot: eo.Snapshot, Indexes: eo.Indexes, Attempts: eo.Attempts, History: eo.History, Suspend: view}
			for _, msg := range append(invariant.Suspension(x), invariant.Waitpoints(x)...) {
				w.violate("%s: %s", w.alias(id), msg)
			}
		}
		for _, wp := range view.Waitpoints {
			if msg := w.countedTwice(wp.Signals); msg != "" {
				w.violate("%s: waitpoint %s: %s", w.alias(id), wp.ID, msg)
			}
		}
		if sp := view.Suspension; sp != nil {
			if msg := w.countedTwice(sp.Signals); msg != "" {
				w.violate("%s: suspension %s: %s", w.alias(id), sp.ID, msg)
			}
		}
	}
}
