package storetest

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// testFIFO states the tie-break of the eligible index: executions of equal
// priority created at the same millisecond are claimed in the order of
// their ids' bytes. The engine's version-7 ids grow with every submission
// (model.NewUUIDv7), so one process's submissions run in order however
// close together.
func testFIFO(t *testing.T, newStore NewStoreFunc) {
	t.Run("EqualPriorityOneInstant", func(t *testing.T) {
		t.Parallel()
		h := setup(t, newStore)
		const n = 24
		ids := make([]model.ExecutionID, n)
		for i := range n {
			// the random tail falls as seq grows: only seq can give the order
			u := model.NewUUIDv7(at(0).UnixMilli(), uint64(i), [4]byte{byte(255 - i), 0xff, 0xff, 0xff})
			ids[i] = model.NewExecutionID(h.p0, u)
		}
		// created out of order, at one instant, with one priority
		for _, i := range []int{5, 0, 23, 7, 1, 2, 22, 3, 4, 6, 8, 21, 9, 10, 20, 11, 12, 19, 13, 14, 18, 15, 16, 17} {
			p := h.createParams(at(0), withPriority(3))
			p.ID = ids[i]
			call(h.s.ExecutionCreate(h.ctx, p)).must(t)
		}
		for i := range n {
			r := h.claimNext(wA, nil, 1, at(time.Second))
			if r.Claimed == nil || r.Claimed.ID != ids[i] {
				t.Fatalf("claim %d: got %+v, want %v", i, r.Claimed, ids[i])
			}
		}
	})
}
