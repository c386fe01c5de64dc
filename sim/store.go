package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Faults are the probabilities, in parts per thousand, of the faults the
// store wrapper injects into each call the engine makes.
type Faults struct {
	// FailBefore: the call fails before it reaches the store (a transport
	// error; nothing applied).
	FailBefore int
	// LoseReply: the call applies and its reply is lost (the engine sees a
	// transport error).
	LoseReply int
	// Duplicate: the call is delivered twice (applied, then applied again
	// with the same parameters); the engine gets one of the two replies.
	Duplicate int
	// Slow: the call takes time: the clock moves on while the request is
	// in flight (the store applies it with the engine's earlier Now) or
	// while the reply is.
	Slow int
	// DropWork and DupWork: a work notification is lost or delivered
	// twice.
	DropWork, DupWork int
	// Late: a recent create or fenced call of a worker is delivered again
	// much later (per step).
	Late int
	// BlurWork: a work notification does not say the partition (-1), as
	// after a lost subscription.
	BlurWork int
	// DropLease: a lease notice is lost (renewal is the backstop).
	// Recheck: a recheck notice (model.LeaseNoticeRecheck, sent after a
	// resubscription) reaches a process, per step.
	DropLease, Recheck int
	// DropStream and DupStream: a stream notice (model.StreamNotifier)
	// is lost or delivered twice (sim/stream.go).
	DropStream, DupStream int
}

// DefaultFaults are the fault rates of a run that does not set its own.
var DefaultFaults = Faults{FailBefore: 15, LoseReply: 15, Duplicate: 15, Slow: 30, DropWork: 100, DupWork: 50, BlurWork: 50,
	DropLease: 100, Recheck: 10, Late: 20, DropStream: 100, DupStream: 50}

// errTransport is what a lost call looks like to the engine.
var errTransport = errors.New("sim: connection lost")

// Store is the fault-injecting model.Store between the engines and the
// real store: every call the engine makes is a yield point of the
// scheduler (other procs may run first), then it is applied, failed or
// duplicated as the seed says, and logged. Methods the engine does not
// call pass through (embedded).
type Store struct {
	model.Store
	w *world
}

// fault is the kind of fault chosen for one call.
type fault uint8

const (
	faultNone fault = iota
	faultFailBefore
	faultLoseReply
	faultDuplicate
	faultSlowRequest
	faultSlowReply
)

func (f fault) String() string {
	return [...]string{"", " [fault: failed before apply]", " [fault: reply lost]", " [fault: delivered twice]",
		" [fault: slow request]", " [fault: slow reply]"}[f]
}

// draw picks the fault of one call.
func (s *Store) draw() fault {
	w := s.w
	f := w.faults()
	if f == nil {
		return faultNone
	}
	r := w.rng.IntN(1000)
	switch {
	case r < f.FailBefore:
		return faultFailBefore
	case r < f.FailBefore+f.LoseReply:
		return faultLoseReply
	case r < f.FailBefore+f.LoseReply+f.Duplicate:
		return faultDuplicate
	case r < f.FailBefore+f.LoseReply+f.Duplicate+f.Slow:
		if w.rng.IntN(2) == 0 {
			return faultSlowRequest
		}
		return faultSlowReply
	}
	return faultNone
}

// noPreempt are the calls the engine makes while it holds a lock another
// goroutine may wait for (the claim scheduler reads the live workers under
// its refresh lock): preempting there would deadlock the scheduler, so
// they run in the same turn as the code before them.
var noPreempt = map[string]bool{"WorkerList": true}

// call runs one store call of the engine.
func call[P, R any](s *Store, op string, p P, apply func(context.Context, P) (R, error)) (R, error) {
	w := s.w
	if !noPreempt[op] {
		w.sched.preempt()
	}
	who := w.who()
	f := s.draw()
	var zero R
	desc := describeParams(w, p)
	switch f {
	case faultFailBefore:
		w.logf("%s %s %s → lost%s", who, op, desc, f)
		return zero, fmt.Errorf("%s: %w", op, errTransport)
	case faultSlowRequest:
		w.sched.Advance(w.slowness())
	}
	w.before(op, p)
	r, err := apply(context.Background(), p)
	w.after(op, p, r, err)
	out := describeResult(w, r, err)
	if redeliverable[op] {
		w.remember(func() {
			w.before(op, p)
			r, err := apply(context.Background(), p)
			w.after(op, p, r, err)
			w.logf("late duplicate of %s %s %s → %s", who, op, desc, describeResult(w, r, err))
		})
	}
	switch f {
	case faultLoseReply:
		w.logf("%s %s %s → %s%s", who, op, desc, out, f)
		return zero, fmt.Errorf("%s: %w", op, errTransport)
	case faultDuplicate:
		w.before(op, p)
		r2, err2 := apply(context.Background(), p)
		w.after(op, p, r2, err2)
		out2 := describeResult(w, r2, err2)
		second := w.rng.IntN(2) == 0
		w.logf("%s %s %s → %s, again → %s%s (reply %d)", who, op, desc, out, out2, f, map[bool]int{false: 1, true: 2}[second])
		if second {
			return r2, err2
		}
		return r, err
	case faultSlowReply:
		w.sched.Advance(w.slowness())
	}
	w.logf("%s %s %s → %s%s", who, op, desc, out, f)
	return r, err
}

// ExecutionCreate implements model.Store.
func (s *Store) ExecutionCreate(ctx context.Context, p *model.ExecutionCreateParams) (*model.ExecutionCreateResult, error) {
	return call(s, "Create", p, s.Store.ExecutionCreate)
}

// ExecutionComplete implements model.Store.
func (s *Store) ExecutionComplete(ctx context.Context, p *model.ExecutionCompleteParams) (*model.ExecutionCompleteResult, error) {
	return call(s, "Complete", p, s.Store.ExecutionComplete)
}

// ExecutionFail implements model.Store.
func (s *Store) ExecutionFail(ctx context.Context, p *model.ExecutionFailParams) (*model.ExecutionFailResult, error) {
	return call(s, "Fail", p, s.Store.ExecutionFail)
}

// ExecutionDelay implements model.Store.
func (s *Store) ExecutionDelay(ctx context.Context, p *model.ExecutionDelayParams) (*model.ExecutionDelayResult, error) {
	return call(s, "Delay", p, s.Store.ExecutionDelay)
}

// ExecutionCancel implements model.Store.
func (s *Store) ExecutionCancel(ctx context.Context, p *model.ExecutionCancelParams) (*model.ExecutionCancelResult, error) {
	return call(s, "Cancel", p, s.Store.ExecutionCancel)
}

// ExecutionChangePriority implements model.Store.
func (s *Store) ExecutionChangePriority(ctx context.Context, p *model.ExecutionChangePriorityParams) (*model.ExecutionChangePriorityResult, error) {
	return call(s, "ChangePriority", p, s.Store.ExecutionChangePriority)
}

// ExecutionReplay implements model.Store.
func (s *Store) ExecutionReplay(ctx context.Context, p *model.ExecutionReplayParams) (*model.ExecutionReplayResult, error) {
	return call(s, "Replay", p, s.Store.ExecutionReplay)
}

// ExecutionRecover implements model.Store.
func (s *Store) ExecutionRecover(ctx context.Context, p *model.ExecutionRecoverParams) (*model.ExecutionRecoverResult, error) {
	return call(s, "Recover", p, s.Store.ExecutionRecover)
}

// ExecutionClaim implements model.Store.
func (s *Store) ExecutionClaim(ctx context.Context, p *model.ExecutionClaimParams) (*model.ClaimResult, error) {
	return call(s, "Claim", p, s.Store.ExecutionClaim)
}

// ExecutionClaimNext implements model.Store.
func (s *Store) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	return call(s, "ClaimNext", p, s.Store.ExecutionClaimNext)
}

// ExecutionGrantAndClaim implements model.Store.
func (s *Store) ExecutionGrantAndClaim(ctx context.Context, p *model.ExecutionGrantAndClaimParams) (*model.ClaimResult, error) {
	return call(s, "GrantAndClaim", p, s.Store.ExecutionGrantAndClaim)
}

// ClaimGrantIssue implements model.Store.
func (s *Store) ClaimGrantIssue(ctx context.Context, p *model.ClaimGrantIssueParams) (*model.ClaimGrantIssueResult, error) {
	return call(s, "ClaimGrantIssue", p, s.Store.ClaimGrantIssue)
}

// ExecutionBlock implements model.Blocker (the real store, memstore, has it).
func (s *Store) ExecutionBlock(ctx context.Context, p *model.ExecutionBlockParams) (*model.ExecutionBlockResult, error) {
	return call(s, "Block", p, s.Store.(model.Blocker).ExecutionBlock)
}

// ExecutionExpire implements model.Store.
func (s *Store) ExecutionExpire(ctx context.Context, p *model.ExecutionExpireParams) (*model.ExecutionExpireResult, error) {
	return call(s, "Expire", p, s.Store.ExecutionExpire)
}

// ExecutionPromoteDelayed implements model.Store.
func (s *Store) ExecutionPromoteDelayed(ctx context.Context, p *model.ExecutionPromoteDelayedParams) (*model.ExecutionPromoteDelayedResult, error) {
	return call(s, "PromoteDelayed", p, s.Store.ExecutionPromoteDelayed)
}

// ExecutionUpdateProgress implements model.Store.
func (s *Store) ExecutionUpdateProgress(ctx context.Context, p *model.ExecutionUpdateProgressParams) (*model.ExecutionUpdateProgressResult, error) {
	return call(s, "UpdateProgress", p, s.Store.ExecutionUpdateProgress)
}

// ExecutionDescribe implements model.Store.
func (s *Store) ExecutionDescribe(ctx context.Context, p *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error) {
	return call(s, "Describe", p, s.Store.ExecutionDescribe)
}

// LeaseRenew implements model.Store.
func (s *Store) LeaseRenew(ctx context.Context, p *model.LeaseRenewParams) (*model.LeaseRenewResult, error) {
	return call(s, "Renew", p, s.Store.LeaseRenew)
}

// LeaseRevoke implements model.Store.
func (s *Store) LeaseRevoke(ctx context.Context, p *model.LeaseRevokeParams) (*model.LeaseRevokeResult, error) {
	return call(s, "Revoke", p, s.Store.LeaseRevoke)
}

// LeaseMarkExpired implements model.Store.
func (s *Store) LeaseMarkExpired(ctx context.Context, p *model.LeaseMarkExpiredParams) (*model.LeaseMarkExpiredResult, error) {
	return call(s, "MarkExpired", p, s.Store.LeaseMarkExpired)
}

// IndexScanDue implements model.Store.
func (s *Store) IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error) {
	return call(s, "ScanDue", p, s.Store.IndexScanDue)
}

// PartitionDue implements model.Store.
func (s *Store) PartitionDue(ctx context.Context, p *model.PartitionDueParams) (*model.PartitionDueResult, error) {
	return call(s, "PartitionDue", p, s.Store.PartitionDue)
}

// RouteUnblock implements model.Store.
func (s *Store) RouteUnblock(ctx context.Context, p *model.RouteUnblockParams) (*model.RouteUnblockResult, error) {
	return call(s, "RouteUnblock", p, s.Store.RouteUnblock)
}

// WorkerRegister implements model.Store.
func (s *Store) WorkerRegister(ctx context.Context, p *model.WorkerRegisterParams) (*model.WorkerRegisterResult, error) {
	return call(s, "WorkerRegister", p, s.Store.WorkerRegister)
}

// WorkerHeartbeat implements model.Store.
func (s *Store) WorkerHeartbeat(ctx context.Context, p *model.WorkerHeartbeatParams) (*model.WorkerHeartbeatResult, error) {
	return call(s, "Heartbeat", p, s.Store.WorkerHeartbeat)
}

// WorkerDeregister implements model.Store.
func (s *Store) WorkerDeregister(ctx context.Context, p *model.WorkerDeregisterParams) (*model.WorkerDeregisterResult, error) {
	return call(s, "WorkerDeregister", p, s.Store.WorkerDeregister)
}

// WorkerExpire implements model.Store.
func (s *Store) WorkerExpire(ctx context.Context, p *model.WorkerExpireParams) (*model.WorkerExpireResult, error) {
	return call(s, "WorkerExpire", p, s.Store.WorkerExpire)
}

// WorkerList implements model.Store.
func (s *Store) WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error) {
	return call(s, "WorkerList", p, s.Store.WorkerList)
}

// WatchWork implements model.WorkNotifier: a notification reaches a live
// process's watch, or is dropped or duplicated as the seed says.
func (s *Store) WatchWork(lane model.LaneID, f func(partition int)) (stop func()) {
	w := s.w
	owner := w.owner()
	return s.Store.(model.WorkNotifier).WatchWork(lane, func(partition int) {
		if w.sched.Dead(owner) {
			return
		}
		n := 1
		if fs := w.faults(); fs != nil {
			switch r := w.rng.IntN(1000); {
			case r < fs.DropWork:
				n = 0
			case r < fs.DropWork+fs.DupWork:
				n = 2
			case r < fs.DropWork+fs.DupWork+fs.BlurWork:
				// as after a lost subscription: the partition is unknown
				w.logf("work notice lane %s p%d to process %d: partition unknown", lane, partition, owner)
				partition = -1
			}
		}
		if n != 1 {
			w.logf("work notice lane %s p%d to process %d: %s", lane, partition, owner, map[int]string{0: "dropped", 2: "duplicated"}[n])
		}
		for range n {
			f(partition)
		}
	})
}

// WatchLeases implements model.LeaseNotifier: a notice reaches a live
// process's watch, or is dropped as the seed says.
func (s *Store) WatchLeases(instance model.WorkerInstanceID, f func(model.LeaseNotice)) (stop func()) {
	w := s.w
	owner := w.owner()
	w.leaseWatches = append(w.leaseWatches, leaseWatch{owner: owner, instance: instance, f: f})
	return s.Store.(model.LeaseNotifier).WatchLeases(instance, func(n model.LeaseNotice) {
		if w.sched.Dead(owner) {
			return
		}
		if fs := w.faults(); fs != nil && w.rng.IntN(1000) < fs.DropLease {
			w.logf("lease notice %s %s e%d to %s: dropped", n.Kind, w.alias(n.ID), n.LeaseEpoch, instance)
			return
		}
		w.logf("lease notice %s %s e%d to %s", n.Kind, w.alias(n.ID), n.LeaseEpoch, instance)
		f(n)
	})
}

// redeliverable are the calls a network may deliver again much later
// (a retransmitted request): creates and a worker's fenced calls, which
// ids and fences make harmless (a stream append, not idempotent, adds a
// second copy of its frame while its lease lives: counted, not a
// violation).
// An operator's unfenced calls are not (a late revoke would revoke a
// newer lease, as its sender asked).
var redeliverable = map[string]bool{"Create": true, "Complete": true, "Fail": true, "Delay": true, "Cancel": true,
	"Renew": true, "UpdateProgress": true, "WaitpointCreate": true, "Suspend": true, "StreamAppend": true}

// remember keeps a call for a late redelivery (the last 32).
func (w *world) remember(f func()) {
	if w.faults() == nil {
		return
	}
	w.recent = append(w.recent, f)
	if len(w.recent) > 32 {
		w.recent = w.recent[1:]
	}
}

// redeliver applies a recent call again.
func (w *world) redeliver() {
	if len(w.recent) == 0 {
		return
	}
	k := w.rng.IntN(len(w.recent))
	f := w.recent[k]
	w.recent = append(w.recent[:k], w.recent[k+1:]...)
	f()
}

// slowness is how long a slow call takes.
func (w *world) slowness() time.Duration {
	if w.rng.IntN(10) == 0 {
		return time.Duration(3000+w.rng.IntN(7000)) * time.Millisecond // longer than some leases
	}
	return time.Duration(1+w.rng.IntN(3000)) * time.Millisecond
}

// leaseWatch is a process's watch of its worker's lease notices.
type leaseWatch struct {
	owner    int
	instance model.WorkerInstanceID
	f        func(model.LeaseNotice)
}

// recheck sends a recheck notice to a random live watch, as valkeystore
// does after its subscription was down.
func (w *world) recheck() {
	var live []leaseWatch
	for _, lw := range w.leaseWatches {
		if !w.sched.Dead(lw.owner) {
			live = append(live, lw)
		}
	}
	if len(live) == 0 {
		return
	}
	lw := pick(w, live)
	w.logf("lease notice recheck to %s", lw.instance)
	lw.f(model.LeaseNotice{Kind: model.LeaseNoticeRecheck})
}
