package httpapi

import (
	"net/http"

	"github.com/flowfabric/flowfabric"
)

// The inspector's reads: GET /v1/counts?namespace=&lane=&kind= (the
// executions per public state, see flowfabric.Engine.Counts) and
// GET /v1/lanes (the lanes of the engine's namespace with their counts,
// live workers and pause state, see flowfabric.Engine.ListLanes).

type countRowView struct {
	Namespace string `json:"namespace"`
	Lane      string `json:"lane"`
	Kind      string `json:"kind"`
	State     string `json:"state"`
	Count     int64  `json:"count"`
}

type countsView struct {
	Rows    []countRowView   `json:"rows"`
	ByState map[string]int64 `json:"by_state"`
	Total   int64            `json:"total"`
}

func (a *api) counts(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	c, err := a.e.Counts(r.Context(), &flowfabric.CountOpts{Namespace: flowfabric.Namespace(q.Get("namespace")),
		Lane: flowfabric.LaneID(q.Get("lane")), Kind: flowfabric.Kind(q.Get("kind"))})
	if err != nil {
		return err
	}
	v := countsView{Rows: make([]countRowView, len(c.Rows)), ByState: byState(c.ByState), Total: c.Total}
	for i, row := range c.Rows {
		v.Rows[i] = countRowView{Namespace: string(row.Namespace), Lane: string(row.Lane), Kind: string(row.Kind),
			State: row.State.String(), Count: row.Count}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func byState(m map[flowfabric.PublicState]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for s, n := range m {
		out[s.String()] = n
	}
	return out
}

type laneInfoView struct {
	Lane     string           `json:"lane"`
	Counts   map[string]int64 `json:"counts"`
	Backlog  int64            `json:"backlog"`
	Workers  int              `json:"workers"`
	Unserved bool             `json:"unserved"`
	Paused   bool             `json:"paused"`
}

func (a *api) lanes(w http.ResponseWriter, r *http.Request) error {
	ls, err := a.e.ListLanes(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Lanes []laneInfoView `json:"lanes"`
	}{Lanes: make([]laneInfoView, len(ls))}
	for i := range ls {
		l := &ls[i]
		out.Lanes[i] = laneInfoView{Lane: string(l.Lane), Counts: byState(l.Counts), Backlog: l.Backlog(),
			Workers: l.Workers, Unserved: l.Unserved(), Paused: l.Paused}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
