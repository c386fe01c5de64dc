package flowfabric

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// FindOpts select executions across every partition. Set fields must
// all match; the zero value matches every execution.
type FindOpts struct {
	// Namespace, Lane and Kind, when set, must equal the execution's.
	Namespace Namespace
	Lane      LaneID
	Kind      Kind
	// States, when set, lists the public states accepted.
	States []PublicState
	// TagKey and TagValue, when TagKey is set, require that tag.
	TagKey, TagValue string
	// Cursor is the Next of the previous page ("": from the start).
	Cursor string
	// Limit bounds the executions a page lists (1–1000; 0: 100).
	Limit int
	// MaxExamined bounds the executions one call reads to find them
	// (1–100,000; 0: 10,000): a sparse filter returns a short (even empty)
	// page with a Next rather than reading the whole store in one call.
	MaxExamined int
}

// FindPage is one page of Find.
type FindPage struct {
	IDs []ExecutionID
	// Next is the cursor of the next page; "" once every partition was
	// read.
	Next string
	// Examined is how many executions the call read.
	Examined int
}

// Find lists the executions FindOpts match, across every partition, in
// partition then id order, with a cursor that stays valid as executions
// come and go (one created in a partition the pages have passed is not
// listed, one deleted before its page is not). Each call reads at most MaxExamined executions: the
// cost of a page is what it examines, not the store's size (see
// docs/ARCHITECTURE.md, "Inspector").
func (e *Engine) Find(ctx context.Context, opts *FindOpts) (*FindPage, error) {
	var o FindOpts
	if opts != nil {
		o = *opts
	}
	o.Limit = max(o.Limit, 0)
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.MaxExamined == 0 {
		o.MaxExamined = 10_000
	}
	if o.Limit > model.MaxPageSize {
		return nil, wrap("find", model.OutOfRange("Limit", o.Limit, "1.."+strconv.Itoa(model.MaxPageSize)+" (0: 100)"))
	}
	if o.MaxExamined < 1 || o.MaxExamined > 100_000 {
		return nil, wrap("find", model.OutOfRange("MaxExamined", o.MaxExamined, "1..100000 (0: 10000)"))
	}
	f := model.ListFilter{ScannerFilter: model.ScannerFilter{Namespace: o.Namespace, TagKey: o.TagKey, TagValue: o.TagValue},
		Lane: o.Lane, Kind: o.Kind, States: o.States}
	if err := f.Validate("FindOpts"); err != nil {
		return nil, wrap("find", err)
	}
	parts := e.Partitions()
	part, after, err := parseFindCursor(o.Cursor, parts)
	if err != nil {
		return nil, wrap("find", err)
	}
	page := &FindPage{}
	for part < parts && len(page.IDs) < o.Limit && page.Examined < o.MaxExamined {
		n := min(model.MaxPageSize, o.MaxExamined-page.Examined)
		r, err := e.store.ExecutionList(ctx, &model.ExecutionListParams{Partition: part, After: after, Limit: n, Filter: f})
		if err != nil {
			return nil, wrap("find", err)
		}
		page.Examined += r.Examined
		if room := o.Limit - len(page.IDs); len(r.IDs) > room {
			// the page fills inside this call: go on after its last id
			page.IDs = append(page.IDs, r.IDs[:room]...)
			after = r.IDs[room-1]
			break
		}
		page.IDs = append(page.IDs, r.IDs...)
		if r.Next.IsZero() {
			part, after = part+1, ExecutionID{}
		} else {
			after = r.Next
		}
	}
	if part < parts {
		page.Next = findCursor(part, after)
	}
	return page, nil
}

// findCursor is a Find cursor: "<partition>" to start a partition, or
// the last execution read.
func findCursor(part int, after ExecutionID) string {
	if after.IsZero() {
		return strconv.Itoa(part)
	}
	return after.String()
}

func parseFindCursor(s string, parts int) (int, ExecutionID, error) {
	if s == "" {
		return 0, ExecutionID{}, nil
	}
	bad := func() error {
		return &model.Error{Code: model.CodeInvalidInput, Field: "Cursor", Detail: "malformed cursor",
			Got: strconv.Quote(s), Want: "the Next of a previous page"}
	}
	if strings.HasPrefix(s, "{") {
		id, err := model.ParseExecutionID(s)
		if err != nil || id.Partition() >= parts {
			return 0, ExecutionID{}, bad()
		}
		return id.Partition(), id, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= parts || fmt.Sprint(n) != s {
		return 0, ExecutionID{}, bad()
	}
	return n, ExecutionID{}, nil
}
