package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// Event feeds: GET /v1/feeds/{feed} long-polls the completions or lease
// feed from a cursor the client keeps.

type eventView struct {
	Seq         uint64   `json:"seq"`
	Partition   int      `json:"partition"`
	At          jsonTime `json:"at"`
	Execution   string   `json:"execution"`
	Namespace   string   `json:"namespace,omitempty"`
	Lane        string   `json:"lane"`
	Kind        string   `json:"kind"`
	Flow        string   `json:"flow,omitempty"`
	Outcome     string   `json:"outcome,omitempty"`
	ResultBytes int      `json:"result_bytes,omitempty"`
	Lease       string   `json:"lease,omitempty"`
	Epoch       uint64   `json:"epoch,omitempty"`
	Attempt     *int     `json:"attempt,omitempty"`
	Instance    string   `json:"instance,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

type feedBehindView struct {
	Partition int    `json:"partition"`
	After     uint64 `json:"after"`
}

type feedPageView struct {
	Events []eventView      `json:"events"`
	Cursor string           `json:"cursor"`
	Behind []feedBehindView `json:"behind,omitempty"`
}

func viewFeedEvent(ev flowfabric.FeedEvent) eventView {
	v := eventView{Seq: ev.Seq, Partition: ev.Partition, At: jsonTime(ev.At), Execution: ev.Execution.String(),
		Namespace: string(ev.Namespace), Lane: string(ev.Lane), Kind: string(ev.Kind), ResultBytes: ev.ResultBytes,
		Lease: string(ev.Lease), Epoch: ev.Epoch, Instance: string(ev.Instance), Reason: ev.Reason}
	if !ev.Flow.IsZero() {
		v.Flow = ev.Flow.String()
	}
	if ev.Outcome != 0 {
		v.Outcome = ev.Outcome.String()
	}
	if ev.Lease != "" {
		a := ev.Attempt
		v.Attempt = &a
	}
	return v
}

// readFeed serves GET /v1/feeds/{feed}?cursor=&limit=&wait_ms=&lane=&kind=&namespace=.
func (a *api) readFeed(w http.ResponseWriter, r *http.Request) error {
	k := model.FeedKind(r.PathValue("feed"))
	if !k.Valid() {
		return model.OutOfRange("feed", strconv.Quote(string(k)), "completions or leases")
	}
	q := r.URL.Query()
	cur, err := flowfabric.ParseFeedCursor(q.Get("cursor"))
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100, 1, model.MaxFeedRead)
	if err != nil {
		return err
	}
	wait, err := queryInt(r, "wait_ms", 0, 0, int(maxHTTPTailWait/time.Millisecond))
	if err != nil {
		return err
	}
	f := &flowfabric.FeedFilter{Namespace: model.Namespace(q.Get("namespace"))}
	if l := q.Get("lane"); l != "" {
		f.Lanes = []flowfabric.LaneID{flowfabric.LaneID(l)}
	}
	if kd := q.Get("kind"); kd != "" {
		f.Kinds = []flowfabric.Kind{flowfabric.Kind(kd)}
	}
	if wait > 0 {
		select {
		case a.tails <- struct{}{}:
			defer func() { <-a.tails }()
		default:
			return &httpError{status: http.StatusTooManyRequests, kind: "too_many_tails",
				msg: "too many open waits (" + strconv.Itoa(cap(a.tails)) + "); retry later"}
		}
	}
	page, err := a.e.ReadFeed(r.Context(), &flowfabric.ReadFeedOpts{Feed: k, From: cur, Filter: f, Limit: limit,
		MaxWait: time.Duration(wait) * time.Millisecond})
	if err != nil {
		return err
	}
	out := feedPageView{Events: make([]eventView, len(page.Events)), Cursor: page.Cursor.String()}
	for i, ev := range page.Events {
		out.Events[i] = viewFeedEvent(ev)
	}
	for _, b := range page.Behind {
		out.Behind = append(out.Behind, feedBehindView{Partition: b.Partition, After: b.After})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
