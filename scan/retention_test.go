package scan_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

// forgetter records the ledgers the trimmer forgets.
type forgetter struct{ forgot []model.ExecutionID }

func (f *forgetter) BudgetRelease(_ context.Context, p *model.BudgetReleaseParams) (*model.BudgetReleaseResult, error) {
	if !p.Forget {
		return nil, errors.New("not a forget")
	}
	f.forgot = append(f.forgot, p.Execution)
	return &model.BudgetReleaseResult{}, nil
}

// TestRetentionTrimsWholeFlows: a member's due entry does not delete it;
// the trimmer deletes its flow once every member's retention ran out (the
// flow's entries wait at its due time meanwhile), with every member, and
// forgets their ledgers.
func TestRetentionTrimsWholeFlows(t *testing.T) {
	f := newFixture(t, 1)
	fl := model.FlowID(f.uuid())
	if _, err := f.store.FlowCreate(f.ctx, &model.FlowCreateParams{Flow: fl, Now: base}); err != nil {
		t.Fatal(err)
	}
	b := model.BudgetID(f.uuid())
	var members []model.ExecutionID
	for _, keep := range []time.Duration{time.Minute, 5 * time.Minute} {
		id := f.create(0, "l", func(p *model.ExecutionCreateParams) {
			p.Flow, p.Retention, p.Budgets = fl, model.Retention{Cancelled: keep}, []model.BudgetID{b}
		})
		members = append(members, id)
	}
	if _, err := f.store.FlowSeal(f.ctx, &model.FlowSealParams{Flow: fl, Now: base}); err != nil {
		t.Fatal(err)
	}
	for _, id := range members {
		if _, err := f.store.ExecutionCancel(f.ctx, &model.ExecutionCancelParams{ID: id, Reason: "stop", Source: model.SourceOperator, Now: base}); err != nil {
			t.Fatal(err)
		}
	}
	ledgers := &forgetter{}
	tr := scan.NewRetention(f.store, ledgers, f.clock, scan.TimerConfig{})
	f.sweep(nil, tr)
	exists := func() bool {
		_, err := f.store.FlowDescribe(f.ctx, &model.FlowDescribeParams{Flow: fl})
		if err != nil && !errors.Is(err, model.ErrFlowNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	f.clock.Advance(time.Minute) // the first member's retention ran out
	if res, err := tr.RunOnce(f.ctx); err != nil || res.Partitions != 1 || res.Acted != 0 || !exists() {
		t.Fatalf("pass at the first member's due time: %+v %v (flow there: %v)", res, err, exists())
	}
	f.clock.Advance(4*time.Minute - time.Millisecond)
	if res, _ := tr.RunOnce(f.ctx); res.Acted != 0 || !exists() {
		t.Fatalf("pass before the flow is due: %+v", res)
	}
	f.clock.Advance(time.Millisecond)
	if res, err := tr.RunOnce(f.ctx); err != nil || res.Acted != 1 || exists() {
		t.Fatalf("pass at the flow's due time: %+v %v (flow there: %v)", res, err, exists())
	}
	for _, id := range members {
		if _, err := f.store.ExecutionDescribe(f.ctx, &model.ExecutionDescribeParams{ID: id}); !errors.Is(err, model.ErrNotFound) {
			t.Fatalf("member %v after the flow's delete: %v", id, err)
		}
	}
	slices.SortFunc(ledgers.forgot, model.ExecutionID.Compare)
	slices.SortFunc(members, model.ExecutionID.Compare)
	if !slices.Equal(ledgers.forgot, members) {
		t.Fatalf("forgot the ledgers of %v, want %v", ledgers.forgot, members)
	}
}
