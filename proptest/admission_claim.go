package proptest

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// The engine's half of admission, driven through the store: the claim
// path (claim-next's Admit, the budget reads, the admission, a block on a
// refusal, the claim with the token), the unblock scanner's budget and
// quota half, the quota release outbox, and a timer scan with the tenant
// filter.

// freshToken is a new admission token for a claim. Like the engine's
// (the new lease id), every claim's token is new, so an outbox entry
// never carries the token a later lease holds; the claims other areas
// make (await, suspension, recovery flows) carry one too, since a claim
// of an execution with a quota needs one and the store does not check it
// against the bucket.
func (m *machine) freshToken() string {
	m.seq++
	return "c" + strconv.FormatUint(m.seq, 10)
}

func isAdmBlocked(s *model.ExecutionSnapshot) bool {
	es := s.State.EligibilityState
	return s.State.LifecyclePhase == model.PhaseRunnable && (es == model.BlockedByBudget || es == model.BlockedByQuota)
}

// actAdmitFlow is the claim path of claim/admission.go: claim-next on a
// lane whose head needs admission, then, for the Admit candidate, each
// budget read once (a missing or exhausted one blocks it), the admission
// to its bucket (a refusal, or a missing policy, blocks it), and the
// claim of the grant with the token (sometimes without:
// admission_required).
func (m *machine) actAdmitFlow(t *rapid.T) {
	want := func(s *model.ExecutionSnapshot) bool { return isEligible(s) && needsAdmission(s) }
	if !slices.ContainsFunc(m.execs, func(r *refExec) bool { s := m.snap(r.id); return s != nil && want(s) }) &&
		len(m.execs)-m.awaitMade < m.opts.MaxExecutions+2 && chance(t, 70, "create_candidate") {
		m.createAdmissionExec(t)
	}
	id := m.pickExec(t, want)
	lane := drawFrom(t, lanes, "lane")
	part := m.cfg.SoloPartition(lane)
	if s := m.snap(id); s != nil {
		lane, part = s.Lane, id.Partition()
		if chance(t, 70, "define_attachments") {
			// the operator defined what the execution names (so the path
			// gets past the budget reads and the admission)
			for _, b := range s.Budgets {
				if i := slices.Index(budgetIDs, b); i >= 0 {
					if _, ok := m.adm.budgets[b]; !ok {
						m.budgetCreate(t, i)
					}
				}
			}
			if i := slices.Index(quotaIDs, s.Quota); i >= 0 {
				if _, ok := m.adm.quotas[s.Quota]; !ok {
					m.quotaCreate(t, i)
				}
			}
			m.observeQuiet(t)
		}
	}
	w := drawFrom(t, workerPool, "worker")
	p := &model.ExecutionClaimNextParams{
		Partition: part, Lane: lane, Namespace: drawClaimNamespace(t), Capabilities: capUniverse, LiveCapabilities: capUniverse,
		ScanLimit: rapid.IntRange(1, 4).Draw(t, "scan_limit"), LeaseRequest: m.leaseRequest(t, w), Now: m.now(),
	}
	if chance(t, 20, "admission_grant_ttl") {
		p.AdmissionGrantTTL = ms(rapid.Int64Range(1, 10_000).Draw(t, "admission_grant_ttl_ms"))
	}
	if m.inline && !m.adm.unknown && chance(t, 40, "inline") {
		p.Inline = drawInline(t)
	}
	res := m.claimNext(t, p, w, -1)
	if res != nil && res.Claimed != nil && p.Inline != nil {
		m.reached("AdmitFlow inline")
		m.endAdmitted(t, res.Claimed)
		return
	}
	if res == nil || res.Admit == nil {
		return
	}
	a := res.Admit
	m.observeQuiet(t)
	for _, b := range a.Budgets {
		st, err := call(m, t, "BudgetStatus", &model.BudgetStatusParams{ID: b, Now: m.now()}, admOp(model.AdmissionStore.BudgetStatus))
		m.expect(t, err == nil || errors.Is(err, model.ErrBudgetNotFound), "BudgetStatus: %v", err)
		if err != nil || st.Exhausted != "" {
			m.blockOn(t, a.ID, model.WaitingForBudget, b)
			return
		}
	}
	token := ""
	if !noQuota(a.Quota) {
		token = m.freshToken()
		r, err := m.quotaAdmit(t, a.ID, model.QuotaBucket{ID: a.Quota, Key: a.QuotaKey}, token)
		if err != nil && !errors.Is(err, model.ErrQuotaNotFound) {
			return // a deliberately invalid admission
		}
		if err != nil || r.Outcome == model.QuotaRateExceeded || r.Outcome == model.QuotaConcurrencyExceeded {
			m.blockOn(t, a.ID, model.WaitingForQuota, model.BudgetID{})
			return
		}
		if chance(t, 10, "forget_token") {
			token = ""
		}
	}
	m.observeQuiet(t)
	c := m.claim(t, a.ID, w, capUniverse, token)
	if c == nil {
		return
	}
	m.reached("AdmitFlow claimed")
	m.endAdmitted(t, c)
}

// endAdmitted sometimes ends the attempt of c, claimed after admission
// (an operator's cancel or the worker's completion), which moves its
// token to the outbox, and drains the outbox.
func (m *machine) endAdmitted(t *rapid.T, c *model.ClaimResult) {
	if !chance(t, 75, "end_lease") {
		return
	}
	m.observeQuiet(t)
	if chance(t, 50, "cancel") {
		_, _ = call(m, t, "ExecutionCancel", &model.ExecutionCancelParams{ID: c.ID, Source: model.SourceOperator, Reason: "budget", Now: m.now()}, model.Store.ExecutionCancel)
	} else {
		_, _ = call(m, t, "ExecutionComplete", &model.ExecutionCompleteParams{ID: c.ID, Fence: c.Fence(), Source: model.SourceWorker, Now: m.now()}, model.Store.ExecutionComplete)
	}
	m.observeQuiet(t)
	if s := m.snap(c.ID); c.AdmissionToken != "" && s != nil && s.State.LifecyclePhase == model.PhaseTerminal {
		var items []model.QuotaHold
		if r := m.admissionObs().Outbox[c.ID.Partition()]; r != nil {
			items = r.Items
		}
		m.expect(t, slices.ContainsFunc(items, func(h model.QuotaHold) bool {
			return h.Execution == c.ID && h.Token == c.AdmissionToken && h.Quota == c.Quota && h.Key == c.QuotaKey && h.At.Equal(m.now())
		}), "%v ended its lease holding admission %q of %v/%q, but the outbox holds %+v", c.ID, c.AdmissionToken, c.Quota, c.QuotaKey, items)
		m.reached("AdmitFlow outbox")
	}
	if chance(t, 70, "drain") {
		m.releaseOutbox(t, c.ID.Partition())
	}
}

// drawInline draws an InlineAdmission over the fixed budgets and
// policies: each listed or not.
func drawInline(t *rapid.T) *model.InlineAdmission {
	in := &model.InlineAdmission{}
	for i, b := range budgetIDs {
		if rapid.Bool().Draw(t, "inline_budget_"+strconv.Itoa(i)) {
			in.Budgets = append(in.Budgets, b)
		}
	}
	for i, q := range quotaIDs {
		if rapid.Bool().Draw(t, "inline_quota_"+strconv.Itoa(i)) {
			in.Quotas = append(in.Quotas, q)
		}
	}
	return in
}

// admitsInline predicts whether in admits s, a head with budgets or a
// quota, at now (model.InlineAdmission): it lists them all, every budget
// exists and is not exhausted, the policy exists, and the bucket holds no
// admission of s and has room in its window and its cap.
func (m *machine) admitsInline(in *model.InlineAdmission, s *model.ExecutionSnapshot, now time.Time) bool {
	if in == nil || !in.Covers(s.Budgets, s.Quota) {
		return false
	}
	for _, b := range s.Budgets {
		if _, ok := m.adm.budgets[b]; !ok {
			return false
		}
		if st := m.budgetObs(b); st == nil || st.Exhausted != "" {
			return false
		}
	}
	if noQuota(s.Quota) {
		return true
	}
	d, ok := m.adm.quotas[s.Quota]
	if !ok {
		return false
	}
	rb := m.adm.buckets[model.QuotaBucket{ID: s.Quota, Key: s.QuotaKey}]
	if rb == nil {
		return true
	}
	if _, held := rb.held[s.ID]; held {
		return false
	}
	return (d.rate == 0 || rb.inWindow(d, now) < d.rate) && (d.concurrency == 0 || len(rb.held) < d.concurrency)
}

// admittedInline records what a claim-next that claimed prev, a head
// with budgets or a quota, admitted in its step: the bucket holds the new
// lease's id as prev's admission (and a window entry with a rate), and
// the claim carries it.
func (m *machine) admittedInline(t *rapid.T, prev *model.ExecutionSnapshot, req model.LeaseRequest, c *model.ClaimResult) {
	if noQuota(prev.Quota) {
		m.expect(t, c.AdmissionToken == "", "%v claimed inline without a quota carries token %q", c.ID, c.AdmissionToken)
		return
	}
	token := req.LeaseID.String()
	m.expect(t, c.AdmissionToken == token, "%v claimed inline carries token %q, want its lease id %q", c.ID, c.AdmissionToken, token)
	m.reached("ExecutionClaimNext inline quota")
	d := m.adm.quotas[prev.Quota]
	rb := m.adm.bucket(model.QuotaBucket{ID: prev.Quota, Key: prev.QuotaKey})
	rb.held[c.ID] = token
	if d.rate > 0 {
		rb.window = append(rb.window, m.now())
	}
}

// blockOn blocks an admission candidate (eligible, granted) on a budget
// or its quota; it must succeed.
func (m *machine) blockOn(t *rapid.T, id model.ExecutionID, reason model.BlockingReason, b model.BudgetID) {
	m.observeQuiet(t)
	prev := m.snap(id)
	p := &model.ExecutionBlockParams{ID: id, Reason: reason, Budget: b, Now: m.now()}
	res, err := call(m, t, "ExecutionBlock", p, optional(model.Blocker.ExecutionBlock))
	want, _ := model.BlockedEligibility(reason)
	m.expect(t, err == nil && res.EligibilityState == want, "ExecutionBlock of the admission candidate %v (%+v) on %v: %+v %v", id, prev, reason, res, err)
	m.reached("ExecutionBlock admission " + reason.String())
}

func (m *machine) admissionObs() *AdmissionObservation {
	if a := m.obs[0].Admission; a != nil {
		return a
	}
	return &AdmissionObservation{}
}

func (m *machine) actAdmissionBlocked(t *rapid.T) {
	p := &model.AdmissionBlockedParams{Partition: m.drawPartition(t, isAdmBlocked), Limit: rapid.IntRange(1, 3).Draw(t, "limit")}
	if invalid(t, 1) == 0 {
		p.Partition = -1
		_, err := call(m, t, "AdmissionBlocked", p, admOp(model.AdmissionStore.AdmissionBlocked))
		m.expectValidation(t, "AdmissionBlocked", err)
		return
	}
	res, err := call(m, t, "AdmissionBlocked", p, admOp(model.AdmissionStore.AdmissionBlocked))
	m.expect(t, err == nil, "AdmissionBlocked with valid input failed: %v", err)
	if full := m.admissionObs().Blocked[p.Partition]; full != nil {
		n := min(p.Limit, len(full.Groups))
		m.expect(t, cmpEqual(res.Groups, full.Groups[:n]) && res.More == (len(full.Groups) > p.Limit),
			"AdmissionBlocked limit %d: %+v more %v; all groups %+v", p.Limit, res.Groups, res.More, full.Groups)
	}
}

var filterTags = [][2]string{{"app.k", "v"}, {"app.k", "w"}, {"ops.team", "x"}}

// drawFilter draws a tenant filter: a namespace, a tag, both or neither.
func drawFilter(t *rapid.T) model.ScannerFilter {
	var f model.ScannerFilter
	if chance(t, 60, "filter_namespace") {
		f.Namespace = drawFrom(t, namespaces, "filter_ns")
	}
	if chance(t, 50, "filter_tag") {
		tag := drawFrom(t, filterTags, "filter_tag_kv")
		f.TagKey, f.TagValue = tag[0], tag[1]
	}
	return f
}

func (m *machine) actAdmissionUnblock(t *rapid.T) {
	part := m.drawPartition(t, isAdmBlocked)
	p := &model.AdmissionUnblockParams{Partition: part, Limit: rapid.IntRange(1, 4).Draw(t, "limit"), Now: m.now()}
	var groups []model.AdmissionGroup
	if full := m.admissionObs().Blocked[part]; full != nil {
		groups = full.Groups
	}
	for _, g := range groups {
		switch {
		case !chance(t, 80, "name_group"):
		case g.Reason == model.WaitingForBudget && !slices.Contains(p.Budgets, g.Budget):
			p.Budgets = append(p.Budgets, g.Budget)
		case g.Reason == model.WaitingForQuota:
			qb := model.QuotaBucket{ID: g.Quota, Key: g.QuotaKey}
			if !slices.ContainsFunc(p.Quotas, func(q model.QuotaUnblock) bool { return q.QuotaBucket == qb }) {
				p.Quotas = append(p.Quotas, model.QuotaUnblock{QuotaBucket: qb, Max: rapid.IntRange(0, 2).Draw(t, "max")})
			}
		}
	}
	if chance(t, 15, "other_budget") {
		if _, b := m.drawBudget(t); !slices.Contains(p.Budgets, b) {
			p.Budgets = append(p.Budgets, b)
		}
	}
	if chance(t, 40, "filter") {
		p.Filter = m.drawTenantFilter(t, part)
	}
	bad := invalid(t, 3)
	switch bad {
	case 0:
		p.Limit = 0
	case 1:
		p.Quotas = append(p.Quotas, model.QuotaUnblock{QuotaBucket: quotaBuckets[0], Max: -1})
	case 2:
		p.Filter = model.ScannerFilter{TagValue: "v"}
	}
	res, err := call(m, t, "AdmissionUnblock", p, admOp(model.AdmissionStore.AdmissionUnblock))
	if bad >= 0 {
		m.expectValidation(t, "AdmissionUnblock", err)
		return
	}
	m.expect(t, err == nil, "AdmissionUnblock with valid input failed: %v", err)
	m.expect(t, len(res.Unblocked) <= p.Limit, "AdmissionUnblock unblocked %d, limit %d", len(res.Unblocked), p.Limit)
	perBucket := map[model.QuotaBucket]int{}
	for _, id := range res.Unblocked {
		prev := m.snap(id)
		m.expect(t, prev != nil && id.Partition() == part && isAdmBlocked(prev) && p.Filter.Matches(prev.Namespace, prev.Tags),
			"AdmissionUnblock (filter %+v) unblocked %v, which was %+v", p.Filter, id, prev)
		if prev.State.EligibilityState == model.BlockedByQuota {
			qb := model.QuotaBucket{ID: prev.Quota, Key: prev.QuotaKey}
			i := slices.IndexFunc(p.Quotas, func(q model.QuotaUnblock) bool { return q.QuotaBucket == qb })
			m.expect(t, i >= 0, "AdmissionUnblock unblocked %v blocked on %v, which it did not name", id, qb)
			perBucket[qb]++
			m.expect(t, p.Quotas[i].Max == 0 || perBucket[qb] <= p.Quotas[i].Max, "AdmissionUnblock unblocked %d of %v, max %d", perBucket[qb], qb, p.Quotas[i].Max)
			m.reached("AdmissionUnblock quota")
		} else {
			m.expect(t, len(p.Budgets) > 0, "AdmissionUnblock unblocked %v blocked on a budget, naming none", id)
			m.reached("AdmissionUnblock budget")
		}
		if !p.Filter.IsZero() {
			m.reached("AdmissionUnblock filtered")
		}
	}
}

// drawOutboxPartition draws a partition whose outbox holds entries, or
// any.
func (m *machine) drawOutboxPartition(t *rapid.T) int {
	var parts []int
	for part, r := range m.admissionObs().Outbox {
		if len(r.Items) > 0 {
			parts = append(parts, part)
		}
	}
	slices.Sort(parts)
	if len(parts) > 0 && !chance(t, 20, "any_outbox") {
		return drawFrom(t, parts, "outbox_partition")
	}
	return m.drawPartition(t, nil)
}

// actReleaseOutbox is the releaser (scan.QuotaRelease): it reads the
// outbox, releases each admission by its token and acknowledges the
// entries (sometimes not all, sometimes one already gone).
func (m *machine) actReleaseOutbox(t *rapid.T) {
	m.releaseOutbox(t, m.drawOutboxPartition(t))
}

func (m *machine) releaseOutbox(t *rapid.T, part int) {
	p := &model.QuotaReleasePendingParams{Partition: part, Limit: rapid.IntRange(1, 4).Draw(t, "limit")}
	res, err := call(m, t, "QuotaReleasePending", p, admOp(model.AdmissionStore.QuotaReleasePending))
	m.expect(t, err == nil, "QuotaReleasePending with valid input failed: %v", err)
	var full []model.QuotaHold
	if r := m.admissionObs().Outbox[part]; r != nil {
		full = r.Items
	}
	n := min(p.Limit, len(full))
	m.expect(t, cmpEqual(res.Items, full[:n]) && res.More == (len(full) > p.Limit),
		"QuotaReleasePending limit %d: %+v more %v; the outbox holds %+v", p.Limit, res.Items, res.More, full)
	if len(res.Items) == 0 {
		return
	}
	m.reached("QuotaReleasePending entry")
	var ack []model.QuotaHold
	for _, it := range res.Items {
		if chance(t, 85, "release") {
			m.quotaRelease(t, it.Execution, model.QuotaBucket{ID: it.Quota, Key: it.Key}, it.Token)
			ack = append(ack, it)
		}
	}
	if len(ack) == 0 || !chance(t, 85, "ack") {
		return
	}
	if chance(t, 15, "ack_gone") {
		ack = append(ack, model.QuotaHold{Execution: ack[0].Execution, Token: "gone"})
	}
	a := &model.QuotaReleaseAckParams{Partition: part, Items: ack}
	r, err := call(m, t, "QuotaReleaseAck", a, admOp(model.AdmissionStore.QuotaReleaseAck))
	m.expect(t, err == nil, "QuotaReleaseAck with valid input failed: %v", err)
	want := 0
	for i, it := range ack {
		dup := slices.ContainsFunc(ack[:i], func(x model.QuotaHold) bool { return x.Execution == it.Execution && x.Token == it.Token })
		if !dup && slices.ContainsFunc(full, func(x model.QuotaHold) bool { return x.Execution == it.Execution && x.Token == it.Token }) {
			want++
		}
	}
	m.expect(t, r.Acked == want, "QuotaReleaseAck acked %d of %+v, want %d", r.Acked, ack, want)
}

// actScanFiltered scans a timer index with a tenant filter in one page:
// the entries examined are the first Limit of the unfiltered scan, the
// ones of executions the filter does not match are left out, and
// LastSeen is the last examined.
func (m *machine) actScanFiltered(t *rapid.T) {
	part := m.drawPartition(t, hasTimer)
	kind := drawFrom(t, scannedIndexes(true), "index")
	p := &model.IndexScanDueParams{Partition: part, Index: kind, Now: m.now(), Limit: rapid.IntRange(1, 4).Draw(t, "limit"), Filter: drawFilter(t)}
	res, err := call(m, t, "IndexScanDue", p, model.Store.IndexScanDue)
	m.expect(t, err == nil, "IndexScanDue with a filter failed: %v", err)
	full := m.obs[0].Due[DueKey{part, kind}]
	if full == nil {
		return
	}
	examined := full.Items[:min(p.Limit, len(full.Items))]
	var want []model.DueItem
	for _, it := range examined {
		x := m.obs[0].Execs[it.ID]
		if x == nil || p.Filter.Matches(x.Snapshot.Namespace, x.Snapshot.Tags) {
			want = append(want, it)
		}
	}
	var last *model.DueCursor
	if n := len(examined); n > 0 {
		last = &model.DueCursor{DueAt: examined[n-1].DueAt, ID: examined[n-1].ID}
	}
	m.expect(t, cmpEqual(res.Items, want) && cmpEqual(res.LastSeen, last) && res.More == (len(full.Items) > p.Limit),
		"IndexScanDue %v p%d limit %d filter %+v: %+v last seen %+v more %v; unfiltered %+v", kind, part, p.Limit, p.Filter,
		res.Items, res.LastSeen, res.More, full.Items)
	if len(want) < len(examined) {
		m.reached("IndexScanDue filtered out")
	}
}

// createAdmissionExec creates an eligible execution with budgets or a
// quota at the top priority of its lane, so a claim-next meets it first.
func (m *machine) createAdmissionExec(t *rapid.T) {
	lane := drawFrom(t, lanes, "lane")
	p := &model.ExecutionCreateParams{
		ID: model.NewExecutionID(m.cfg.SoloPartition(lane), m.nextUUID(t, "id_order")), Namespace: drawFrom(t, namespaces, "namespace"),
		Lane: lane, Kind: kinds[0], Priority: model.MaxPriority, Tags: drawFrom(t, tagSets, "tags"), Now: m.now(),
	}
	for len(p.Budgets) == 0 && noQuota(p.Quota) {
		p.Budgets, p.Quota, p.QuotaKey = drawAttachments(t)
	}
	res, err := call(m, t, "ExecutionCreate", p, model.Store.ExecutionCreate)
	m.expect(t, err == nil && !res.Duplicate, "ExecutionCreate of an admission candidate: %+v %v", res, err)
	r := &refExec{id: p.ID, lane: lane}
	m.execs = append(m.execs, r)
	m.byID[p.ID] = r
	m.observeQuiet(t)
}

// drawTenantFilter draws a tenant filter, often one that matches a
// blocked execution of the partition (its namespace, and its tag when it
// has one), so a filtered unblock unblocks something.
func (m *machine) drawTenantFilter(t *rapid.T, part int) model.ScannerFilter {
	var blocked []*model.ExecutionSnapshot
	for _, r := range m.execs {
		if s := m.snap(r.id); s != nil && r.id.Partition() == part && isAdmBlocked(s) {
			blocked = append(blocked, s)
		}
	}
	if len(blocked) == 0 || chance(t, 40, "random_filter") {
		return drawFilter(t)
	}
	s := drawFrom(t, blocked, "filter_exec")
	f := model.ScannerFilter{Namespace: s.Namespace}
	if v, ok := s.Tags["app.k"]; ok && genBool.Draw(t, "filter_by_tag") {
		f.TagKey, f.TagValue = "app.k", v
	}
	return f
}
