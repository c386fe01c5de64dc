package httpapi

import (
	"net/http"
	"strconv"

	"github.com/flowfabric/flowfabric/model"
)

// Tags after submission: GET and PATCH /v1/executions/{id}/tags and
// /v1/flows/{id}/tags (Engine.Tags, SetTags, FlowTags, SetFlowTags).

// tagsRequest is the body of PATCH .../tags: the keys to set and the keys
// to remove; "id" may repeat the path's.
type tagsRequest struct {
	ID     string            `json:"id"`
	Set    map[string]string `json:"set"`
	Remove []string          `json:"remove"`
}

// tagsResponse is the answer of both routes: the full tag set (after the
// change, for PATCH).
type tagsResponse struct {
	ID   string            `json:"id"`
	Tags map[string]string `json:"tags"`
}

func writeTags(w http.ResponseWriter, id string, tags map[string]string) {
	if tags == nil {
		tags = map[string]string{}
	}
	writeJSON(w, http.StatusOK, tagsResponse{ID: id, Tags: tags})
}

// decodeTags decodes a PATCH body (required), checking that its id, if
// any, is the path's (same(bodyID) reports that).
func (a *api) decodeTags(w http.ResponseWriter, r *http.Request, path string, same func(string) bool) (*tagsRequest, error) {
	var req tagsRequest
	if err := decodeBody(w, r, a.maxControl, &req, true); err != nil {
		return nil, err
	}
	if req.ID != "" && !same(req.ID) {
		return nil, badRequest("the body's id " + strconv.Quote(req.ID) + " is not the path's " + strconv.Quote(path))
	}
	return &req, nil
}

func (a *api) executionTags(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	tags, err := a.e.Tags(r.Context(), id)
	if err != nil {
		return err
	}
	writeTags(w, id.String(), tags)
	return nil
}

func (a *api) setExecutionTags(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	req, err := a.decodeTags(w, r, id.String(), func(s string) bool {
		b, err := parseExecutionID("body id", s)
		return err == nil && b == id
	})
	if err != nil {
		return err
	}
	tags, err := a.e.SetTags(r.Context(), id, req.Set, req.Remove...)
	if err != nil {
		return err
	}
	writeTags(w, id.String(), tags)
	return nil
}

func (a *api) flowTags(w http.ResponseWriter, r *http.Request) error {
	id, err := flowPathID(r)
	if err != nil {
		return err
	}
	tags, err := a.e.FlowTags(r.Context(), id)
	if err != nil {
		return err
	}
	writeTags(w, id.String(), tags)
	return nil
}

func (a *api) setFlowTags(w http.ResponseWriter, r *http.Request) error {
	id, err := flowPathID(r)
	if err != nil {
		return err
	}
	req, err := a.decodeTags(w, r, id.String(), func(s string) bool {
		b, err := model.ParseFlowID(s)
		return err == nil && b == id
	})
	if err != nil {
		return err
	}
	tags, err := a.e.SetFlowTags(r.Context(), id, req.Set, req.Remove...)
	if err != nil {
		return err
	}
	writeTags(w, id.String(), tags)
	return nil
}
