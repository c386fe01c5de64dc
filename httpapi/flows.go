package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Flow routes.

// flowRequest is the body of POST /v1/flows.
type flowRequest struct {
	IdempotencyKey string            `json:"idempotency_key"`
	Tags           map[string]string `json:"tags"`
	Nodes          []flowNodeJSON    `json:"nodes"`
}

// flowNodeJSON is one node: a submission (without an idempotency key of
// its own) and its upstreams, by index into nodes.
type flowNodeJSON struct {
	Kind string `json:"kind"`
	payloadJSON
	optsJSON
	// After lists the upstreams that must succeed (FlowNode.After).
	After []int `json:"after"`
	// AfterResult lists the upstreams whose result becomes the node's
	// payload (FlowNode.AfterResult): one index, or an array (with AnyOf,
	// the winner's result).
	AfterResult indexList `json:"after_result"`
	// Group changes how the upstreams combine (default: all of them).
	Group *groupJSON `json:"group"`
}

// groupJSON is a node's group policy.
type groupJSON struct {
	// Kind is "all_of" (the default), "any_of" or "quorum".
	Kind   string `json:"kind"`
	Quorum int    `json:"quorum"`
	// Siblings is "cancel_remaining" or "let_run" (required for any_of
	// and quorum).
	Siblings string `json:"siblings"`
}

// indexList is one node index or an array of them.
type indexList []int

func (l *indexList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	var one int
	if err := json.Unmarshal(b, &one); err == nil {
		*l = indexList{one}
		return nil
	}
	var many []int
	if err := json.Unmarshal(b, &many); err != nil {
		return model.InvalidField("after_result", "a node index or an array of node indexes")
	}
	*l = many
	return nil
}

type flowResponse struct {
	ID         string   `json:"id"`
	Executions []string `json:"executions"`
	// Duplicate: the idempotency key named a flow submitted before.
	Duplicate bool `json:"duplicate"`
}

func (a *api) submitFlow(w http.ResponseWriter, r *http.Request) error {
	var req flowRequest
	if err := decodeBody(w, r, a.maxBody, &req, true); err != nil {
		return err
	}
	f, err := buildFlow(req.Nodes)
	if err != nil {
		return err
	}
	res, err := a.e.SubmitFlow(r.Context(), f, &flowfabric.FlowOpts{IdempotencyKey: req.IdempotencyKey, Tags: req.Tags})
	if err != nil {
		return err
	}
	out := flowResponse{ID: res.ID.String(), Executions: make([]string, len(res.Executions)), Duplicate: res.Duplicate}
	for i, id := range res.Executions {
		out.Executions[i] = id.String()
	}
	status := http.StatusCreated
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, out)
	return nil
}

// buildFlow builds the flow of the request's nodes: every node first,
// then the edges, so an upstream may come later in the list than its
// downstream (a cycle is the engine's to find).
func buildFlow(nodes []flowNodeJSON) (*flowfabric.Flow, error) {
	if len(nodes) == 0 {
		return nil, model.InvalidField("nodes", "a flow needs at least one node")
	}
	f := flowfabric.NewFlow()
	built := make([]*flowfabric.FlowNode, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		field := "nodes[" + strconv.Itoa(i) + "]."
		payload, err := n.bytes(field)
		if err != nil {
			return nil, err
		}
		opts, err := n.opts(field)
		if err != nil {
			return nil, err
		}
		built[i] = f.AddRaw(flowfabric.Kind(n.Kind), payload, opts)
	}
	upstream := func(field string, i, j int) (*flowfabric.FlowNode, error) {
		if j < 0 || j >= len(built) {
			return nil, model.OutOfRange("nodes["+strconv.Itoa(i)+"]."+field, j, "a node index, 0.."+strconv.Itoa(len(built)-1))
		}
		return built[j], nil
	}
	for i := range nodes {
		n := &nodes[i]
		for _, j := range n.After {
			up, err := upstream("after", i, j)
			if err != nil {
				return nil, err
			}
			built[i].After(up)
		}
		for _, j := range n.AfterResult {
			up, err := upstream("after_result", i, j)
			if err != nil {
				return nil, err
			}
			built[i].AfterResult(up)
		}
		if n.Group != nil {
			if err := setGroup(built[i], "nodes["+strconv.Itoa(i)+"].group", n.Group); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

func setGroup(n *flowfabric.FlowNode, field string, g *groupJSON) error {
	var siblings flowfabric.SiblingPolicy
	if g.Siblings != "" {
		s, ok := model.ParseSiblingPolicy(g.Siblings)
		if !ok {
			return &model.Error{Code: model.CodeInvalidInput, Field: field + ".siblings", Detail: "unknown",
				Got: strconv.Quote(g.Siblings), Want: `"cancel_remaining" or "let_run"`}
		}
		siblings = s
	}
	switch g.Kind {
	case "", "all_of":
		if g.Quorum != 0 || g.Siblings != "" {
			return model.InvalidField(field, "all_of takes neither quorum nor siblings")
		}
	case "any_of":
		if g.Quorum != 0 {
			return model.InvalidField(field+".quorum", "any_of takes no quorum (it is a quorum of 1)")
		}
		n.AnyOf(siblings)
	case "quorum":
		n.Quorum(g.Quorum, siblings)
	default:
		return &model.Error{Code: model.CodeInvalidInput, Field: field + ".kind", Detail: "unknown",
			Got: strconv.Quote(g.Kind), Want: `"all_of", "any_of" or "quorum"`}
	}
	return nil
}

func flowPathID(r *http.Request) (flowfabric.FlowID, error) {
	s := r.PathValue("id")
	id, err := model.ParseFlowID(s)
	if err != nil {
		return id, &model.Error{Code: model.CodeInvalidInput, Field: "id", Detail: "malformed flow id",
			Got: strconv.Quote(s), Want: "a UUID"}
	}
	return id, nil
}

func (a *api) describeFlow(w http.ResponseWriter, r *http.Request) error {
	id, err := flowPathID(r)
	if err != nil {
		return err
	}
	s, err := a.e.DescribeFlow(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewFlow(s))
	return nil
}

// flowCancelRequest is the body of POST /v1/flows/{id}/cancel.
type flowCancelRequest struct {
	ID string `json:"id"`
	// Policy is "flow_only", "cancel_all" or "cancel_pending" (required).
	Policy string `json:"policy"`
	Reason string `json:"reason"`
}

func (a *api) cancelFlow(w http.ResponseWriter, r *http.Request) error {
	id, err := flowPathID(r)
	if err != nil {
		return err
	}
	var req flowCancelRequest
	if err := decodeBody(w, r, a.maxControl, &req, true); err != nil {
		return err
	}
	if req.ID != "" {
		bodyID, err := model.ParseFlowID(req.ID)
		if err != nil || bodyID != id {
			return badRequest("the body's id " + strconv.Quote(req.ID) + " is not the path's " + strconv.Quote(id.String()))
		}
	}
	policy, ok := model.ParseFlowCancelPolicy(req.Policy)
	if !ok {
		return &model.Error{Code: model.CodeInvalidInput, Field: "policy", Detail: "unknown or missing",
			Got: strconv.Quote(req.Policy), Want: `"flow_only", "cancel_all" or "cancel_pending"`}
	}
	cancelled, err := a.e.CancelFlow(r.Context(), id, policy, req.Reason)
	if err != nil {
		return err
	}
	out := make([]string, len(cancelled))
	for i, c := range cancelled {
		out[i] = c.String()
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id.String(), "cancelled": out})
	return nil
}

// deleteFlow is DELETE /v1/flows/{id}: a finished flow goes with all its
// members (Engine.DeleteFlow). The body is optional; an id in it must be
// the path's.
func (a *api) deleteFlow(w http.ResponseWriter, r *http.Request) error {
	id, err := flowPathID(r)
	if err != nil {
		return err
	}
	var req struct {
		ID string `json:"id"`
	}
	if err := decodeBody(w, r, a.maxControl, &req, false); err != nil {
		return err
	}
	if req.ID != "" {
		bodyID, err := model.ParseFlowID(req.ID)
		if err != nil || bodyID != id {
			return badRequest("the body's id " + strconv.Quote(req.ID) + " is not the path's " + strconv.Quote(id.String()))
		}
	}
	if err := a.e.DeleteFlow(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id.String()})
	return nil
}
