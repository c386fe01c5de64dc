package claim_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/claim"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
)

var base = time.UnixMilli(1_700_000_000_000)

type fixture struct {
	t     *testing.T
	ctx   context.Context
	clock *model.SimClock
	store *memstore.Store
	seq   atomic.Uint64
}

func newFixture(t *testing.T, parts int) *fixture {
	return &fixture{t: t, ctx: context.Background(), clock: model.NewSimClock(base),
		store: memstore.New(&memstore.Options{Partitions: model.PartitionConfig{FlowPartitions: parts}})}
}

func (f *fixture) uuid() model.UUID {
	n := f.seq.Add(1)
	var b [16]byte
	for i := range 8 {
		b[15-i] = byte(n >> (8 * i))
	}
	return model.NewUUIDv4(b)
}

func (f *fixture) ids() (model.LeaseID, model.AttemptID) {
	return model.LeaseID(f.uuid()), model.AttemptID(f.uuid())
}

func (f *fixture) create(part int, lane model.LaneID, prio int, req ...string) model.ExecutionID {
	f.t.Helper()
	caps, _ := model.ParseCapabilities("RequiredCapabilities", req)
	id := model.NewExecutionID(part, f.uuid())
	if _, err := f.store.ExecutionCreate(f.ctx, &model.ExecutionCreateParams{ID: id, Namespace: "default",
		Lane: lane, Kind: "k", Priority: prio, RequiredCapabilities: caps, Now: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
	f.clock.Advance(time.Millisecond)
	return id
}

func (f *fixture) register(instance string, caps ...string) {
	f.t.Helper()
	c, _ := model.ParseCapabilities("Capabilities", caps)
	if _, err := f.store.WorkerRegister(f.ctx, &model.WorkerRegisterParams{Namespace: "default", WorkerID: "w",
		WorkerInstanceID: model.WorkerInstanceID(instance), SessionID: "s", Lanes: []model.LaneID{"l"},
		Capabilities: c, TTL: time.Hour, Now: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) request(instance string, caps ...string) *claim.Request {
	c, _ := model.ParseCapabilities("Capabilities", caps)
	return &claim.Request{Lanes: []model.LaneID{"l"}, WorkerID: "w",
		WorkerInstanceID: model.WorkerInstanceID(instance), Capabilities: c, LeaseTTL: time.Minute, NewIDs: f.ids}
}

// A head this worker cannot serve (but another live worker can) is left
// for that worker and does not starve the rest of the lane; a head no live
// worker can serve is blocked off the eligible index.
func TestClaimWalksPastUnservableHeads(t *testing.T) {
	f := newFixture(t, 4)
	part := f.store.Partitions().SoloPartition("l")
	gpu := f.create(part, "l", 100, "gpu")
	alien := f.create(part, "l", 90, "alien")
	plain := f.create(part, "l", 0)
	f.register("cpu-1")
	f.register("gpu-1", "gpu")
	s := claim.New(f.store, f.clock, claim.Config{})
	out, err := s.Claim(f.ctx, f.request("cpu-1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Claimed == nil || out.Claimed.ID != plain {
		t.Fatalf("claimed %+v, want the plain execution behind the gpu head", out.Claimed)
	}
	if len(out.Blocked) != 1 || out.Blocked[0] != alien {
		t.Fatalf("blocked %v, want only the execution no live worker serves", out.Blocked)
	}
	out, _ = s.Claim(f.ctx, f.request("gpu-1", "gpu"))
	if out.Claimed == nil || out.Claimed.ID != gpu {
		t.Fatalf("gpu worker claimed %+v", out.Claimed)
	}
}

// An Outcome that claimed nothing says whether another worker might claim
// what it did not: a head left for a more capable worker, or a spread lane
// whose probe window did not cover every partition. Empty lanes leave
// nothing, and a worker woken for them does not pass the wake on.
func TestClaimOutcomeLeftWork(t *testing.T) {
	f := newFixture(t, 4)
	part := f.store.Partitions().SoloPartition("l")
	f.register("cpu-1")
	f.register("gpu-1", "gpu")
	s := claim.New(f.store, f.clock, claim.Config{})
	out, err := s.Claim(f.ctx, f.request("cpu-1"))
	if err != nil || out.Claimed != nil || out.Skipped != 0 || out.Partial || out.LeftWork() {
		t.Fatalf("empty solo lane: %+v, %v", out, err)
	}
	f.create(part, "l", 0, "gpu")
	out, err = s.Claim(f.ctx, f.request("cpu-1"))
	if err != nil || out.Claimed != nil || out.Skipped != 1 || out.Partial || !out.LeftWork() {
		t.Fatalf("head for the gpu worker: %+v, %v", out, err)
	}

	spread := func(probe int) *claim.Outcome {
		s := claim.New(f.store, f.clock, claim.Config{ProbePartitions: probe,
			Spread: func(l model.LaneID) bool { return l == "spread" }})
		r := f.request("cpu-1")
		r.Lanes = []model.LaneID{"spread"}
		out, err := s.Claim(f.ctx, r)
		if err != nil || out.Claimed != nil || out.Skipped != 0 {
			t.Fatalf("empty spread lane, probe %d: %+v, %v", probe, out, err)
		}
		return out
	}
	if out := spread(2); !out.Partial || !out.LeftWork() || out.Probed != 2 {
		t.Fatalf("probe window of 2 of 4 partitions: %+v", out)
	}
	if out := spread(4); out.Partial || out.LeftWork() || out.Probed != 4 {
		t.Fatalf("probe of every partition: %+v", out)
	}
}

// A paused lane ends its walk at the first probe: it is reported in
// Paused, leaves no work for another worker (not Partial, even when
// spread), and the next lane of the request is still tried.
func TestClaimPausedLane(t *testing.T) {
	f := newFixture(t, 4)
	f.register("cpu-1")
	for p := range 4 {
		f.create(p, "spread", 0)
	}
	other := f.create(f.store.Partitions().SoloPartition("l"), "l", 0)
	if _, err := f.store.LanePause(f.ctx, &model.LanePauseParams{Lane: "spread", Now: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	s := claim.New(f.store, f.clock, claim.Config{ProbePartitions: 2,
		Spread: func(l model.LaneID) bool { return l == "spread" }})
	r := f.request("cpu-1")
	r.Lanes = []model.LaneID{"spread"}
	out, err := s.Claim(f.ctx, r)
	if err != nil || out.Claimed != nil || out.Probed != 1 || out.Partial || out.LeftWork() ||
		len(out.Paused) != 1 || out.Paused[0] != "spread" {
		t.Fatalf("paused spread lane: %+v, %v", out, err)
	}
	r.Lanes = []model.LaneID{"spread", "l"}
	out, err = s.Claim(f.ctx, r)
	if err != nil || out.Claimed == nil || out.Claimed.ID != other {
		t.Fatalf("a paused lane and a running one: %+v, %v", out, err)
	}
}

// On a spread lane a worker's cursor reaches every partition within
// ceil(partitions / probe) calls that find nothing, whatever the clock
// does; claims move it forward; workers start at different offsets; and a
// hinted partition is probed first (issue 18, defect 9: a window that
// moved with time revisited the same two blocks of partitions forever).
func TestClaimCursorCoversSpreadLane(t *testing.T) {
	const parts, probe = 16, 4
	f := newFixture(t, parts)
	s := claim.New(f.store, f.clock, claim.Config{ProbePartitions: probe,
		Spread: func(model.LaneID) bool { return true }})
	for _, far := range []int{0, 5, 15} {
		id := f.create(far, "l", 0)
		cur := &claim.Cursor{}
		claimed := false
		for call := 0; call < parts/probe; call++ {
			r := f.request("w-1")
			r.Cursor = cur
			out, err := s.Claim(f.ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if out.Claimed == nil && out.Probed != probe {
				t.Fatalf("call %d probed %d partitions", call, out.Probed)
			}
			if out.Claimed != nil {
				if out.Claimed.ID != id {
					t.Fatalf("claimed %v, want %v", out.Claimed.ID, id)
				}
				claimed = true
				break
			}
			f.clock.Advance(5 * time.Second) // an idle poll; the old window moved with time
		}
		if !claimed {
			t.Fatalf("work in partition %d not reached within %d calls", far, parts/probe)
		}
	}

	// A backlog in every partition: successive claims move forward, so one
	// worker takes from every partition in turn.
	for p := range parts {
		f.create(p, "l", 0)
	}
	cur := &claim.Cursor{}
	seen := map[int]bool{}
	for range parts {
		r := f.request("w-1")
		r.Cursor = cur
		out, err := s.Claim(f.ctx, r)
		if err != nil || out.Claimed == nil {
			t.Fatal(out, err)
		}
		seen[out.Claimed.ID.Partition()] = true
	}
	if len(seen) != parts {
		t.Fatalf("%d claims took from %d distinct partitions", parts, len(seen))
	}

	// Two workers (without their own cursors) start at different partitions.
	for p := range parts {
		f.create(p, "l", 0)
	}
	a, _ := s.Claim(f.ctx, f.request("worker-a"))
	b, _ := s.Claim(f.ctx, f.request("worker-zzz"))
	if a.Claimed.ID.Partition() == b.Claimed.ID.Partition() {
		t.Fatalf("both workers started at partition %d", a.Claimed.ID.Partition())
	}

	// A hinted partition is probed first.
	for range parts * 2 { // drain
		if out, _ := s.Claim(f.ctx, f.request("w-2")); out.Claimed == nil && !out.Partial {
			break
		}
	}
	cur = &claim.Cursor{}
	r := f.request("w-3")
	r.Cursor = cur
	if _, err := s.Claim(f.ctx, r); err != nil { // places the cursor
		t.Fatal(err)
	}
	far := f.create(9, "l", 0)
	cur.Hint("l", 9)
	r = f.request("w-3")
	r.Cursor = cur
	out, err := s.Claim(f.ctx, r)
	if err != nil || out.Claimed == nil || out.Claimed.ID != far || out.Probed != 1 {
		t.Fatalf("hinted partition: %+v, %v", out, err)
	}
}

type failingList struct {
	*memstore.Store
	fail atomic.Bool
}

func (s *failingList) WorkerList(ctx context.Context, p *model.WorkerListParams) (*model.WorkerListResult, error) {
	if s.fail.Load() {
		return nil, errors.New("injected")
	}
	return s.Store.WorkerList(ctx, p)
}

// The live-capability union is cached; a failed refresh keeps the last one,
// and with none at all the claim reports the error.
func TestClaimLiveCapabilitiesCache(t *testing.T) {
	f := newFixture(t, 2)
	st := &failingList{Store: f.store}
	s := claim.New(st, f.clock, claim.Config{LiveCapsTTL: time.Second})
	st.fail.Store(true)
	if _, err := s.Claim(f.ctx, f.request("w")); err == nil {
		t.Fatal("claim without any live-capability reading succeeded")
	}
	st.fail.Store(false)
	if _, err := s.Claim(f.ctx, f.request("w")); err != nil {
		t.Fatal(err)
	}
	st.fail.Store(true)
	f.clock.Advance(2 * time.Second)
	if _, err := s.Claim(f.ctx, f.request("w")); err != nil {
		t.Fatalf("stale cache not used: %v", err)
	}
}

// A grant is checked for capabilities when issued and consumed by its
// worker.
func TestGrantPath(t *testing.T) {
	f := newFixture(t, 2)
	part := f.store.Partitions().SoloPartition("l")
	id := f.create(part, "l", 0, "gpu")
	s := claim.New(f.store, f.clock, claim.Config{})
	if _, err := s.IssueGrant(f.ctx, id, "w", "w-1", nil, time.Second); !errors.Is(err, model.ErrCapabilityMismatch) {
		t.Fatalf("grant to an incapable worker: %v", err)
	}
	g, err := s.IssueGrant(f.ctx, id, "w", "w-1", model.Capabilities{"gpu"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lease := func(w model.WorkerID, wi model.WorkerInstanceID) model.LeaseRequest {
		l, a := f.ids()
		return model.LeaseRequest{WorkerID: w, WorkerInstanceID: wi, LeaseID: l, AttemptID: a, LeaseTTL: time.Minute}
	}
	// Another worker instance cannot consume the grant, even with the
	// capabilities; nor can its own instance once it lacks them.
	if _, err := s.ClaimGrant(f.ctx, g, lease("w2", "w2-1"), model.Capabilities{"gpu"}); !errors.Is(err, model.ErrInvalidClaimGrant) {
		t.Fatalf("grant consumed by another worker: %v", err)
	}
	if _, err := s.ClaimGrant(f.ctx, g, lease("w", "w-2"), model.Capabilities{"gpu"}); !errors.Is(err, model.ErrInvalidClaimGrant) {
		t.Fatalf("grant consumed by another instance of the worker: %v", err)
	}
	if _, err := s.ClaimGrant(f.ctx, g, lease("w", "w-1"), nil); !errors.Is(err, model.ErrCapabilityMismatch) {
		t.Fatalf("grant consumed without the capability: %v", err)
	}
	if _, err := s.ClaimGrant(f.ctx, nil, lease("w", "w-1"), nil); !errors.Is(err, model.ErrInvalidInput) {
		t.Fatalf("nil grant: %v", err)
	}
	r, err := s.ClaimGrant(f.ctx, g, lease("w", "w-1"), model.Capabilities{"gpu"})
	if err != nil || r.ID != id || r.Lease.WorkerInstanceID != "w-1" {
		t.Fatalf("claim grant: %+v %v", r, err)
	}
}

// TestClaimKeepsUnprobedHints (a regression the flow bench found): a
// claim plans its hinted partitions first and stops at the first that
// has work; the hinted partitions it did not reach stay hinted, and the
// partition it claimed from is hinted again behind them. Before, the
// unreached hints were dropped, and work released on those partitions
// waited for the cursor's walk (seconds of idle polls).
func TestClaimKeepsUnprobedHints(t *testing.T) {
	const parts, probe = 16, 4
	f := newFixture(t, parts)
	s := claim.New(f.store, f.clock, claim.Config{ProbePartitions: probe,
		Spread: func(model.LaneID) bool { return true }})
	a := f.create(3, "l", 0)
	b := f.create(11, "l", 0)
	c := f.create(11, "l", 0)
	cur := &claim.Cursor{}
	cur.Hint("l", 3)
	cur.Hint("l", 11)
	claimNext := func() *claim.Outcome {
		t.Helper()
		r := f.request("w-1")
		r.Cursor = cur
		out, err := s.Claim(f.ctx, r)
		if err != nil || out.Claimed == nil {
			t.Fatal(out, err)
		}
		return out
	}
	if out := claimNext(); out.Claimed.ID != a || out.Probed != 1 {
		t.Fatalf("first claim: %v after %d probes, want %v after 1", out.Claimed.ID, out.Probed, a)
	}
	// 11 was planned but not probed: it comes first now.
	if out := claimNext(); out.Claimed.ID != b || out.Probed != 1 {
		t.Fatalf("second claim: %v after %d probes, want %v after 1", out.Claimed.ID, out.Probed, b)
	}
	// 3 (emptied) and then 11 again: the claimed partition is hinted.
	if out := claimNext(); out.Claimed.ID != c || out.Probed != 2 {
		t.Fatalf("third claim: %v after %d probes, want %v after 2", out.Claimed.ID, out.Probed, c)
	}
}
