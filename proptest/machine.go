package proptest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// The fixed world a sequence runs in: a few lanes (alpha and gamma share a
// partition when there are 4), two namespaces, a small worker pool and a
// small capability universe.
var (
	lanes      = []model.LaneID{"alpha", "beta", "gamma"}
	namespaces = []model.Namespace{"default", "ns-b"}
	workerPool = []poolWorker{
		{"w-a", "w-a-1"}, {"w-a", "w-a-2"}, {"w-b", "w-b-1"},
	}
	capUniverse = []string{"gpu", "linux", "x86"}
	sessions    = []string{"s1", "s2"}
	startTime   = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
)

type poolWorker struct {
	id       model.WorkerID
	instance model.WorkerInstanceID
}

// machine is one sequence: the stores under test (one, or two for a
// differential run), the simulated clock, and a small reference model used
// to pick meaningful actions and to check a few predictions.
type machine struct {
	ctx    context.Context
	stores []model.Store
	cfg    model.PartitionConfig
	// inline is set when every store admits inline (model.InlineAdmitter):
	// only then do claims carry an InlineAdmission.
	inline bool
	clock  *model.SimClock
	opts   Options

	seq   uint64
	execs []*refExec
	byID  map[model.ExecutionID]*refExec
	// awaitMade counts the executions the await actions made (children
	// and the members they build, flow_await.go): Options.MaxExecutions
	// does not cap them, maxAwaitExecutions does.
	awaitMade int
	idem      map[idemRef]idemVal
	// flows are the flows the machine created (flow.go).
	flows []*refFlow
	// workers mirrors the registry from the stores' own answers.
	workers map[model.Namespace]map[model.WorkerInstanceID]*refWorker

	obs      []*Observation // the latest observation of each store
	checkers []Checker
	// workersUnknown is set once a hostile call may have changed the
	// registry behind the model's back.
	workersUnknown bool

	// Per step.
	step     int
	last     int // the number of steps of the sequence (0: unknown)
	action   string
	acquired map[model.ExecutionID]int
	calls    int
	failed   int

	leases *leaseWatch // Options.LeaseNotices

	susp suspendModel // suspend.go
	adm  admModel     // admission.go
	strm streamModel  // stream.go

	// feeds are the event feeds the stores keep, feedLen how many events
	// each keeps (0: not known) and renewals the step's successful
	// renewals (feed.go).
	feeds    model.Feeds
	feedLen  int
	renewals []feedRenewal

	// gone are the executions deleted in this step (retention.go): the
	// next observation no longer lists them.
	gone map[model.ExecutionID]bool
	// goneFlows are the flows deleted in this step.
	goneFlows map[model.FlowID]bool
}

type refExec struct {
	id     model.ExecutionID
	lane   model.LaneID
	fences []heldFence // every fence a claim handed out, oldest first
	// awaits counts the execution's accepted awaits of children (its
	// group's generations so far), awaitFence is the fence of the latest,
	// and awaitCall its parameters (a retry replays it).
	awaits     int
	awaitFence model.Fence
	awaitCall  *model.ExecutionAwaitChildrenParams
}

type heldFence struct {
	worker poolWorker
	fence  model.Fence
}

type idemRef struct {
	part int
	ns   model.Namespace
	key  string
}

type idemVal struct {
	id        model.ExecutionID
	expiresAt time.Time
}

type refWorker struct {
	workerID  model.WorkerID
	session   string
	expiresAt time.Time
}

func newMachine(ctx context.Context, stores []model.Store, opts Options) (*machine, error) {
	for i, s := range stores {
		if err := checkOptional(i, s); err != nil {
			return nil, err
		}
	}
	feeds, err := checkFeeds(stores)
	if err != nil {
		return nil, err
	}
	cfg := stores[0].Partitions().WithDefaults()
	for i, s := range stores[1:] {
		if c := s.Partitions().WithDefaults(); c != cfg {
			return nil, fmt.Errorf("store %d has partitions %+v, store 0 has %+v", i+1, c, cfg)
		}
	}
	m := &machine{
		ctx: ctx, stores: stores, cfg: cfg, opts: opts,
		clock:    model.NewSimClock(startTime),
		byID:     map[model.ExecutionID]*refExec{},
		idem:     map[idemRef]idemVal{},
		workers:  map[model.Namespace]map[model.WorkerInstanceID]*refWorker{},
		obs:      make([]*Observation, len(stores)),
		checkers: make([]Checker, len(stores)),
		susp: suspendModel{dedup: map[dedupRef]dedupVal{},
			suspend: map[model.ExecutionID]*model.ExecutionSuspendParams{}},
		adm:   newAdmModel(),
		strm:  newStreamModel(),
		feeds: feeds,
	}
	for _, ns := range namespaces {
		m.workers[ns] = map[model.WorkerInstanceID]*refWorker{}
	}
	m.inline = true
	for _, s := range stores {
		ia, ok := s.(model.InlineAdmitter)
		m.inline = m.inline && ok && ia.InlineAdmission()
	}
	m.watchLeases()
	return m, nil
}

func (m *machine) now() time.Time { return m.clock.Now() }

// comparing reports whether this step compares the stores' observations.
func (m *machine) comparing() bool {
	return m.step == 0 || m.step == m.last || m.step%m.opts.CompareEvery == 0
}

func storeName(i int) string { return string(rune('A' + i)) }

// run runs steps steps, checking everything after each.
//
// A sequence also ends, as a pass, when rapid runs out of recorded data
// (only when it replays a buffer: while shrinking, from a fail file or
// under go test -fuzz). That lets the shrinker delete whole steps of a
// fixed-length sequence instead of only zeroing them.
func (m *machine) run(t *rapid.T, steps int) {
	t.Helper()
	defer endOnOverrun()
	m.observe(t)
	m.last = steps
	for m.step = 1; m.step <= steps; m.step++ {
		m.runStep(t, m.pickAction(t))
	}
}

func (m *machine) runStep(t *rapid.T, a *action) {
	t.Helper()
	m.action = a.name
	m.acquired = map[model.ExecutionID]int{}
	m.calls, m.failed = 0, 0
	m.renewals = nil
	m.gone = map[model.ExecutionID]bool{}
	m.goneFlows = map[model.FlowID]bool{}
	before := m.obs[0]
	a.run(m, t)
	m.observe(t)
	m.checkLeaseNotices(t, before, m.obs[0])
	if m.comparing() {
		m.compareLeaseNotices(t)
	}
}

// observe reads every store, checks the invariants and the step properties,
// checks that a step whose every call failed wrote nothing, and compares the
// stores.
func (m *machine) observe(t *rapid.T) {
	t.Helper()
	known := m.knownIDs()
	compare := m.comparing()
	for i, s := range m.stores {
		if i > 0 && !compare {
			m.obs[i] = nil // stale; read again at the next comparison
			continue
		}
		o, err := Observe(m.ctx, s, m.now(), m.observeOptions())
		if err != nil {
			m.fatalf(t, "store %s: observe: %v", storeName(i), err)
		}
		// With gaps between a later store's observations, its step-to-step
		// checks would span several steps; that store is held to the first
		// store's (checked) observation instead.
		if i > 0 && m.opts.CompareEvery > 1 {
			m.obs[i] = o
			continue
		}
		m.checkers[i].renewals, m.checkers[i].renewalsKnown = m.renewals, true
		m.checkers[i].deleted, m.checkers[i].deletedFlows = m.gone, m.goneFlows
		if v := m.untolerated(t, m.checkers[i].Check(o, known, m.acquired)); len(v) > 0 {
			m.fatalf(t, "store %s: %d invariant violation(s):\n  %s", storeName(i), len(v), strings.Join(v, "\n  "))
		}
		if m.calls > 0 && m.failed == m.calls && m.obs[i] != nil && !reflect.DeepEqual(m.obs[i], o) {
			m.fatalf(t, "store %s: every call of the step failed, yet the store changed (-before +after):\n%s",
				storeName(i), cmp.Diff(m.obs[i], o, compareOptions...))
		}
		m.obs[i] = o
	}
	for i := 1; i < len(m.stores) && compare; i++ {
		if reflect.DeepEqual(m.obs[0], m.obs[i]) {
			continue // the fast path; cmp also equates nil and empty
		}
		if d := cmp.Diff(m.obs[0], m.obs[i], compareOptions...); d != "" {
			m.fatalf(t, "stores A and %s observe differently (-A +%s):\n%s", storeName(i), storeName(i), d)
		}
	}
	m.checkWorkerModel(t)
	if v := m.untolerated(t, m.checkAdmissionModel()); len(v) > 0 {
		m.fatalf(t, "store A: the admission model is violated:\n  %s", strings.Join(v, "\n  "))
	}
	if v := m.untolerated(t, m.checkStreamModel()); len(v) > 0 {
		m.fatalf(t, "store A: the stream model is violated:\n  %s", strings.Join(v, "\n  "))
	}
	if v := m.untolerated(t, m.checkFeedModel()); len(v) > 0 {
		m.fatalf(t, "store A: the feeds' times are violated:\n  %s", strings.Join(v, "\n  "))
	}
}

// observeOptions is what the machine observes: the namespaces' workers,
// the fixed budgets and quota buckets, the feeds' length.
func (m *machine) observeOptions() ObserveOptions {
	return ObserveOptions{Namespaces: namespaces, Budgets: budgetIDs, Quotas: quotaBuckets, FeedLen: m.feedLen, Lanes: lanes}
}

// untolerated drops (and logs) the violations Options.KnownViolations
// tolerates.
func (m *machine) untolerated(t *rapid.T, v []string) []string {
	if len(m.opts.KnownViolations) == 0 {
		return v
	}
	out := v[:0:0]
	for _, s := range v {
		known := false
		for _, k := range m.opts.KnownViolations {
			if strings.Contains(s, k) {
				known = true
				break
			}
		}
		if known {
			t.Logf("step %d: tolerated known violation: %s", m.step, s)
		} else {
			out = append(out, s)
		}
	}
	return out
}

func (m *machine) fatalf(t *rapid.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("step %d (%s) at %s: %s", m.step, m.action, m.now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

func (m *machine) knownIDs() []model.ExecutionID {
	ids := make([]model.ExecutionID, len(m.execs))
	for i, r := range m.execs {
		ids[i] = r.id
	}
	return ids
}

// compareOptions is how results and observations of two stores are
// compared: ExecutionID by value, nil and empty slices and maps alike, times
// by instant.
var compareOptions = []cmp.Option{
	cmp.Comparer(func(a, b model.ExecutionID) bool { return a == b }),
	cmp.AllowUnexported(claimNextOutcome{}),
	cmpopts.EquateEmpty(),
}

// ErrorView is the comparable form of an error: the fields of a
// *model.Error, or the text of any other error.
type ErrorView struct {
	Code   model.Code
	Field  string
	Detail string
	State  *model.NotActiveState
	Text   string
}

// ViewError returns the comparable form of err (nil for nil).
func ViewError(err error) *ErrorView {
	if err == nil {
		return nil
	}
	var e *model.Error
	if errors.As(err, &e) {
		v := &ErrorView{Code: e.Code, Field: e.Field, Detail: e.Detail}
		if e.State != nil {
			st := *e.State
			v.State = &st
		}
		return v
	}
	return &ErrorView{Text: err.Error()}
}

type callOutcome struct {
	Result any
	Err    *ErrorView
}

// call runs one store operation on every store, fails the sequence when
// the stores disagree, and returns store A's answer.
func call[P, R any](m *machine, t *rapid.T, op string, p *P, f func(model.Store, context.Context, *P) (R, error)) (R, error) {
	t.Helper()
	var r0 R
	var e0 error
	m.noteCall(p)
	for i, s := range m.stores {
		q := *p
		r, err := f(s, m.ctx, &q)
		if i == 0 {
			r0, e0 = r, err
			continue
		}
		a, b := callOutcome{r0, ViewError(e0)}, callOutcome{r, ViewError(err)}
		if reflect.DeepEqual(a, b) {
			continue
		}
		if d := cmp.Diff(a, b, compareOptions...); d != "" {
			m.fatalf(t, "%s(%+v): stores A and %s answer differently (-A +%s):\n%s", op, *p, storeName(i), storeName(i), d)
		}
	}
	m.calls++
	if e0 == nil {
		m.noteFeedCall(p)
	}
	if m.opts.onCall != nil {
		m.opts.onCall(op, r0, e0)
	}
	if e0 != nil {
		m.failed++
		t.Logf("step %d: %s %+v -> error %v", m.step, op, *p, e0)
	} else {
		t.Logf("step %d: %s %+v -> %s", m.step, op, *p, showResult(r0))
	}
	return r0, e0
}

// ---- draws ----

var (
	genBool    = rapid.Bool()
	genByte    = rapid.Byte()
	genPercent = rapid.IntRange(0, 99)
)

// chance draws true with probability pct/100; it shrinks to false.
func chance(t *rapid.T, pct int, label string) bool {
	return genPercent.Draw(t, label) >= 100-pct
}

func drawIndex(t *rapid.T, n int, label string) int {
	if n <= 1 {
		return 0
	}
	return rapid.IntRange(0, n-1).Draw(t, label)
}

func drawFrom[E any](t *rapid.T, s []E, label string) E {
	return s[drawIndex(t, len(s), label)]
}

func (m *machine) nextUUID(t *rapid.T, label string) model.UUID {
	m.seq++
	var b [16]byte
	if label != "" {
		b[0] = genByte.Draw(t, label) // varies the order of ids
	}
	binary.BigEndian.PutUint64(b[8:], m.seq)
	return model.NewUUIDv4(b)
}

// newExecID draws an id for an execution of lane: usually on the lane's
// solo partition, sometimes spread or anywhere.
func (m *machine) newExecID(t *rapid.T, lane model.LaneID) model.ExecutionID {
	u := m.nextUUID(t, "id_order")
	switch k := rapid.IntRange(0, 9).Draw(t, "partition_kind"); {
	case k <= 6:
		return model.NewExecutionID(m.cfg.SoloPartition(lane), u)
	case k <= 8:
		return model.NewExecutionID(m.cfg.SpreadPartition(u), u)
	default:
		return model.NewExecutionID(drawIndex(t, m.cfg.FlowPartitions, "partition"), u)
	}
}

func (m *machine) leaseRequest(t *rapid.T, w poolWorker) model.LeaseRequest {
	return model.LeaseRequest{
		WorkerID: w.id, WorkerInstanceID: w.instance,
		LeaseID:   model.LeaseID(m.nextUUID(t, "")),
		AttemptID: model.AttemptID(m.nextUUID(t, "")),
		LeaseTTL:  drawLeaseTTL(t),
	}
}

var genTTLShort, genTTLLong = rapid.Int64Range(1, 3000), rapid.Int64Range(1000, 30000)

func drawLeaseTTL(t *rapid.T) time.Duration {
	if !chance(t, 40, "short_ttl") {
		return time.Duration(genTTLLong.Draw(t, "ttl_ms")) * time.Millisecond
	}
	return time.Duration(genTTLShort.Draw(t, "ttl_ms")) * time.Millisecond
}

func drawCaps(t *rapid.T, label string, pctAny int) model.Capabilities {
	if !chance(t, pctAny, label+"_some") {
		return nil
	}
	mask := rapid.IntRange(0, 1<<len(capUniverse)-1).Draw(t, label)
	var c model.Capabilities
	for i, tok := range capUniverse {
		if mask&(1<<i) != 0 {
			c = append(c, tok)
		}
	}
	return c
}

func (m *machine) snap(id model.ExecutionID) *model.ExecutionSnapshot {
	if x := m.obs[0].Execs[id]; x != nil {
		return x.Snapshot
	}
	return nil
}

// pickExec draws an execution: often one that want accepts, sometimes any
// created one, rarely one that does not exist.
func (m *machine) pickExec(t *rapid.T, want func(*model.ExecutionSnapshot) bool) model.ExecutionID {
	if len(m.execs) == 0 || chance(t, 3, "unknown_exec") {
		return m.newExecID(t, drawFrom(t, lanes, "lane"))
	}
	if want != nil && !chance(t, 20, "any_exec") {
		var cands []model.ExecutionID
		for _, r := range m.execs {
			if s := m.snap(r.id); s != nil && want(s) {
				cands = append(cands, r.id)
			}
		}
		if len(cands) > 0 {
			return drawFrom(t, cands, "exec")
		}
	}
	return drawFrom(t, m.execs, "exec").id
}

func isPhase(lp model.LifecyclePhase) func(*model.ExecutionSnapshot) bool {
	return func(s *model.ExecutionSnapshot) bool { return s.State.LifecyclePhase == lp }
}

func isEligible(s *model.ExecutionSnapshot) bool {
	return s.State.LifecyclePhase == model.PhaseRunnable && s.State.EligibilityState == model.EligibleNow
}

func isOwned(os ...model.OwnershipState) func(*model.ExecutionSnapshot) bool {
	return func(s *model.ExecutionSnapshot) bool {
		return s.State.LifecyclePhase == model.PhaseActive && slices.Contains(os, s.State.OwnershipState)
	}
}

// currentFence is the fence the current lease holder presents.
func currentFence(s *model.ExecutionSnapshot) model.Fence {
	f := model.Fence{LeaseEpoch: s.LeaseEpoch}
	if s.CurrentLease != nil {
		f.LeaseID = s.CurrentLease.ID
	}
	if s.CurrentAttempt != nil {
		f.AttemptID = s.CurrentAttempt.ID
	}
	return f
}

// drawFence draws the fence a worker presents: usually the latest it was
// given, sometimes an older (stale) one, a corrupted one, none or a partial
// one.
func (m *machine) drawFence(t *rapid.T, id model.ExecutionID) model.Fence {
	var held []heldFence
	if r := m.byID[id]; r != nil {
		held = r.fences
	}
	k := rapid.IntRange(0, 9).Draw(t, "fence_kind")
	if len(held) == 0 && k <= 5 {
		k = 6 // nothing held: a made-up complete fence
	}
	switch {
	case k <= 3:
		return held[len(held)-1].fence
	case k <= 5:
		return drawFrom(t, held, "held_fence").fence
	case k <= 7:
		f := model.Fence{LeaseID: model.LeaseID(m.nextUUID(t, "")), LeaseEpoch: 1, AttemptID: model.AttemptID(m.nextUUID(t, ""))}
		if s := m.snap(id); s != nil {
			// Keep all but one part of the current fence.
			cur := currentFence(s)
			keep := func(dst *model.Fence) {
				if !cur.LeaseID.IsZero() {
					dst.LeaseID = cur.LeaseID
				}
				if !cur.AttemptID.IsZero() {
					dst.AttemptID = cur.AttemptID
				}
				dst.LeaseEpoch = max(cur.LeaseEpoch, 1)
			}
			switch rapid.IntRange(0, 2).Draw(t, "corrupt") {
			case 0:
				keep(&f)
				f.LeaseEpoch = cur.LeaseEpoch + 1
			case 1:
				old := f.LeaseID
				keep(&f)
				f.LeaseID = old
			case 2:
				old := f.AttemptID
				keep(&f)
				f.AttemptID = old
			}
		}
		return f
	case k == 9:
		return model.Fence{LeaseEpoch: 1}
	}
	return model.Fence{}
}

// drawWorker draws a pool worker, often the one holding the execution's
// grant when there is one.
func (m *machine) drawWorker(t *rapid.T, id model.ExecutionID) poolWorker {
	if s := m.snap(id); s != nil && s.Grant != nil && !chance(t, 30, "other_worker") {
		for _, w := range workerPool {
			if w.id == s.Grant.WorkerID && w.instance == s.Grant.WorkerInstanceID {
				return w
			}
		}
	}
	return drawFrom(t, workerPool, "worker")
}

// ---- checks of single answers ----

func (m *machine) expect(t *rapid.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		m.fatalf(t, format, args...)
	}
}

// expectValidation checks that a deliberately invalid call was refused as
// bad input.
func (m *machine) expectValidation(t *rapid.T, op string, err error) {
	t.Helper()
	var e *model.Error
	m.expect(t, errors.As(err, &e) && errors.Is(err, model.ErrValidation) && e.Field != "",
		"%s with invalid input: got %v, want a validation error naming its field", op, err)
}

// acquire records a lease acquisition and checks the claim result against
// the state before it.
func (m *machine) acquire(t *rapid.T, op string, prev *model.ExecutionSnapshot, w poolWorker, req model.LeaseRequest, r *model.ClaimResult) {
	t.Helper()
	m.expect(t, prev != nil, "%s claimed %v, which was not listed", op, r.ID)
	m.expect(t, !m.lanePaused(prev.Lane), "%s claimed %v on lane %s, which is paused", op, r.ID, prev.Lane)
	m.acquired[r.ID]++
	m.expect(t, r.Lease.Epoch == prev.LeaseEpoch+1, "%s: lease epoch %d after %d, want +1", op, r.Lease.Epoch, prev.LeaseEpoch)
	m.expect(t, r.Lease.ID == req.LeaseID && r.Lease.WorkerID == req.WorkerID && r.Lease.WorkerInstanceID == req.WorkerInstanceID,
		"%s: lease %+v does not match the request %+v", op, r.Lease, req)
	m.expect(t, r.Lease.AcquiredAt.Equal(m.now()) && r.Lease.ExpiresAt.Equal(m.now().Add(req.LeaseTTL)),
		"%s: lease times %v..%v, want now..now+%v", op, r.Lease.AcquiredAt, r.Lease.ExpiresAt, req.LeaseTTL)
	wantTimeout := time.Time{}
	if prev.AttemptTimeout > 0 {
		wantTimeout = m.now().Add(prev.AttemptTimeout)
	}
	m.expect(t, r.TimeoutAt.Equal(wantTimeout), "%s: attempt times out at %v, want %v", op, r.TimeoutAt, wantTimeout)
	resumable := prev.State.AttemptState == model.AttemptInterrupted && prev.State.LifecyclePhase == model.PhaseRunnable
	m.expect(t, r.Resumed == resumable, "%s: resumed %v, but attempt state was %v", op, r.Resumed, prev.State.AttemptState)
	if r.Resumed {
		m.expect(t, prev.CurrentAttempt != nil && r.AttemptID == prev.CurrentAttempt.ID && r.AttemptIndex == prev.CurrentAttempt.Index,
			"%s: resumed attempt %v/%d, current was %+v", op, r.AttemptID, r.AttemptIndex, prev.CurrentAttempt)
	} else {
		m.expect(t, r.AttemptID == req.AttemptID && r.AttemptIndex == prev.TotalAttempts,
			"%s: new attempt %v/%d, want %v/%d", op, r.AttemptID, r.AttemptIndex, req.AttemptID, prev.TotalAttempts)
	}
	if ref := m.byID[r.ID]; ref != nil {
		ref.fences = append(ref.fences, heldFence{w, r.Fence()})
	}
}

// liveGrant reports whether s has a grant that is certainly still valid.
func (m *machine) liveGrant(s *model.ExecutionSnapshot) bool {
	return s.Grant != nil && s.Grant.ExpiresAt.After(m.now())
}

// predictFenced predicts the error of a worker's fenced operation from the
// state before it (the check order is phase, revoked, expired, identity).
// It returns nil when the operation must succeed.
func (m *machine) predictFenced(s *model.ExecutionSnapshot, f model.Fence) *ErrorView {
	switch {
	case f.IsZero():
		return &ErrorView{Code: model.CodeFenceRequired}
	case !f.IsComplete():
		return &ErrorView{Code: model.CodePartialFenceTriple}
	case s == nil:
		return &ErrorView{Code: model.CodeExecutionNotFound}
	case s.State.LifecyclePhase != model.PhaseActive:
		return &ErrorView{Code: model.CodeExecutionNotActive}
	case s.State.OwnershipState == model.OwnershipLeaseRevoked:
		return &ErrorView{Code: model.CodeLeaseRevoked}
	case s.State.OwnershipState != model.OwnershipLeased || s.CurrentLease == nil || !s.CurrentLease.ExpiresAt.After(m.now()):
		return &ErrorView{Code: model.CodeLeaseExpired}
	case f != currentFence(s):
		return &ErrorView{Code: model.CodeStaleLease}
	}
	return nil
}

// checkFenced checks the answer to a fenced operation against the state
// before it: a worker's operation fails exactly as predictFenced says
// unless it replays an operation the same caller already made (Replayed);
// an operator's fails only on a missing execution or one that is not
// active (for cancel: terminal).
func (m *machine) checkFenced(t *rapid.T, op string, s *model.ExecutionSnapshot, src model.Source, f model.Fence, cancel, replayed bool, err error) {
	t.Helper()
	if replayed {
		m.expect(t, err == nil, "%s: replayed with an error %v", op, err)
		return
	}
	var want *ErrorView
	if src == model.SourceOperator {
		switch {
		case s == nil:
			want = &ErrorView{Code: model.CodeExecutionNotFound}
		case cancel && s.State.LifecyclePhase == model.PhaseTerminal,
			!cancel && s.State.LifecyclePhase != model.PhaseActive:
			want = &ErrorView{Code: model.CodeExecutionNotActive}
		}
	} else {
		want = m.predictFenced(s, f)
	}
	got := ViewError(err)
	switch {
	case want == nil && got == nil:
	case want == nil:
		m.fatalf(t, "%s (source %q) with the current fence %+v failed: %v", op, src, f, err)
	case got == nil:
		m.fatalf(t, "%s with fence %+v (source %q) succeeded, want %s (state %+v, current fence %+v)",
			op, f, src, want.Code, s.State, currentFence(s))
	case got.Code != want.Code:
		m.fatalf(t, "%s with fence %+v (source %q): error %v, want %s", op, f, src, err, want.Code)
	case want.Code == model.CodeExecutionNotActive:
		var att model.AttemptID
		if s.CurrentAttempt != nil {
			att = s.CurrentAttempt.ID
		}
		st := got.State
		m.expect(t, st != nil && st.LifecyclePhase == s.State.LifecyclePhase && st.TerminalOutcome == s.State.TerminalOutcome &&
			st.LeaseEpoch == s.LeaseEpoch && st.AttemptID == att,
			"%s: execution_not_active carries %+v, state is %+v epoch %d attempt %+v", op, st, s.State, s.LeaseEpoch, s.CurrentAttempt)
	}
}

// checkWorkerModel compares the live workers each store lists with the
// registrations the stores' own answers imply.
func (m *machine) checkWorkerModel(t *rapid.T) {
	t.Helper()
	if m.workersUnknown {
		return
	}
	now := m.now()
	for _, ns := range namespaces {
		var want []string
		for inst, w := range m.workers[ns] {
			if w.expiresAt.After(now) {
				want = append(want, fmt.Sprintf("%s@%d", inst, w.expiresAt.UnixMilli()))
			}
		}
		slices.Sort(want)
		var got []string
		for _, w := range m.obs[0].Workers[ns] {
			got = append(got, fmt.Sprintf("%s@%d", w.WorkerInstanceID, w.ExpiresAt.UnixMilli()))
		}
		m.expect(t, slices.Equal(got, want), "live workers of %s: store lists %q, its answers imply %q", ns, got, want)
	}
}

func cmpEqual(a, b any) bool { return cmp.Equal(a, b, compareOptions...) }

// endOnOverrun swallows the panic rapid raises when a replayed buffer has
// no more data (an unexported invalidData("overrun")), and re-raises
// anything else.
func endOnOverrun() {
	r := recover()
	if r == nil {
		return
	}
	if ty := reflect.TypeOf(r); ty.PkgPath() == "pgregory.net/rapid" && ty.Name() == "invalidData" && fmt.Sprint(r) == "overrun" {
		return
	}
	panic(r)
}

// showResult formats a result for the trace, following the pointers to
// claim results.
func showResult(r any) string {
	switch v := r.(type) {
	case *model.ExecutionClaimNextResult:
		if v != nil && v.Claimed != nil {
			return fmt.Sprintf("&{Claimed:%+v Blocked:%v Skipped:%d}", *v.Claimed, v.Blocked, v.Skipped)
		}
	case *model.ExecutionReclaimResult:
		if v != nil && v.Claimed != nil {
			return fmt.Sprintf("&{Outcome:%s Claimed:%+v}", v.Outcome, *v.Claimed)
		}
	case *model.IndexScanDueResult:
		if v != nil {
			return fmt.Sprintf("&%+v", *v)
		}
	}
	return fmt.Sprintf("%+v", r)
}
