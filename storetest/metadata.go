package storetest

import (
	"maps"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// Metadata (headers): model.ExecutionCreateParams.Metadata, carried to
// every claim (model.ClaimResult.Metadata) and to describe
// (model.ExecutionSnapshot.Metadata), nil when there is none.

func withMetadata(kv ...string) createOpt {
	return func(p *model.ExecutionCreateParams) {
		p.Metadata = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Metadata[kv[i]] = kv[i+1]
		}
	}
}

func testMetadata(t *testing.T, newStore NewStoreFunc) {
	for _, c := range []struct {
		name string
		run  func(*harness)
	}{
		{"CarriedToEveryClaim", metadataCarried},
		{"NoneIsNil", metadataNone},
		{"ClaimNext", metadataClaimNext},
		{"SeparateFromTags", metadataSeparate},
		{"Limits", metadataLimits},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(setup(t, newStore))
		})
	}
}

// metadataCarried: the metadata given at create comes back unchanged from
// describe and from the claim of every attempt (the first, a retry, a
// reclaim after lease expiry), in any state, terminal included.
func metadataCarried(h *harness) {
	want := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"tracestate": "k=v", "x-empty": "", "x-utf8": "ü"}
	id := h.create(at(0), withMetadata(flatten(want)...),
		withRetry(model.RetryPolicy{MaxRetries: 1, Backoff: model.BackoffFixed}))
	wantEqual(h.t, "described", want, h.describe(id).Metadata)
	c := h.claim(id, wA, at(time.Second))
	wantEqual(h.t, "first claim", want, c.Metadata)
	c.Metadata["traceparent"] = "changed by the caller" // a claim's map is the caller's own
	wantEqual(h.t, "described after the caller changed its copy", want, h.describe(id).Metadata)
	retry := h.fail(id, c.Fence(), model.FailureTransient, at(2*time.Second)).DelayUntil
	if h.promote(id, laneA, retry) != model.PromotePromoted {
		h.t.Fatal("the retry was not promoted")
	}
	c = h.claim(id, wA, retry)
	wantEqual(h.t, "retry claim", want, c.Metadata)
	h.complete(id, c.Fence(), retry.Add(time.Second))
	wantEqual(h.t, "described once completed", want, h.describe(id).Metadata)
}

// metadataNone: an execution created without metadata, or with an empty
// map, has nil metadata on claim and describe.
func metadataNone(h *harness) {
	for _, opt := range []createOpt{func(*model.ExecutionCreateParams) {}, withMetadata()} {
		id := h.create(at(0), opt)
		if md := h.describe(id).Metadata; md != nil {
			h.t.Fatalf("described metadata %v, want nil", md)
		}
		if c := h.claim(id, wA, at(time.Second)); c.Metadata != nil {
			h.t.Fatalf("claimed metadata %v, want nil", c.Metadata)
		}
	}
}

// metadataClaimNext: the scheduler's claim carries the metadata too.
func metadataClaimNext(h *harness) {
	id := h.create(at(0), withMetadata("k", "v"))
	res := h.claimNext(wA, nil, 10, at(time.Second))
	if res.Claimed == nil || res.Claimed.ID != id {
		h.t.Fatalf("claim next: %+v, want %v", res, id)
	}
	wantEqual(h.t, "claim next", map[string]string{"k": "v"}, res.Claimed.Metadata)
}

// metadataSeparate: metadata and tags with the same key are kept apart,
// and metadata does not match a tag filter.
func metadataSeparate(h *harness) {
	id := h.create(at(0), withTags("app.k", "tag"), withMetadata("app.k", "meta"))
	d := h.describe(id)
	wantEqual(h.t, "tags", map[string]string{"app.k": "tag"}, d.Tags)
	wantEqual(h.t, "metadata", map[string]string{"app.k": "meta"}, d.Metadata)
	c := h.claim(id, wA, at(time.Second))
	wantEqual(h.t, "claimed tags", map[string]string{"app.k": "tag"}, c.Tags)
	wantEqual(h.t, "claimed metadata", map[string]string{"app.k": "meta"}, c.Metadata)
}

// metadataLimits: the largest metadata the limits allow is stored whole.
func metadataLimits(h *harness) {
	md := make(map[string]string, model.MaxMetadataEntries)
	per := model.MaxMetadataBytes / model.MaxMetadataEntries
	for i := range model.MaxMetadataEntries {
		k := "k" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		md[k] = string(make([]byte, per-len(k)))
	}
	id := h.create(at(0), func(p *model.ExecutionCreateParams) { p.Metadata = maps.Clone(md) })
	wantEqual(h.t, "described", md, h.describe(id).Metadata)
	wantEqual(h.t, "claimed", md, h.claim(id, wA, at(time.Second)).Metadata)
}

// flatten turns a map into key, value pairs.
func flatten(m map[string]string) []string {
	out := make([]string, 0, 2*len(m))
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}
