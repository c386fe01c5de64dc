package storetest

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// testWorker states the worker registry: registration and refresh,
// duplicate processes, heartbeats, deregistration, expiry and listing.
func testWorker(t *testing.T, newStore NewStoreFunc) {
	const ttl = 10 * time.Second
	register := func(h *harness, ns model.Namespace, inst model.WorkerInstanceID, session string, caps model.Capabilities, now time.Time) (*model.WorkerRegisterResult, error) {
		return h.s.WorkerRegister(h.ctx, &model.WorkerRegisterParams{
			Namespace: ns, WorkerID: "worker", WorkerInstanceID: inst, SessionID: session,
			Lanes: []model.LaneID{laneA, laneB}, Capabilities: caps, TTL: ttl, Now: now,
		})
	}
	list := func(h *harness, ns model.Namespace, now time.Time) *model.WorkerListResult {
		return call(h.s.WorkerList(h.ctx, &model.WorkerListParams{Namespace: ns, Now: now})).must(h.t)
	}
	heartbeat := func(h *harness, inst model.WorkerInstanceID, session string, now time.Time) (*model.WorkerHeartbeatResult, error) {
		return h.s.WorkerHeartbeat(h.ctx, &model.WorkerHeartbeatParams{Namespace: nsA, WorkerInstanceID: inst, SessionID: session, TTL: 2 * ttl, Now: now})
	}

	// A registration lives TTL; the same session registering again
	// refreshes it (keeping the registration time, replacing lanes and
	// capabilities); capabilities are stored normalised.
	t.Run("Register", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		res := call(register(h, nsA, "inst-1", "s1", model.Capabilities{"gpu", "cpu", "gpu"}, at(0))).must(t)
		wantEqual(t, "register", model.WorkerRegisterResult{Outcome: model.WorkerRegistered, ExpiresAt: at(ttl)}, *res)
		info := model.WorkerInfo{
			Namespace: nsA, WorkerID: "worker", WorkerInstanceID: "inst-1",
			Lanes: []model.LaneID{laneA, laneB}, Capabilities: model.Capabilities{"cpu", "gpu"}, TTL: ttl,
			RegisteredAt: at(0), LastHeartbeatAt: at(0), ExpiresAt: at(ttl),
		}
		wantEqual(t, "list", []model.WorkerInfo{info}, list(h, nsA, at(0)).Workers)

		res = call(h.s.WorkerRegister(h.ctx, &model.WorkerRegisterParams{
			Namespace: nsA, WorkerID: "worker", WorkerInstanceID: "inst-1", SessionID: "s1",
			Lanes: []model.LaneID{laneB}, Capabilities: model.Capabilities{"tpu"}, TTL: 2 * ttl, Now: at(5 * time.Second),
		})).must(t)
		wantEqual(t, "refresh", model.WorkerRegisterResult{Outcome: model.WorkerRefreshed, ExpiresAt: at(25 * time.Second)}, *res)
		info.Lanes, info.Capabilities, info.TTL = []model.LaneID{laneB}, model.Capabilities{"tpu"}, 2*ttl
		info.LastHeartbeatAt, info.ExpiresAt = at(5*time.Second), at(25*time.Second)
		wantEqual(t, "list after refresh", []model.WorkerInfo{info}, list(h, nsA, at(5*time.Second)).Workers)
	})

	// While a registration is alive another session of the same instance is
	// a duplicate process; once it expired the new session registers anew.
	t.Run("DuplicateInstance", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		call(register(h, nsA, "inst-1", "s1", nil, at(0))).must(t)
		before := h.world(at(0), nsA)
		_, err := register(h, nsA, "inst-1", "s2", nil, at(ttl-time.Millisecond))
		wantErr(t, err, model.ErrDuplicateWorker)
		wantEqual(t, "registry after a refused duplicate", before, h.world(at(0), nsA))

		res := call(register(h, nsA, "inst-1", "s2", nil, at(ttl))).must(t)
		wantEqual(t, "register after expiry", model.WorkerRegisterResult{Outcome: model.WorkerRegistered, ExpiresAt: at(2 * ttl)}, *res)
		if ws := list(h, nsA, at(ttl)).Workers; len(ws) != 1 || !ws[0].RegisteredAt.Equal(at(ttl)) {
			t.Fatalf("workers %+v", ws)
		}
		// The same instance id in another namespace is another worker.
		call(register(h, nsB, "inst-1", "s3", nil, at(ttl))).must(t)
	})

	// A heartbeat of the registered session extends the registration by
	// its TTL; an unknown or expired instance is not registered; another
	// session is a duplicate process.
	t.Run("Heartbeat", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		call(register(h, nsA, "inst-1", "s1", nil, at(0))).must(t)
		res := call(heartbeat(h, "inst-1", "s1", at(5*time.Second))).must(t)
		wantEqual(t, "heartbeat", model.WorkerHeartbeatResult{ExpiresAt: at(25 * time.Second)}, *res)
		ws := list(h, nsA, at(24*time.Second)).Workers
		if len(ws) != 1 || !ws[0].LastHeartbeatAt.Equal(at(5*time.Second)) || !ws[0].ExpiresAt.Equal(at(25*time.Second)) ||
			ws[0].TTL != 2*ttl || !ws[0].RegisteredAt.Equal(at(0)) {
			t.Fatalf("after heartbeat %+v", ws)
		}
		before := h.world(at(5*time.Second), nsA)
		_, err := heartbeat(h, "inst-1", "s2", at(6*time.Second))
		wantErr(t, err, model.ErrDuplicateWorker)
		_, err = heartbeat(h, "inst-2", "s1", at(6*time.Second))
		wantErr(t, err, model.ErrWorkerNotRegistered)
		_, err = h.s.WorkerHeartbeat(h.ctx, &model.WorkerHeartbeatParams{Namespace: nsB, WorkerInstanceID: "inst-1", SessionID: "s1", TTL: ttl, Now: at(6 * time.Second)})
		wantErr(t, err, model.ErrWorkerNotRegistered)
		wantEqual(t, "registry after refused heartbeats", before, h.world(at(5*time.Second), nsA))
		_, err = heartbeat(h, "inst-1", "s1", at(25*time.Second))
		wantErr(t, err, model.ErrWorkerNotRegistered)
	})

	// Only the registered session removes its registration.
	t.Run("Deregister", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		call(register(h, nsA, "inst-1", "s1", nil, at(0))).must(t)
		deregister := func(inst model.WorkerInstanceID, session string) bool {
			return call(h.s.WorkerDeregister(h.ctx, &model.WorkerDeregisterParams{Namespace: nsA, WorkerInstanceID: inst, SessionID: session, Now: at(time.Second)})).must(t).Removed
		}
		if deregister("inst-1", "s2") || deregister("inst-2", "s1") {
			t.Fatal("removed another session's or an unknown registration")
		}
		if len(list(h, nsA, at(time.Second)).Workers) != 1 {
			t.Fatal("registration gone after a refused deregister")
		}
		if !deregister("inst-1", "s1") {
			t.Fatal("own registration not removed")
		}
		if ws := list(h, nsA, at(time.Second)).Workers; len(ws) != 0 {
			t.Fatalf("workers after deregister %+v", ws)
		}
		if deregister("inst-1", "s1") {
			t.Fatal("removed twice")
		}
		call(register(h, nsA, "inst-1", "s2", nil, at(2*time.Second))).must(t)
	})

	// Expire drops, in instance order, at most Limit registrations that
	// expired by Now; live ones stay.
	t.Run("Expire", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		for _, inst := range []model.WorkerInstanceID{"inst-c", "inst-a", "inst-b"} {
			call(register(h, nsA, inst, "s", nil, at(0))).must(t)
		}
		call(register(h, nsA, "inst-live", "s", nil, at(5*time.Second))).must(t)
		call(register(h, nsB, "inst-other", "s", nil, at(0))).must(t)
		expire := func(limit int, now time.Time) []model.WorkerInstanceID {
			return call(h.s.WorkerExpire(h.ctx, &model.WorkerExpireParams{Namespace: nsA, Limit: limit, Now: now})).must(t).Removed
		}
		if got := expire(10, at(ttl-time.Millisecond)); len(got) != 0 {
			t.Fatalf("expired early: %v", got)
		}
		wantEqual(t, "first batch", []model.WorkerInstanceID{"inst-a", "inst-b"}, expire(2, at(ttl)))
		wantEqual(t, "second batch", []model.WorkerInstanceID{"inst-c"}, expire(2, at(ttl)))
		if got := expire(2, at(ttl)); len(got) != 0 {
			t.Fatalf("third batch: %v", got)
		}
		if ws := list(h, nsA, at(ttl)).Workers; len(ws) != 1 || ws[0].WorkerInstanceID != "inst-live" {
			t.Fatalf("workers %+v", ws)
		}
		// An expired registration dropped by expire may register again.
		res := call(register(h, nsA, "inst-a", "s9", nil, at(ttl))).must(t)
		if res.Outcome != model.WorkerRegistered {
			t.Fatalf("re-register: %+v", res)
		}
		// Another namespace is untouched.
		if got := call(h.s.WorkerExpire(h.ctx, &model.WorkerExpireParams{Namespace: nsB, Limit: 10, Now: at(ttl)})).must(t).Removed; len(got) != 1 {
			t.Fatalf("namespace b: %v", got)
		}
	})

	// List shows the live registrations of one namespace in instance order,
	// and LiveCapabilities is the union of their capabilities.
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		call(register(h, nsA, "inst-b", "s", model.Capabilities{"gpu", "cpu"}, at(0))).must(t)
		call(register(h, nsA, "inst-a", "s", model.Capabilities{"cpu", "avx"}, at(time.Second))).must(t)
		call(register(h, nsA, "inst-c", "s", model.Capabilities{"tpu"}, at(-5*time.Second))).must(t)
		call(register(h, nsB, "inst-z", "s", model.Capabilities{"fpga"}, at(0))).must(t)
		res := list(h, nsA, at(ttl-time.Millisecond))
		var insts []model.WorkerInstanceID
		for _, w := range res.Workers {
			insts = append(insts, w.WorkerInstanceID)
		}
		wantEqual(t, "instances", []model.WorkerInstanceID{"inst-a", "inst-b"}, insts)
		wantEqual(t, "live capabilities", model.Capabilities{"avx", "cpu", "gpu"}, res.LiveCapabilities())
		if res := list(h, "ns-empty", at(0)); len(res.Workers) != 0 || len(res.LiveCapabilities()) != 0 {
			t.Fatalf("empty namespace %+v", res)
		}
	})
}
