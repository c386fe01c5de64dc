package proptest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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
//     execution (a worker-sourced complete, fail, delay or cancel, or an
//     await of children) got exactly one notice, to its holder;
//   - the kind matches what happened (cancelled: cancelled; revoked:
//     revoked; expired: marked expired; timed_out and overridden: released).
//
// In a differential run every later store that implements
// model.LeaseNotifier is watched too: its notices may arrive later (over a
// network), so at each comparison of the stores the machine waits until it
// has as many as the first store sent since the last comparison and then
// requires the same notices (instance, kind, execution, epoch), in any
// order. A window in which a later store asked for a recheck (its
// subscription was down) is not compared.

// leaseWatch collects the first store's notices.
type leaseWatch struct {
	mu      sync.Mutex
	notices []poolNotice
	// holderOps holds the executions a worker-sourced fenced call of the
	// step named (the holder giving its lease up sends no notice).
	holderOps map[model.ExecutionID]bool

	// sinceCompare holds the first store's notices since the last
	// comparison; others[i] the notices of later store i+1 (nil for a
	// store that does not notify), recheck[i] whether it asked for a
	// recheck since then. others and recheck are guarded by mu.
	sinceCompare []poolNotice
	others       [][]poolNotice
	recheck      []bool
	arrived      chan struct{} // a later store's notice arrived (capacity 1)
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
	lw := &leaseWatch{holderOps: map[model.ExecutionID]bool{}, arrived: make(chan struct{}, 1)}
	m.leases = lw
	for _, w := range workerPool {
		wi := w.instance
		ln.WatchLeases(wi, func(n model.LeaseNotice) {
			lw.mu.Lock()
			lw.notices = append(lw.notices, poolNotice{wi, n})
			lw.mu.Unlock()
		})
	}
	lw.others = make([][]poolNotice, len(m.stores)-1)
	lw.recheck = make([]bool, len(m.stores)-1)
	for i, s := range m.stores[1:] {
		ln, ok := s.(model.LeaseNotifier)
		if !ok {
			continue
		}
		lw.others[i] = []poolNotice{}
		for _, w := range workerPool {
			wi := w.instance
			ln.WatchLeases(wi, func(n model.LeaseNotice) {
				lw.mu.Lock()
				if n.Kind == model.LeaseNoticeRecheck {
					lw.recheck[i] = true
				} else {
					lw.others[i] = append(lw.others[i], poolNotice{wi, n})
				}
				lw.mu.Unlock()
				select {
				case lw.arrived <- struct{}{}:
				default:
				}
			})
		}
	}
}

// noticeWait bounds the wait for a later store's notices; it only ends a
// failing sequence (a notice that never comes).
const noticeWait = 10 * time.Second

// compareLeaseNotices requires every later store that notifies to have
// sent the notices the first store sent since the last comparison, and
// starts a new window.
func (m *machine) compareLeaseNotices(t *rapid.T) {
	t.Helper()
	lw := m.leases
	if lw == nil {
		return
	}
	want := lw.sinceCompare
	lw.sinceCompare = nil
	// a wall-clock bound: notices cross a network on some stores
	deadline, cancel := context.WithTimeout(context.Background(), noticeWait)
	defer cancel()
	for i := range lw.others {
		for {
			lw.mu.Lock()
			got, skip, watched := lw.others[i], lw.recheck[i], lw.others[i] != nil
			lw.mu.Unlock()
			if !watched || skip || len(got) >= len(want) {
				break
			}
			select {
			case <-lw.arrived:
			case <-deadline.Done():
				m.fatalf(t, "store %s sent %d lease notice(s) since the last comparison, store A %d:\n  A: %s\n  %s: %s",
					storeName(i+1), len(got), len(want), noticeText(want), storeName(i+1), noticeText(got))
			}
		}
		lw.mu.Lock()
		got, skip, watched := lw.others[i], lw.recheck[i], lw.others[i] != nil
		if watched {
			lw.others[i], lw.recheck[i] = []poolNotice{}, false
		}
		lw.mu.Unlock()
		if !watched || skip {
			continue
		}
		if a, b := noticeText(want), noticeText(got); a != b {
			m.fatalf(t, "stores A and %s sent different lease notices since the last comparison:\n  A: %s\n  %s: %s",
				storeName(i+1), a, storeName(i+1), b)
		}
	}
}

// noticeText is notices sorted, as text.
func noticeText(ns []poolNotice) string {
	s := make([]string, len(ns))
	for i, pn := range ns {
		s[i] = fmt.Sprintf("%s:%s:%s@%d", pn.instance, pn.n.Kind, pn.n.ID, pn.n.LeaseEpoch)
	}
	slices.Sort(s)
	return "[" + strings.Join(s, " ") + "]"
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
	case *model.ExecutionAwaitChildrenParams:
		id, src = q.ID, model.SourceWorker // the parent gives its lease up
	case *model.ExecutionSuspendParams:
		id, src = q.ID, model.SourceWorker // the suspended attempt gives its lease up
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
	m.leases.sinceCompare = append(m.leases.sinceCompare, notices...)
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
		var ok bool
		switch n.Kind {
		case model.LeaseNoticeCancelled:
			ok = st.TerminalOutcome == model.OutcomeCancelled
		case model.LeaseNoticeRevoked:
			ok = st.OwnershipState == model.OwnershipLeaseRevoked || st.LifecyclePhase != model.PhaseActive
		case model.LeaseNoticeExpired:
			ok = st.OwnershipState == model.OwnershipLeaseExpiredReclaimable || st.LifecyclePhase != model.PhaseActive
		case model.LeaseNoticeTimedOut, model.LeaseNoticeOverridden:
			ok = st.LifecyclePhase != model.PhaseActive || st.OwnershipState == model.OwnershipLeased
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
