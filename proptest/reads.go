package proptest

import (
	"errors"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

func (m *machine) actRead(t *rapid.T) {
	id := m.pickExec(t, nil)
	x := m.obs[0].Execs[id]
	switch rapid.IntRange(0, 2).Draw(t, "read") {
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
