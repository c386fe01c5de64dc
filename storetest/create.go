package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// testCreate states ExecutionCreate: the stored record and its indexes,
// delays, priorities and their order, idempotency keys and duplicate ids.
func testCreate(t *testing.T, newStore NewStoreFunc) {
	// A new execution stores every input (capabilities normalised, zero
	// caps replaced by the defaults) and waits in its lane's eligible index.
	t.Run("Eligible", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		policy := model.RetryPolicy{MaxRetries: 3, InitialDelay: 2 * time.Second, Multiplier: 3, MaxDelay: 10 * time.Second}
		p := h.createParams(at(0), withPriority(7), withCaps("zeta", "alpha", "zeta", "mid"),
			withRetry(policy), withTimeout(time.Minute), withDeadline(at(time.Hour)))
		p.Tags = map[string]string{"app.owner": "team-x", "app.ticket": ""}
		p.Payload = []byte{0, 1, 2, 0xff, 0}
		res := call(h.s.ExecutionCreate(h.ctx, p)).must(t)
		if *res != (model.ExecutionCreateResult{ID: p.ID, PublicState: model.PublicWaiting}) {
			t.Fatalf("create result %+v", res)
		}
		h.wantSnapshot(&model.ExecutionSnapshot{
			ID: p.ID, Namespace: nsA, Lane: laneA, Kind: kindA, Priority: 7,
			State:       stEligible(model.AttemptPendingFirst),
			PublicState: model.PublicWaiting,
			CreatedAt:   at(0), LastMutationAt: at(0), LastTransitionAt: at(0),
			RequiredCapabilities: model.Capabilities{"alpha", "mid", "zeta"},
			RetryPolicy:          policy,
			MaxReclaims:          model.DefaultMaxReclaims,
			MaxReplays:           model.DefaultMaxReplays,
			AttemptTimeout:       time.Minute,
			Deadline:             at(time.Hour),
			Tags:                 map[string]string{"app.owner": "team-x", "app.ticket": ""},
		})
		h.wantIndexes(p.ID, ixAll, ixLane(laneA, "eligible"), ixDeadline)
		h.wantAttempts(p.ID, nil)
		h.wantHistory(p.ID, nil)
		_, err := h.s.ExecutionResult(h.ctx, &model.ExecutionResultParams{ID: p.ID})
		wantErr(t, err, model.ErrResultNotFound)

		if got := call(h.s.ExecutionPayload(h.ctx, &model.ExecutionPayloadParams{ID: p.ID})).must(t).Payload; !bytes.Equal(got, p.Payload) {
			t.Fatalf("payload read %q, want %q", got, p.Payload)
		}

		// The claim hands back payload and tags as stored.
		cr := h.claim(p.ID, workerRef{ID: wA.ID, Instance: wA.Instance, Caps: model.Capabilities{"alpha", "mid", "zeta"}}, at(time.Second))
		if !bytes.Equal(cr.Payload, p.Payload) {
			t.Fatalf("payload %q, want %q", cr.Payload, p.Payload)
		}
		if len(cr.Tags) != 2 || cr.Tags["app.owner"] != "team-x" {
			t.Fatalf("tags %v", cr.Tags)
		}
	})

	// Required capabilities are stored sorted and de-duplicated, up to 256
	// distinct tokens and 4096 bytes of CSV.
	t.Run("RequiredCapabilities", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		maxTokens := make([]string, model.MaxCapabilityTokens)
		for i := range maxTokens {
			maxTokens[i] = fmt.Sprintf("c%03d", model.MaxCapabilityTokens-1-i)
		}
		sortedMax := slices.Sorted(slices.Values(maxTokens))
		maxBytes := []string{strings.Repeat("b", 2047), strings.Repeat("a", 2048)}
		for _, c := range []struct {
			name string
			in   []string
			want model.Capabilities
		}{
			{"none", nil, nil},
			{"sorted_deduplicated", []string{"zeta", "Alpha", "zeta", "東京-gpu", "alpha"}, model.Capabilities{"Alpha", "alpha", "zeta", "東京-gpu"}},
			{"max_tokens", maxTokens, sortedMax},
			{"duplicates_beyond_max_tokens", append(slices.Clone(maxTokens), maxTokens...), sortedMax},
			{"max_bytes", maxBytes, model.Capabilities{maxBytes[1], maxBytes[0]}},
		} {
			id := h.create(at(0), withCaps(c.in...))
			wantEqual(t, c.name, c.want, h.describe(id).RequiredCapabilities)
		}
	})

	// Explicit caps on reclaims and replays are stored as given.
	t.Run("ReclaimReplayCaps", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withMaxReclaims(3), withMaxReplays(2))
		s := h.describe(id)
		if s.MaxReclaims != 3 || s.MaxReplays != 2 {
			t.Fatalf("max reclaims %d, max replays %d", s.MaxReclaims, s.MaxReplays)
		}
	})

	// Each lane has its own indexes.
	t.Run("Lane", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withLane(laneB))
		h.wantIndexes(id, ixAll, ixLane(laneB, "eligible"))
	})

	// A delay in the future parks the execution in the delayed index; a
	// delay equal to Now is no delay (a past one is Fix/CreatePastDelay).
	t.Run("Delay", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		p := h.createParams(at(0), withDelay(at(time.Minute)))
		res := call(h.s.ExecutionCreate(h.ctx, p)).must(t)
		if res.PublicState != model.PublicDelayed {
			t.Fatalf("public state %v", res.PublicState)
		}
		s := h.wantState(p.ID, stDelayed(model.WaitingForDelay, model.AttemptPendingFirst))
		if !s.DelayUntil.Equal(at(time.Minute)) {
			t.Fatalf("delay until %v", s.DelayUntil)
		}
		h.wantIndexes(p.ID, ixAll, ixLane(laneA, "delayed"))

		now := h.create(at(0), withDelay(at(0)))
		s = h.wantState(now, stEligible(model.AttemptPendingFirst))
		if !s.DelayUntil.IsZero() {
			t.Fatalf("delay until %v", s.DelayUntil)
		}
		h.wantIndexes(now, ixAll, ixLane(laneA, "eligible"))
	})

	// Priorities are clamped to [0, 9000].
	t.Run("PriorityClamp", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		for _, c := range []struct{ in, want int }{
			{-5, 0}, {0, 0}, {1, 1}, {4500, 4500}, {9000, 9000}, {9001, 9000}, {1 << 40, 9000},
		} {
			id := h.create(at(0), withPriority(c.in))
			if got := h.describe(id).Priority; got != c.want {
				t.Errorf("priority %d stored as %d, want %d", c.in, got, c.want)
			}
		}
	})

	// The eligible index serves higher priority first, then the earlier
	// creation.
	t.Run("PriorityOrder", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		low := h.create(at(0), withPriority(0))
		midEarly := h.create(at(1*time.Millisecond), withPriority(5))
		midLate := h.create(at(2*time.Millisecond), withPriority(5))
		top := h.create(at(3*time.Millisecond), withPriority(10_000))
		lowLate := h.create(at(4*time.Millisecond), withPriority(-3))
		want := []model.ExecutionID{top, midEarly, midLate, low, lowLate}
		for i, id := range want {
			res := h.claimNext(wA, nil, 1, at(time.Second))
			if res.Claimed == nil || res.Claimed.ID != id {
				t.Fatalf("claim %d: got %+v, want %v", i, res.Claimed, id)
			}
		}
		if res := h.claimNext(wA, nil, 1, at(time.Second)); res.Claimed != nil {
			t.Fatalf("claimed %v from an empty lane", res.Claimed.ID)
		}
	})

	// A second create with the same key in the same namespace and partition
	// within the TTL returns the first id and creates nothing; at the TTL the
	// key has expired.
	t.Run("IdempotencyKey", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		keyed := func(now time.Time, ttl time.Duration) *model.ExecutionCreateParams {
			p := h.createParams(now)
			p.IdempotencyKey, p.IdempotencyTTL = "order-42 ✓", ttl
			return p
		}
		first := keyed(at(0), time.Minute)
		call(h.s.ExecutionCreate(h.ctx, first)).must(t)

		dup := keyed(at(time.Minute-time.Millisecond), time.Minute)
		res := call(h.s.ExecutionCreate(h.ctx, dup)).must(t)
		if *res != (model.ExecutionCreateResult{ID: first.ID, Duplicate: true, PublicState: model.PublicWaiting}) {
			t.Fatalf("duplicate create: %+v", res)
		}
		_, err := h.s.ExecutionDescribe(h.ctx, &model.ExecutionDescribeParams{ID: dup.ID})
		wantErr(t, err, model.ErrNotFound)

		// The duplicate reports the first execution's current state.
		h.claim(first.ID, wA, at(time.Second))
		res = call(h.s.ExecutionCreate(h.ctx, keyed(at(2*time.Second), time.Minute))).must(t)
		if res.ID != first.ID || !res.Duplicate || res.PublicState != model.PublicActive {
			t.Fatalf("duplicate create: %+v", res)
		}

		fresh := keyed(at(time.Minute), time.Minute)
		res = call(h.s.ExecutionCreate(h.ctx, fresh)).must(t)
		if res.ID != fresh.ID || res.Duplicate {
			t.Fatalf("create after the TTL: %+v", res)
		}
		res = call(h.s.ExecutionCreate(h.ctx, keyed(at(time.Minute+time.Millisecond), time.Minute))).must(t)
		if res.ID != fresh.ID || !res.Duplicate {
			t.Fatalf("key now names the new execution: %+v", res)
		}
	})

	// Without a TTL a key lives DefaultIdempotencyTTL.
	t.Run("IdempotencyDefaultTTL", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		keyed := func(now time.Time) *model.ExecutionCreateParams {
			p := h.createParams(now)
			p.IdempotencyKey = "k"
			return p
		}
		first := keyed(at(0))
		call(h.s.ExecutionCreate(h.ctx, first)).must(t)
		res := call(h.s.ExecutionCreate(h.ctx, keyed(at(model.DefaultIdempotencyTTL-time.Millisecond)))).must(t)
		if res.ID != first.ID || !res.Duplicate {
			t.Fatalf("within the default TTL: %+v", res)
		}
		late := keyed(at(model.DefaultIdempotencyTTL))
		res = call(h.s.ExecutionCreate(h.ctx, late)).must(t)
		if res.ID != late.ID || res.Duplicate {
			t.Fatalf("after the default TTL: %+v", res)
		}
	})

	// With IdempotencyStates, the key's execution blocks a create only
	// while it is in one of them; in another state the create makes a new
	// execution and the key names it from then on, for its own TTL. A
	// create without states still finds whatever the key names.
	t.Run("IdempotencyStates", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		live := model.PublicStates(model.PublicWaiting, model.PublicDelayed, model.PublicActive)
		keyed := func(now time.Time, states model.PublicStateSet) *model.ExecutionCreateParams {
			p := h.createParams(now)
			p.IdempotencyKey, p.IdempotencyTTL, p.IdempotencyStates = "unique:sync", time.Hour, states
			return p
		}
		first := keyed(at(0), live)
		call(h.s.ExecutionCreate(h.ctx, first)).must(t)
		res := call(h.s.ExecutionCreate(h.ctx, keyed(at(time.Second), live))).must(t)
		if *res != (model.ExecutionCreateResult{ID: first.ID, Duplicate: true, PublicState: model.PublicWaiting}) {
			t.Fatalf("while waiting: %+v", res)
		}
		cr := h.claim(first.ID, wA, at(2*time.Second))
		res = call(h.s.ExecutionCreate(h.ctx, keyed(at(3*time.Second), live))).must(t)
		if res.ID != first.ID || !res.Duplicate || res.PublicState != model.PublicActive {
			t.Fatalf("while active: %+v", res)
		}
		// blocking only while completed: an active one does not block
		onlyDone := keyed(at(3*time.Second), model.PublicStates(model.PublicCompleted))
		h.unchanged(first.ID, func() {
			res = call(h.s.ExecutionCreate(h.ctx, onlyDone)).must(t)
		})
		if res.ID != onlyDone.ID || res.Duplicate || res.PublicState != model.PublicWaiting {
			t.Fatalf("states that exclude active: %+v", res)
		}
		h.cancelOp(onlyDone.ID, at(4*time.Second))
		h.complete(first.ID, cr.Fence(), at(4*time.Second))

		// completed: not in live, so a new execution takes the key
		second := keyed(at(5*time.Second), live)
		res = call(h.s.ExecutionCreate(h.ctx, second)).must(t)
		if *res != (model.ExecutionCreateResult{ID: second.ID, PublicState: model.PublicWaiting}) {
			t.Fatalf("after the first completed: %+v", res)
		}
		h.wantIndexes(second.ID, ixAll, ixLane(laneA, "eligible"))
		res = call(h.s.ExecutionCreate(h.ctx, keyed(at(6*time.Second), 0))).must(t)
		if res.ID != second.ID || !res.Duplicate {
			t.Fatalf("a create without states finds the key's new execution: %+v", res)
		}
		// the key lives the new execution's TTL, from its create
		h.cancelOp(second.ID, at(7*time.Second))
		res = call(h.s.ExecutionCreate(h.ctx, keyed(at(5*time.Second+time.Hour-time.Millisecond), 0))).must(t)
		if res.ID != second.ID || !res.Duplicate || res.PublicState != model.PublicCancelled {
			t.Fatalf("within the new key's TTL, without states: %+v", res)
		}
		late := keyed(at(5*time.Second+time.Hour), 0)
		res = call(h.s.ExecutionCreate(h.ctx, late)).must(t)
		if res.ID != late.ID || res.Duplicate {
			t.Fatalf("after the new key's TTL: %+v", res)
		}
	})

	// A key is scoped to its namespace and its partition.
	t.Run("IdempotencyScope", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		keyed := func(ns model.Namespace, part int) *model.ExecutionCreateParams {
			p := h.createParams(at(0))
			p.ID = h.newID(part)
			p.Namespace, p.IdempotencyKey = ns, "shared-key"
			return p
		}
		creates := []*model.ExecutionCreateParams{keyed(nsA, h.p0), keyed(nsB, h.p0)}
		if h.p0 != h.p1 { // a store with one partition has only the namespace scope
			creates = append(creates, keyed(nsA, h.p1))
		}
		for _, p := range creates {
			res := call(h.s.ExecutionCreate(h.ctx, p)).must(t)
			if res.ID != p.ID || res.Duplicate {
				t.Fatalf("create %s in partition %d: %+v", p.Namespace, p.ID.Partition(), res)
			}
		}
	})

	// Creating an existing id returns it as a duplicate and changes nothing.
	t.Run("DuplicateID", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		id := h.create(at(0), withPriority(3))
		h.unchanged(id, func() {
			p := h.createParams(at(time.Second), withLane(laneB), withPriority(9), withDelay(at(time.Hour)))
			p.ID = id
			res := call(h.s.ExecutionCreate(h.ctx, p)).must(t)
			if *res != (model.ExecutionCreateResult{ID: id, Duplicate: true, PublicState: model.PublicWaiting}) {
				t.Fatalf("duplicate id: %+v", res)
			}
		})
	})

	// Both retry policy shapes are stored as given.
	t.Run("RetryPolicy", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		for _, p := range []model.RetryPolicy{
			{},
			{MaxRetries: 2, Backoff: model.BackoffFixed, Delay: 1500 * time.Millisecond},
			{MaxRetries: 1000, InitialDelay: time.Millisecond, Multiplier: 1.5, MaxDelay: model.MaxPolicyDelay},
		} {
			id := h.create(at(0), withRetry(p))
			if got := h.describe(id).RetryPolicy; got != p {
				t.Errorf("retry policy %+v stored as %+v", p, got)
			}
		}
	})

	// Payloads are stored byte for byte up to MaxPayloadBytes, by
	// ExecutionPayload and by the claim alike; an empty payload reads back
	// empty.
	t.Run("Payload", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name    string
			payload []byte
		}{
			{"nil", nil},
			{"empty", []byte{}},
			{"invalid_utf8", []byte{0xff, 0xfe, 0, 0xc3, 0x28}},
			{"max_size", bytes.Repeat([]byte{0, 0xff}, model.MaxPayloadBytes/2)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := setup(t, newStore)
				id := h.create(at(0), func(p *model.ExecutionCreateParams) { p.Payload = c.payload })
				if got := call(h.s.ExecutionPayload(h.ctx, &model.ExecutionPayloadParams{ID: id})).must(t).Payload; !bytes.Equal(got, c.payload) {
					t.Fatalf("payload of %d bytes read back as %d bytes", len(c.payload), len(got))
				}
				if cr := h.claim(id, wA, at(0)); !bytes.Equal(cr.Payload, c.payload) {
					t.Fatalf("payload of %d bytes claimed as %d bytes", len(c.payload), len(cr.Payload))
				}
			})
		}
	})
}
