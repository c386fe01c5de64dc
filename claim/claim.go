// Package claim is the scheduler behind every claim. There is one claim
// path and it always runs admission: a worker only ever gets an execution
// whose required capabilities it holds; an execution no live worker can
// serve is moved off the eligible index (blocked on route) instead of being
// re-examined on every poll, and the unblock scanner returns it when a
// capable worker appears.
//
// Fairness: lanes are tried in rotation per worker. For lanes spread over
// partitions, each worker keeps a cursor per lane (Cursor): a call probes
// up to Config.ProbePartitions partitions from the cursor on and moves the
// cursor past the last one probed (past the one claimed from, when it
// claims), so a worker that finds nothing reaches every partition within
// ceil(partitions / ProbePartitions) calls, and a worker that claims
// keeps moving forward. Cursors start at a per-worker offset, so
// concurrent workers start in different places. A partition known to have
// got work (a wake-up names it: Cursor.Hint) is probed first. In each
// partition a bounded batch of eligible heads is walked, so a head this
// worker cannot serve never starves the rest of the lane.
package claim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Store is the slice of model.Store the scheduler uses.
type Store interface {
	ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error)
	ExecutionClaim(ctx context.Context, p *model.ExecutionClaimParams) (*model.ClaimResult, error)
	ClaimGrantIssue(ctx context.Context, p *model.ClaimGrantIssueParams) (*model.ClaimGrantIssueResult, error)
	WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error)
	Partitions() model.PartitionConfig
}

// Defaults.
const (
	DefaultScanLimit       = 32
	DefaultProbePartitions = 32
	DefaultLiveCapsTTL     = 2 * time.Second
)

// Config configures a Scheduler. Zero values mean the defaults.
type Config struct {
	// Namespace whose executions are claimed and whose live workers'
	// capabilities decide route blocks (default "default"). A claim never
	// takes or blocks another namespace's execution.
	Namespace model.Namespace
	// ScanLimit is how many eligible heads one partition probe examines.
	ScanLimit int
	// ProbePartitions bounds the partitions probed per call for spread
	// lanes (besides the hinted ones, as many again at most).
	ProbePartitions int
	// LiveCapsTTL is how long the union of live workers' capabilities is
	// cached.
	LiveCapsTTL time.Duration
	// Spread reports whether a lane spreads its executions over all
	// partitions (nil: no lane does; each lane lives on its solo partition).
	Spread func(model.LaneID) bool
	// AdmissionGrantTTL is how long a head that needs admission is
	// granted to the worker admitting it (default
	// model.DefaultAdmissionGrantTTL).
	AdmissionGrantTTL time.Duration
}

func (c Config) withDefaults() Config {
	c.Namespace = cmp.Or(c.Namespace, model.DefaultNamespace)
	c.ScanLimit = cmp.Or(c.ScanLimit, DefaultScanLimit)
	c.ProbePartitions = cmp.Or(c.ProbePartitions, DefaultProbePartitions)
	c.LiveCapsTTL = cmp.Or(c.LiveCapsTTL, DefaultLiveCapsTTL)
	c.AdmissionGrantTTL = cmp.Or(c.AdmissionGrantTTL, model.DefaultAdmissionGrantTTL)
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Namespace.Validate(); err != nil {
		return err
	}
	switch {
	case c.ScanLimit < 1 || c.ScanLimit > model.MaxPageSize:
		return model.OutOfRange("Claim.ScanLimit", c.ScanLimit, "1.."+strconv.Itoa(model.MaxPageSize)+" (0 means the default)")
	case c.ProbePartitions < 1:
		return model.OutOfRange("Claim.ProbePartitions", c.ProbePartitions, "at least 1 (0 means the default)")
	case c.LiveCapsTTL < 0:
		return model.OutOfRange("Claim.LiveCapsTTL", c.LiveCapsTTL, "0 (the default) or more")
	case c.AdmissionGrantTTL < 0 || c.AdmissionGrantTTL > model.MaxGrantTTL:
		return model.OutOfRange("Claim.AdmissionGrantTTL", c.AdmissionGrantTTL, "0 (the default) to "+model.MaxGrantTTL.String())
	}
	return nil
}

// Scheduler picks and claims executions for workers. It is safe for
// concurrent use.
type Scheduler struct {
	store Store
	adm   AdmissionStore // nil: the store has no budgets or quotas
	clock model.Clock
	cfg   Config
	parts int

	mu        sync.Mutex
	cursors   map[model.WorkerInstanceID]*Cursor // for requests without one
	live      model.Capabilities
	liveAt    time.Time
	liveKnown bool
	refresh   sync.Mutex // one WorkerList read at a time; the others wait for it

	calls   atomic.Uint64
	jitters jitterCache
	// inline is the InlineAdmission sent with claims (nil: none yet, or a
	// store that cannot admit inline); see learnInline.
	inline   atomic.Pointer[model.InlineAdmission]
	inlineOK bool
	inlineMu sync.Mutex // serialises learnInline's copy-on-write
}

// New returns a scheduler. It panics on an invalid config (a programming
// error).
func New(store Store, clock model.Clock, cfg Config) *Scheduler {
	if err := cfg.Validate(); err != nil {
		panic("claim: " + err.Error())
	}
	s := &Scheduler{store: store, clock: clock, cfg: cfg.withDefaults(), parts: store.Partitions().WithDefaults().FlowPartitions}
	s.adm, _ = store.(AdmissionStore)
	if ia, ok := store.(model.InlineAdmitter); ok && s.adm != nil {
		s.inlineOK = ia.InlineAdmission()
	}
	return s
}

// Request asks for one execution.
type Request struct {
	// Lanes to claim from, tried in rotation.
	Lanes            []model.LaneID
	WorkerID         model.WorkerID
	WorkerInstanceID model.WorkerInstanceID
	// Capabilities must be normalised (model.ParseCapabilities).
	Capabilities model.Capabilities
	LeaseTTL     time.Duration
	// NewIDs returns fresh lease and attempt ids for one claim attempt.
	NewIDs func() (model.LeaseID, model.AttemptID)
	// Cursor is the worker's position over the partitions of its spread
	// lanes, kept across calls. Nil: the scheduler keeps one per worker
	// instance.
	Cursor *Cursor
	// Probed, when set, is asked before each probe of a spread lane's
	// partition. skip leaves the partition out of this call (the caller
	// knows it has no eligible head: the engine's probes found it empty
	// recently and no notification named it since); it counts as probed
	// for the cursor. Otherwise done (nil: none) is called after a probe
	// that did not fail, with whether the partition had no eligible head
	// at all: nothing was claimed, granted for admission, left for
	// another worker or blocked.
	Probed func(lane model.LaneID, partition int) (skip bool, done func(empty bool))
}

// Cursor is one worker's position over the partitions of its spread
// lanes, and the partitions it was told got work. The zero value is ready;
// it is safe for concurrent use.
type Cursor struct {
	mu    sync.Mutex
	next  map[model.LaneID]int
	hints map[model.LaneID][]int
}

// maxHints bounds the hinted partitions a cursor keeps per lane (the
// oldest are dropped: the regular walk reaches them anyway).
const maxHints = 64

// Hint records that partition of lane got work (a wake-up said so), so the
// next claim probes it first. A negative partition (unknown) is ignored.
func (c *Cursor) Hint(lane model.LaneID, partition int) {
	if partition < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hints == nil {
		c.hints = make(map[model.LaneID][]int)
	}
	h := c.hints[lane]
	for _, p := range h {
		if p == partition {
			return
		}
	}
	if len(h) >= maxHints {
		h = h[1:]
	}
	c.hints[lane] = append(h, partition)
}

// plan returns the partitions of a spread lane to probe, in order: up to
// probe hinted ones, then probe from the cursor (start) on, without
// repeating a hinted one. offs[k] is order[k]'s offset from start, or -1
// for a hinted partition.
func (c *Cursor) plan(lane model.LaneID, parts, probe int, first func() int) (order, offs []int, start int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(map[model.LaneID]int)
	}
	start, ok := c.next[lane]
	if !ok {
		start = first() % parts
	}
	h := c.hints[lane]
	n := min(len(h), probe)
	order = make([]int, 0, n+probe)
	offs = make([]int, 0, n+probe)
	for _, p := range h[:n] {
		if p < parts {
			order = append(order, p)
			offs = append(offs, -1)
		}
	}
	if n == len(h) {
		delete(c.hints, lane)
	} else {
		c.hints[lane] = h[n:]
	}
	hinted := len(order)
	for i := range probe {
		p := (start + i) % parts
		if !slices.Contains(order[:hinted], p) {
			order = append(order, p)
			offs = append(offs, i)
		}
	}
	return order, offs, start
}

// advance moves lane's cursor to partition next.
func (c *Cursor) advance(lane model.LaneID, next int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next[lane] = next
}

// Outcome reports what a claim call did besides claiming.
type Outcome struct {
	// Claimed is nil when no execution could be claimed.
	Claimed *model.ClaimResult
	// Blocked lists executions moved to blocked:route because no live
	// worker can serve them.
	Blocked []model.ExecutionID
	// AdmissionBlocked lists executions blocked on a budget or a quota.
	AdmissionBlocked []AdmissionBlock
	// Probed counts the partition probes made.
	Probed int
	// Skipped counts heads left for another worker: ones this worker
	// cannot serve but a live worker can, or ones granted to another.
	Skipped int
	// Partial reports that the probes did not cover every partition of
	// the lanes (a spread lane probes a window), so there may be work this
	// call did not see. A paused lane never makes a call partial.
	Partial bool
	// Paused lists the request's lanes found paused (model.LaneStore):
	// the first probe of a paused lane ends its walk, so its other
	// partitions are not probed and a spread lane's cursor stays.
	Paused []model.LaneID
}

// LeftWork reports whether another worker might claim what this call did
// not: it skipped heads, or did not look everywhere. A call that claimed
// nothing and left no work saw empty lanes.
func (o *Outcome) LeftWork() bool { return o.Skipped > 0 || o.Partial }

// Claim claims the best execution the worker can serve from the request's
// lanes, or returns an Outcome with Claimed nil. The caller must already
// hold a concurrency permit: the claim is made at once.
func (s *Scheduler) Claim(ctx context.Context, req *Request) (*Outcome, error) {
	if len(req.Lanes) == 0 {
		return nil, model.InvalidField("Lanes", "empty")
	}
	live, err := s.LiveCapabilities(ctx)
	if err != nil {
		return nil, err
	}
	out := &Outcome{}
	call := s.calls.Add(1)
	n := len(req.Lanes)
	adm := &admission{}
	for i := range n {
		lane := req.Lanes[(int(call)+i)%n]
		parts, all, moved := s.partitionsFor(lane, req)
		paused := false
		for k, part := range parts {
			var probed func(bool)
			if moved != nil && req.Probed != nil {
				var skip bool
				if skip, probed = req.Probed(lane, part); skip {
					continue
				}
			}
			claimed, empty, err := s.probe(ctx, req, lane, part, live, adm, out)
			if probed != nil && err == nil {
				probed(empty)
			}
			if errors.Is(err, errLanePaused) {
				out.Paused = append(out.Paused, lane)
				paused = true
				break
			}
			if err != nil {
				return out, err
			}
			if claimed != nil {
				if moved != nil {
					moved(k, true)
				}
				out.Claimed = claimed
				out.Partial = out.Partial || !all
				return out, nil
			}
		}
		if paused {
			if moved != nil {
				moved(-1, false) // keeps the hints and the cursor
			}
			continue
		}
		out.Partial = out.Partial || !all
		if moved != nil {
			moved(len(parts)-1, false)
		}
	}
	return out, nil
}

// errLanePaused is probe's answer on a paused lane.
var errLanePaused = errors.New("lane paused")

// maxAdmissionsPerProbe bounds how many heads needing admission one
// partition probe admits or blocks before it moves on.
const maxAdmissionsPerProbe = 8

// probe claims from one partition. A head that needs admission is
// admitted (or blocked) and, when it was blocked, the partition is probed
// again, up to maxAdmissionsPerProbe times. On a paused lane it returns
// errLanePaused. empty reports that the partition had no eligible head at
// all: the first look claimed, granted, skipped and blocked nothing.
func (s *Scheduler) probe(ctx context.Context, req *Request, lane model.LaneID, part int, live model.Capabilities,
	adm *admission, out *Outcome) (_ *model.ClaimResult, empty bool, _ error) {
	for tries := 0; ; tries++ {
		leaseID, attemptID := req.NewIDs()
		res, err := s.store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{
			Partition:         part,
			Lane:              lane,
			Namespace:         s.cfg.Namespace,
			Capabilities:      req.Capabilities,
			LiveCapabilities:  live,
			ScanLimit:         s.cfg.ScanLimit,
			AdmissionGrantTTL: s.cfg.AdmissionGrantTTL,
			Inline:            s.inline.Load(),
			LeaseRequest: model.LeaseRequest{
				WorkerID: req.WorkerID, WorkerInstanceID: req.WorkerInstanceID,
				LeaseID: leaseID, AttemptID: attemptID, LeaseTTL: req.LeaseTTL,
			},
			Now: s.clock.Now(),
		})
		out.Probed++
		if err != nil {
			return nil, false, fmt.Errorf("claim: lane %s partition %d: %w", lane, part, err)
		}
		if res.Paused {
			return nil, false, errLanePaused
		}
		out.Blocked = append(out.Blocked, res.Blocked...)
		out.Skipped += res.Skipped
		if res.Claimed != nil || res.Admit == nil {
			return res.Claimed, tries == 0 && res.Empty(), nil
		}
		if tries >= maxAdmissionsPerProbe {
			out.Skipped++ // granted to this worker; the grant lapses
			return nil, false, nil
		}
		blocked := len(out.AdmissionBlocked)
		claimed, err := s.admit(ctx, req, res.Admit, adm, out)
		if err != nil || claimed != nil {
			return claimed, false, err
		}
		if len(out.AdmissionBlocked) == blocked {
			return nil, false, nil // lost to a race: leave the partition for now
		}
	}
}

// partitionsFor returns the partitions to probe for lane, in order, and
// whether they are every partition the lane's work can be in. For a spread
// lane, moved(k, claimed) must be called with the index of the last
// partition probed: it moves the worker's cursor past it, and when that
// probe claimed, hints the partition so the next claim probes it first:
// work often arrives in batches on one partition (the members a flow
// releases together), and the wake-ups of a batch reach a worker only
// while it is idle.
func (s *Scheduler) partitionsFor(lane model.LaneID, req *Request) (parts []int, all bool, moved func(int, bool)) {
	cfg := s.store.Partitions()
	if s.cfg.Spread == nil || !s.cfg.Spread(lane) {
		return []int{cfg.SoloPartition(lane)}, true, nil
	}
	cur := req.Cursor
	if cur == nil {
		cur = s.cursorOf(req.WorkerInstanceID)
	}
	probe := min(s.cfg.ProbePartitions, s.parts)
	order, offs, start := cur.plan(lane, s.parts, probe, func() int {
		h := fnv.New32a()
		_, _ = h.Write([]byte(req.WorkerInstanceID))
		return int(h.Sum32() % uint32(s.parts))
	})
	return order, probe == s.parts, func(k int, claimed bool) {
		// hinted partitions planned but not probed (the call claimed
		// before reaching them) are hinted again: each was told it got
		// work, and nothing else may bring the worker back to it soon
		for j := k + 1; j < len(order); j++ {
			if offs[j] < 0 {
				cur.Hint(lane, order[j])
			}
		}
		if claimed {
			// the partition that had work is probed first next time (it
			// goes to the back of the hints, so several hinted
			// partitions take turns); a call that claims nothing still
			// moves the window on, so idle polls cover the lane
			cur.Hint(lane, order[k])
		}
		// Past the last partition of the window probed; a call that ended
		// among the hints leaves the cursor where it was.
		for ; k >= 0; k-- {
			if offs[k] >= 0 {
				cur.advance(lane, (start+offs[k]+1)%s.parts)
				return
			}
		}
	}
}

// cursorOf returns the scheduler's cursor for a worker instance that does
// not bring its own.
func (s *Scheduler) cursorOf(instance model.WorkerInstanceID) *Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cursors == nil {
		s.cursors = make(map[model.WorkerInstanceID]*Cursor)
	}
	c := s.cursors[instance]
	if c == nil {
		c = &Cursor{}
		s.cursors[instance] = c
	}
	return c
}

// LiveCapabilities returns the union of the live workers' capabilities,
// cached for Config.LiveCapsTTL. Concurrent callers share one refresh; a
// failed refresh keeps the previous union.
func (s *Scheduler) LiveCapabilities(ctx context.Context) (model.Capabilities, error) {
	if live, ok := s.cachedLive(); ok {
		return live, nil
	}
	s.refresh.Lock()
	defer s.refresh.Unlock()
	if live, ok := s.cachedLive(); ok {
		return live, nil // refreshed while this caller waited
	}
	now := s.clock.Now()
	res, err := s.store.WorkerList(ctx, &model.WorkerListParams{Namespace: s.cfg.Namespace, Now: now})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.liveKnown {
			return s.live, nil
		}
		return nil, fmt.Errorf("claim: reading live workers: %w", err)
	}
	s.live, s.liveAt, s.liveKnown = res.LiveCapabilities(), now, true
	return s.live, nil
}

func (s *Scheduler) cachedLive() (model.Capabilities, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveKnown && s.clock.Now().Sub(s.liveAt) < s.cfg.LiveCapsTTL {
		return s.live, true
	}
	return nil, false
}

// ScanLimit is how many eligible heads one partition probe examines.
func (s *Scheduler) ScanLimit() int { return s.cfg.ScanLimit }

// Namespace is the namespace whose executions the scheduler claims and
// whose live workers' capabilities decide route blocks.
func (s *Scheduler) Namespace() model.Namespace { return s.cfg.Namespace }

// Invalidate drops the cached live capabilities, so the next claim reads
// them again (a worker started or stopped in this process).
func (s *Scheduler) Invalidate() {
	s.mu.Lock()
	s.liveKnown = false
	s.mu.Unlock()
}

// Grant is a claim grant issued for one worker.
type Grant struct {
	ID               model.ExecutionID
	WorkerID         model.WorkerID
	WorkerInstanceID model.WorkerInstanceID
	ExpiresAt        time.Time
}

// IssueGrant grants a worker instance the right to claim execution id
// within ttl. Admission is checked now (caps must cover the execution's
// required capabilities) and again at the claim: the store refuses the
// grant to any other worker instance (invalid_claim_grant) and to a
// claimer whose capabilities no longer cover the requirement
// (capability_mismatch).
func (s *Scheduler) IssueGrant(ctx context.Context, id model.ExecutionID, worker model.WorkerID,
	instance model.WorkerInstanceID, caps model.Capabilities, ttl time.Duration) (*Grant, error) {
	res, err := s.store.ClaimGrantIssue(ctx, &model.ClaimGrantIssueParams{
		ID: id, WorkerID: worker, WorkerInstanceID: instance, Capabilities: caps,
		GrantTTL: ttl, Now: s.clock.Now(),
	})
	if err != nil {
		return nil, fmt.Errorf("claim: grant: %w", err)
	}
	return &Grant{ID: id, WorkerID: worker, WorkerInstanceID: instance, ExpiresAt: res.ExpiresAt}, nil
}

// ClaimGrant consumes a grant for the claiming worker: lease names the
// claimer (its worker and instance ids, the new lease and attempt ids and
// the lease TTL) and caps are the claimer's capabilities. The store
// refuses a grant issued to another worker instance and a claimer whose
// capabilities do not cover the execution's requirement. The caller must
// already hold a concurrency permit, so a worker at capacity never
// consumes (and wastes) a grant.
func (s *Scheduler) ClaimGrant(ctx context.Context, g *Grant, lease model.LeaseRequest, caps model.Capabilities) (*model.ClaimResult, error) {
	if g == nil {
		return nil, model.InvalidField("Grant", "nil")
	}
	res, err := s.store.ExecutionClaim(ctx, &model.ExecutionClaimParams{
		ID: g.ID, Capabilities: caps, LeaseRequest: lease, Now: s.clock.Now(),
	})
	if errors.Is(err, model.ErrAdmissionRequired) && s.adm != nil {
		// the execution has a quota: an explicit grant skips the budget
		// check (an operator's decision) but not the quota
		res, err = s.claimGrantAdmitted(ctx, g, lease, caps)
	}
	if err != nil {
		return nil, fmt.Errorf("claim: from grant: %w", err)
	}
	return res, nil
}

// ErrQuotaRefused is returned by ClaimGrant when the execution's quota
// refuses it (its rate or concurrency is full); the grant stays usable
// until it expires.
var ErrQuotaRefused = errors.New("claim: the execution's quota refused admission")

// describeStore is what claimGrantAdmitted reads the attachments with.
type describeStore interface {
	ExecutionDescribe(ctx context.Context, p *model.ExecutionDescribeParams) (*model.ExecutionSnapshot, error)
}

func (s *Scheduler) claimGrantAdmitted(ctx context.Context, g *Grant, lease model.LeaseRequest, caps model.Capabilities) (*model.ClaimResult, error) {
	ds, ok := s.store.(describeStore)
	if !ok {
		return nil, model.ErrAdmissionRequired
	}
	snap, err := ds.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: g.ID})
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	token := lease.LeaseID.String()
	r, err := s.adm.QuotaAdmit(ctx, &model.QuotaAdmitParams{
		ID: snap.Quota, Key: snap.QuotaKey, Execution: g.ID, Token: token, Now: now,
	})
	if err != nil {
		return nil, err
	}
	if r.Outcome != model.QuotaAdmitted && r.Outcome != model.QuotaAlreadyAdmitted {
		return nil, fmt.Errorf("%w: %s", ErrQuotaRefused, r.Outcome)
	}
	res, err := s.store.ExecutionClaim(ctx, &model.ExecutionClaimParams{
		ID: g.ID, Capabilities: caps, AdmissionToken: token, LeaseRequest: lease, Now: s.clock.Now(),
	})
	if err != nil {
		s.undoAdmission(ctx, &model.AdmissionCandidate{ID: g.ID, Quota: snap.Quota, QuotaKey: snap.QuotaKey}, token, r.Outcome)
	}
	return res, err
}
