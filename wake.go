package flowfabric

import (
	"slices"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// wakeHub wakes idle workers when their lanes get work. The engine watches
// each lane once (model.WorkNotifier); a notification wakes one idle worker
// of the lane, not all of them. A woken worker that claims nothing but left
// work another worker might take (claim.Outcome.LeftWork) passes the wake
// on to the next idle worker (at most once per worker idle at the time), so
// a job some idle worker can serve is never left waiting for the poll
// interval. One that found its lanes empty does not: the job was taken.
// A notification names the partition that got work (when the store knows
// it); the woken worker probes that partition first, so work on any
// partition of a spread lane is found at once.
type wakeHub struct {
	mu    sync.Mutex
	lanes map[model.LaneID]*laneWake
}

type laneWake struct {
	members int
	idle    []*Worker // FIFO
	stop    func()
	seq     uint64 // notifications so far
	// pending are partitions that got work while every worker of the lane
	// was busy; the next claim of one of them probes these first (on a
	// spread lane the work may be on a partition its cursor is far from).
	pending []int
	// What the engine knows of a spread lane's partitions (nil until a
	// probe reports one, and for solo lanes): a partition is known empty
	// when a probe of it found no eligible head and no notification for
	// it (nor one for the whole lane) came since the probe began. gen
	// counts notifications for the whole lane, pseq those naming each
	// partition, emptyAt is when each was last found empty (zero:
	// unknown; reset by a notification). A worker's claim skips the
	// partitions known empty (probeHook), so a look over a quiet spread
	// lane costs no probe.
	gen     uint64
	pseq    []uint64
	emptyAt []time.Time
}

// partSnap is a spread-lane partition's notification state before a
// probe; emptyProbed records the probe's emptiness only if it is still
// the same afterwards.
type partSnap struct {
	gen, seq uint64
	ok       bool
}

// maxPending bounds a lane's pending partitions (the oldest go: the
// cursor's walk reaches them anyway).
const maxPending = 256

// wakeNote is what a dispatched wake tells its worker.
type wakeNote struct {
	lane      model.LaneID
	partition int // that got work; -1 unknown
	hops      int // how many more idle workers may be tried after this one
}

// join registers w on its lanes, watching each lane the first time.
func (e *Engine) join(w *Worker) {
	n, ok := e.store.(model.WorkNotifier)
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	if e.wakes.lanes == nil {
		e.wakes.lanes = make(map[model.LaneID]*laneWake)
	}
	for _, l := range w.cfg.Lanes {
		lw := e.wakes.lanes[l]
		if lw == nil {
			lw = &laneWake{}
			e.wakes.lanes[l] = lw
			if ok {
				lane := l
				lw.stop = n.WatchWork(lane, func(partition int) { e.workArrived(lane, partition, -1) })
			}
		}
		lw.members++
	}
}

// leave unregisters w, dropping a lane's watch with its last worker.
func (e *Engine) leave(w *Worker) {
	var stops []func()
	e.wakes.mu.Lock()
	for _, l := range w.cfg.Lanes {
		lw := e.wakes.lanes[l]
		if lw == nil {
			continue
		}
		lw.idle = slices.DeleteFunc(lw.idle, func(x *Worker) bool { return x == w })
		if lw.members--; lw.members == 0 {
			if lw.stop != nil {
				stops = append(stops, lw.stop)
			}
			delete(e.wakes.lanes, l)
		}
	}
	e.wakes.mu.Unlock()
	for _, stop := range stops {
		stop() // outside the lock: a watch may be delivering to workArrived
	}
}

// idle marks w as waiting for work on its lanes.
func (e *Engine) idle(w *Worker) {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	for _, l := range w.cfg.Lanes {
		if lw := e.wakes.lanes[l]; lw != nil && !slices.Contains(lw.idle, w) {
			lw.idle = append(lw.idle, w)
		}
	}
}

// busy marks w as no longer waiting and returns the wake it was given, if
// any.
func (e *Engine) busy(w *Worker) (wakeNote, bool) {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	for _, l := range w.cfg.Lanes {
		if lw := e.wakes.lanes[l]; lw != nil {
			lw.idle = slices.DeleteFunc(lw.idle, func(x *Worker) bool { return x == w })
		}
	}
	note, ok := w.note, w.noted
	w.note, w.noted = wakeNote{}, false
	return note, ok
}

// workArrived wakes the first idle worker of lane for work on partition
// (-1: unknown). hops < 0 starts a new chain that may try every worker idle
// now. model.PartitionAll (the lane was resumed: all its work became
// claimable at once) wakes every idle worker of the lane.
func (e *Engine) workArrived(lane model.LaneID, partition, hops int) {
	e.wakes.mu.Lock()
	lw := e.wakes.lanes[lane]
	if lw != nil && hops < 0 {
		lw.seq++
		lw.forget(partition)
	}
	if lw != nil && partition == model.PartitionAll {
		woken := lw.idle
		lw.idle = nil
		for _, w := range woken {
			for _, l := range w.cfg.Lanes {
				if x := e.wakes.lanes[l]; x != nil && l != lane {
					x.idle = slices.DeleteFunc(x.idle, func(y *Worker) bool { return y == w })
				}
			}
			w.note, w.noted = wakeNote{lane: lane, partition: -1}, true
		}
		e.wakes.mu.Unlock()
		for _, w := range woken {
			w.wake.Notify()
		}
		return
	}
	if lw == nil || len(lw.idle) == 0 {
		if lw != nil && partition >= 0 && !slices.Contains(lw.pending, partition) {
			// every worker of the lane is busy: each looks again when it
			// frees up, first where this work is
			if len(lw.pending) >= maxPending {
				lw.pending = lw.pending[1:]
			}
			lw.pending = append(lw.pending, partition)
		}
		e.wakes.mu.Unlock()
		return
	}
	if hops < 0 {
		hops = len(lw.idle) - 1
	}
	w := lw.idle[0]
	for _, l := range w.cfg.Lanes {
		if x := e.wakes.lanes[l]; x != nil {
			x.idle = slices.DeleteFunc(x.idle, func(y *Worker) bool { return y == w })
		}
	}
	w.note, w.noted = wakeNote{lane: lane, partition: partition, hops: hops}, true
	e.wakes.mu.Unlock()
	w.wake.Notify()
}

// takePending hands w's cursor the partitions of its lanes that got work
// while every worker was busy.
func (e *Engine) takePending(w *Worker) {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	for _, l := range w.cfg.Lanes {
		if lw := e.wakes.lanes[l]; lw != nil && len(lw.pending) > 0 {
			for _, p := range lw.pending {
				w.cursor.Hint(l, p)
			}
			lw.pending = lw.pending[:0]
		}
	}
}

// laneSeq is the number of notifications lane has had.
func (e *Engine) laneSeq(lane model.LaneID) uint64 {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	if lw := e.wakes.lanes[lane]; lw != nil {
		return lw.seq
	}
	return 0
}

// idleIfQuiet marks w idle on lane when no notification came since seq,
// and reports whether it did. Otherwise the caller must look for work
// itself: the notification may have been for it.
func (e *Engine) idleIfQuiet(w *Worker, lane model.LaneID, seq uint64) bool {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	lw := e.wakes.lanes[lane]
	if lw == nil || lw.seq != seq {
		return false
	}
	if !slices.Contains(lw.idle, w) {
		lw.idle = append(lw.idle, w)
	}
	return true
}

// forget drops what is known of partition (all of them for -1 or
// model.PartitionAll): it got work.
func (lw *laneWake) forget(partition int) {
	if lw.emptyAt == nil {
		return
	}
	if partition < 0 || partition >= len(lw.emptyAt) {
		lw.gen++
		clear(lw.emptyAt)
		return
	}
	lw.pseq[partition]++
	lw.emptyAt[partition] = time.Time{}
}

// probeSnap returns lane's notification state for partition before a
// probe of it (ok false: the lane is not watched, or not by a notifying
// store, so nothing is learned), and whether the partition is known empty:
// found empty less than maxAge ago (0: never trusted), with no notification
// for it since.
func (e *Engine) probeSnap(lane model.LaneID, partition int, maxAge time.Duration) (snap partSnap, known bool) {
	now := e.clock.Now()
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	lw := e.wakes.lanes[lane]
	n := e.parts.WithDefaults().FlowPartitions
	if lw == nil || lw.stop == nil || partition < 0 || partition >= n {
		return partSnap{}, false
	}
	if lw.emptyAt == nil {
		lw.pseq = make([]uint64, n)
		lw.emptyAt = make([]time.Time, n)
	}
	at := lw.emptyAt[partition]
	known = !at.IsZero() && now.Sub(at) < maxAge
	return partSnap{gen: lw.gen, seq: lw.pseq[partition], ok: true}, known
}

// probeHook is claim.Request.Probed for a worker that trusts what is
// known for maxAge (its poll interval): a partition found empty within
// maxAge, with no notification for it since, is skipped; a probe that
// finds one empty is remembered (emptyProbed).
func (e *Engine) probeHook(lane model.LaneID, partition int, maxAge time.Duration) (bool, func(empty bool)) {
	snap, known := e.probeSnap(lane, partition, maxAge)
	if known {
		return true, nil
	}
	if !snap.ok {
		return false, nil
	}
	return false, func(empty bool) {
		if empty {
			e.emptyProbed(lane, partition, snap)
		}
	}
}

// emptyProbed records that a probe of lane's partition, begun at snap,
// found no eligible head, unless a notification for it came meanwhile.
func (e *Engine) emptyProbed(lane model.LaneID, partition int, snap partSnap) {
	if !snap.ok {
		return
	}
	now := e.clock.Now()
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	lw := e.wakes.lanes[lane]
	if lw == nil || lw.emptyAt == nil || lw.gen != snap.gen || lw.pseq[partition] != snap.seq {
		return
	}
	lw.emptyAt[partition] = now
}
