package scan_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

func (f *fixture) tamper(id model.ExecutionID, index string, a model.RepairAction, score int64) {
	f.t.Helper()
	if err := f.store.IndexTamper(f.ctx, &model.IndexTamperParams{ID: id, Index: index, Action: a, Score: score}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) indexes(id model.ExecutionID) []string {
	f.t.Helper()
	r, err := f.store.ExecutionIndexes(f.ctx, &model.ExecutionIndexesParams{ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Indexes
}

// TestIndexReconcilerRepairsInBoundedPasses: each pass examines at most
// Batch executions per partition and resumes where it stopped; a damaged
// entry is repaired once, logged and counted, and a dry run only reports.
func TestIndexReconcilerRepairsInBoundedPasses(t *testing.T) {
	f := newFixture(t, 2)
	var ids []model.ExecutionID
	for i := range 5 {
		ids = append(ids, f.create(i%2, "lane", nil))
	}
	// partition 0 holds ids 0, 2, 4 (in id order), partition 1 ids 1, 3
	f.tamper(ids[4], "lane:lane:eligible", model.RepairRemoved, 0)
	f.tamper(ids[3], "lane:lane:delayed", model.RepairAdded, 5)

	var logs bytes.Buffer
	var seen []model.IndexRepair
	cfg := scan.IndexRepairConfig{Batch: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnRepair: func(r model.IndexRepair) { seen = append(seen, r) }}

	dry := cfg
	dry.DryRun, dry.Logger, dry.OnRepair = true, nil, nil
	d := scan.NewIndexReconciler(f.store, f.clock, dry)
	for range 2 {
		if _, err := d.RunOnce(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	// pass 1 examines 2 + 2, pass 2 the last of partition 0 and
	// partition 1 over again, where the damage is still there
	if st := d.Stats(); st.Repaired != 3 || st.Examined != 7 {
		t.Fatalf("dry run stats %+v, want 3 found in 7", st)
	}
	if got := f.indexes(ids[4]); len(got) != 1 || got[0] != "all_executions" {
		t.Fatalf("a dry run wrote: %v", got)
	}

	r := scan.NewIndexReconciler(f.store, f.clock, cfg)
	if r.Interval() != scan.DefaultIndexRepairInterval || r.Name() != "index_reconciler" {
		t.Fatalf("interval %v name %q", r.Interval(), r.Name())
	}
	// pass 1: ids 0, 2 of partition 0 and 1, 3 of partition 1
	res, err := r.RunOnce(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := scan.Result{Partitions: 2, Scanned: 4, Acted: 1, More: true}
	if res != want {
		t.Fatalf("pass 1: %+v, want %+v", res, want)
	}
	if len(seen) != 1 || seen[0].ExecutionID != ids[3] || seen[0].Action != model.RepairRemoved || seen[0].OldScore != 5 {
		t.Fatalf("pass 1 repaired %+v", seen)
	}
	// pass 2: id 4 of partition 0; partition 1 ended and starts over
	f.clock.Advance(time.Minute)
	res, err = r.RunOnce(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want = scan.Result{Partitions: 2, Scanned: 3, Acted: 1}
	if res != want {
		t.Fatalf("pass 2: %+v, want %+v", res, want)
	}
	wantScore := model.EligibleScore(0, base.UnixMilli())
	if len(seen) != 2 || seen[1].ExecutionID != ids[4] || seen[1].Action != model.RepairAdded || seen[1].Score != wantScore {
		t.Fatalf("pass 2 repaired %+v", seen)
	}
	if got := f.indexes(ids[4]); len(got) != 2 || got[1] != "lane:lane:eligible" {
		t.Fatalf("indexes after the repair: %v", got)
	}
	// pass 3 starts partition 0 over and finds nothing
	res, err = r.RunOnce(f.ctx)
	if err != nil || res.Acted != 0 || res.Scanned != 4 {
		t.Fatalf("pass 3: %+v %v", res, err)
	}
	if st := r.Stats(); st != (scan.IndexRepairStats{Passes: 3, Examined: 11, Repaired: 2}) {
		t.Fatalf("stats %+v", st)
	}
	out := logs.String()
	if strings.Count(out, "index entry repaired") != 2 || !strings.Contains(out, "index=lane:lane:eligible") ||
		!strings.Contains(out, "action=added") || !strings.Contains(out, "execution="+ids[4].String()) {
		t.Fatalf("log:\n%s", out)
	}
}

// failingRepair fails one partition's repairs.
type failingRepair struct {
	scan.IndexRepairStore
	part int
}

func (s failingRepair) IndexRepair(ctx context.Context, p *model.IndexRepairParams) (*model.IndexRepairResult, error) {
	if p.Partition == s.part {
		return nil, errors.New("boom")
	}
	return s.IndexRepairStore.IndexRepair(ctx, p)
}

// TestIndexReconcilerFilterAndErrors: the filter keeps the reconciler to
// its tenant's executions; a failing partition is counted and the others
// still repaired; the store sees the clock's time.
func TestIndexReconcilerFilterAndErrors(t *testing.T) {
	f := newFixture(t, 2)
	mine := f.create(1, "lane", func(p *model.ExecutionCreateParams) { p.Namespace = "mine" })
	other := f.create(1, "lane", nil)
	f.tamper(mine, "lane:lane:eligible", model.RepairRemoved, 0)
	f.tamper(other, "lane:lane:eligible", model.RepairRemoved, 0)
	var nows []time.Time
	r := scan.NewIndexReconciler(failingRepair{recordNow{f.store, &nows}, 0}, f.clock,
		scan.IndexRepairConfig{Filter: model.ScannerFilter{Namespace: "mine"}})
	f.clock.Advance(3 * time.Second)
	res, err := r.RunOnce(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (scan.Result{Partitions: 2, Scanned: 2, Acted: 1, Errors: 1}); res != want {
		t.Fatalf("pass: %+v, want %+v", res, want)
	}
	if len(f.indexes(mine)) != 2 || len(f.indexes(other)) != 1 {
		t.Fatalf("mine %v other %v", f.indexes(mine), f.indexes(other))
	}
	if len(nows) != 1 || !nows[0].Equal(base.Add(3*time.Second)) {
		t.Fatalf("the store saw %v", nows)
	}
	if st := r.Stats(); st.Errors != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// recordNow records the Now of every repair.
type recordNow struct {
	scan.IndexRepairStore
	nows *[]time.Time
}

func (s recordNow) IndexRepair(ctx context.Context, p *model.IndexRepairParams) (*model.IndexRepairResult, error) {
	*s.nows = append(*s.nows, p.Now)
	return s.IndexRepairStore.IndexRepair(ctx, p)
}

func TestIndexRepairConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg   scan.IndexRepairConfig
		field string
	}{
		{scan.IndexRepairConfig{Interval: -1}, "X.Interval"},
		{scan.IndexRepairConfig{Batch: model.MaxPageSize + 1}, "X.Batch"},
		{scan.IndexRepairConfig{Batch: -1}, "X.Batch"},
		{scan.IndexRepairConfig{Filter: model.ScannerFilter{TagValue: "v"}}, "X.Filter.TagValue"},
	} {
		var e *model.Error
		if err := c.cfg.Validate("X"); !errors.As(err, &e) || e.Field != c.field {
			t.Fatalf("%+v: %v, want a field %s error", c.cfg, err, c.field)
		}
	}
	if err := (scan.IndexRepairConfig{}).Validate("X"); err != nil {
		t.Fatal(err)
	}
}
