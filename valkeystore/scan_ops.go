package valkeystore

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// ExecutionPromoteDelayed implements model.ScanStore.
func (s *Store) ExecutionPromoteDelayed(ctx context.Context, p *model.ExecutionPromoteDelayedParams) (*model.ExecutionPromoteDelayedResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionPromoteDelayed, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "lane": p.Lane, "force": p.Force,
	})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionPromoteDelayedResult{Outcome: enum(r, "status", false, model.ParsePromoteOutcome)}
	return res, r.err()
}

// PartitionDue implements model.ScanStore.
func (s *Store) PartitionDue(ctx context.Context, p *model.PartitionDueParams) (*model.PartitionDueResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptPartitionDue, s.keys.suspKeys(p.Partition), args{})
	if err != nil {
		return nil, err
	}
	res := &model.PartitionDueResult{
		LeaseExpiry:         r.optTime("lease_expiry"),
		AttemptTimeout:      r.optTime("attempt_timeout"),
		ExecutionDeadline:   r.optTime("deadline"),
		Delayed:             r.optTime("delayed"),
		SuspensionTimeout:   r.optTime("suspension_timeout"),
		WaitpointExpiry:     r.optTime("waitpoint_expiry"),
		Retention:           r.optTime("retention"),
		RouteBlocked:        r.bool("route_blocked"),
		AdmissionBlocked:    r.bool("admission_blocked"),
		QuotaReleasePending: r.bool("quota_release_pending"),
		Executions:          r.int("executions"),
	}
	return res, r.err()
}

// IndexScanDue implements model.ScanStore. The script returns up to
// Limit+1 due entries of each index it reads (one per lane for the delayed
// index); they are merged here in (due, id, lane) order.
func (s *Store) IndexScanDue(ctx context.Context, p *model.IndexScanDueParams) (*model.IndexScanDueResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	a := filterArgs(args{"now": p.Now, "index": p.Index.String(), "limit": p.Limit, "after_due": int64(0), "after_id": ""}, p.Filter)
	if p.After != nil {
		a["after_due"] = p.After.DueAt
		a["after_id"] = p.After.ID
	}
	r, err := s.run(ctx, scriptIndexScanDue, s.keys.suspKeys(p.Partition), a)
	if err != nil {
		return nil, err
	}
	type cand struct {
		id   model.ExecutionID
		lane model.LaneID
		due  int64
	}
	var due []cand
	for _, row := range r.rows("items", 3) {
		id, perr := model.ParseExecutionID(row[0])
		d, derr := strconv.ParseInt(row[2], 10, 64)
		if perr != nil || derr != nil {
			r.fail("items: malformed entry %q", row)
			break
		}
		due = append(due, cand{id: id, lane: model.LaneID(row[1]), due: d})
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	slices.SortFunc(due, func(a, b cand) int {
		if c := cmp.Compare(a.due, b.due); c != 0 {
			return c
		}
		ua, ub := a.id.UUID(), b.id.UUID()
		if c := bytes.Compare(ua[:], ub[:]); c != 0 {
			return c
		}
		return strings.Compare(string(a.lane), string(b.lane))
	})
	res := &model.IndexScanDueResult{NextDueAt: r.time("next_due")}
	if len(due) > p.Limit {
		due = due[:p.Limit]
		res.More = true
	}
	unmatched := make(map[string]bool)
	for _, id := range r.strs("unmatched") {
		unmatched[id] = true
	}
	for _, c := range due {
		if len(unmatched) > 0 && unmatched[c.id.String()] {
			continue // examined, left out by the filter: LastSeen passes it
		}
		res.Items = append(res.Items, model.DueItem{ID: c.id, Lane: c.lane, DueAt: model.FromMillis(c.due)})
	}
	if len(due) > 0 {
		last := due[len(due)-1]
		res.LastSeen = &model.DueCursor{ID: last.id, DueAt: model.FromMillis(last.due)}
	}
	return res, r.err()
}

// RouteUnblock implements model.ScanStore.
func (s *Store) RouteUnblock(ctx context.Context, p *model.RouteUnblockParams) (*model.RouteUnblockResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptRouteUnblock, s.keys.partKeys(p.Partition), filterArgs(args{
		"now": p.Now, "namespace": p.Namespace, "live": normCaps("live", p.Live), "all": p.All, "limit": p.Limit,
	}, p.Filter))
	if err != nil {
		return nil, err
	}
	res := &model.RouteUnblockResult{More: r.bool("more")}
	res.Unblocked = append(res.Unblocked, r.execIDs("unblocked")...)
	return res, r.err()
}

// filterArgs adds a model.ScannerFilter's arguments (all "" for the zero
// filter).
func filterArgs(a args, f model.ScannerFilter) args {
	a["filter_namespace"] = f.Namespace
	a["filter_tag_key"] = f.TagKey
	a["filter_tag_value"] = f.TagValue
	return a
}
