package proptest

import (
	"errors"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// action is one kind of step. Its weight is how often it is drawn.
type action struct {
	name   string
	weight int
	run    func(m *machine, t *rapid.T)
}

// actions lists every kind of step. The first one, a clock advance by a
// drawn amount, is what shrinking turns unneeded steps into (it shrinks to
// an advance by zero, a no-op).
var actions []*action

// actionNames repeats each name by its weight, so drawing from it draws
// actions by weight and the trace shows names.
var (
	actionNames []string
	actionByKey = map[string]*action{}
	genAction   *rapid.Generator[string]
)

func init() {
	actions = []*action{
		{"AdvanceTime", 6, (*machine).actAdvance},
		{"AdvanceToDue", 3, (*machine).actAdvanceToDue},
		{"Create", 10, (*machine).actCreate},
		{"ClaimGrantIssue", 4, (*machine).actClaimGrant},
		{"ExecutionClaim", 5, (*machine).actClaim},
		{"GrantThenClaim", 2, (*machine).actGrantThenClaim},
		{"ExecutionGrantAndClaim", 5, (*machine).actGrantAndClaim},
		{"ExecutionClaimNext", 6, (*machine).actClaimNext},
		{"ExecutionBlock", 2, (*machine).actBlock},
		{"ExecutionUnblock", 2, (*machine).actUnblock},
		{"RouteUnblock", 4, (*machine).actRouteUnblock},
		{"LeaseRenew", 3, (*machine).actRenew},
		{"ExecutionUpdateProgress", 2, (*machine).actProgress},
		{"ExecutionComplete", 4, (*machine).actComplete},
		{"ExecutionFail", 4, (*machine).actFail},
		{"ExecutionCancel", 3, (*machine).actCancel},
		{"ExecutionDelay", 3, (*machine).actDelay},
		{"ExecutionChangePriority", 2, (*machine).actChangePriority},
		{"LeaseRevoke", 3, (*machine).actRevoke},
		{"LeaseMarkExpired", 3, (*machine).actMarkExpired},
		{"ReclaimGrantIssue", 3, (*machine).actReclaimGrant},
		{"ExecutionReclaim", 4, (*machine).actReclaim},
		{"ReclaimFlow", 3, (*machine).actReclaimFlow},
		{"ExecutionRecover", 2, (*machine).actRecover},
		{"RevokeThenRecover", 2, (*machine).actRevokeThenRecover},
		{"ExecutionReplay", 3, (*machine).actReplay},
		{"ReplayThenCancel", 2, (*machine).actReplayThenCancel},
		{"ExecutionExpire", 3, (*machine).actExpire},
		{"TimeoutFlow", 3, (*machine).actTimeoutFlow},
		{"ExecutionPromoteDelayed", 2, (*machine).actPromote},
		{"Scanner", 5, (*machine).actScanner},
		{"WorkerRegister", 3, (*machine).actWorkerRegister},
		{"WorkerHeartbeat", 2, (*machine).actWorkerHeartbeat},
		{"WorkerDeregister", 1, (*machine).actWorkerDeregister},
		{"WorkerExpire", 2, (*machine).actWorkerExpire},
		{"Read", 2, (*machine).actRead},
		{"PartitionDue", 1, (*machine).actPartitionDue},
	}
	for _, a := range actions {
		actionByKey[a.name] = a
		for range a.weight {
			actionNames = append(actionNames, a.name)
		}
	}
	genAction = rapid.SampledFrom(actionNames)
}

func pickAction(t *rapid.T) *action { return actionByKey[genAction.Draw(t, "action")] }

// invalid draws whether a call gets one invalid input (1 in 20) and which of
// n; -1 means none.
func invalid(t *rapid.T, n int) int {
	if !chance(t, 5, "invalid") {
		return -1
	}
	return drawIndex(t, n, "invalid_field")
}

const leaseCorruptions = 6

func corruptLease(r *model.LeaseRequest, k int) {
	switch k {
	case 0:
		r.LeaseTTL = 0
	case 1:
		r.LeaseTTL = model.MaxLeaseTTL + time.Millisecond
	case 2:
		r.LeaseID = model.LeaseID{}
	case 3:
		r.AttemptID = model.AttemptID{}
	case 4:
		r.WorkerID = ""
	case 5:
		r.WorkerInstanceID = "has space"
	}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

var (
	genSmallMs  = rapid.Int64Range(0, 1000)
	genMediumMs = rapid.Int64Range(0, 30_000)
	genLargeMs  = rapid.Int64Range(0, 600_000)
	genGrantTTL = rapid.Int64Range(1, model.MaxGrantTTL.Milliseconds())
)

// ---- time ----

func (m *machine) actAdvance(t *rapid.T) {
	var d int64
	switch scale := genPercent.Draw(t, "scale"); {
	case scale < 50:
		d = genSmallMs.Draw(t, "advance_ms")
	case scale < 85:
		d = genMediumMs.Draw(t, "advance_ms")
	default:
		d = genLargeMs.Draw(t, "advance_ms")
	}
	if d > 0 {
		t.Logf("step %d: advance %v", m.step, ms(d))
	}
	m.clock.Advance(ms(d))
}

// actAdvanceToDue jumps to one of the times the state is waiting for (a
// lease or grant expiry, a delay, a deadline, a timer, a worker or
// idempotency expiry), give or take a millisecond, to hit the boundaries.
func (m *machine) actAdvanceToDue(t *rapid.T) {
	now := m.now()
	var cands []time.Time
	add := func(ts time.Time) {
		if ts.After(now) {
			cands = append(cands, ts)
		}
	}
	for _, r := range m.obs[0].Due {
		add(r.NextDueAt)
	}
	for _, x := range m.obs[0].Execs {
		s := x.Snapshot
		if s.CurrentLease != nil {
			add(s.CurrentLease.ExpiresAt)
			add(s.CurrentLease.AcquiredAt.Add(s.AttemptTimeout))
		}
		if s.Grant != nil {
			add(s.Grant.ExpiresAt)
		}
		add(s.DelayUntil)
		add(s.Deadline)
	}
	for _, ws := range m.workers {
		for _, w := range ws {
			add(w.expiresAt)
		}
	}
	for _, v := range m.idem {
		add(v.expiresAt)
	}
	if len(cands) == 0 {
		m.clock.Advance(time.Millisecond)
		return
	}
	slices.SortFunc(cands, time.Time.Compare)
	cands = slices.CompactFunc(cands, time.Time.Equal)
	target := drawFrom(t, cands, "due").Add(ms(int64(rapid.IntRange(-1, 1).Draw(t, "off_by_ms"))))
	if target.After(now) {
		t.Logf("step %d: advance to %v", m.step, target)
		m.clock.Set(target)
	}
}

// ---- create ----

var (
	kinds      = []model.Kind{"email.send", "report"}
	priorities = []int{0, 1, 5, 100, model.MaxPriority, -5, 99_999}
	smallInts  = []int{0, 1, 1, 2}
	idemKeys   = []string{"", "", "k1", "k2"}
	idemTTLs   = []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second}
	tagSets    = []map[string]string{nil, {"app.k": "v"}, {"app.k": "v", "ops.team": "x"}}
	payloads   = [][]byte{nil, []byte("payload")}
)

func drawRetryPolicy(t *rapid.T) model.RetryPolicy {
	if !chance(t, 60, "retry_policy") {
		return model.RetryPolicy{}
	}
	p := model.RetryPolicy{MaxRetries: rapid.IntRange(0, 3).Draw(t, "max_retries")}
	if genBool.Draw(t, "fixed") {
		p.Backoff = model.BackoffFixed
		p.Delay = drawFrom(t, []time.Duration{0, time.Millisecond, 250 * time.Millisecond, 2 * time.Second}, "delay")
		return p
	}
	p.InitialDelay = drawFrom(t, []time.Duration{0, time.Millisecond, 100 * time.Millisecond, 2 * time.Second}, "initial_delay")
	p.Multiplier = drawFrom(t, []float64{0, 1, 1.5, 3}, "multiplier")
	init := p.InitialDelay
	if init == 0 {
		init = model.DefaultInitialDelay
	}
	p.MaxDelay = drawFrom(t, []time.Duration{0, init, init + 5*time.Second}, "max_delay")
	return p
}

// drawOffset draws an optional time around now (zero: none).
func (m *machine) drawOffset(t *rapid.T, label string, pct int, lo, hi int64) time.Time {
	if !chance(t, pct, label+"_set") {
		return time.Time{}
	}
	return m.now().Add(ms(rapid.Int64Range(lo, hi).Draw(t, label+"_ms")))
}

func (m *machine) actCreate(t *rapid.T) {
	now := m.now()
	lane := drawFrom(t, lanes, "lane")
	p := &model.ExecutionCreateParams{
		Namespace:            drawFrom(t, namespaces, "namespace"),
		Lane:                 lane,
		Kind:                 drawFrom(t, kinds, "kind"),
		Priority:             drawFrom(t, priorities, "priority"),
		RequiredCapabilities: drawCaps(t, "required", 35),
		RetryPolicy:          drawRetryPolicy(t),
		MaxReclaims:          drawFrom(t, smallInts, "max_reclaims"),
		MaxReplays:           drawFrom(t, smallInts, "max_replays"),
		Deadline:             m.drawOffset(t, "deadline", 20, -5_000, 120_000),
		DelayUntil:           m.drawOffset(t, "delay_until", 25, -5_000, 30_000),
		IdempotencyKey:       drawFrom(t, idemKeys, "idempotency_key"),
		IdempotencyTTL:       drawFrom(t, idemTTLs, "idempotency_ttl"),
		Tags:                 drawFrom(t, tagSets, "tags"),
		Payload:              drawFrom(t, payloads, "payload"),
		Now:                  now,
	}
	if chance(t, 40, "attempt_timeout_set") {
		p.AttemptTimeout = ms(rapid.Int64Range(1, 8_000).Draw(t, "attempt_timeout_ms"))
	}
	if len(m.execs) >= m.opts.MaxExecutions || (len(m.execs) > 0 && chance(t, 5, "reuse_id")) {
		p.ID = drawFrom(t, m.execs, "reuse").id
	} else {
		p.ID = m.newExecID(t, lane)
	}
	bad := invalid(t, 12)
	switch bad {
	case 0:
		p.Lane = "bad lane"
	case 1:
		p.Kind = ""
	case 2:
		p.Namespace = "UPPER"
	case 3:
		p.RetryPolicy.MaxRetries = model.MaxRetries + 1
	case 4:
		p.RequiredCapabilities = model.Capabilities{"a b"}
	case 5:
		p.Tags = map[string]string{"NoDot": "x"}
	case 6:
		p.AttemptTimeout = -time.Millisecond
	case 7:
		p.IdempotencyKey, p.IdempotencyTTL = "k1", 500*time.Millisecond
	case 8:
		p.ID = model.NewExecutionID(m.cfg.FlowPartitions, p.ID.UUID())
	case 9:
		p.MaxReclaims = -1
	case 10:
		p.Now = time.Time{}
	case 11:
		p.IdempotencyKey = "bad\x00key"
	}
	res, err := call(m, t, "ExecutionCreate", p, model.Store.ExecutionCreate)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionCreate", err)
		return
	}
	m.expect(t, err == nil, "ExecutionCreate with valid input failed: %v", err)

	// Predict: a live idempotency key wins, then an existing id; else new.
	ik := idemRef{p.ID.Partition(), p.Namespace, p.IdempotencyKey}
	wantID, dup := p.ID, false
	if v, ok := m.idem[ik]; ok && p.IdempotencyKey != "" && v.expiresAt.After(now) {
		wantID, dup = v.id, true
	} else if m.byID[p.ID] != nil {
		dup = true
	}
	m.expect(t, res.ID == wantID && res.Duplicate == dup, "ExecutionCreate: got id %v duplicate %v, want %v %v", res.ID, res.Duplicate, wantID, dup)
	if dup {
		if s := m.snap(wantID); s != nil {
			m.expect(t, res.PublicState == s.PublicState, "duplicate create reports %v, execution is %v", res.PublicState, s.PublicState)
		}
		return
	}
	want := model.PublicWaiting
	if p.DelayUntil.After(now) {
		want = model.PublicDelayed
	}
	m.expect(t, res.PublicState == want, "ExecutionCreate: public state %v, want %v", res.PublicState, want)
	r := &refExec{id: p.ID, lane: p.Lane}
	m.execs = append(m.execs, r)
	m.byID[p.ID] = r
	if p.IdempotencyKey != "" {
		ttl := p.IdempotencyTTL
		if ttl == 0 {
			ttl = model.DefaultIdempotencyTTL
		}
		m.idem[ik] = idemVal{p.ID, now.Add(ttl)}
	}
}

// ---- claims ----

func (m *machine) actClaimGrant(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	w := drawFrom(t, workerPool, "worker")
	p := &model.ClaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance,
		Capabilities: drawCaps(t, "caps", 60),
		GrantTTL:     ms(genGrantTTL.Draw(t, "grant_ttl_ms")),
		Now:          m.now(),
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.GrantTTL = 0
	case 1:
		p.GrantTTL = model.MaxGrantTTL + time.Millisecond
	case 2:
		p.Capabilities = model.Capabilities{"a,b"}
	case 3:
		p.WorkerID = "bad id!"
	}
	prev := m.snap(id)
	res, err := call(m, t, "ClaimGrantIssue", p, model.Store.ClaimGrantIssue)
	if bad >= 0 {
		m.expectValidation(t, "ClaimGrantIssue", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && isEligible(prev) && !m.liveGrant(prev) && prev.RequiredCapabilities.SubsetOf(p.Capabilities),
			"ClaimGrantIssue succeeded on %+v", prev)
		m.expect(t, res.ExpiresAt.Equal(m.now().Add(p.GrantTTL)), "grant expires at %v", res.ExpiresAt)
	} else if model.CodeOf(err) == model.CodeCapabilityMismatch {
		m.expect(t, prev != nil, "capability mismatch for a missing execution")
		var e *model.Error
		errors.As(err, &e)
		want := prev.RequiredCapabilities.Missing(p.Capabilities).CSV()
		m.expect(t, e.Detail == want, "capability_mismatch detail %q, want %q", e.Detail, want)
	}
}

func (m *machine) actClaim(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return isEligible(s) && s.Grant != nil })
	m.claim(t, id, m.drawWorker(t, id), m.drawClaimerCaps(t, id))
}

// drawClaimerCaps draws a claimer's capabilities: mostly exactly what id
// requires, sometimes anything.
func (m *machine) drawClaimerCaps(t *rapid.T, id model.ExecutionID) model.Capabilities {
	if s := m.snap(id); s != nil && chance(t, 70, "claimer_capable") {
		return s.RequiredCapabilities
	}
	return drawCaps(t, "claim_caps", 60)
}

// actGrantThenClaim is what a scheduler does: issue a claim grant, then
// claim for that worker (sometimes for another).
func (m *machine) actGrantThenClaim(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	w := drawFrom(t, workerPool, "worker")
	caps := drawCaps(t, "caps", 30)
	p := &model.ClaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance, Capabilities: caps,
		GrantTTL: ms(genGrantTTL.Draw(t, "grant_ttl_ms")), Now: m.now(),
	}
	if _, err := call(m, t, "ClaimGrantIssue", p, model.Store.ClaimGrantIssue); err != nil {
		return
	}
	m.observeQuiet(t)
	if chance(t, 20, "other_worker") {
		w = drawFrom(t, workerPool, "worker")
	}
	if chance(t, 20, "other_caps") {
		caps = drawCaps(t, "claim_caps", 50) // the claimer's capabilities changed
	}
	m.claim(t, id, w, caps)
}

// claim consumes a claim grant for worker instance w holding caps: only
// the instance the grant was issued to, and only while caps cover the
// execution's requirement, succeeds.
func (m *machine) claim(t *rapid.T, id model.ExecutionID, w poolWorker, caps model.Capabilities) {
	p := &model.ExecutionClaimParams{ID: id, Capabilities: caps, LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	bad := invalid(t, leaseCorruptions)
	corruptLease(&p.LeaseRequest, bad)
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionClaim", p, model.Store.ExecutionClaim)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionClaim", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil, "ExecutionClaim of an unlisted execution succeeded")
		g := prev.Grant
		m.expect(t, isEligible(prev) && g != nil && g.Kind == model.GrantClaim && g.WorkerID == w.id &&
			g.WorkerInstanceID == w.instance && !g.ExpiresAt.Before(m.now()) && prev.RequiredCapabilities.SubsetOf(caps),
			"ExecutionClaim by %s/%s with %v succeeded on %+v grant %+v", w.id, w.instance, caps, prev.State, g)
		m.acquire(t, "ExecutionClaim", prev, w, p.LeaseRequest, res)
	}
}

func (m *machine) actGrantAndClaim(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	w := drawFrom(t, workerPool, "worker")
	p := &model.ExecutionGrantAndClaimParams{
		ID: id, Capabilities: drawCaps(t, "caps", 60), LeaseRequest: m.leaseRequest(t, w), Now: m.now(),
	}
	bad := invalid(t, leaseCorruptions+1)
	if bad == leaseCorruptions {
		p.Capabilities = model.Capabilities{"tab\tcap"}
	} else {
		corruptLease(&p.LeaseRequest, bad)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionGrantAndClaim", p, model.Store.ExecutionGrantAndClaim)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionGrantAndClaim", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil, "ExecutionGrantAndClaim of an unlisted execution succeeded")
		m.expect(t, isEligible(prev) && !m.liveGrant(prev) && prev.RequiredCapabilities.SubsetOf(p.Capabilities),
			"ExecutionGrantAndClaim succeeded on %+v grant %+v", prev.State, prev.Grant)
		m.acquire(t, "ExecutionGrantAndClaim", prev, w, p.LeaseRequest, res)
	}
}

func unionCaps(a, b model.Capabilities) model.Capabilities {
	c, _ := model.ParseCapabilities("capabilities", append(slices.Clone(a), b...))
	return c
}

func (m *machine) actClaimNext(t *rapid.T) {
	lane := drawFrom(t, lanes, "lane")
	part := m.cfg.SoloPartition(lane)
	if chance(t, 15, "other_partition") {
		part = drawIndex(t, m.cfg.FlowPartitions, "partition")
	}
	w := drawFrom(t, workerPool, "worker")
	caps := drawCaps(t, "caps", 60)
	ns := drawClaimNamespace(t)
	var live model.Capabilities
	switch rapid.IntRange(0, 2).Draw(t, "live_kind") {
	case 0:
		live = unionCaps(caps, drawCaps(t, "live", 50))
	case 1:
		var ws []model.WorkerInfo
		for _, x := range namespaces {
			if ns == "" || x == ns {
				ws = append(ws, m.obs[0].Workers[x]...)
			}
		}
		live = (&model.WorkerListResult{Workers: ws}).LiveCapabilities()
	default:
		live = drawCaps(t, "live", 50)
	}
	p := &model.ExecutionClaimNextParams{
		Partition: part, Lane: lane, Namespace: ns, Capabilities: caps, LiveCapabilities: live,
		ScanLimit:    rapid.IntRange(1, 4).Draw(t, "scan_limit"),
		LeaseRequest: m.leaseRequest(t, w), Now: m.now(),
	}
	bad := invalid(t, leaseCorruptions+4)
	switch bad {
	case leaseCorruptions:
		p.ScanLimit = model.MaxPageSize + 1
	case leaseCorruptions + 1:
		p.Partition = m.cfg.FlowPartitions
	case leaseCorruptions + 2:
		p.Lane = ""
	case leaseCorruptions + 3:
		p.Namespace = "UPPER"
	default:
		corruptLease(&p.LeaseRequest, bad)
	}
	res, err := call(m, t, "ExecutionClaimNext", p, model.Store.ExecutionClaimNext)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionClaimNext", err)
		return
	}
	m.expect(t, err == nil, "ExecutionClaimNext with valid input failed: %v", err)
	want := m.predictClaimNext(p)
	var got claimNextOutcome
	got.blocked, got.skipped = res.Blocked, res.Skipped
	if res.Claimed != nil {
		got.claimed = res.Claimed.ID
	}
	m.expect(t, cmpEqual(got, want), "ExecutionClaimNext: claimed %v, blocked %v, skipped %d; the eligible heads say %v, %v, %d",
		got.claimed, got.blocked, got.skipped, want.claimed, want.blocked, want.skipped)
	if c := res.Claimed; c != nil {
		m.acquire(t, "ExecutionClaimNext", m.snap(c.ID), w, p.LeaseRequest, c)
	}
}

type claimNextOutcome struct {
	claimed model.ExecutionID
	blocked []model.ExecutionID
	skipped int
}

// predictClaimNext walks the lane's eligible executions in index order
// (higher priority first, then creation time, then id) as claim-next must:
// a head with another worker's live grant is skipped; the first head whose
// required capabilities the worker has is claimed; a head no live worker
// can serve is route-blocked; the others are skipped.
func (m *machine) predictClaimNext(p *model.ExecutionClaimNextParams) claimNextOutcome {
	type head struct {
		score int64
		s     *model.ExecutionSnapshot
	}
	var heads []head
	for _, x := range m.obs[0].Execs {
		s := x.Snapshot
		if isEligible(s) && s.Lane == p.Lane && s.ID.Partition() == p.Partition {
			heads = append(heads, head{model.EligibleScore(s.Priority, s.CreatedAt.UnixMilli()), s})
		}
	}
	slices.SortFunc(heads, func(a, b head) int {
		if a.score != b.score {
			return cmpInt(a.score, b.score)
		}
		return a.s.ID.Compare(b.s.ID)
	})
	var out claimNextOutcome
	for _, h := range heads[:min(len(heads), p.ScanLimit)] {
		s := h.s
		switch {
		case p.Namespace != "" && s.Namespace != p.Namespace:
			out.skipped++ // another namespace's: never claimed nor blocked
		case s.Grant != nil && !s.Grant.ExpiresAt.Before(p.Now) && s.Grant.WorkerID != p.WorkerID:
			out.skipped++
		case s.RequiredCapabilities.SubsetOf(p.Capabilities):
			out.claimed = s.ID
			return out
		case s.RequiredCapabilities.SubsetOf(p.LiveCapabilities):
			out.skipped++
		default:
			out.blocked = append(out.blocked, s.ID)
		}
	}
	return out
}

// drawClaimNamespace draws a claim's namespace: mostly one of the
// namespaces, sometimes "" (every namespace).
func drawClaimNamespace(t *rapid.T) model.Namespace {
	if chance(t, 30, "any_namespace") {
		return ""
	}
	return drawFrom(t, namespaces, "claim_namespace")
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var admissionReasons = []model.BlockingReason{
	model.WaitingForBudget, model.WaitingForQuota, model.WaitingForCapableWorker,
	model.PausedByOperator, model.PausedByPolicy,
}

func isBlocked(s *model.ExecutionSnapshot) bool {
	_, ok := model.BlockedEligibility(s.State.BlockingReason)
	return s.State.LifecyclePhase == model.PhaseRunnable && ok
}

func (m *machine) actBlock(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	p := &model.ExecutionBlockParams{
		ID: id, Reason: drawFrom(t, admissionReasons, "reason"),
		Detail: drawFrom(t, []string{"", "budget b1 exhausted"}, "detail"), Now: m.now(),
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Reason = model.WaitingForWorker
	case 1:
		p.Reason = 0
	case 2:
		p.Detail = "\xff"
	case 3:
		p.ID = model.ExecutionID{}
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionBlock", p, model.Store.ExecutionBlock)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionBlock", err)
		return
	}
	if err == nil {
		want, _ := model.BlockedEligibility(p.Reason)
		m.expect(t, prev != nil && isEligible(prev) && res.EligibilityState == want,
			"ExecutionBlock succeeded on %+v with %v", prev, res.EligibilityState)
	}
}

func (m *machine) actUnblock(t *rapid.T) {
	id := m.pickExec(t, isBlocked)
	reason := drawFrom(t, admissionReasons, "reason")
	if s := m.snap(id); s != nil && isBlocked(s) && !chance(t, 20, "other_reason") {
		reason = s.State.BlockingReason
	}
	p := &model.ExecutionUnblockParams{ID: id, ExpectedReason: reason, Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.ExpectedReason = model.WaitingForDelay
	case 1:
		p.Now = time.Time{}
	}
	prev := m.snap(id)
	_, err := call(m, t, "ExecutionUnblock", p, model.Store.ExecutionUnblock)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionUnblock", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && isBlocked(prev) && prev.State.BlockingReason == reason,
			"ExecutionUnblock(%v) succeeded on %+v", reason, prev)
	}
}

// drawPartition draws a partition: often that of an execution want
// accepts, else a lane's, sometimes any.
func (m *machine) drawPartition(t *rapid.T, want func(*model.ExecutionSnapshot) bool) int {
	if want != nil && !chance(t, 30, "untargeted_partition") {
		var parts []int
		for _, r := range m.execs {
			if s := m.snap(r.id); s != nil && want(s) {
				parts = append(parts, r.id.Partition())
			}
		}
		if len(parts) > 0 {
			return drawFrom(t, parts, "partition")
		}
	}
	if chance(t, 20, "any_partition") {
		return drawIndex(t, m.cfg.FlowPartitions, "partition")
	}
	return m.cfg.SoloPartition(drawFrom(t, lanes, "lane"))
}

func isRouteBlocked(s *model.ExecutionSnapshot) bool {
	return s.State.LifecyclePhase == model.PhaseRunnable && s.State.EligibilityState == model.BlockedByRoute
}

// hasTimer reports whether s has an entry in a timer index.
func hasTimer(s *model.ExecutionSnapshot) bool {
	v := s.State
	return v.LifecyclePhase == model.PhaseActive || v.EligibilityState == model.NotEligibleUntilTime ||
		(v.LifecyclePhase != model.PhaseTerminal && !s.Deadline.IsZero())
}

func (m *machine) actRouteUnblock(t *rapid.T) {
	p := &model.RouteUnblockParams{
		Partition: m.drawPartition(t, isRouteBlocked), Namespace: drawFrom(t, namespaces, "namespace"),
		Live:  drawCaps(t, "live", 70),
		Limit: rapid.IntRange(1, 3).Draw(t, "limit"), Now: m.now(),
	}
	if chance(t, 40, "live_all") {
		p.Live = capUniverse
	}
	if chance(t, 10, "all") {
		p.All, p.Live = true, nil
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Limit = 0
	case 1:
		p.Partition = -1
	case 2:
		p.Live = model.Capabilities{""}
	case 3:
		p.Namespace = ""
	}
	res, err := call(m, t, "RouteUnblock", p, model.Store.RouteUnblock)
	if bad >= 0 {
		m.expectValidation(t, "RouteUnblock", err)
		return
	}
	m.expect(t, err == nil, "RouteUnblock with valid input failed: %v", err)
	m.expect(t, len(res.Unblocked) <= p.Limit, "RouteUnblock unblocked %d, limit %d", len(res.Unblocked), p.Limit)
	for _, id := range res.Unblocked {
		prev := m.snap(id)
		m.expect(t, prev != nil && id.Partition() == p.Partition && prev.State.LifecyclePhase == model.PhaseRunnable &&
			prev.State.EligibilityState == model.BlockedByRoute && (p.All || prev.RequiredCapabilities.SubsetOf(p.Live)) &&
			prev.Namespace == p.Namespace,
			"RouteUnblock of %s unblocked %v (%+v, required %v, live %v)", p.Namespace, id, prev, prev.RequiredCapabilities, p.Live)
	}
}

// ---- fenced operations ----

func (m *machine) drawSource(t *rapid.T) model.Source {
	if chance(t, 25, "operator") {
		return model.SourceOperator
	}
	return model.SourceWorker
}

func (m *machine) actRenew(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	p := &model.LeaseRenewParams{ID: id, Fence: m.drawFence(t, id), LeaseTTL: drawLeaseTTL(t), Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.LeaseTTL = 0
	case 1:
		p.LeaseTTL = model.MaxLeaseTTL + time.Millisecond
	}
	prev := m.snap(id)
	res, err := call(m, t, "LeaseRenew", p, model.Store.LeaseRenew)
	if bad >= 0 {
		m.expectValidation(t, "LeaseRenew", err)
		return
	}
	m.checkFenced(t, "LeaseRenew", prev, model.SourceWorker, p.Fence, false, false, err)
	if err == nil {
		now, ttl := m.now(), p.LeaseTTL.Milliseconds()
		m.expect(t, res.ExpiresAt.Equal(now.Add(p.LeaseTTL)) && res.RenewBy.UnixMilli() == model.RenewDeadline(now.UnixMilli(), ttl),
			"LeaseRenew: expires %v renew by %v for ttl %v", res.ExpiresAt, res.RenewBy, p.LeaseTTL)
	}
}

func (m *machine) actProgress(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	p := &model.ExecutionUpdateProgressParams{
		ID: id, Fence: m.drawFence(t, id), Percent: rapid.IntRange(0, 100).Draw(t, "percent"),
		Message: drawFrom(t, []string{"", "halfway", "ünïcødé"}, "message"), Now: m.now(),
	}
	bad := invalid(t, 3)
	switch bad {
	case 0:
		p.Percent = 101
	case 1:
		p.Percent = -1
	case 2:
		p.Message = strings.Repeat("x", model.MaxReasonBytes+1)
	}
	prev := m.snap(id)
	_, err := call(m, t, "ExecutionUpdateProgress", p, model.Store.ExecutionUpdateProgress)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionUpdateProgress", err)
		return
	}
	m.checkFenced(t, "ExecutionUpdateProgress", prev, model.SourceWorker, p.Fence, false, false, err)
}

// fencedSource draws the source and fence of a complete/fail/delay/cancel.
func (m *machine) fencedSource(t *rapid.T, id model.ExecutionID) (model.Source, model.Fence) {
	src := m.drawSource(t)
	if src == model.SourceOperator {
		return src, model.Fence{}
	}
	return src, m.drawFence(t, id)
}

// corruptSource makes the source or fence invalid for k 0 (an operator
// with a fence) and 1 (an unknown source).
func (m *machine) corruptSource(src *model.Source, f *model.Fence, k int) {
	switch k {
	case 0:
		*src, *f = model.SourceOperator, model.Fence{LeaseID: model.LeaseID(model.NewUUIDv4([16]byte{1})), LeaseEpoch: 1, AttemptID: model.AttemptID(model.NewUUIDv4([16]byte{2}))}
	case 1:
		*src = "bogus"
	}
}

var (
	reasons    = []string{"", "boom", "ünïcødé"}
	categories = []model.FailureCategory{"", model.FailureTransient, model.FailurePermanent, model.FailureTimeout,
		model.FailureCancelled, model.FailureInfraCrash, model.FailurePanic, model.FailurePayloadInvalid,
		model.FailureUnknownKind, "custom_cat"}
)

func (m *machine) actComplete(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionCompleteParams{ID: id, Fence: f, Source: src, Result: drawFrom(t, payloads, "result"), Now: m.now()}
	var w poolWorker
	if chance(t, 3, "with_next") {
		lane := drawFrom(t, lanes, "next_lane")
		if prev := m.snap(id); prev != nil && chance(t, 2, "next_same_lane") {
			lane = prev.Lane
		}
		w = drawFrom(t, workerPool, "next_worker")
		caps := drawCaps(t, "next_caps", 60)
		p.Next = &model.NextClaim{Lane: lane, Namespace: drawClaimNamespace(t), Capabilities: caps, LiveCapabilities: unionCaps(caps, drawCaps(t, "next_live", 50)),
			ScanLimit: rapid.IntRange(1, 4).Draw(t, "next_scan_limit"), LeaseRequest: m.leaseRequest(t, w)}
	}
	bad := invalid(t, 3)
	m.corruptSource(&p.Source, &p.Fence, bad)
	if bad == 2 {
		if p.Next == nil {
			p.Next = &model.NextClaim{Lane: lanes[0], ScanLimit: 1, LeaseRequest: m.leaseRequest(t, drawFrom(t, workerPool, "next_worker"))}
		}
		p.Next.ScanLimit = 0
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionComplete", p, model.Store.ExecutionComplete)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionComplete", err)
		return
	}
	m.checkFenced(t, "ExecutionComplete", prev, p.Source, p.Fence, false, err == nil && res.Replayed, err)
	if err != nil {
		return
	}
	if p.Next == nil {
		m.expect(t, res.Next == nil, "ExecutionComplete without Next reported a next claim %+v", res.Next)
		return
	}
	m.expect(t, res.Next != nil, "ExecutionComplete with Next reported no next claim")
	if res.Next == nil {
		return
	}
	want := m.predictClaimNext(&model.ExecutionClaimNextParams{Partition: id.Partition(), Lane: p.Next.Lane, Namespace: p.Next.Namespace,
		Capabilities: p.Next.Capabilities, LiveCapabilities: p.Next.LiveCapabilities, ScanLimit: p.Next.ScanLimit,
		LeaseRequest: p.Next.LeaseRequest, Now: p.Now})
	var got claimNextOutcome
	got.blocked, got.skipped = res.Next.Blocked, res.Next.Skipped
	if res.Next.Claimed != nil {
		got.claimed = res.Next.Claimed.ID
	}
	m.expect(t, cmpEqual(got, want), "ExecutionComplete next: claimed %v, blocked %v, skipped %d; the eligible heads say %v, %v, %d",
		got.claimed, got.blocked, got.skipped, want.claimed, want.blocked, want.skipped)
	if c := res.Next.Claimed; c != nil {
		m.acquire(t, "ExecutionComplete next", m.snap(c.ID), w, p.Next.LeaseRequest, c)
	}
}

func (m *machine) actPartitionDue(t *rapid.T) {
	p := &model.PartitionDueParams{Partition: drawIndex(t, m.cfg.FlowPartitions, "partition")}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Partition = m.cfg.FlowPartitions
	}
	res, err := call(m, t, "PartitionDue", p, model.Store.PartitionDue)
	if bad >= 0 {
		m.expectValidation(t, "PartitionDue", err)
		return
	}
	m.expect(t, err == nil, "PartitionDue failed: %v", err)
	if err != nil {
		return
	}
	n, routed := 0, false
	for id, x := range m.obs[0].Execs {
		if id.Partition() != p.Partition {
			continue
		}
		n++
		if x.Snapshot.State.LifecyclePhase == model.PhaseRunnable && x.Snapshot.State.EligibilityState == model.BlockedByRoute {
			routed = true
		}
	}
	m.expect(t, res.Executions == n && res.RouteBlocked == routed,
		"PartitionDue(p%d): %d executions, route blocked %v; the store lists %d, %v", p.Partition, res.Executions, res.RouteBlocked, n, routed)
}

func (m *machine) actFail(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionFailParams{
		ID: id, Fence: f, Source: src, Reason: drawFrom(t, reasons, "reason"),
		Category: drawFrom(t, categories, "category"), Now: m.now(),
	}
	bad := invalid(t, 4)
	m.corruptSource(&p.Source, &p.Fence, bad)
	switch bad {
	case 2:
		p.Category = "Bad-Cat"
	case 3:
		p.Reason = "\xc3\x28"
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionFail", p, model.Store.ExecutionFail)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionFail", err)
		return
	}
	replayed := err == nil && res.Replayed
	m.checkFenced(t, "ExecutionFail", prev, p.Source, p.Fence, false, replayed, err)
	if err == nil && !replayed {
		cat := p.Category
		if cat == "" {
			cat = model.FailureTransient
		}
		retry := cat.Retryable() && prev.RetryCount < prev.RetryPolicy.MaxRetries
		if retry {
			until := m.now().Add(ms(prev.RetryPolicy.BackoffMs(prev.RetryCount)))
			m.expect(t, res.Outcome == model.FailRetryScheduled && res.DelayUntil.Equal(until),
				"ExecutionFail: %s until %v, want retry until %v", res.Outcome, res.DelayUntil, until)
		} else {
			m.expect(t, res.Outcome == model.FailTerminal, "ExecutionFail: %s, want %s (category %s, retries %d of %d)",
				res.Outcome, model.FailTerminal, cat, prev.RetryCount, prev.RetryPolicy.MaxRetries)
		}
	}
}

func (m *machine) actCancel(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return s.State.LifecyclePhase != model.PhaseTerminal })
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionCancelParams{ID: id, Reason: drawFrom(t, reasons, "reason"), Source: src, Fence: f, Now: m.now()}
	bad := invalid(t, 3)
	m.corruptSource(&p.Source, &p.Fence, bad)
	if bad == 2 {
		p.Reason = strings.Repeat("r", model.MaxReasonBytes+1)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionCancel", p, model.Store.ExecutionCancel)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionCancel", err)
		return
	}
	replayed := err == nil && res.Replayed
	m.checkFenced(t, "ExecutionCancel", prev, p.Source, p.Fence, true, replayed, err)
	if err == nil && !replayed {
		m.expect(t, res.PriorPhase == prev.State.LifecyclePhase, "ExecutionCancel: prior phase %v, was %v", res.PriorPhase, prev.State.LifecyclePhase)
	}
}

func (m *machine) actDelay(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseActive))
	src, f := m.fencedSource(t, id)
	p := &model.ExecutionDelayParams{
		ID: id, Fence: f, Source: src,
		DelayUntil: m.now().Add(ms(rapid.Int64Range(-2_000, 20_000).Draw(t, "delay_ms"))), Now: m.now(),
	}
	bad := invalid(t, 3)
	m.corruptSource(&p.Source, &p.Fence, bad)
	if bad == 2 {
		p.DelayUntil = time.Time{}
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionDelay", p, model.Store.ExecutionDelay)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionDelay", err)
		return
	}
	replayed := err == nil && res.Replayed
	m.checkFenced(t, "ExecutionDelay", prev, p.Source, p.Fence, false, replayed, err)
	if err == nil && !replayed {
		m.expect(t, res.DelayUntil.Equal(p.DelayUntil), "ExecutionDelay: until %v, asked %v", res.DelayUntil, p.DelayUntil)
	}
}

// ---- other execution operations ----

func (m *machine) actChangePriority(t *rapid.T) {
	id := m.pickExec(t, isEligible)
	p := &model.ExecutionChangePriorityParams{ID: id, Priority: drawFrom(t, priorities, "priority"), Now: m.now()}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.ID = model.ExecutionID{}
	case 1:
		p.Now = time.UnixMilli(0)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionChangePriority", p, model.Store.ExecutionChangePriority)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionChangePriority", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && prev.State.LifecyclePhase != model.PhaseTerminal &&
			res.Old == prev.Priority && res.New == model.ClampPriority(p.Priority),
			"ExecutionChangePriority(%d): %+v on %+v", p.Priority, res, prev)
	}
}

func (m *machine) actRevoke(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	prev := m.snap(id)
	p := &model.LeaseRevokeParams{ID: id, Reason: drawFrom(t, reasons, "reason"), Now: m.now()}
	switch rapid.IntRange(0, 2).Draw(t, "expected_lease") {
	case 1:
		if prev != nil && prev.CurrentLease != nil {
			p.ExpectedLeaseID = prev.CurrentLease.ID
		}
	case 2:
		p.ExpectedLeaseID = model.LeaseID(m.nextUUID(t, ""))
	}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Reason = "\xff\xfe"
	}
	res, err := call(m, t, "LeaseRevoke", p, model.Store.LeaseRevoke)
	if bad >= 0 {
		m.expectValidation(t, "LeaseRevoke", err)
		return
	}
	if err != nil {
		return
	}
	m.expect(t, prev != nil && prev.State.LifecyclePhase == model.PhaseActive, "LeaseRevoke succeeded on %+v", prev)
	switch os := prev.State.OwnershipState; res.Status {
	case model.RevokeRevoked:
		l := prev.CurrentLease
		m.expect(t, os == model.OwnershipLeased && l != nil && (p.ExpectedLeaseID.IsZero() || p.ExpectedLeaseID == l.ID) &&
			res.LeaseID == l.ID && res.LeaseEpoch == prev.LeaseEpoch, "LeaseRevoke revoked %+v (was %v, lease %+v)", res, os, l)
	case model.RevokeAlreadyRevoked:
		m.expect(t, os == model.OwnershipLeaseRevoked, "LeaseRevoke: already_revoked, but was %v", os)
	case model.RevokeAlreadyExpired:
		m.expect(t, os == model.OwnershipLeaseExpiredReclaimable, "LeaseRevoke: already_expired, but was %v", os)
	default:
		m.fatalf(t, "LeaseRevoke: unknown status %q", res.Status)
	}
}

func (m *machine) actMarkExpired(t *rapid.T) {
	now := m.now()
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return isOwned(model.OwnershipLeased)(s) && !s.CurrentLease.ExpiresAt.After(now)
	})
	p := &model.LeaseMarkExpiredParams{ID: id, Now: now}
	bad := invalid(t, 1)
	if bad == 0 {
		p.ID = model.NewExecutionID(m.cfg.FlowPartitions+3, id.UUID())
	}
	prev := m.snap(id)
	res, err := call(m, t, "LeaseMarkExpired", p, model.Store.LeaseMarkExpired)
	if bad >= 0 {
		m.expectValidation(t, "LeaseMarkExpired", err)
		return
	}
	m.expect(t, err == nil, "LeaseMarkExpired failed: %v", err)
	var want string
	switch {
	case prev == nil:
		want = model.MarkExpiredNotFound
	case prev.State.LifecyclePhase != model.PhaseActive:
		want = model.MarkExpiredNotActive
	case prev.State.OwnershipState == model.OwnershipLeaseExpiredReclaimable:
		want = model.MarkExpiredAlreadyExpired
	case prev.State.OwnershipState == model.OwnershipLeaseRevoked:
		want = model.MarkExpiredAlreadyRevoked
	case prev.CurrentLease != nil && prev.CurrentLease.ExpiresAt.After(now):
		want = model.MarkExpiredNotYet
	default:
		want = model.MarkExpiredMarked
	}
	m.expect(t, res.Status == want, "LeaseMarkExpired: %s, want %s", res.Status, want)
}

func reclaimable(s *model.ExecutionSnapshot) bool {
	return isOwned(model.OwnershipLeaseExpiredReclaimable, model.OwnershipLeaseRevoked)(s)
}

func (m *machine) actReclaimGrant(t *rapid.T) {
	id := m.pickExec(t, reclaimable)
	w := drawFrom(t, workerPool, "worker")
	p := &model.ReclaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance, Capabilities: drawCaps(t, "caps", 60),
		GrantTTL: ms(genGrantTTL.Draw(t, "grant_ttl_ms")), Now: m.now(),
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.GrantTTL = -time.Second
	case 1:
		p.WorkerInstanceID = ""
	}
	prev := m.snap(id)
	res, err := call(m, t, "ReclaimGrantIssue", p, model.Store.ReclaimGrantIssue)
	if bad >= 0 {
		m.expectValidation(t, "ReclaimGrantIssue", err)
		return
	}
	if err == nil {
		m.expect(t, prev != nil && reclaimable(prev) && !m.liveGrant(prev) && prev.RequiredCapabilities.SubsetOf(p.Capabilities) &&
			res.ExpiresAt.Equal(m.now().Add(p.GrantTTL)), "ReclaimGrantIssue succeeded on %+v grant %+v", prev, prev.Grant)
	}
}

func (m *machine) actReclaim(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool { return reclaimable(s) && s.Grant != nil })
	m.reclaim(t, id, m.drawWorker(t, id), m.drawClaimerCaps(t, id))
}

// actReclaimFlow is what an operator's reclaim tool does: issue a reclaim
// grant, then reclaim for that worker (sometimes for another).
func (m *machine) actReclaimFlow(t *rapid.T) {
	id := m.pickExec(t, reclaimable)
	w := drawFrom(t, workerPool, "worker")
	caps := drawCaps(t, "caps", 30)
	p := &model.ReclaimGrantIssueParams{
		ID: id, WorkerID: w.id, WorkerInstanceID: w.instance, Capabilities: caps,
		GrantTTL: ms(genGrantTTL.Draw(t, "grant_ttl_ms")), Now: m.now(),
	}
	if _, err := call(m, t, "ReclaimGrantIssue", p, model.Store.ReclaimGrantIssue); err != nil {
		return
	}
	m.observeQuiet(t)
	if chance(t, 20, "other_worker") {
		w = drawFrom(t, workerPool, "worker")
	}
	if chance(t, 20, "other_caps") {
		caps = drawCaps(t, "claim_caps", 50)
	}
	m.reclaim(t, id, w, caps)
}

// reclaim consumes a reclaim grant for worker instance w holding caps, as
// claim does.
func (m *machine) reclaim(t *rapid.T, id model.ExecutionID, w poolWorker, caps model.Capabilities) {
	p := &model.ExecutionReclaimParams{ID: id, Capabilities: caps, LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
	bad := invalid(t, leaseCorruptions)
	corruptLease(&p.LeaseRequest, bad)
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionReclaim", p, model.Store.ExecutionReclaim)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionReclaim", err)
		return
	}
	if err != nil {
		return
	}
	m.expect(t, prev != nil, "ExecutionReclaim of an unlisted execution succeeded")
	g := prev.Grant
	m.expect(t, reclaimable(prev) && g != nil && g.Kind == model.GrantReclaim && g.WorkerID == w.id &&
		g.WorkerInstanceID == w.instance && !g.ExpiresAt.Before(m.now()) && prev.RequiredCapabilities.SubsetOf(caps),
		"ExecutionReclaim by %s/%s with %v succeeded on %+v grant %+v", w.id, w.instance, caps, prev.State, g)
	capped := prev.ReclaimCount >= prev.MaxReclaims
	switch res.Status {
	case model.ReclaimClaimed:
		m.expect(t, !capped && res.Claimed != nil && res.Claimed.AttemptType == model.AttemptReclaim,
			"ExecutionReclaim claimed at %d of %d reclaims: %+v", prev.ReclaimCount, prev.MaxReclaims, res.Claimed)
		m.acquire(t, "ExecutionReclaim", prev, w, p.LeaseRequest, res.Claimed)
	case model.ReclaimCapExceeded:
		m.expect(t, capped && res.Claimed == nil, "ExecutionReclaim: cap exceeded at %d of %d", prev.ReclaimCount, prev.MaxReclaims)
	default:
		m.fatalf(t, "ExecutionReclaim: unknown status %q", res.Status)
	}
}

func (m *machine) actRecover(t *rapid.T) {
	id := m.pickExec(t, reclaimable)
	p := &model.ExecutionRecoverParams{ID: id, Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Now = time.UnixMilli(253402300799999 + 1)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionRecover", p, model.Store.ExecutionRecover)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionRecover", err)
		return
	}
	m.recovered(t, prev, res, err)
}

// actRevokeThenRecover is an operator's crash recovery: revoke a lease and
// requeue the execution at once (so reclaim caps are reached).
// Up to three rounds: after a requeue, the execution is claimed again
// (grant-and-claim by a worker with every capability) for the next round.
func (m *machine) actRevokeThenRecover(t *rapid.T) {
	id := m.pickExec(t, isOwned(model.OwnershipLeased))
	rounds := rapid.IntRange(1, 3).Draw(t, "rounds")
	for round := 1; ; round++ {
		p := &model.LeaseRevokeParams{ID: id, Reason: "operator", Now: m.now()}
		if r, err := call(m, t, "LeaseRevoke", p, model.Store.LeaseRevoke); err != nil || r.Status != model.RevokeRevoked {
			return
		}
		m.observeQuiet(t)
		prev := m.snap(id)
		res, err := call(m, t, "ExecutionRecover", &model.ExecutionRecoverParams{ID: id, Now: m.now()}, model.Store.ExecutionRecover)
		m.recovered(t, prev, res, err)
		if err != nil || res.Status != model.ReclaimRequeued || round == rounds {
			return
		}
		m.observeQuiet(t)
		w := drawFrom(t, workerPool, "worker")
		g := &model.ExecutionGrantAndClaimParams{ID: id, Capabilities: capUniverse, LeaseRequest: m.leaseRequest(t, w), Now: m.now()}
		prev = m.snap(id)
		c, err := call(m, t, "ExecutionGrantAndClaim", g, model.Store.ExecutionGrantAndClaim)
		if err != nil {
			return
		}
		m.acquire(t, "ExecutionGrantAndClaim", prev, w, g.LeaseRequest, c)
		m.observeQuiet(t)
	}
}

// actTimeoutFlow lets an active execution's attempt time out: the clock
// moves to its attempt deadline, then the expiry runs.
func (m *machine) actTimeoutFlow(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return isOwned(model.OwnershipLeased)(s) && s.AttemptTimeout > 0
	})
	if s := m.snap(id); s != nil && s.CurrentLease != nil && s.AttemptTimeout > 0 {
		if due := s.CurrentLease.AcquiredAt.Add(s.AttemptTimeout); due.After(m.now()) {
			m.clock.Set(due) // before any call, so every write of the step is at Now
			m.observeQuiet(t)
		}
	}
	prev := m.snap(id)
	p := &model.ExecutionExpireParams{ID: id, Reason: model.ExpireAttemptTimeout, Now: m.now()}
	res, err := call(m, t, "ExecutionExpire", p, model.Store.ExecutionExpire)
	m.expect(t, err == nil, "ExecutionExpire failed: %v", err)
	m.checkExpire(t, prev, p.Reason, res)
}

// actReplayThenCancel replays a terminal execution and cancels it at once
// as an operator, so that it can be replayed again (and replay caps are
// reached).
func (m *machine) actReplayThenCancel(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseTerminal))
	rounds := rapid.IntRange(1, 3).Draw(t, "rounds")
	for range rounds {
		prev := m.snap(id)
		p := &model.ExecutionReplayParams{ID: id, Reason: "again", Now: m.now()}
		_, err := call(m, t, "ExecutionReplay", p, model.Store.ExecutionReplay)
		if prev != nil && prev.State.LifecyclePhase == model.PhaseTerminal && prev.ReplayCount >= prev.MaxReplays {
			m.expect(t, errors.Is(err, model.ErrMaxReplaysExhausted), "ExecutionReplay at %d of %d replays: %v", prev.ReplayCount, prev.MaxReplays, err)
		}
		if err != nil {
			return
		}
		m.observeQuiet(t)
		prev = m.snap(id)
		c := &model.ExecutionCancelParams{ID: id, Reason: "enough", Source: model.SourceOperator, Now: m.now()}
		res, err := call(m, t, "ExecutionCancel", c, model.Store.ExecutionCancel)
		m.checkFenced(t, "ExecutionCancel", prev, model.SourceOperator, model.Fence{}, true, err == nil && res.Replayed, err)
		m.observeQuiet(t)
	}
}

func (m *machine) recovered(t *rapid.T, prev *model.ExecutionSnapshot, res *model.ExecutionRecoverResult, err error) {
	t.Helper()
	switch {
	case prev == nil:
		m.expect(t, errors.Is(err, model.ErrNotFound), "ExecutionRecover of a missing execution: %v", err)
	case !reclaimable(prev):
		m.expect(t, errors.Is(err, model.ErrNotReclaimable), "ExecutionRecover of %+v: %v", prev.State, err)
	case err != nil:
		m.fatalf(t, "ExecutionRecover of %+v failed: %v", prev.State, err)
	case prev.ReclaimCount >= prev.MaxReclaims:
		m.expect(t, res.Status == model.ReclaimCapExceeded, "ExecutionRecover at %d of %d: %s", prev.ReclaimCount, prev.MaxReclaims, res.Status)
	default:
		m.expect(t, res.Status == model.ReclaimRequeued, "ExecutionRecover at %d of %d: %s", prev.ReclaimCount, prev.MaxReclaims, res.Status)
	}
}

func (m *machine) actReplay(t *rapid.T) {
	id := m.pickExec(t, isPhase(model.PhaseTerminal))
	p := &model.ExecutionReplayParams{
		ID: id, Reason: drawFrom(t, reasons, "reason"),
		RequestedBy: drawFrom(t, []string{"", "ops"}, "requested_by"), Now: m.now(),
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Reason = "\xff"
	case 1:
		p.RequestedBy = strings.Repeat("o", model.MaxReasonBytes+1)
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionReplay", p, model.Store.ExecutionReplay)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionReplay", err)
		return
	}
	var want *model.Error
	switch {
	case prev == nil:
		want = model.ErrNotFound
	case prev.State.LifecyclePhase != model.PhaseTerminal:
		want = model.ErrNotTerminal
	case prev.ReplayCount >= prev.MaxReplays:
		want = model.ErrMaxReplaysExhausted
	}
	if want != nil {
		m.expect(t, errors.Is(err, want), "ExecutionReplay of %+v: %v, want %s", prev, err, want.Code)
		return
	}
	m.expect(t, err == nil && res.PublicState == model.PublicWaiting, "ExecutionReplay: %+v %v", res, err)
}

func (m *machine) actExpire(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return s.State.LifecyclePhase != model.PhaseTerminal && (!s.Deadline.IsZero() || s.AttemptTimeout > 0)
	})
	p := &model.ExecutionExpireParams{
		ID:     id,
		Reason: drawFrom(t, []model.ExpireReason{model.ExpireAttemptTimeout, model.ExpireExecutionDeadline}, "reason"),
		Now:    m.now(),
	}
	if s := m.snap(id); s != nil && s.State.LifecyclePhase == model.PhaseActive && s.AttemptTimeout > 0 && !chance(t, 20, "other_reason") {
		p.Reason = model.ExpireAttemptTimeout
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Reason = 0
	case 1:
		p.Reason = 7
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionExpire", p, model.Store.ExecutionExpire)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionExpire", err)
		return
	}
	m.expect(t, err == nil, "ExecutionExpire failed: %v", err)
	m.checkExpire(t, prev, p.Reason, res)
}

// checkExpire checks an expiry's status against the state before it.
func (m *machine) checkExpire(t *rapid.T, prev *model.ExecutionSnapshot, reason model.ExpireReason, res *model.ExecutionExpireResult) {
	t.Helper()
	now := m.now()
	want := ""
	switch {
	case prev == nil:
		want = model.ExpireNotFoundCleaned
	case prev.State.LifecyclePhase == model.PhaseTerminal:
		want = model.ExpireAlreadyTerminal
	case reason == model.ExpireExecutionDeadline && prev.Deadline.IsZero():
		want = model.ExpireNotActive
	case reason == model.ExpireExecutionDeadline && prev.Deadline.After(now):
		want = model.ExpireNotYetDue
	case reason == model.ExpireExecutionDeadline:
		want = model.ExpireExpired
	case prev.State.LifecyclePhase != model.PhaseActive || prev.AttemptTimeout == 0:
		want = model.ExpireNotActive
	case prev.CurrentLease == nil:
		return // revoked: the timer's time is not in the record
	case prev.CurrentLease.AcquiredAt.Add(prev.AttemptTimeout).After(now):
		want = model.ExpireNotYetDue
	case prev.RetryCount < prev.RetryPolicy.MaxRetries:
		want = model.ExpireRetryScheduled
	default:
		want = model.ExpireExpired
	}
	m.expect(t, res.Status == want, "ExecutionExpire(%v): %s, want %s (state %+v)", reason, res.Status, want, prev)
	if res.Status == model.ExpireRetryScheduled {
		until := now.Add(ms(prev.RetryPolicy.BackoffMs(prev.RetryCount)))
		m.expect(t, res.DelayUntil.Equal(until), "ExecutionExpire retry until %v, want %v", res.DelayUntil, until)
	}
}

func (m *machine) actPromote(t *rapid.T) {
	id := m.pickExec(t, func(s *model.ExecutionSnapshot) bool {
		return s.State.EligibilityState == model.NotEligibleUntilTime
	})
	lane := drawFrom(t, lanes, "lane")
	if s := m.snap(id); s != nil && !chance(t, 10, "other_lane") {
		lane = s.Lane
	}
	p := &model.ExecutionPromoteDelayedParams{ID: id, Lane: lane, Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Lane = "{fp:1}"
	}
	prev := m.snap(id)
	res, err := call(m, t, "ExecutionPromoteDelayed", p, model.Store.ExecutionPromoteDelayed)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionPromoteDelayed", err)
		return
	}
	m.expect(t, err == nil, "ExecutionPromoteDelayed failed: %v", err)
	m.checkPromote(t, prev, res)
}

func (m *machine) checkPromote(t *rapid.T, prev *model.ExecutionSnapshot, res *model.ExecutionPromoteDelayedResult) {
	t.Helper()
	var want string
	switch {
	case prev == nil:
		want = model.PromoteNotFoundCleaned
	case prev.State.LifecyclePhase != model.PhaseRunnable:
		want = model.PromoteNotRunnableClean
	case prev.State.EligibilityState != model.NotEligibleUntilTime:
		want = model.PromoteNotDelayedCleaned
	case prev.DelayUntil.After(m.now()):
		want = model.PromoteNotYetDue
	default:
		want = model.PromotePromoted
	}
	m.expect(t, res.Status == want, "ExecutionPromoteDelayed: %s, want %s", res.Status, want)
}

// actScanner does what the scanners do: it pages through the entries of one
// timer index due now (checking that the pages add up to the whole) and
// handles each as its scanner would.
func (m *machine) actScanner(t *rapid.T) {
	part := m.drawPartition(t, hasTimer)
	kind := drawFrom(t, timerIndexes, "index")
	limit := rapid.IntRange(1, 3).Draw(t, "limit")
	var items []model.DueItem
	var after *model.DueCursor
	for page := 0; ; page++ {
		p := &model.IndexScanDueParams{Partition: part, Index: kind, Now: m.now(), After: after, Limit: limit}
		res, err := call(m, t, "IndexScanDue", p, model.Store.IndexScanDue)
		m.expect(t, err == nil, "IndexScanDue failed: %v", err)
		m.expect(t, len(res.Items) <= limit, "IndexScanDue returned %d items, limit %d", len(res.Items), limit)
		items = append(items, res.Items...)
		if !res.More || len(res.Items) == 0 || page > 100 {
			m.expect(t, !res.More || len(res.Items) > 0, "IndexScanDue: More without items")
			break
		}
		last := res.Items[len(res.Items)-1]
		after = &model.DueCursor{DueAt: last.DueAt, ID: last.ID}
	}
	if full := m.obs[0].Due[DueKey{part, kind}]; full != nil {
		m.expect(t, cmpEqual(items, full.Items), "IndexScanDue pages of %d add up to %+v, one scan gives %+v", limit, items, full.Items)
	}
	if len(items) > 0 {
		items = items[:1+drawIndex(t, len(items), "handle")]
	}
	for _, it := range items {
		prev := m.snap(it.ID)
		switch kind {
		case model.IndexLeaseExpiry:
			r, err := call(m, t, "LeaseMarkExpired", &model.LeaseMarkExpiredParams{ID: it.ID, Now: m.now()}, model.Store.LeaseMarkExpired)
			m.expect(t, err == nil, "LeaseMarkExpired failed: %v", err)
			if (r.Status == model.MarkExpiredMarked || r.Status == model.MarkExpiredAlreadyExpired ||
				r.Status == model.MarkExpiredAlreadyRevoked) && genBool.Draw(t, "recover") {
				m.observeQuiet(t)
				prev = m.snap(it.ID)
				rr, err := call(m, t, "ExecutionRecover", &model.ExecutionRecoverParams{ID: it.ID, Now: m.now()}, model.Store.ExecutionRecover)
				m.recovered(t, prev, rr, err)
			}
		case model.IndexAttemptTimeout, model.IndexExecutionDeadline:
			reason := model.ExpireAttemptTimeout
			if kind == model.IndexExecutionDeadline {
				reason = model.ExpireExecutionDeadline
			}
			r, err := call(m, t, "ExecutionExpire", &model.ExecutionExpireParams{ID: it.ID, Reason: reason, Now: m.now()}, model.Store.ExecutionExpire)
			m.expect(t, err == nil, "ExecutionExpire failed: %v", err)
			m.checkExpire(t, prev, reason, r)
		case model.IndexDelayed:
			r, err := call(m, t, "ExecutionPromoteDelayed", &model.ExecutionPromoteDelayedParams{ID: it.ID, Lane: it.Lane, Now: m.now()}, model.Store.ExecutionPromoteDelayed)
			m.expect(t, err == nil, "ExecutionPromoteDelayed failed: %v", err)
			m.checkPromote(t, prev, r)
		}
		m.observeQuiet(t)
	}
}

// observeQuiet refreshes store A's observation between the calls of one
// step, so the next call's predictions use the state it acts on.
func (m *machine) observeQuiet(t *rapid.T) {
	t.Helper()
	o, err := Observe(m.ctx, m.stores[0], m.now(), ObserveOptions{Namespaces: namespaces})
	if err != nil {
		m.fatalf(t, "observe: %v", err)
	}
	m.obs[0] = o
}

// ---- workers ----

func (m *machine) actWorkerRegister(t *rapid.T) {
	ns, w, session := m.drawRegistration(t)
	if chance(t, 20, "other_session") {
		session = drawFrom(t, sessions, "session")
	}
	p := &model.WorkerRegisterParams{
		Namespace: ns, WorkerID: w.id, WorkerInstanceID: w.instance,
		SessionID:    session,
		Lanes:        []model.LaneID{drawFrom(t, lanes, "lane"), drawFrom(t, lanes, "lane2")},
		Capabilities: drawCaps(t, "caps", 70),
		TTL:          ms(rapid.Int64Range(1, 300_000).Draw(t, "ttl_ms")),
		Now:          m.now(),
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Lanes = nil
	case 1:
		p.SessionID = ""
	case 2:
		p.TTL = 0
	case 3:
		p.Lanes = []model.LaneID{"bad lane"}
	}
	res, err := call(m, t, "WorkerRegister", p, model.Store.WorkerRegister)
	if bad >= 0 {
		m.expectValidation(t, "WorkerRegister", err)
		return
	}
	now := m.now()
	old := m.workers[ns][w.instance]
	alive := old != nil && old.expiresAt.After(now)
	if alive && old.session != p.SessionID {
		m.expect(t, errors.Is(err, model.ErrDuplicateWorker), "WorkerRegister over a live session: %v", err)
		return
	}
	m.expect(t, err == nil, "WorkerRegister failed: %v", err)
	want := model.WorkerRegistered
	if alive {
		want = model.WorkerRefreshed
	}
	m.expect(t, res.Status == want && res.ExpiresAt.Equal(now.Add(p.TTL)), "WorkerRegister: %+v, want %s", res, want)
	m.workers[ns][w.instance] = &refWorker{workerID: w.id, session: p.SessionID, expiresAt: res.ExpiresAt}
}

// drawRegistration draws a namespace, pool worker and session: often those
// of a registration the model knows.
func (m *machine) drawRegistration(t *rapid.T) (model.Namespace, poolWorker, string) {
	if !chance(t, 30, "unregistered") {
		type reg struct {
			ns      model.Namespace
			w       poolWorker
			session string
		}
		var regs []reg
		for _, ns := range namespaces {
			for _, w := range workerPool {
				if r := m.workers[ns][w.instance]; r != nil && r.expiresAt.After(m.now()) {
					regs = append(regs, reg{ns, w, r.session})
				}
			}
		}
		if len(regs) > 0 {
			r := drawFrom(t, regs, "registration")
			return r.ns, r.w, r.session
		}
	}
	return drawFrom(t, namespaces, "namespace"), drawFrom(t, workerPool, "worker"), drawFrom(t, sessions, "session")
}

func (m *machine) actWorkerHeartbeat(t *rapid.T) {
	ns, w, session := m.drawRegistration(t)
	p := &model.WorkerHeartbeatParams{
		Namespace: ns, WorkerInstanceID: w.instance, SessionID: session,
		TTL: ms(rapid.Int64Range(1, 300_000).Draw(t, "ttl_ms")), Now: m.now(),
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Namespace = ""
	case 1:
		p.SessionID = strings.Repeat("s", 129)
	}
	res, err := call(m, t, "WorkerHeartbeat", p, model.Store.WorkerHeartbeat)
	if bad >= 0 {
		m.expectValidation(t, "WorkerHeartbeat", err)
		return
	}
	now := m.now()
	old := m.workers[ns][w.instance]
	switch {
	case old == nil || !old.expiresAt.After(now):
		m.expect(t, errors.Is(err, model.ErrWorkerNotRegistered), "WorkerHeartbeat of an unregistered worker: %v", err)
	case old.session != p.SessionID:
		m.expect(t, errors.Is(err, model.ErrDuplicateWorker), "WorkerHeartbeat from another session: %v", err)
	default:
		m.expect(t, err == nil && res.ExpiresAt.Equal(now.Add(p.TTL)), "WorkerHeartbeat: %+v %v", res, err)
		old.expiresAt = res.ExpiresAt
	}
}

func (m *machine) actWorkerDeregister(t *rapid.T) {
	ns, w, session := m.drawRegistration(t)
	p := &model.WorkerDeregisterParams{Namespace: ns, WorkerInstanceID: w.instance, SessionID: session, Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.WorkerInstanceID = ""
	}
	res, err := call(m, t, "WorkerDeregister", p, model.Store.WorkerDeregister)
	if bad >= 0 {
		m.expectValidation(t, "WorkerDeregister", err)
		return
	}
	m.expect(t, err == nil, "WorkerDeregister failed: %v", err)
	old := m.workers[ns][w.instance]
	switch {
	case old == nil || old.session != p.SessionID:
		m.expect(t, !res.Removed, "WorkerDeregister removed a registration it does not own")
	case old.expiresAt.After(m.now()):
		m.expect(t, res.Removed, "WorkerDeregister of its own live registration removed nothing")
	}
	if res.Removed {
		delete(m.workers[ns], w.instance)
	}
}

func (m *machine) actWorkerExpire(t *rapid.T) {
	ns := drawFrom(t, namespaces, "namespace")
	p := &model.WorkerExpireParams{Namespace: ns, Limit: rapid.IntRange(1, 3).Draw(t, "limit"), Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Limit = -1
	}
	res, err := call(m, t, "WorkerExpire", p, model.Store.WorkerExpire)
	if bad >= 0 {
		m.expectValidation(t, "WorkerExpire", err)
		return
	}
	m.expect(t, err == nil && len(res.Removed) <= p.Limit, "WorkerExpire: %+v %v", res, err)
	now := m.now()
	for _, inst := range res.Removed {
		w := m.workers[ns][inst]
		m.expect(t, w != nil && !w.expiresAt.After(now), "WorkerExpire removed %s, which is live or unknown", inst)
		delete(m.workers[ns], inst)
	}
	if len(res.Removed) < p.Limit {
		for inst, w := range m.workers[ns] {
			m.expect(t, w.expiresAt.After(now), "WorkerExpire left the expired %s", inst)
		}
	}
}

// ---- reads ----

func (m *machine) actRead(t *rapid.T) {
	id := m.pickExec(t, nil)
	x := m.obs[0].Execs[id]
	switch rapid.IntRange(0, 2).Draw(t, "read") {
	case 0:
		var after uint64
		if x != nil && len(x.History) > 0 {
			after = x.History[drawIndex(t, len(x.History), "after")].Seq
		}
		limit := rapid.IntRange(1, 3).Draw(t, "limit")
		res, err := call(m, t, "LeaseHistory", &model.LeaseHistoryParams{ID: id, AfterSeq: after, Limit: limit}, model.Store.LeaseHistory)
		if x == nil {
			m.expect(t, errors.Is(err, model.ErrNotFound), "LeaseHistory of a missing execution: %v", err)
			return
		}
		m.expect(t, err == nil, "LeaseHistory failed: %v", err)
		var want []model.LeaseEvent
		for _, ev := range x.History {
			if ev.Seq > after && len(want) < limit {
				want = append(want, ev)
			}
		}
		m.expect(t, cmpEqual(res.Events, want), "LeaseHistory(after %d, limit %d) = %+v, want %+v", after, limit, res.Events, want)
	case 1:
		if genBool.Draw(t, "payload") {
			res, err := call(m, t, "ExecutionPayload", &model.ExecutionPayloadParams{ID: id}, model.Store.ExecutionPayload)
			if x == nil {
				m.expect(t, errors.Is(err, model.ErrNotFound), "ExecutionPayload of a missing execution: %v", err)
			} else {
				m.expect(t, err == nil && string(res.Payload) == string(x.Payload), "ExecutionPayload: %+v %v", res, err)
			}
			return
		}
		res, err := call(m, t, "ExecutionResult", &model.ExecutionResultParams{ID: id}, model.Store.ExecutionResult)
		switch {
		case x == nil:
			m.expect(t, errors.Is(err, model.ErrNotFound), "ExecutionResult of a missing execution: %v", err)
		case x.HasResult:
			m.expect(t, err == nil && string(res.Result) == string(x.Result), "ExecutionResult: %+v %v", res, err)
		default:
			m.expect(t, errors.Is(err, model.ErrResultNotFound), "ExecutionResult without a result: %v", err)
		}
	default:
		_, err := call(m, t, "ExecutionDescribe", &model.ExecutionDescribeParams{ID: id}, model.Store.ExecutionDescribe)
		m.expect(t, (x == nil) == errors.Is(err, model.ErrNotFound), "ExecutionDescribe: %v", err)
	}
}
