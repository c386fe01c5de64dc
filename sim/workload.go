package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// handler returns the handler of kind k. Its behaviour is drawn from the
// seed when it runs:
//
//	ok          runs up to 1s, succeeds
//	flaky       fails (transient) half the time
//	perm        fails permanently
//	panic       panics half the time
//	snooze      snoozes 1–5s once, then succeeds
//	slow        runs 1.5–3 lease TTLs (renewing), succeeds
//	stubborn    like slow, but ignores its context: a success after its
//	            lease was lost must be refused
//	hang        runs until its context ends (or 1–3 minutes)
//	selfcancel  cancels its execution
//	fanout      (flow nodes only) awaits 1–3 children of the kinds above,
//	            then, resumed, reads them and succeeds
//
// (the kinds that suspend are in sim/suspend.go, spend in
// sim/admission.go, stream in sim/stream.go; every kind but stream
// sometimes appends stream frames first: streamTrack)
func (w *world) handler(k model.Kind, lease time.Duration) func(ctx context.Context, info *flowfabric.TaskInfo) error {
	return func(ctx context.Context, info *flowfabric.TaskInfo) error {
		clock := w.sched
		switch k {
		case "ok":
			if err := clock.Wait(ctx, w.dur(time.Millisecond, time.Second), nil); err != nil {
				return context.Cause(ctx)
			}
			return nil
		case "flaky":
			if w.rng.IntN(2) == 0 {
				return errors.New("flaky")
			}
			return nil
		case "perm":
			return flowfabric.Permanent(errors.New("permanent"))
		case "panic":
			if w.rng.IntN(2) == 0 {
				panic("handler panic")
			}
			return nil
		case "snooze":
			if !info.Resumed {
				return flowfabric.Snooze(w.dur(time.Second, 5*time.Second))
			}
			return nil
		case "slow":
			if err := clock.Wait(ctx, w.dur(lease*3/4, 3*lease/2), nil); err != nil {
				return context.Cause(ctx)
			}
			if err := info.Progress(ctx, 50, "half way"); err != nil {
				return err // a lost lease, or a transport error: fail the attempt
			}
			if err := clock.Wait(ctx, w.dur(lease*3/4, 3*lease/2), nil); err != nil {
				return context.Cause(ctx)
			}
			return nil
		case "stubborn":
			_ = clock.Wait(context.Background(), w.dur(lease*3/2, 3*lease), nil)
			return nil
		case "hang":
			if err := clock.Wait(ctx, w.dur(time.Minute, 3*time.Minute), nil); err != nil {
				return context.Cause(ctx)
			}
			return nil
		case "selfcancel":
			return flowfabric.Cancel(errors.New("not wanted"))
		case "fanout":
			if !info.Resumed {
				var kids []flowfabric.Child
				for range 1 + w.rng.IntN(3) {
					kids = append(kids, flowfabric.NewRawChild(pick(w, kinds), []byte(`{}`), &flowfabric.SubmitOpts{Lane: "s"}))
				}
				return flowfabric.AwaitChildren(kids...)
			}
			kids, err := info.Children(ctx)
			if err != nil {
				return err
			}
			for _, k := range kids {
				if !k.State.IsTerminal() {
					return fmt.Errorf("resumed while child %s is %s", k.ID, k.State)
				}
			}
			return nil
		}
		return fmt.Errorf("no behaviour for kind %q", k)
	}
}

// submit submits a random execution through p's engine, in a proc of p.
func (w *world) submit(p *process) {
	kind := pick(w, kinds)
	if !w.o.NoSuspend && w.rng.IntN(4) == 0 {
		kind = pick(w, suspendKinds)
	}
	if !w.o.NoAdmission && w.rng.IntN(6) == 0 {
		kind = "spend"
	}
	if !w.o.NoStreams && w.rng.IntN(7) == 0 {
		kind = "stream"
	}
	o := &flowfabric.SubmitOpts{Lane: pick(w, lanes), Priority: w.rng.IntN(4)}
	if w.rng.IntN(3) == 0 {
		o.Delay = w.dur(time.Millisecond, 10*time.Second)
	}
	if w.rng.IntN(3) == 0 {
		o.RetryPolicy = &flowfabric.RetryPolicy{MaxRetries: w.rng.IntN(4), InitialDelay: w.dur(100*time.Millisecond, 2*time.Second),
			Multiplier: 2, MaxDelay: 5 * time.Second}
	}
	if w.rng.IntN(3) == 0 {
		o.RequiredCapabilities = subset(w, caps)
	}
	if w.rng.IntN(5) == 0 {
		o.IdempotencyKey = fmt.Sprintf("k%d", w.rng.IntN(5))
	}
	if w.rng.IntN(10) == 0 {
		o.AttemptTimeout = w.dur(5*time.Second, 20*time.Second)
	}
	if w.rng.IntN(20) == 0 {
		o.Deadline = w.sched.now.Add(w.dur(10*time.Second, time.Minute))
	}
	if w.rng.IntN(10) == 0 {
		o.MaxReclaims = 1 + w.rng.IntN(3)
	}
	if w.rng.IntN(10) == 0 {
		o.MaxReplays = 1 + w.rng.IntN(2)
	}
	if !w.o.NoAdmission {
		w.admissionOpts(o, kind)
	}
	w.retentionOpts(o, kind)
	w.spawn(p, func() {
		res, err := p.engine.SubmitRaw(context.Background(), kind, []byte(`{}`), o)
		if err != nil {
			w.logf("P%d submit %s: %s", p.n, kind, errCode(err))
			return
		}
		w.logf("P%d submitted %s kind %s lane %s prio %d delay %v caps %v key %q retries %v timeout %v deadline %v dup %v%s",
			p.n, w.alias(res.ID), kind, o.Lane, o.Priority, o.Delay, o.RequiredCapabilities, o.IdempotencyKey,
			retries(o.RetryPolicy), o.AttemptTimeout, !o.Deadline.IsZero(), res.Duplicate, w.describeAdmission(o))
		if !w.isAcked[res.ID] {
			w.isAcked[res.ID] = true
			w.acked = append(w.acked, res.ID)
			if kind == "stream" {
				w.str.execs = append(w.str.execs, res.ID)
			}
		}
	})
}

func retries(p *flowfabric.RetryPolicy) string {
	if p == nil {
		return "default"
	}
	return fmt.Sprint(p.MaxRetries)
}

// operator acts on a random acknowledged execution through p's engine.
func (w *world) operator(p *process) {
	id := pick(w, w.acked)
	e := p.engine
	ctx := context.Background()
	var op string
	var f func() error
	n := 7
	if !w.o.NoRetention {
		n = 9
	}
	switch w.rng.IntN(n) {
	case 8:
		if len(w.unkeyedList) == 0 {
			return
		}
		fid := pick(w, w.unkeyedList)
		w.spawn(p, func() {
			w.logf("P%d operator delete flow %v: %s", p.n, fid, errCode(e.DeleteFlow(ctx, fid)))
		})
		return
	case 7:
		op, f = "delete", func() error { return e.Delete(ctx, id) }
	case 6:
		if len(w.flowIDs) == 0 {
			return
		}
		fid := pick(w, w.flowIDs)
		policy := pick(w, []flowfabric.FlowCancelPolicy{flowfabric.CancelFlowOnly, flowfabric.CancelAll, flowfabric.CancelPending})
		op, f = "cancel flow "+policy.String(), func() error { _, err := e.CancelFlow(ctx, fid, policy, "operator"); return err }
	case 0:
		op, f = "cancel", func() error { return e.Cancel(ctx, id, "operator") }
	case 1:
		op, f = "revoke", func() error { return e.RevokeLease(ctx, id, "operator") }
	case 2:
		if w.inFlow[id] {
			// a replayed flow node may wait, by design, for upstreams
			// that will not be replayed (model.FlowStore): it would not
			// end by the drain. proptest covers replays of members.
			op, f = "cancel", func() error { return e.Cancel(ctx, id, "operator") }
			break
		}
		op, f = "replay", func() error { return e.Replay(ctx, id, &flowfabric.ReplayOpts{Reason: "again", RequestedBy: "op"}) }
	case 3:
		op, f = "reclaim", func() error { _, err := e.Reclaim(ctx, id); return err }
	case 4:
		// grant one of p's workers the execution, and let it claim it
		sw := pick(w, p.workers)
		ttl := w.dur(100*time.Millisecond, 5*time.Second)
		op, f = "grant to "+string(sw.w.Config().InstanceID), func() error {
			w.adm.grantProcs[w.sched.cur.id] = true // an explicit grant skips the budget check
			g, err := e.IssueGrant(ctx, id, sw.w, ttl)
			if err != nil {
				return err
			}
			return sw.w.ClaimGrant(ctx, g)
		}
	default:
		prio := w.rng.IntN(5)
		op, f = "priority", func() error { _, err := e.ChangePriority(ctx, id, prio); return err }
	}
	w.spawn(p, func() {
		w.logf("P%d operator %s %s: %s", p.n, op, w.alias(id), errCode(f()))
	})
}

// asModel is errors.As for *model.Error.
func asModel(err error, me **model.Error) bool { return errors.As(err, me) }
