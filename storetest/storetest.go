// Package storetest is the conformance suite of model.Store. Every store
// runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Exercise(t, func(t *testing.T) model.Store { return memstore.New(nil) })
//	}
//
// The suite talks to the store only through model.Store and its optional
// interfaces (model.IndexInspector, model.Blocker, model.GrantReclaimer),
// drives time explicitly through Params.Now (it never sleeps and never
// reads a clock) and builds every id deterministically, so a failure
// replays exactly.
//
// Transcripts (RunTranscripts) are the other half: text files in
// testdata/transcripts of operations and of what a store prints after each
// (describe, indexes, attempts, lease history), run on every store. A new
// feature specifies its behaviour as a transcript rather than as
// hand-built snapshot structs; `go test ./memstore -run TestTranscripts
// -rewrite` writes the output, testdata/transcripts/README.md says how.
package storetest

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowfabric/flowfabric/model"
)

// NewStoreFunc returns a new, empty store for one subtest. The store must be
// isolated from every other store the function returns, because subtests
// run in parallel. It may register cleanups on t.
type NewStoreFunc = func(t *testing.T) model.Store

// Exercise runs the conformance suite against the stores newStore returns.
//
// Every subtest takes a fresh store from newStore and most run in parallel
// (t.Parallel), so the stores must be empty and isolated from one another.
// The suite uses the model.Store interface and the optional ones: a store
// without model.IndexInspector fails (the suite reads indexes to check
// them), and every test that calls a missing model.Blocker or
// model.GrantReclaimer, even to set up, skips, naming it. It creates
// executions in partitions min(5, N-1) and the next one (N =
// Partitions().FlowPartitions, which may be 1), with times from
// 2023-11-14T22:13:20Z on, never more than a few hundred executions per
// store. After every subtest the invariants of
// lua-semantics §6 that the interface can observe are checked on all
// executions the subtest left behind.
func Exercise(t *testing.T, newStore NewStoreFunc) {
	groups := []struct {
		name string
		run  func(*testing.T, NewStoreFunc)
	}{
		{"Create", testCreate},
		{"Claim", testClaim},
		{"FIFO", testFIFO},
		{"Lease", testLease},
		{"Terminal", testTerminal},
		{"Scan", testScan},
		{"Worker", testWorker},
		{"Reads", testReads},
		{"Validation", testValidation},
		{"HotPath", testHotPath},
		{"Fix", testFixes},
		{"LeaseNotices", testLeaseNotices},
		{"Flows", testFlows},
		{"Suspend", testSuspend},
		{"Admission", testAdmission},
		{"Streams", testStreams},
		{"Feeds", testFeeds},
		{"Retention", testRetention},
		{"Counts", testCounts},
		{"Lanes", testLanes},
		{"Tags", testTags},
		{"Metadata", testMetadata},
		{"Repair", testRepair},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, newStore)
		})
	}
}

// Fixed inputs shared by the subtests.
const (
	laneA model.LaneID    = "lane-a"
	laneB model.LaneID    = "lane-b"
	nsA   model.Namespace = "ns-a"
	nsB   model.Namespace = "ns-b"
	kindA model.Kind      = "email.send"

	leaseTTL = 30 * time.Second
	renewIn  = 20 * time.Second // ⌊leaseTTL·2/3⌋
	grantTTL = 5 * time.Second
)

// base is the time every subtest starts at; at(d) is d after it.
var base = time.UnixMilli(1_700_000_000_000).UTC()

func at(d time.Duration) time.Time { return base.Add(d) }

// workerRef names a worker instance and its capabilities.
type workerRef struct {
	ID       model.WorkerID
	Instance model.WorkerInstanceID
	Caps     model.Capabilities
}

var (
	wA = workerRef{ID: "worker-a", Instance: "worker-a-1"}
	wB = workerRef{ID: "worker-b", Instance: "worker-b-1"}
)

// Index names as ExecutionIndexes reports them.
const (
	ixAll      = "all_executions"
	ixLease    = "lease_expiry"
	ixTimeout  = "attempt_timeout"
	ixDeadline = "execution_deadline"
)

func ixLane(l model.LaneID, set string) string { return "lane:" + string(l) + ":" + set }

func ixWorker(w model.WorkerInstanceID) string { return "worker:" + string(w) + ":leases" }

// cmpOpts compare store values: nil and empty collections are equal and
// execution ids compare by value.
var cmpOpts = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b model.ExecutionID) bool { return a == b }),
}

// harness is one subtest's store with deterministic ids and assertions.
type harness struct {
	t   *testing.T
	s   fullStore
	ctx context.Context
	cfg model.PartitionConfig
	ids *idGen
	// p0 and p1 are the partitions executions are created in; p1 == p0
	// when the store has a single partition.
	p0, p1 int
	parts  map[int]bool
	// interpreted: the store runs its steps slowly (Interpreted)
	interpreted bool
}

// setup opens a fresh store for t and registers the invariant check that
// runs when t ends.
func setup(t *testing.T, newStore NewStoreFunc) *harness {
	t.Helper()
	s := complete(t, newStore(t))
	cfg := s.Partitions().WithDefaults()
	h := &harness{t: t, s: s, ctx: context.Background(), cfg: cfg, ids: &idGen{}, parts: map[int]bool{}}
	if _, ok := interpretedTests.LoadAndDelete(t); ok {
		h.interpreted = true
	}
	sum := fnv.New64a()
	sum.Write([]byte(t.Name()))
	binary.BigEndian.PutUint64(h.ids.prefix[:], sum.Sum64())
	h.p0 = min(5, cfg.FlowPartitions-1)
	h.p1 = (h.p0 + 1) % cfg.FlowPartitions
	t.Cleanup(h.checkInvariants)
	return h
}

// Interpreted returns a NewStoreFunc for Exercise that builds its stores
// with newStore and tells the suite they run their atomic steps slowly
// (valkeystore on miniredis, whose Lua is interpreted in Go): the cases
// that build very large structures, such as a flow of
// model.MaxFlowDeleteMembers+1 members, skip on them and run on the
// other backends.
func Interpreted(newStore NewStoreFunc) NewStoreFunc {
	return func(t *testing.T) model.Store {
		interpretedTests.Store(t, true)
		return newStore(t)
	}
}

// interpretedTests holds the tests whose store Interpreted built, until
// setup reads it.
var interpretedTests sync.Map // *testing.T → true

// on returns the harness reporting to t, a subtest of the harness's test
// that runs on the same store.
func (h *harness) on(t *testing.T) *harness {
	c := *h
	c.t = t
	c.s = rebind(h.s, t)
	return &c
}

// idGen makes the ids of one subtest: a hash of the subtest's name followed
// by a counter, so ids grow in creation order and differ between subtests.
type idGen struct {
	prefix [8]byte
	seq    uint64
}

func (h *harness) uuid() model.UUID {
	h.ids.seq++
	var b [16]byte
	copy(b[:8], h.ids.prefix[:])
	binary.BigEndian.PutUint64(b[8:], h.ids.seq)
	return model.NewUUIDv4(b)
}

func (h *harness) newID(partition int) model.ExecutionID {
	h.parts[partition] = true
	return model.NewExecutionID(partition, h.uuid())
}

func (h *harness) leaseID() model.LeaseID     { return model.LeaseID(h.uuid()) }
func (h *harness) attemptID() model.AttemptID { return model.AttemptID(h.uuid()) }

// leaseReq is a lease request of w with fresh lease and attempt ids.
func (h *harness) leaseReq(w workerRef, ttl time.Duration) model.LeaseRequest {
	return model.LeaseRequest{
		WorkerID: w.ID, WorkerInstanceID: w.Instance,
		LeaseID: h.leaseID(), AttemptID: h.attemptID(), LeaseTTL: ttl,
	}
}

// outcome carries a store call's result to an assertion.
type outcome[T any] struct {
	v   T
	err error
}

// call wraps a store call: call(s.X(ctx, p)).must(t).
func call[T any](v T, err error) outcome[T] { return outcome[T]{v, err} }

// must returns the value, failing t on an error.
func (o outcome[T]) must(t testing.TB) T {
	t.Helper()
	if o.err != nil {
		t.Fatalf("unexpected error: %v", o.err)
	}
	return o.v
}

// createOpt adjusts the parameters of a create.
type createOpt func(*model.ExecutionCreateParams)

func withPriority(n int) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Priority = n }
}

func withDelay(t time.Time) createOpt {
	return func(p *model.ExecutionCreateParams) { p.DelayUntil = t }
}

func withDeadline(t time.Time) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Deadline = t }
}

func withTimeout(d time.Duration) createOpt {
	return func(p *model.ExecutionCreateParams) { p.AttemptTimeout = d }
}

func withRetry(r model.RetryPolicy) createOpt {
	return func(p *model.ExecutionCreateParams) { p.RetryPolicy = r }
}

func withCaps(c ...string) createOpt {
	return func(p *model.ExecutionCreateParams) { p.RequiredCapabilities = c }
}

func withLane(l model.LaneID) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Lane = l }
}

func withNamespace(ns model.Namespace) createOpt {
	return func(p *model.ExecutionCreateParams) { p.Namespace = ns }
}

func withMaxReclaims(n int) createOpt {
	return func(p *model.ExecutionCreateParams) { p.MaxReclaims = n }
}

func withMaxReplays(n int) createOpt {
	return func(p *model.ExecutionCreateParams) { p.MaxReplays = n }
}

// createParams are the parameters of a plain create in p0 at now.
func (h *harness) createParams(now time.Time, opts ...createOpt) *model.ExecutionCreateParams {
	p := &model.ExecutionCreateParams{
		ID: h.newID(h.p0), Namespace: nsA, Lane: laneA, Kind: kindA,
		Payload: []byte("payload"), Now: now,
	}
	for _, o := range opts {
		o(p)
	}
	h.parts[p.ID.Partition()] = true
	return p
}

// create creates a new execution and returns its id.
func (h *harness) create(now time.Time, opts ...createOpt) model.ExecutionID {
	h.t.Helper()
	p := h.createParams(now, opts...)
	res := call(h.s.ExecutionCreate(h.ctx, p)).must(h.t)
	if res.Duplicate || res.ID != p.ID {
		h.t.Fatalf("create %v: got id %v duplicate %v", p.ID, res.ID, res.Duplicate)
	}
	return p.ID
}

// claim claims an eligible execution for w with grant-and-claim.
func (h *harness) claim(id model.ExecutionID, w workerRef, now time.Time) *model.ClaimResult {
	h.t.Helper()
	return call(h.s.ExecutionGrantAndClaim(h.ctx, &model.ExecutionGrantAndClaimParams{
		ID: id, Capabilities: w.Caps, LeaseRequest: h.leaseReq(w, leaseTTL), Now: now,
	})).must(h.t)
}

// active creates an execution at now and claims it for wA at now.
func (h *harness) active(now time.Time, opts ...createOpt) (model.ExecutionID, *model.ClaimResult) {
	h.t.Helper()
	id := h.create(now, opts...)
	return id, h.claim(id, wA, now)
}

func (h *harness) complete(id model.ExecutionID, f model.Fence, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionComplete(h.ctx, &model.ExecutionCompleteParams{ID: id, Fence: f, Now: now})).must(h.t)
}

func (h *harness) fail(id model.ExecutionID, f model.Fence, cat model.FailureCategory, now time.Time) *model.ExecutionFailResult {
	h.t.Helper()
	return call(h.s.ExecutionFail(h.ctx, &model.ExecutionFailParams{
		ID: id, Fence: f, Reason: "boom", Category: cat, Now: now,
	})).must(h.t)
}

func (h *harness) delay(id model.ExecutionID, f model.Fence, until, now time.Time) {
	h.t.Helper()
	call(h.s.ExecutionDelay(h.ctx, &model.ExecutionDelayParams{ID: id, Fence: f, DelayUntil: until, Now: now})).must(h.t)
}

func (h *harness) cancelOp(id model.ExecutionID, now time.Time) *model.ExecutionCancelResult {
	h.t.Helper()
	return call(h.s.ExecutionCancel(h.ctx, &model.ExecutionCancelParams{
		ID: id, Reason: "stop", Source: model.SourceOperator, Now: now,
	})).must(h.t)
}

func (h *harness) promote(id model.ExecutionID, lane model.LaneID, now time.Time) model.PromoteOutcome {
	h.t.Helper()
	return call(h.s.ExecutionPromoteDelayed(h.ctx, &model.ExecutionPromoteDelayedParams{ID: id, Lane: lane, Now: now})).must(h.t).Outcome
}

func (h *harness) markExpired(id model.ExecutionID, now time.Time) {
	h.t.Helper()
	res := call(h.s.LeaseMarkExpired(h.ctx, &model.LeaseMarkExpiredParams{ID: id, Now: now})).must(h.t)
	if res.Outcome != model.MarkExpiredMarked {
		h.t.Fatalf("mark expired: %q", res.Outcome)
	}
}

func (h *harness) revoke(id model.ExecutionID, now time.Time) *model.LeaseRevokeResult {
	h.t.Helper()
	return call(h.s.LeaseRevoke(h.ctx, &model.LeaseRevokeParams{ID: id, Reason: "operator", Now: now})).must(h.t)
}

// block blocks id for reason r; a budget block names heldBudget.
func (h *harness) block(id model.ExecutionID, r model.BlockingReason, now time.Time) {
	h.t.Helper()
	p := &model.ExecutionBlockParams{ID: id, Reason: r, Detail: "held", Now: now}
	if r == model.WaitingForBudget {
		p.Budget = heldBudget
	}
	call(h.s.ExecutionBlock(h.ctx, p)).must(h.t)
}

func (h *harness) grant(id model.ExecutionID, w workerRef, now time.Time) *model.ClaimGrantIssueResult {
	h.t.Helper()
	return call(h.s.ClaimGrantIssue(h.ctx, &model.ClaimGrantIssueParams{
		ID: id, WorkerID: w.ID, WorkerInstanceID: w.Instance, Capabilities: w.Caps, GrantTTL: grantTTL, Now: now,
	})).must(h.t)
}

func (h *harness) reclaimGrant(id model.ExecutionID, w workerRef, now time.Time) {
	h.t.Helper()
	call(h.s.ReclaimGrantIssue(h.ctx, &model.ReclaimGrantIssueParams{
		ID: id, WorkerID: w.ID, WorkerInstanceID: w.Instance, Capabilities: w.Caps, GrantTTL: grantTTL, Now: now,
	})).must(h.t)
}

func (h *harness) claimNext(w workerRef, live model.Capabilities, limit int, now time.Time) *model.ExecutionClaimNextResult {
	h.t.Helper()
	return call(h.s.ExecutionClaimNext(h.ctx, &model.ExecutionClaimNextParams{
		Partition: h.p0, Lane: laneA, Capabilities: w.Caps, LiveCapabilities: live,
		ScanLimit: limit, LeaseRequest: h.leaseReq(w, leaseTTL), Now: now,
	})).must(h.t)
}

func (h *harness) describe(id model.ExecutionID) *model.ExecutionSnapshot {
	h.t.Helper()
	return call(h.s.ExecutionDescribe(h.ctx, &model.ExecutionDescribeParams{ID: id})).must(h.t)
}

func (h *harness) attempts(id model.ExecutionID) []model.Attempt {
	h.t.Helper()
	return call(h.s.AttemptList(h.ctx, &model.AttemptListParams{ID: id})).must(h.t).Attempts
}

func (h *harness) history(id model.ExecutionID) []model.LeaseEvent {
	h.t.Helper()
	return call(h.s.LeaseHistory(h.ctx, &model.LeaseHistoryParams{ID: id, Limit: model.MaxPageSize})).must(h.t).Events
}

func (h *harness) indexes(id model.ExecutionID) []string {
	h.t.Helper()
	return call(h.s.ExecutionIndexes(h.ctx, &model.ExecutionIndexesParams{ID: id})).must(h.t).Indexes
}

// wantIndexes checks the exact set of indexes holding id.
func (h *harness) wantIndexes(id model.ExecutionID, want ...string) {
	h.t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	got := h.indexes(id)
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		h.t.Fatalf("indexes of %v (-want +got):\n%s", id, d)
	}
}

// wantState checks the state vector, its public state and its structural
// invariants.
func (h *harness) wantState(id model.ExecutionID, want model.StateVector) *model.ExecutionSnapshot {
	h.t.Helper()
	s := h.describe(id)
	if d := cmp.Diff(want, s.State); d != "" {
		h.t.Fatalf("state of %v (-want +got):\n%s", id, d)
	}
	if s.PublicState != want.PublicState() {
		h.t.Fatalf("public state of %v = %v, want %v", id, s.PublicState, want.PublicState())
	}
	if msg := s.State.Check(); msg != "" {
		h.t.Fatalf("state of %v: %s", id, msg)
	}
	return s
}

// wantSnapshot compares the whole describe view of want.ID with want.
func (h *harness) wantSnapshot(want *model.ExecutionSnapshot) {
	h.t.Helper()
	got := h.describe(want.ID)
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		h.t.Fatalf("snapshot of %v (-want +got):\n%s", want.ID, d)
	}
	if msg := got.State.Check(); msg != "" {
		h.t.Fatalf("state of %v: %s", want.ID, msg)
	}
}

// wantAttempts compares the attempt list of id.
func (h *harness) wantAttempts(id model.ExecutionID, want []model.Attempt) {
	h.t.Helper()
	if d := cmp.Diff(want, h.attempts(id), cmpOpts...); d != "" {
		h.t.Fatalf("attempts of %v (-want +got):\n%s", id, d)
	}
}

// wantHistory compares the lease history of id, ignoring sequence numbers
// (checked by the invariants).
func (h *harness) wantHistory(id model.ExecutionID, want []model.LeaseEvent) {
	h.t.Helper()
	opts := append(slices.Clone(cmpOpts), cmpopts.IgnoreFields(model.LeaseEvent{}, "Seq"))
	if d := cmp.Diff(want, h.history(id), opts...); d != "" {
		h.t.Fatalf("lease history of %v (-want +got):\n%s", id, d)
	}
}

// historyKinds returns the kinds of id's lease history.
func (h *harness) historyKinds(id model.ExecutionID) []model.LeaseEventKind {
	h.t.Helper()
	var kinds []model.LeaseEventKind
	for _, ev := range h.history(id) {
		kinds = append(kinds, ev.Kind)
	}
	return kinds
}

// cloneSnapshot deep-copies a snapshot so a test can edit the expected
// next snapshot.
func cloneSnapshot(s *model.ExecutionSnapshot) *model.ExecutionSnapshot {
	c := *s
	c.RequiredCapabilities = slices.Clone(s.RequiredCapabilities)
	c.Budgets = slices.Clone(s.Budgets)
	c.Tags = maps.Clone(s.Tags)
	if s.CurrentAttempt != nil {
		a := *s.CurrentAttempt
		c.CurrentAttempt = &a
	}
	if s.Pending != nil {
		p := *s.Pending
		c.Pending = &p
	}
	if s.CurrentLease != nil {
		l := *s.CurrentLease
		c.CurrentLease = &l
	}
	if s.Grant != nil {
		g := *s.Grant
		c.Grant = &g
	}
	return &c
}

// execView is everything the read methods show about one execution.
type execView struct {
	Snapshot *model.ExecutionSnapshot
	Payload  []byte
	Indexes  []string
	Attempts []model.Attempt
	History  []model.LeaseEvent
	Result   []byte
	ResultOK bool
}

func (h *harness) view(id model.ExecutionID) execView {
	h.t.Helper()
	v := execView{
		Snapshot: h.describe(id), Indexes: h.indexes(id),
		Attempts: h.attempts(id), History: h.history(id),
		Payload: call(h.s.ExecutionPayload(h.ctx, &model.ExecutionPayloadParams{ID: id})).must(h.t).Payload,
	}
	res, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: id})
	switch {
	case err == nil:
		v.Result, v.ResultOK = res.Result, true
	case !errors.Is(err, model.ErrResultNotFound):
		h.t.Fatalf("result of %v: %v", id, err)
	}
	return v
}

// unchanged runs op and checks that it left the execution exactly as it
// was: the error paths write nothing.
func (h *harness) unchanged(id model.ExecutionID, op func()) {
	h.t.Helper()
	before := h.view(id)
	op()
	if d := cmp.Diff(before, h.view(id), cmpOpts...); d != "" {
		h.t.Fatalf("%v changed (-before +after):\n%s", id, d)
	}
}

// worldView is what the store shows of itself: the describe view and the
// indexes of every execution of the partitions used, and the live workers
// of the given namespaces at a fixed time. Every write stamps
// LastMutationAt or moves an index entry, so a write shows in it.
type worldView struct {
	Execs   map[string]execSummary
	Workers map[model.Namespace][]model.WorkerInfo
}

type execSummary struct {
	Snapshot *model.ExecutionSnapshot
	Indexes  []string
}

func (h *harness) world(now time.Time, nss ...model.Namespace) worldView {
	h.t.Helper()
	w := worldView{Execs: map[string]execSummary{}, Workers: map[model.Namespace][]model.WorkerInfo{}}
	for _, id := range h.listAll() {
		w.Execs[id.String()] = execSummary{Snapshot: h.describe(id), Indexes: h.indexes(id)}
	}
	for _, ns := range nss {
		w.Workers[ns] = call(h.s.WorkerList(h.ctx, &model.WorkerListParams{Namespace: ns, Now: now})).must(h.t).Workers
	}
	return w
}

// listAll pages through every partition the subtest used.
func (h *harness) listAll() []model.ExecutionID {
	h.t.Helper()
	var ids []model.ExecutionID
	parts := slices.Sorted(maps.Keys(h.parts))
	for _, p := range parts {
		var after model.ExecutionID
		for {
			page := call(h.s.ExecutionList(h.ctx, &model.ExecutionListParams{Partition: p, After: after, Limit: 100})).must(h.t)
			ids = append(ids, page.IDs...)
			if page.Next.IsZero() {
				break
			}
			after = page.Next
		}
	}
	return ids
}

// wantEqual compares two values of a store result.
func wantEqual[T any](t testing.TB, what string, want, got T) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Fatalf("%s (-want +got):\n%s", what, d)
	}
}

// Error assertions.

// wantErr checks that err matches target with errors.Is.
func wantErr(t testing.TB, err error, target *model.Error) {
	t.Helper()
	_ = modelErr(t, err, target)
}

// modelErr checks that err matches target with errors.Is and returns it as
// a *model.Error.
func modelErr(t testing.TB, err error, target *model.Error) *model.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", target.Code)
	}
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %s", err, target.Code)
	}
	var e *model.Error
	if !errors.As(err, &e) {
		t.Fatalf("err %v is not a *model.Error", err)
	}
	return e
}

// wantNotActive checks that err is execution_not_active carrying want.
func wantNotActive(t testing.TB, err error, want model.NotActiveState) {
	t.Helper()
	e := modelErr(t, err, model.ErrNotActive)
	if e.State == nil {
		t.Fatalf("execution_not_active without state: %v", err)
	}
	if d := cmp.Diff(want, *e.State); d != "" {
		t.Fatalf("execution_not_active state (-want +got):\n%s", d)
	}
}

// State vectors of the phases.

func stEligible(as model.AttemptState) model.StateVector {
	return model.StateVector{
		LifecyclePhase: model.PhaseRunnable, OwnershipState: model.OwnershipUnowned,
		EligibilityState: model.EligibleNow, BlockingReason: model.WaitingForWorker,
		TerminalOutcome: model.OutcomeNone, AttemptState: as,
	}
}

func stDelayed(br model.BlockingReason, as model.AttemptState) model.StateVector {
	return model.StateVector{
		LifecyclePhase: model.PhaseRunnable, OwnershipState: model.OwnershipUnowned,
		EligibilityState: model.NotEligibleUntilTime, BlockingReason: br,
		TerminalOutcome: model.OutcomeNone, AttemptState: as,
	}
}

func stBlocked(es model.EligibilityState, br model.BlockingReason, detail string, as model.AttemptState) model.StateVector {
	return model.StateVector{
		LifecyclePhase: model.PhaseRunnable, OwnershipState: model.OwnershipUnowned,
		EligibilityState: es, BlockingReason: br, BlockingDetail: detail,
		TerminalOutcome: model.OutcomeNone, AttemptState: as,
	}
}

var (
	stActive = model.StateVector{
		LifecyclePhase: model.PhaseActive, OwnershipState: model.OwnershipLeased,
		EligibilityState: model.NotApplicable, BlockingReason: model.BlockingNone,
		TerminalOutcome: model.OutcomeNone, AttemptState: model.AttemptRunning,
	}
	stLeaseExpired = model.StateVector{
		LifecyclePhase: model.PhaseActive, OwnershipState: model.OwnershipLeaseExpiredReclaimable,
		EligibilityState: model.NotApplicable, BlockingReason: model.WaitingForWorker,
		TerminalOutcome: model.OutcomeNone, AttemptState: model.AttemptInterrupted,
	}
	stLeaseRevoked = model.StateVector{
		LifecyclePhase: model.PhaseActive, OwnershipState: model.OwnershipLeaseRevoked,
		EligibilityState: model.NotApplicable, BlockingReason: model.WaitingForWorker,
		TerminalOutcome: model.OutcomeNone, AttemptState: model.AttemptInterrupted,
	}
)

func stTerminal(to model.TerminalOutcome, as model.AttemptState) model.StateVector {
	return model.StateVector{
		LifecyclePhase: model.PhaseTerminal, OwnershipState: model.OwnershipUnowned,
		EligibilityState: model.NotApplicable, BlockingReason: model.BlockingNone,
		TerminalOutcome: to, AttemptState: as,
	}
}

// terminalIndexes are the only indexes of a terminal execution.
func terminalIndexes(l model.LaneID) []string { return []string{ixAll, ixLane(l, "terminal")} }

// activeIndexes are the indexes of an execution leased to w.
func activeIndexes(l model.LaneID, w model.WorkerInstanceID, extra ...string) []string {
	return append([]string{ixAll, ixLane(l, "active"), ixLease, ixWorker(w)}, extra...)
}
