package proptest

import (
	"errors"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

func (m *machine) actRead(t *rapid.T) {
	id := m.pickExec(t, nil)
	x := m.obs[0].Execs[id]
	switch rapid.IntRange(0, 3).Draw(t, "read") {
	case 3:
		m.readFiltered(t, id.Partition())
		return
	case 0:
		var after uint64
		if x != nil && len(x.History) > 0 {
			after = x.History[drawIndex(t, len(x.History), "after")].Seq
		}
		limit := rapid.IntRange(1, 3).Draw(t, "limit")
		res, err := call(m, t, "LeaseHistory", &model.LeaseHistoryParams{ID: id, AfterSeq: after, Limit: limit}, model.Store.LeaseHistory)
		if x == nil {
			m.expect(t, errors.Is(err, model.ErrNotFound), "LeaseHistory of a missing execution: %v", err)
			return
		}
		m.expect(t, err == nil, "LeaseHistory failed: %v", err)
		var want []model.LeaseEvent
		for _, ev := range x.History {
			if ev.Seq > after && len(want) < limit {
				want = append(want, ev)
			}
		}
		m.expect(t, cmpEqual(res.Events, want), "LeaseHistory(after %d, limit %d) = %+v, want %+v", after, limit, res.Events, want)
	case 1:
		if genBool.Draw(t, "payload") {
			res, err := call(m, t, "ExecutionPayload", &model.ExecutionPayloadParams{ID: id}, model.Store.ExecutionPayload)
			if x == nil {
				m.expect(t, errors.Is(err, model.ErrNotFound), "ExecutionPayload of a missing execution: %v", err)
			} else {
				m.expect(t, err == nil && string(res.Payload) == string(x.Payload), "ExecutionPayload: %+v %v", res, err)
			}
			return
		}
		res, err := call(m, t, "ExecutionResult", &model.ExecutionResultParams{ID: id}, model.Store.ExecutionResult)
		switch {
		case x == nil:
			m.expect(t, errors.Is(err, model.ErrNotFound), "ExecutionResult of a missing execution: %v", err)
		case x.HasResult:
			m.expect(t, err == nil && string(res.Result) == string(x.Result), "ExecutionResult: %+v %v", res, err)
		default:
			m.expect(t, errors.Is(err, model.ErrResultNotFound), "ExecutionResult without a result: %v", err)
		}
	default:
		_, err := call(m, t, "ExecutionDescribe", &model.ExecutionDescribeParams{ID: id}, model.Store.ExecutionDescribe)
		m.expect(t, (x == nil) == errors.Is(err, model.ErrNotFound), "ExecutionDescribe: %v", err)
	}
}

var publicStates = []model.PublicState{model.PublicWaiting, model.PublicDelayed, model.PublicRateLimited,
	model.PublicWaitingChildren, model.PublicActive, model.PublicSuspended, model.PublicCompleted, model.PublicFailed,
	model.PublicCancelled, model.PublicExpired, model.PublicSkipped}

// readFiltered lists a partition with a drawn filter, page by page, and
// checks the listing against the observation: the executions the filter
// matches, in id order.
func (m *machine) readFiltered(t *rapid.T, part int) {
	var f model.ListFilter
	if chance(t, 40, "filter_lane") {
		f.Lane = drawFrom(t, lanes, "filter_lane_value")
	}
	if chance(t, 25, "filter_kind") {
		f.Kind = drawFrom(t, kinds, "filter_kind_value")
	}
	if chance(t, 25, "filter_namespace") {
		f.Namespace = drawFrom(t, namespaces, "filter_namespace_value")
	}
	if chance(t, 20, "filter_tag") {
		f.TagKey, f.TagValue = "app.k", drawFrom(t, []string{"v", "w"}, "filter_tag_value")
	}
	for range rapid.IntRange(0, 3).Draw(t, "filter_states") {
		f.States = append(f.States, drawFrom(t, publicStates, "filter_state"))
	}
	limit := rapid.IntRange(1, 4).Draw(t, "filter_limit")
	var want []model.ExecutionID
	if lo := m.obs[0].Lists[part]; lo != nil {
		for _, id := range lo.IDs {
			x := m.obs[0].Execs[id]
			if x != nil && f.Matches(x.Snapshot.Namespace, x.Snapshot.Lane, x.Snapshot.Kind, x.Snapshot.PublicState, x.Snapshot.Tags) {
				want = append(want, id)
			}
		}
	}
	var got []model.ExecutionID
	var after model.ExecutionID
	for pages := 0; ; pages++ {
		p := &model.ExecutionListParams{Partition: part, After: after, Limit: limit, Filter: f}
		res, err := call(m, t, "ExecutionList", p, model.Store.ExecutionList)
		m.expect(t, err == nil, "ExecutionList(%+v): %v", *p, err)
		if err != nil || pages > 10_000 {
			return
		}
		m.expect(t, len(res.IDs) <= limit, "ExecutionList listed %d of %d examined", len(res.IDs), limit)
		got = append(got, res.IDs...)
		if res.Next.IsZero() {
			break
		}
		after = res.Next
	}
	m.expect(t, cmpEqual(got, want), "ExecutionList with filter %+v (pages of %d) = %v, want %v", f, limit, got, want)
}
