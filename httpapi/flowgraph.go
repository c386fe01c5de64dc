package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Flow listing and flow graphs, the reads the dashboard draws from:
//
//	GET /v1/flows?finished=&cursor=&limit=   flows across every partition
//	GET /v1/flows/{id}/graph                 a flow's members and edges
//
// The engine has no method that lists flows across partitions or an
// execution's edges, so these read the store's flow operations
// (model.FlowStore) directly; a store without them answers 400
// invalid_input naming the store.

// Flow listing bounds.
const (
	defaultFlowPage = 20
	maxFlowPage     = 200
)

// flowStore is the engine's store as a FlowStore.
func (a *api) flowStore() (model.FlowStore, error) {
	fs, ok := a.e.Store().(model.FlowStore)
	if !ok {
		return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Store", Detail: "no_flow_support",
			Want: "a store implementing model.FlowStore (memstore, valkeystore)"}
	}
	return fs, nil
}

type flowListView struct {
	Flows []flowView `json:"flows"`
	// Next is the cursor of the next page; left out once every
	// partition was read.
	Next string `json:"next,omitempty"`
}

// parseFlowCursor reads "P" or "P:<flow uuid>": the partition to go on
// from and the last flow listed in it.
func parseFlowCursor(s string, parts int) (int, flowfabric.FlowID, error) {
	var after flowfabric.FlowID
	if s == "" {
		return 0, after, nil
	}
	ps, fs, hasFlow := strings.Cut(s, ":")
	part, err := strconv.Atoi(ps)
	if err != nil || part < 0 || part >= parts {
		return 0, after, &model.Error{Code: model.CodeInvalidInput, Field: "cursor", Detail: "malformed",
			Got: strconv.Quote(s), Want: "the next of an earlier page"}
	}
	if hasFlow {
		if after, err = model.ParseFlowID(fs); err != nil {
			return 0, after, &model.Error{Code: model.CodeInvalidInput, Field: "cursor", Detail: "malformed",
				Got: strconv.Quote(s), Want: "the next of an earlier page"}
		}
	}
	return part, after, nil
}

// listFlows is GET /v1/flows: live flows (or, with finished=true, the
// finished ones) in partition then id order, each described. The cursor
// is the previous page's next. A page reads each partition's flow index
// at most once, so an empty page with a next is possible only when the
// flows were deleted between calls.
func (a *api) listFlows(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit", defaultFlowPage, 1, maxFlowPage)
	if err != nil {
		return err
	}
	var finished bool
	switch s := q.Get("finished"); s {
	case "", "false", "0":
	case "true", "1":
		finished = true
	default:
		return &model.Error{Code: model.CodeInvalidInput, Field: "finished", Detail: "malformed",
			Got: strconv.Quote(s), Want: "true or false"}
	}
	parts := a.e.Partitions()
	part, after, err := parseFlowCursor(q.Get("cursor"), parts)
	if err != nil {
		return err
	}
	fs, err := a.flowStore()
	if err != nil {
		return err
	}
	out := flowListView{Flows: []flowView{}}
	for part < parts && len(out.Flows) < limit {
		res, err := fs.FlowList(r.Context(), &model.FlowListParams{Finished: finished, Partition: part, After: after,
			Limit: limit - len(out.Flows)})
		if err != nil {
			return err
		}
		for _, id := range res.IDs {
			s, err := a.e.DescribeFlow(r.Context(), id)
			if model.CodeOf(err) == model.CodeFlowNotFound {
				continue // deleted since it was listed
			}
			if err != nil {
				return err
			}
			out.Flows = append(out.Flows, viewFlow(s))
		}
		if !res.Next.IsZero() {
			after = res.Next
			continue
		}
		part, after = part+1, flowfabric.FlowID{}
	}
	switch {
	case part >= parts:
	case after.IsZero():
		out.Next = strconv.Itoa(part)
	default:
		out.Next = strconv.Itoa(part) + ":" + after.String()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// graphNodeView is one member of a flow.
type graphNodeView struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Lane  string `json:"lane"`
	State string `json:"state"`
}

// graphEdgeView is one dependency edge: Downstream waits for Upstream's
// success.
type graphEdgeView struct {
	ID         string `json:"id"`
	Upstream   string `json:"upstream"`
	Downstream string `json:"downstream"`
	PassResult bool   `json:"pass_result,omitempty"`
	State      string `json:"state"`
}

type flowGraphView struct {
	Flow  flowView        `json:"flow"`
	Nodes []graphNodeView `json:"nodes"`
	Edges []graphEdgeView `json:"edges"`
}

// flowGraph is GET /v1/flows/{id}/graph: the flow, its members (id,
// kind, lane and public state) in id order, and every edge between them.
// It reads the flow's member list (Engine.FlowMembers), a describe per
// member and its outgoing edges: the cost of the flow, whatever else
// shares its partition.
func (a *api) flowGraph(w http.ResponseWriter, r *http.Request) error {
	id, err := flowPathID(r)
	if err != nil {
		return err
	}
	fs, err := a.flowStore()
	if err != nil {
		return err
	}
	snap, err := a.e.DescribeFlow(r.Context(), id)
	if err != nil {
		return err
	}
	out := flowGraphView{Flow: viewFlow(snap), Nodes: []graphNodeView{}, Edges: []graphEdgeView{}}
	ids, err := a.e.FlowMembers(r.Context(), id)
	if err != nil {
		return err
	}
	var members []flowfabric.ExecutionID
	for _, eid := range ids {
		s, err := a.e.Describe(r.Context(), eid)
		if model.CodeOf(err) == model.CodeExecutionNotFound {
			continue // deleted since it was listed (with its flow)
		}
		if err != nil {
			return err
		}
		members = append(members, eid)
		out.Nodes = append(out.Nodes, graphNodeView{ID: eid.String(), Kind: string(s.Kind), Lane: string(s.Lane),
			State: s.PublicState.String()})
	}
	for _, m := range members {
		res, err := fs.EdgeListOutgoing(r.Context(), &model.EdgeListParams{Execution: m})
		if err != nil {
			return err
		}
		for _, e := range res.Edges {
			if e.Flow != id {
				continue
			}
			out.Edges = append(out.Edges, graphEdgeView{ID: e.ID.String(), Upstream: e.Upstream.String(),
				Downstream: e.Downstream.String(), PassResult: e.PassResult, State: e.State.String()})
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
