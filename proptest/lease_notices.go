package proptest

import (
	"sync"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Lease notices (Options.LeaseNotices): the machine watches the leases of
// every worker instance of its pool on the first store and, after each
// step, holds the notices of the step to what the observations before and
// after show:
//   - sound: a notice (instance X, execution E, epoch N) names a lease X
//     held before the step (a current lease of X at epoch N) and that is no
//     longer a live lease of X at N after it;
//   - complete: a live lease (ownership leased) that ends in a step (no
//     longer live, or another epoch) without a call of its holder on the
//     execution (a worker-sourced complete, fail, delay or cancel) got
//     exactly one notice, to its holder;
//   - the kind matches what happened (cancelled: cancelled; revoked:
//     revoked; expired: marked expired; timed_out and overridden: released).

// leaseWatch collects the first store's notices.
type leaseWatch struct {
	mu      sync.Mutex
	notices []poolNotice
	// holderOps holds the executions a worker-sourced fenced call of the
	// step named (the holder giving its lease up sends no notice).
	holderOps map[model.ExecutionID]bool
}

type poolNotice struct {
	instance model.WorkerInstanceID
	n        model.LeaseNotice
}

func (m *machine) watchLeases() {
	if !m.opts.LeaseNotices {
		return
	}
	ln, ok := m.stores[0].(model.LeaseNotifier)
	if !ok {
		return
	}
	m.leases = &leaseWatch{holderOps: map[model.ExecutionID]bool{}}
	for _, w := range workerPool {
		wi := w.instance
		ln.WatchLeases(wi, func(n model.LeaseNotice) {
			m.leases.mu.Lock()
			m.leases.notices = append(m.leases.notices, poolNotice{wi, n})
			m.leases.mu.Unlock()
		})
	}
}

// noteCall records a holder's call; p is the parameters of a call.
func (m *machine) noteCall(p any) {
	if m.leases == nil {
		return
	}
	var id model.ExecutionID
	var src model.Source
	switch q := p.(type) {
	case *model.ExecutionCompleteParams:
		id, src = q.ID, q.Source
	case *model.ExecutionFailParams:
		id, src = q.ID, q.Source
	case *model.ExecutionDelayParams:
		id, src = q.ID, q.Source
	case *model.ExecutionCancelParams:
		id, src = q.ID, q.Source
	default:
		return
	}
	if src == model.SourceWorker {
		m.leases.holderOps[id] = true
	}
}

// liveLease is the live lease of s (ownership leased), or nil.
func liveLease(s *model.ExecutionSnapshot) *model.Lease {
	if s == nil || s.State.LifecyclePhase != model.PhaseActive || s.State.OwnershipState != model.OwnershipLeased {
		return nil
	}
	return s.CurrentLease
}

// checkLeaseNotices checks the step's notices against the first store's
// observations before and after it, and forgets them.
func (m *machine) checkLeaseNotices(t *rapid.T, before, after *Observation) {
	t.Helper()
	if m.leases == nil {
		return
	}
	m.leases.mu.Lock()
	notices := m.leases.notices
	m.leases.notices = nil
	m.leases.mu.Unlock()
	holder := m.leases.holderOps
	m.leases.holderOps = map[model.ExecutionID]bool{}
	if before == nil || after == nil || m.action == "HostileInput" {
		return
	}
	snap := func(o *Observation, id model.ExecutionID) *model.ExecutionSnapshot {
		if x := o.Execs[id]; x != nil {
			return x.Snapshot
		}
		return nil
	}
	type leaseKey struct {
		id    model.ExecutionID
		wi    model.WorkerInstanceID
		epoch uint64
	}
	got := map[leaseKey]int{}
	for _, pn := range notices {
		n := pn.n
		got[leaseKey{n.ID, pn.instance, n.LeaseEpoch}]++
		prev, cur := snap(before, n.ID), snap(after, n.ID)
		var held *model.Lease
		if prev != nil {
			held = prev.CurrentLease
		}
		// a lease acquired within the step (a compound action) was not
		// observed before it
		newer := m.acquired[n.ID] > 0 && (held == nil || n.LeaseEpoch > held.Epoch)
		if !newer && (held == nil || held.WorkerInstanceID != pn.instance || held.Epoch != n.LeaseEpoch) {
			m.fatalf(t, "lease notice %+v to %s for a lease it did not hold (before: %+v)", n, pn.instance, held)
		}
		if l := liveLease(cur); l != nil && l.WorkerInstanceID == pn.instance && l.Epoch == n.LeaseEpoch {
			m.fatalf(t, "lease notice %+v to %s, yet the lease is still live", n, pn.instance)
		}
		st := cur.State
		ok := true
		switch n.Kind {
		case model.LeaseNoticeCancelled:
			ok = st.TerminalOutcome == model.OutcomeCancelled
		case model.LeaseNoticeRevoked:
			ok = st.OwnershipState == model.OwnershipLeaseRevoked || st.LifecyclePhase != model.PhaseActive
		case model.LeaseNoticeExpired:
			ok = st.OwnershipState == model.OwnershipLeaseExpiredReclaimable || st.LifecyclePhase != model.PhaseActive
		case model.LeaseNoticeTimedOut, model.LeaseNoticeOverridden:
			ok = st.LifecyclePhase != model.PhaseActive || st.OwnershipState == model.OwnershipLeased
		default:
			ok = false
		}
		if !ok && !newer {
			m.fatalf(t, "lease notice %+v does not match the state after the step: %+v", n, st)
		}
	}
	for id, x := range before.Execs {
		l := liveLease(x.Snapshot)
		if l == nil || holder[id] {
			continue
		}
		if now := liveLease(snap(after, id)); now != nil && now.WorkerInstanceID == l.WorkerInstanceID && now.Epoch == l.Epoch {
			continue
		}
		if n := got[leaseKey{id, l.WorkerInstanceID, l.Epoch}]; n != 1 {
			m.fatalf(t, "the live lease of %s (instance %s, epoch %d) ended with %d notices, want 1", id, l.WorkerInstanceID, l.Epoch, n)
		}
	}
}
