package proptest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// What the machine observes and checks of model.AdmissionStore: the
// budgets and quota buckets Observe is asked about (BudgetStatus,
// QuotaStatus), and each execution partition's blocked groups
// (AdmissionBlocked) and quota release outbox (QuotaReleasePending).
// internal/invariant checks one execution's admission fields; this file
// adds the rules that span budgets, buckets and partitions.

// AdmissionObservation is what model.AdmissionStore's reads show.
type AdmissionObservation struct {
	// Budgets holds each budget asked about; nil when it does not exist.
	Budgets map[model.BudgetID]*model.BudgetStatus
	// Quotas holds each bucket asked about; nil when its policy does not
	// exist.
	Quotas map[model.QuotaBucket]*model.QuotaStatus
	// Blocked and Outbox hold, per execution partition, every blocked
	// group and every outbox entry.
	Blocked map[int]*model.AdmissionBlockedResult
	Outbox  map[int]*model.QuotaReleasePendingResult
}

// observeAdmission reads a model.AdmissionStore.
func observeAdmission(ctx context.Context, s model.Store, o *Observation, opts ObserveOptions) error {
	as, ok := s.(model.AdmissionStore)
	if !ok {
		return nil
	}
	a := &AdmissionObservation{
		Budgets: map[model.BudgetID]*model.BudgetStatus{}, Quotas: map[model.QuotaBucket]*model.QuotaStatus{},
		Blocked: map[int]*model.AdmissionBlockedResult{}, Outbox: map[int]*model.QuotaReleasePendingResult{},
	}
	for _, b := range opts.Budgets {
		st, err := as.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: o.Now})
		switch {
		case err == nil:
			a.Budgets[b] = st
		case errors.Is(err, model.ErrBudgetNotFound):
			a.Budgets[b] = nil
		default:
			return fmt.Errorf("BudgetStatus(%v): %w", b, err)
		}
	}
	for _, q := range opts.Quotas {
		st, err := as.QuotaStatus(ctx, &model.QuotaStatusParams{ID: q.ID, Key: q.Key, Now: o.Now})
		switch {
		case err == nil:
			a.Quotas[q] = st
		case errors.Is(err, model.ErrQuotaNotFound):
			a.Quotas[q] = nil
		default:
			return fmt.Errorf("QuotaStatus(%v): %w", q, err)
		}
	}
	for part := range o.Partitions.FlowPartitions {
		if len(o.Lists[part].ids()) == 0 && o.Partitions.FlowPartitions > 16 {
			continue
		}
		br, err := as.AdmissionBlocked(ctx, &model.AdmissionBlockedParams{Partition: part, Limit: model.MaxPageSize})
		if err != nil {
			return fmt.Errorf("AdmissionBlocked(p%d): %w", part, err)
		}
		a.Blocked[part] = br
		qr, err := as.QuotaReleasePending(ctx, &model.QuotaReleasePendingParams{Partition: part, Limit: model.MaxPageSize})
		if err != nil {
			return fmt.Errorf("QuotaReleasePending(p%d): %w", part, err)
		}
		a.Outbox[part] = qr
	}
	o.Admission = a
	return nil
}

// admissionViolations checks one observation of a model.AdmissionStore:
//
//   - a budget's usage is at most every positive hard limit (§6.12: a
//     report that would pass one applies nothing), and Exhausted is the
//     first dimension in name order at its hard limit;
//   - a bucket holds at most Rate admissions in its window and at most
//     Concurrency admissions; Free is the least room of the limits set,
//     RetryAfter is set only when the rate is full;
//   - the blocked groups of a partition count its blocked_by_budget and
//     blocked_by_quota executions: per lane and reason, and per bucket
//     (an execution blocked on a quota is in its own bucket's group);
//     groups are sorted, non-empty, and name what their reason needs;
//   - the outbox of a partition holds entries of its executions, oldest
//     first, each of the execution's quota bucket, and never the token the
//     execution's lease holds now;
//   - PartitionDue says whether any execution is admission-blocked and
//     whether the outbox holds entries.
func (o *Observation) admissionViolations() []string {
	a := o.Admission
	if a == nil {
		return nil
	}
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for id, b := range a.Budgets {
		if b == nil {
			continue
		}
		exhausted := ""
		for _, d := range sortedLimitDims(b.Limits) {
			l := b.Limits[d]
			if l.Hard > 0 && b.Usage[d] > l.Hard {
				bad("budget %v: usage of %s is %d, above its hard limit %d", id, d, b.Usage[d], l.Hard)
			}
			if l.Hard > 0 && b.Usage[d] >= l.Hard && exhausted == "" {
				exhausted = d
			}
		}
		if b.Exhausted != exhausted {
			bad("budget %v: exhausted %q, its usage %v and limits %v say %q", id, b.Exhausted, b.Usage, b.Limits, exhausted)
		}
		for d, u := range b.Usage {
			if u < 0 {
				bad("budget %v: usage of %s is %d", id, d, u)
			}
		}
	}
	for qb, q := range a.Quotas {
		if q == nil {
			continue
		}
		free := -1
		if q.Rate > 0 {
			if q.InWindow > q.Rate {
				bad("bucket %v: %d admissions in the window, rate %d", qb, q.InWindow, q.Rate)
			}
			free = q.Rate - q.InWindow
		} else if q.InWindow != 0 {
			bad("bucket %v: %d in the window of a policy without a rate", qb, q.InWindow)
		}
		if q.Concurrency > 0 {
			if q.Active > q.Concurrency {
				bad("bucket %v: %d admissions held, concurrency %d", qb, q.Active, q.Concurrency)
			}
			if c := q.Concurrency - q.Active; free < 0 || c < free {
				free = c
			}
		}
		if want := max(free, 0); q.Free != want {
			bad("bucket %v: free %d, its limits say %d (%+v)", qb, q.Free, want, *q)
		}
		if full := q.Rate > 0 && q.InWindow >= q.Rate; (q.RetryAfter != 0) && !full {
			bad("bucket %v: retry after %v, but the rate is not full (%d of %d)", qb, q.RetryAfter, q.InWindow, q.Rate)
		}
	}
	type laneReason struct {
		lane   model.LaneID
		reason model.BlockingReason
	}
	type laneBucket struct {
		lane model.LaneID
		qb   model.QuotaBucket
	}
	for part, br := range a.Blocked {
		execs, counted := map[laneReason]int{}, map[laneReason]int{}
		execBuckets, countedBuckets := map[laneBucket]int{}, map[laneBucket]int{}
		admBlocked := false
		for id, x := range o.Execs {
			s := x.Snapshot
			if id.Partition() != part || s == nil || !isAdmBlocked(s) {
				continue
			}
			admBlocked = true
			execs[laneReason{s.Lane, s.State.BlockingReason}]++
			if s.State.EligibilityState == model.BlockedByQuota {
				execBuckets[laneBucket{s.Lane, model.QuotaBucket{ID: s.Quota, Key: s.QuotaKey}}]++
			}
		}
		if br.More {
			bad("partition %d: more than %d blocked groups", part, model.MaxPageSize)
		}
		for i, g := range br.Groups {
			counted[laneReason{g.Lane, g.Reason}] += g.Count
			switch {
			case g.Count <= 0:
				bad("partition %d: blocked group %+v is empty", part, g)
			case g.Reason == model.WaitingForBudget && (model.UUID(g.Budget).IsZero() || !model.UUID(g.Quota).IsZero() || g.QuotaKey != ""):
				bad("partition %d: budget group %+v", part, g)
			case g.Reason == model.WaitingForQuota && (!model.UUID(g.Budget).IsZero() || model.UUID(g.Quota).IsZero()):
				bad("partition %d: quota group %+v", part, g)
			case g.Reason != model.WaitingForBudget && g.Reason != model.WaitingForQuota:
				bad("partition %d: group %+v of reason %v", part, g, g.Reason)
			}
			if g.Reason == model.WaitingForQuota {
				countedBuckets[laneBucket{g.Lane, model.QuotaBucket{ID: g.Quota, Key: g.QuotaKey}}] += g.Count
			}
			if i > 0 && compareGroups(br.Groups[i-1], g) >= 0 {
				bad("partition %d: blocked groups not sorted: %+v then %+v", part, br.Groups[i-1], g)
			}
		}
		if !mapsEqual(execs, counted) {
			bad("partition %d: the blocked groups count %v per lane and reason, the executions are %v", part, counted, execs)
		}
		if !mapsEqual(execBuckets, countedBuckets) {
			bad("partition %d: the quota groups count %v per lane and bucket, the executions are %v", part, countedBuckets, execBuckets)
		}
		if pd := o.PartitionDue[part]; pd != nil && pd.AdmissionBlocked != admBlocked {
			bad("partition %d: PartitionDue says admission blocked %v, the executions say %v", part, pd.AdmissionBlocked, admBlocked)
		}
	}
	for part, qr := range a.Outbox {
		if qr.More {
			bad("partition %d: more than %d outbox entries", part, model.MaxPageSize)
		}
		if pd := o.PartitionDue[part]; pd != nil && pd.QuotaReleasePending != (len(qr.Items) > 0) {
			bad("partition %d: PartitionDue says release pending %v, the outbox holds %d", part, pd.QuotaReleasePending, len(qr.Items))
		}
		for i, it := range qr.Items {
			if it.Execution.Partition() != part {
				bad("partition %d: outbox entry %+v of another partition", part, it)
			}
			if i > 0 {
				p := qr.Items[i-1]
				if p.At.After(it.At) || (p.At.Equal(it.At) && p.Execution.Compare(it.Execution) > 0) {
					bad("partition %d: outbox not oldest first: %+v then %+v", part, p, it)
				}
			}
			if it.Token == "" || it.At.After(o.Now) {
				bad("partition %d: outbox entry %+v (now %v)", part, it, o.Now)
			}
			x := o.Execs[it.Execution]
			if x == nil || x.Snapshot == nil {
				continue
			}
			s := x.Snapshot
			if s.AdmissionToken != "" && s.AdmissionToken == it.Token {
				bad("%v: outbox entry %+v holds the token its lease holds now", it.Execution, it)
			}
			if s.Quota != it.Quota || s.QuotaKey != it.Key {
				bad("%v: outbox entry of bucket %v/%q, the execution's is %v/%q", it.Execution, it.Quota, it.Key, s.Quota, s.QuotaKey)
			}
		}
	}
	return out
}

func sortedLimitDims(l map[string]model.BudgetLimit) []string {
	ks := make([]string, 0, len(l))
	for k := range l {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func mapsEqual[K comparable](a, b map[K]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// compareGroups orders groups as AdmissionBlocked lists them: lane,
// reason, budget, quota, key.
func compareGroups(a, b model.AdmissionGroup) int {
	switch {
	case a.Lane != b.Lane:
		return cmpStr(string(a.Lane), string(b.Lane))
	case a.Reason != b.Reason:
		return cmpInt(int64(a.Reason), int64(b.Reason))
	case a.Budget != b.Budget:
		return slices.Compare(a.Budget[:], b.Budget[:])
	case a.Quota != b.Quota:
		return slices.Compare(a.Quota[:], b.Quota[:])
	}
	return cmpStr(a.QuotaKey, b.QuotaKey)
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkAdmissionModel compares every bucket of a policy the machine
// created with the model: the admissions it holds (Active) and its
// window entries (InWindow), and that a budget or policy exists exactly
// when the machine created it.
func (m *machine) checkAdmissionModel() []string {
	a := m.obs[0].Admission
	if a == nil || m.adm.unknown {
		return nil
	}
	var out []string
	now := m.now()
	for _, b := range budgetIDs {
		_, created := m.adm.budgets[b]
		if (a.Budgets[b] != nil) != created {
			out = append(out, fmt.Sprintf("budget %v: created %v, status %+v", b, created, a.Budgets[b]))
		}
	}
	for _, qb := range quotaBuckets {
		d, created := m.adm.quotas[qb.ID]
		st := a.Quotas[qb]
		if (st != nil) != created {
			out = append(out, fmt.Sprintf("bucket %v: policy created %v, status %+v", qb, created, st))
			continue
		}
		if st == nil {
			continue
		}
		var held, in int
		if rb := m.adm.buckets[qb]; rb != nil {
			held, in = len(rb.held), rb.inWindow(d, now)
		}
		if st.Active != held || st.InWindow != in {
			out = append(out, fmt.Sprintf("bucket %v: active %d, in window %d; its admissions say %d, %d", qb, st.Active, st.InWindow, held, in))
		}
	}
	return out
}

// admissionDue lists the times the admission state waits for: dedup
// expiries, window entries leaving their window, budget resets.
func (m *machine) admissionDue() []time.Time {
	var out []time.Time
	for _, at := range m.adm.dedup {
		out = append(out, at)
	}
	for qb, rb := range m.adm.buckets {
		if d, ok := m.adm.quotas[qb.ID]; ok && d.rate > 0 {
			for _, at := range rb.window {
				out = append(out, at.Add(d.window))
			}
		}
	}
	if a := m.obs[0].Admission; a != nil {
		for _, b := range a.Budgets {
			if b != nil && !b.NextResetAt.IsZero() {
				out = append(out, b.NextResetAt)
			}
		}
	}
	return out
}
