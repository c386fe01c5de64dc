package valkeystore

import (
	"context"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// The execution partition's side of model.AdmissionStore: the blocked
// groups and the quota release outbox (lua/lib/admission.lua; keys.go).
// Budgets are in budget_ops.go, quota policies in quota_ops.go.

// AdmissionBlocked implements model.AdmissionStore.
func (s *Store) AdmissionBlocked(ctx context.Context, p *model.AdmissionBlockedParams) (*model.AdmissionBlockedResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptAdmissionBlocked, s.keys.partKeys(p.Partition), args{"limit": p.Limit})
	if err != nil {
		return nil, err
	}
	res := &model.AdmissionBlockedResult{More: r.bool("more")}
	for _, row := range r.rows("groups", 2) {
		g, ok := admissionGroup(row[0])
		n, err := strconv.Atoi(row[1])
		if !ok || err != nil {
			r.fail("groups: malformed row %q", row)
			break
		}
		g.Count = n
		res.Groups = append(res.Groups, g)
	}
	return res, r.err()
}

// admissionGroup reads an I:adm_groups member: "<lane>\tb\t<budget>" or
// "<lane>\tq\t<quota>\t<key>".
func admissionGroup(m string) (model.AdmissionGroup, bool) {
	lane, rest, ok := strings.Cut(m, "\t")
	if !ok {
		return model.AdmissionGroup{}, false
	}
	g := model.AdmissionGroup{Lane: model.LaneID(lane)}
	switch kind, id, _ := strings.Cut(rest, "\t"); kind {
	case "b":
		u, err := model.ParseUUID(id)
		if err != nil {
			return g, false
		}
		g.Reason, g.Budget = model.WaitingForBudget, model.BudgetID(u)
	case "q":
		q, key, ok := strings.Cut(id, "\t")
		u, err := model.ParseUUID(q)
		if !ok || err != nil {
			return g, false
		}
		g.Reason, g.Quota, g.QuotaKey = model.WaitingForQuota, model.QuotaID(u), key
	default:
		return g, false
	}
	return g, true
}

// AdmissionUnblock implements model.AdmissionStore.
func (s *Store) AdmissionUnblock(ctx context.Context, p *model.AdmissionUnblockParams) (*model.AdmissionUnblockResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	var quotas strings.Builder
	for _, q := range p.Quotas {
		netstring(&quotas, q.ID.String())
		netstring(&quotas, q.Key)
		netstring(&quotas, strconv.Itoa(q.Max))
	}
	r, err := s.run(ctx, scriptAdmissionUnblock, s.keys.partKeys(p.Partition), filterArgs(args{
		"now": p.Now, "budgets": budgetsCSV(p.Budgets), "quotas": quotas.String(), "limit": p.Limit,
	}, p.Filter))
	if err != nil {
		return nil, err
	}
	res := &model.AdmissionUnblockResult{More: r.bool("more")}
	res.Unblocked = append(res.Unblocked, r.execIDs("unblocked")...)
	return res, r.err()
}

// QuotaReleasePending implements model.AdmissionStore.
func (s *Store) QuotaReleasePending(ctx context.Context, p *model.QuotaReleasePendingParams) (*model.QuotaReleasePendingResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptQuotaReleasePending, s.keys.partKeys(p.Partition), args{"limit": p.Limit})
	if err != nil {
		return nil, err
	}
	res := &model.QuotaReleasePendingResult{More: r.bool("more")}
	for _, row := range r.rows("items", 5) {
		ex, err1 := model.ParseExecutionID(row[0])
		var q model.UUID
		var err2 error
		if row[2] != "" {
			q, err2 = model.ParseUUID(row[2])
		}
		at, err3 := strconv.ParseInt(row[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			r.fail("items: malformed row %q", row)
			break
		}
		res.Items = append(res.Items, model.QuotaHold{
			Execution: ex, Token: row[1], Quota: model.QuotaID(q), Key: row[3], At: model.FromMillis(at),
		})
	}
	return res, r.err()
}

// QuotaReleaseAck implements model.AdmissionStore.
func (s *Store) QuotaReleaseAck(ctx context.Context, p *model.QuotaReleaseAckParams) (*model.QuotaReleaseAckResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	var items strings.Builder
	for _, it := range p.Items {
		netstring(&items, it.Execution.String())
		netstring(&items, it.Token)
	}
	r, err := s.run(ctx, scriptQuotaReleaseAck, s.keys.partKeys(p.Partition), args{"items": items.String()})
	if err != nil {
		return nil, err
	}
	res := &model.QuotaReleaseAckResult{Acked: r.int("acked")}
	return res, r.err()
}
