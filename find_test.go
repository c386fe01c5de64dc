package flowfabric_test

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
)

// TestFind lists executions across partitions by state, lane, kind and
// tag, page by page, whatever the page and examination sizes.
func TestFind(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	var calls atomic.Int32
	w := h.NewWorker(&flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"l1", "l2", "l3"}})
	flowfabric.AddHandler(w, greetHandler())
	flowfabric.AddHandler(w, flakyHandler(&calls))
	h.StartWorker(w)
	want := map[string][]flowfabric.ExecutionID{}
	for i, lane := range []flowfabric.LaneID{"l1", "l2", "l3"} {
		for j := range 3 {
			tags := map[string]string{"app.batch": []string{"a", "b"}[j%2]}
			ok := mustSubmit(t, h, greet{Name: "x"}, &flowfabric.SubmitOpts{Lane: lane, Tags: tags})
			bad := mustSubmit(t, h, flaky{FailTimes: 9}, &flowfabric.SubmitOpts{Lane: lane, RetryPolicy: flowfabric.NoRetries(), Tags: tags})
			later := mustSubmit(t, h, greet{Name: "later"}, &flowfabric.SubmitOpts{Lane: lane, Delay: time.Hour})
			want["completed"] = append(want["completed"], ok)
			want["failed"] = append(want["failed"], bad)
			want["delayed"] = append(want["delayed"], later)
			if i == 1 {
				want["l2"] = append(want["l2"], ok, bad, later)
			}
			if j%2 == 0 {
				want["tag a"] = append(want["tag a"], ok, bad)
			}
		}
	}
	for _, id := range append(slices.Clone(want["completed"]), want["failed"]...) {
		h.WaitTerminal(id)
	}
	sortIDs := func(ids []flowfabric.ExecutionID) []flowfabric.ExecutionID {
		slices.SortFunc(ids, func(a, b flowfabric.ExecutionID) int {
			if a.Partition() != b.Partition() {
				return a.Partition() - b.Partition()
			}
			return a.Compare(b)
		})
		return ids
	}
	findAll := func(o flowfabric.FindOpts) []flowfabric.ExecutionID {
		t.Helper()
		var got []flowfabric.ExecutionID
		for range 10_000 {
			page, err := h.Engine.Find(h.Ctx, &o)
			if err != nil {
				t.Fatal(err)
			}
			if o.Limit > 0 && len(page.IDs) > o.Limit {
				t.Fatalf("page of %d, limit %d", len(page.IDs), o.Limit)
			}
			got = append(got, page.IDs...)
			if page.Next == "" {
				return got
			}
			o.Cursor = page.Next
		}
		t.Fatal("Find never ended")
		return nil
	}
	for _, c := range []struct {
		name string
		o    flowfabric.FindOpts
		want []flowfabric.ExecutionID
	}{
		{"completed", flowfabric.FindOpts{States: []flowfabric.PublicState{flowfabric.PublicCompleted}}, want["completed"]},
		{"failed, small pages", flowfabric.FindOpts{States: []flowfabric.PublicState{flowfabric.PublicFailed}, Limit: 2}, want["failed"]},
		{"delayed, examining one at a time", flowfabric.FindOpts{States: []flowfabric.PublicState{flowfabric.PublicDelayed}, MaxExamined: 1}, want["delayed"]},
		{"lane", flowfabric.FindOpts{Lane: "l2", Limit: 4}, want["l2"]},
		{"kind and state", flowfabric.FindOpts{Kind: "flaky", States: []flowfabric.PublicState{flowfabric.PublicFailed}}, want["failed"]},
		{"tag", flowfabric.FindOpts{TagKey: "app.batch", TagValue: "a", Limit: 1, MaxExamined: 3}, want["tag a"]},
		{"nothing", flowfabric.FindOpts{Lane: "nowhere"}, nil},
	} {
		if got, w := findAll(c.o), sortIDs(slices.Clone(c.want)); !slices.Equal(got, w) {
			t.Errorf("%s: got %v, want %v", c.name, got, w)
		}
	}
	for _, bad := range []flowfabric.FindOpts{{Cursor: "nope"}, {Cursor: "99999"}, {Cursor: "-1"}, {Limit: 1001},
		{MaxExamined: -1}, {Lane: "a b"}, {States: []flowfabric.PublicState{0}}, {TagValue: "v"}} {
		if _, err := h.Engine.Find(h.Ctx, &bad); !errors.Is(err, flowfabric.ErrValidation) {
			t.Errorf("Find(%+v): %v, want a validation error", bad, err)
		}
	}
}
