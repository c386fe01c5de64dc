package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// fullStore is the seam with every optional interface; the suite calls
// them all. memstore and valkeystore implement it.
type fullStore interface {
	model.Store
	model.IndexInspector
	model.Blocker
	model.GrantReclaimer
}

// complete returns s as a fullStore for t. The suite reads indexes to
// check them, so a store without model.IndexInspector fails t here. A
// store without model.Blocker or model.GrantReclaimer gets stubs that
// skip the (sub)test calling them, naming the interface: such a store
// passes the suite less those operations' tests.
func complete(t *testing.T, s model.Store) fullStore {
	t.Helper()
	if f, ok := s.(fullStore); ok {
		return f
	}
	if _, ok := s.(model.IndexInspector); !ok {
		t.Fatalf("storetest: %T does not implement model.IndexInspector; the suite reads indexes to check them", s)
	}
	return &partialStore{Store: s, t: t}
}

// rebind returns s reporting to t (a partialStore skips t, not the test
// it was made for).
func rebind(s fullStore, t *testing.T) fullStore {
	if p, ok := s.(*partialStore); ok {
		c := *p
		c.t = t
		return &c
	}
	return s
}

// has reports whether the store under test implements the optional
// interface I itself (rather than through partialStore's stubs), for
// setup that can do without it.
func has[I any](h *harness) bool {
	p, ok := h.s.(*partialStore)
	if !ok {
		return true
	}
	_, ok = p.Store.(I)
	return ok
}

// skipWithout skips h's test when the store lacks the optional interface
// I.
func skipWithout[I any](h *harness) {
	h.t.Helper()
	if !has[I](h) {
		h.t.Skipf("storetest: %T does not implement the optional %v", h.s.(*partialStore).Store, reflect.TypeFor[I]())
	}
}

// partialStore completes a store that lacks optional interfaces.
type partialStore struct {
	model.Store
	t *testing.T
}

func (p *partialStore) missing(iface string) {
	p.t.Helper()
	p.t.Skipf("storetest: %T does not implement the optional model.%s", p.Store, iface)
}

func (p *partialStore) ExecutionIndexes(ctx context.Context, q *model.ExecutionIndexesParams) (*model.ExecutionIndexesResult, error) {
	return p.Store.(model.IndexInspector).ExecutionIndexes(ctx, q) // complete checked it
}

func (p *partialStore) ExecutionBlock(ctx context.Context, q *model.ExecutionBlockParams) (*model.ExecutionBlockResult, error) {
	if b, ok := p.Store.(model.Blocker); ok {
		return b.ExecutionBlock(ctx, q)
	}
	p.missing("Blocker")
	return nil, nil
}

func (p *partialStore) ExecutionUnblock(ctx context.Context, q *model.ExecutionUnblockParams) (*model.ExecutionUnblockResult, error) {
	if b, ok := p.Store.(model.Blocker); ok {
		return b.ExecutionUnblock(ctx, q)
	}
	p.missing("Blocker")
	return nil, nil
}

func (p *partialStore) ReclaimGrantIssue(ctx context.Context, q *model.ReclaimGrantIssueParams) (*model.ReclaimGrantIssueResult, error) {
	if r, ok := p.Store.(model.GrantReclaimer); ok {
		return r.ReclaimGrantIssue(ctx, q)
	}
	p.missing("GrantReclaimer")
	return nil, nil
}

func (p *partialStore) ExecutionReclaim(ctx context.Context, q *model.ExecutionReclaimParams) (*model.ExecutionReclaimResult, error) {
	if r, ok := p.Store.(model.GrantReclaimer); ok {
		return r.ExecutionReclaim(ctx, q)
	}
	p.missing("GrantReclaimer")
	return nil, nil
}
