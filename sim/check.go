package sim

import (
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/proptest"
	"github.com/flowfabric/flowfabric/scan"
)

// fenced returns the execution and fence of a worker's fenced call.
func fenced(p any) (id model.ExecutionID, f model.Fence, now time.Time, ok bool) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return id, f, now, false
	}
	v = v.Elem()
	fv, iv, nv := field(v, "Fence"), field(v, "ID"), field(v, "Now")
	if !fv.IsValid() || fv.Type() != fenceType || !iv.IsValid() || iv.Type() != execIDType || !nv.IsValid() {
		return id, f, now, false
	}
	f = fv.Interface().(model.Fence)
	if f.IsZero() {
		return id, f, now, false
	}
	return iv.Interface().(model.ExecutionID), f, nv.Interface().(time.Time), true
}

// outcomeOps are the fenced calls that record a handler's outcome (a
// suspension's included), and the fenced WaitpointCreate and StreamAppend:
// each must come from the live lease.
var outcomeOps = map[string]bool{"Complete": true, "Fail": true, "Delay": true, "Cancel": true, "Suspend": true,
	"WaitpointCreate": true, "StreamAppend": true}

// before runs just before a call is applied: it reads the execution a
// fenced outcome is about to change.
func (w *world) before(op string, p any) {
	w.pre = nil
	w.beforeSuspend(op, p)
	w.beforeAdmission(op, p)
	w.beforeStream(op, p)
	w.beforeDelete(op, p)
	if !outcomeOps[op] {
		return
	}
	id, _, _, ok := fenced(p)
	if !ok {
		return
	}
	if s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: id}); err == nil {
		w.pre = s
	}
}

// after runs just after a call was applied, with its real reply.
func (w *world) after(op string, p any, r any, err error) {
	w.afterSuspend(op, p, r, err)
	w.afterAdmission(op, p, r, err)
	w.afterStream(op, p, r, err)
	w.afterDelete(op, p, r, err)
	if err != nil {
		return
	}
	if op == "Replay" {
		if rp, ok := p.(*model.ExecutionReplayParams); ok {
			w.completes[rp.ID] = 0
		}
		return
	}
	switch pp := p.(type) {
	case *model.ExecutionClaimNextParams:
		if res, _ := r.(*model.ExecutionClaimNextResult); res != nil && res.Claimed != nil {
			w.checkClaim(res.Claimed, pp.Namespace, pp.Capabilities, pp.Inline, pp.Now)
		}
	case *model.ExecutionCompleteParams:
		if res, _ := r.(*model.ExecutionCompleteResult); res != nil && res.Next != nil && res.Next.Claimed != nil && pp.Next != nil {
			w.checkClaim(res.Next.Claimed, pp.Next.Namespace, pp.Next.Capabilities, pp.Next.Inline, pp.Now)
		}
	}
	if res, ok := r.(*model.LeaseMarkExpiredResult); ok && res.Outcome == model.MarkExpiredMarked && w.o.Calm {
		if mp, ok := p.(*model.LeaseMarkExpiredParams); ok {
			w.violate("%s: a lease expired in a calm run (nothing stalled, nothing failed)", w.alias(mp.ID))
		}
	}
	if !outcomeOps[op] {
		return
	}
	id, f, now, ok := fenced(p)
	if !ok || replayed(r) {
		return
	}
	// A worker's outcome was recorded: its lease must have been the
	// execution's live lease at the call's time.
	pre := w.pre
	switch {
	case pre == nil:
		w.violate("%s %s accepted for an execution that did not exist", op, w.alias(id))
	case pre.State.LifecyclePhase != model.PhaseActive:
		w.violate("%s %s e%d accepted while the execution was %s", op, w.alias(id), f.LeaseEpoch, pre.State.LifecyclePhase)
	case pre.CurrentLease == nil || pre.CurrentLease.ID != f.LeaseID || pre.CurrentLease.Epoch != f.LeaseEpoch:
		w.violate("%s %s e%d accepted from a lease that was not the execution's (epoch %d)", op, w.alias(id), f.LeaseEpoch, pre.LeaseEpoch)
	case pre.CurrentAttempt == nil || pre.CurrentAttempt.ID != f.AttemptID:
		w.violate("%s %s e%d accepted from another attempt", op, w.alias(id), f.LeaseEpoch)
	case now.After(pre.CurrentLease.ExpiresAt):
		w.violate("%s %s e%d accepted %v after its lease expired", op, w.alias(id), f.LeaseEpoch, now.Sub(pre.CurrentLease.ExpiresAt))
	case !pre.LeaseRevokedAt.IsZero() && !pre.LeaseRevokedAt.Before(pre.CurrentLease.AcquiredAt):
		w.violate("%s %s e%d accepted after its lease was revoked", op, w.alias(id), f.LeaseEpoch)
	case !pre.LeaseExpiredAt.IsZero() && !pre.LeaseExpiredAt.Before(pre.CurrentLease.AcquiredAt):
		w.violate("%s %s e%d accepted after its lease was marked expired", op, w.alias(id), f.LeaseEpoch)
	}
	if op == "Complete" {
		w.completes[id]++
		if w.completes[id] > 1 {
			w.violate("%s completed twice (without a replay in between)", w.alias(id))
		}
	}
}

// checkClaim checks a claim a worker of namespace ns with capabilities
// caps made: the execution is of its namespace, requires no more than it
// offers, and is now active under the claimed lease; one that needs
// admission was admitted inline (checkClaimAdmission).
func (w *world) checkClaim(c *model.ClaimResult, ns model.Namespace, caps model.Capabilities, in *model.InlineAdmission, now time.Time) {
	s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: c.ID})
	switch {
	case err != nil:
		w.violate("claimed %s does not exist: %v", w.alias(c.ID), errCode(err))
	case ns != "" && s.Namespace != ns:
		w.violate("a worker of namespace %s claimed %s of namespace %s", ns, w.alias(c.ID), s.Namespace)
	case !s.RequiredCapabilities.SubsetOf(caps):
		w.violate("a worker offering %v claimed %s requiring %v", caps, w.alias(c.ID), s.RequiredCapabilities)
	case s.State.LifecyclePhase != model.PhaseActive || s.CurrentLease == nil || s.CurrentLease.ID != c.Lease.ID ||
		s.CurrentLease.Epoch != c.Lease.Epoch:
		w.violate("claimed %s e%d is not active under the claimed lease", w.alias(c.ID), c.Lease.Epoch)
	default:
		w.checkClaimAdmission(s, c, in, now)
	}
}

// replayed reports a result's Replayed flag.
func replayed(r any) bool {
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	f := field(v.Elem(), "Replayed")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}

// checkpoint checks the store's invariants (proptest's, including the
// monotonic ones between checkpoints) and the caps of every execution.
func (w *world) checkpoint() {
	ctx := context.Background()
	o, err := proptest.Observe(ctx, w.raw, w.sched.now, proptest.ObserveOptions{Namespaces: namespaces})
	if err != nil {
		w.violate("observe: %v", err)
		return
	}
	live := sortedIDs(w.liveAcked())
	if v := o.Violations(live); len(v) > 0 {
		w.violate("store invariants:\n  %s", strings.Join(v, "\n  "))
	}
	w.checkSuspendState(o)
	w.checkIndexes()
	w.checkAdmission()
	w.checkStreams(w.draining)
	for _, id := range live {
		eo := o.Execs[id]
		if eo == nil {
			continue // reported by the invariants (known but not listed)
		}
		s := eo.Snapshot
		if s.RetryCount > s.RetryPolicy.MaxRetries {
			w.violate("%s retried %d times, policy allows %d", w.alias(id), s.RetryCount, s.RetryPolicy.MaxRetries)
		}
		if s.ReclaimCount > s.MaxReclaims {
			w.violate("%s reclaimed %d times, cap %d", w.alias(id), s.ReclaimCount, s.MaxReclaims)
		}
		if s.ReplayCount > s.MaxReplays {
			w.violate("%s replayed %d times, cap %d", w.alias(id), s.ReplayCount, s.MaxReplays)
		}
	}
}

// checkIndexes checks that every execution's index entries are what its
// record says: a dry run of the index reconciler over every partition
// finds nothing to repair. It writes nothing.
func (w *world) checkIndexes() {
	ctx := context.Background()
	for part := range w.raw.Partitions().WithDefaults().FlowPartitions {
		var cur model.ExecutionID
		for {
			r, err := w.raw.IndexRepair(ctx, &model.IndexRepairParams{
				Partition: part, Cursor: cur, Limit: model.MaxPageSize, DryRun: true, Now: w.sched.now,
			})
			if err != nil {
				w.violate("index repair of partition %d: %v", part, err)
				return
			}
			for _, rp := range r.Repairs {
				w.violate("%s: index %s needs %s (score %d, found %d)", w.alias(rp.ExecutionID), rp.Index, rp.Action, rp.Score, rp.OldScore)
			}
			if r.Next.IsZero() {
				break
			}
			cur = r.Next
		}
	}
}

// runAll runs procs until none can run. It reports false on a livelock.
func (w *world) runAll() bool {
	for range 100_000 {
		run := w.sched.Runnable()
		if len(run) == 0 {
			return true
		}
		for _, p := range run {
			if ok, _ := w.sched.runnable(p); ok {
				w.runProc(p)
			}
		}
	}
	w.violate("livelock: procs keep running at %v", w.sched.now.Sub(start))
	return false
}

// pending returns the acknowledged executions that are not terminal.
func (w *world) pending() []*model.ExecutionSnapshot {
	var out []*model.ExecutionSnapshot
	ids := w.liveAcked()
	if w.draining {
		// and the executions with a quota whose submission's reply was
		// lost: their quota slots must free (sim/admission.go)
		ids = append(ids, w.adm.unacked(w)...)
	}
	for _, id := range ids {
		if w.terminal[id] {
			continue
		}
		s, err := w.raw.ExecutionDescribe(context.Background(), &model.ExecutionDescribeParams{ID: id})
		if err != nil {
			w.violate("acknowledged %s is gone: %v", w.alias(id), errCode(err))
			continue
		}
		if s.State.LifecyclePhase != model.PhaseTerminal {
			out = append(out, s)
		} else if w.draining {
			w.terminal[id] = true // nothing replays it during the drain
		}
	}
	return out
}

// drainLimit is how long the quiet drain may take before what is left
// counts as lost.
const drainLimit = 30 * time.Minute

// drainScanEvery is how often the drain runs every scanner.
const drainScanEvery = 2 * time.Second

// settleScanEvery is how often the drain runs every scanner while the
// quota reconciler's grace passes with nothing left.
const settleScanEvery = 15 * time.Second

// drain turns the faults off, starts a process that can serve every
// execution, and runs until every acknowledged execution is terminal.
func (w *world) drain() {
	w.draining = true
	w.faultsOn = false
	w.logf("drain: faults off")
	for _, ns := range namespaces {
		w.startProcess(true, ns)
	}
	deadline := w.sched.now.Add(drainLimit)
	nextScan := w.sched.now
	var settleBy time.Time
	for {
		if !w.o.NoSuspend {
			w.outsideTick() // the answers the outside world still owes
		}
		if !w.runAll() || len(w.viol) > 0 {
			return
		}
		left := w.pending()
		if len(left) == 0 {
			if w.o.NoAdmission {
				break
			}
			// then every admission must be released, at the latest once
			// the quota reconciler's grace passed with nothing left (a
			// late submission starts it again)
			if settleBy.IsZero() {
				settleBy = w.sched.now.Add(scan.DefaultAdmissionGrace + 30*time.Second)
				w.logf("drain: nothing left; waiting for the quota releases (at most the reconciler's grace)")
			}
			if !w.sched.now.Before(settleBy) || w.admSettled() {
				break
			}
		} else {
			settleBy = time.Time{}
		}
		if w.sched.now.After(deadline) {
			for _, s := range left {
				w.violate("lost: %s is %s (%s/%s) after the drain", w.alias(s.ID), s.PublicState,
					s.State.LifecyclePhase, s.State.EligibilityState)
			}
			break
		}
		if !w.sched.now.Before(nextScan) {
			w.restartWorkers()
			w.answerSuspended(left)
			if !w.o.NoAdmission {
				w.admDrain(left)
			}
			for _, p := range w.live() {
				for _, sc := range p.scanners {
					w.scanPass(p, sc)
				}
			}
			if !w.runAll() {
				return
			}
			nextScan = w.sched.now.Add(drainScanEvery)
			if !settleBy.IsZero() {
				nextScan = w.sched.now.Add(settleScanEvery)
			}
		}
		next := nextScan
		if t, ok := w.sched.NextDeadline(); ok && t.Before(next) {
			next = t
		}
		w.sched.AdvanceTo(next)
	}
	w.logf("drain: every acknowledged execution is terminal")
	w.admFinish()
	w.checkpoint()
}
