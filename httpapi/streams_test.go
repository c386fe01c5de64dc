package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/flowfabrictest"
	"github.com/flowfabric/flowfabric/httpapi"
	"github.com/flowfabric/flowfabric/model"
)

// talker streams two text frames, one binary frame and a summary patch.
type talker struct{}

func (talker) Kind() string { return "talker" }

type streamPage struct {
	Frames []struct {
		Seq           uint64  `json:"seq"`
		Type          string  `json:"type"`
		Mode          string  `json:"mode"`
		Payload       *string `json:"payload"`
		PayloadBase64 string  `json:"payload_base64"`
	} `json:"frames"`
	Next         uint64 `json:"next"`
	LastSequence uint64 `json:"last_sequence"`
	Closed       bool   `json:"closed"`
	ClosedReason string `json:"closed_reason"`
	Done         bool   `json:"done"`
}

// Frames, a tail of a finished stream and the summary read over HTTP;
// binary payloads come as base64; bad queries are 400 naming the field;
// an attempt that does not exist is 404.
func TestStreamsOverHTTP(t *testing.T) {
	h := flowfabrictest.New(t, nil)
	w := h.NewWorker(nil)
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[talker]) error {
		for _, p := range [][]byte{[]byte("hello"), []byte("wörld"), {0xff, 0xfe}} {
			if _, err := t.AppendFrame(ctx, "chunk", p, nil); err != nil {
				return err
			}
		}
		_, err := t.PatchSummary(ctx, []byte(`{"lines":3}`))
		return err
	}))
	h.StartWorker(w)
	c := newClient(t, h.Engine, nil)
	s := ok[submitted](c, http.StatusCreated, "POST", "/v1/executions", `{"kind":"talker","payload":{}}`)
	id, err := model.ParseExecutionID(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitTerminal(id)

	base := "/v1/executions/" + s.ID + "/attempts/0/"
	p := ok[streamPage](c, http.StatusOK, "GET", base+"stream?limit=2", "")
	if len(p.Frames) != 2 || *p.Frames[1].Payload != "wörld" || p.Next != 2 || p.LastSequence != 4 || !p.Closed || p.Done {
		t.Fatalf("first page: %+v", p)
	}
	p = ok[streamPage](c, http.StatusOK, "GET", base+"stream/tail?after=2&wait_ms=0", "")
	if len(p.Frames) != 2 || p.Frames[0].Payload != nil || p.Frames[0].PayloadBase64 != "//4=" || p.Frames[1].Mode != "summary" ||
		!p.Done || p.ClosedReason != "ended_success" {
		t.Fatalf("tail: %+v", p)
	}
	sum := ok[struct {
		Document map[string]int `json:"document"`
		Version  uint64         `json:"version"`
	}](c, http.StatusOK, "GET", base+"summary", "")
	if sum.Version != 1 || sum.Document["lines"] != 3 {
		t.Fatalf("summary: %+v", sum)
	}
	c.fails(http.StatusBadRequest, "invalid_input", "GET", base+"stream?limit=1001", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", base+"stream?after=-1", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", base+"stream?exclude_best_effort=maybe", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", base+"stream/tail?wait_ms=30001", "")
	c.fails(http.StatusBadRequest, "invalid_input", "GET", "/v1/executions/"+s.ID+"/attempts/x/stream", "")
	c.fails(http.StatusNotFound, "attempt_not_found", "GET", "/v1/executions/"+s.ID+"/attempts/1/stream", "")
	c.fails(http.StatusNotFound, "attempt_not_found", "GET", "/v1/executions/"+s.ID+"/attempts/1/summary", "")
	_ = httpapi.DefaultMaxTails
}
