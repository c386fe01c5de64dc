package valkeystore

import (
	"context"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// ClaimGrantIssue implements model.ClaimStore.
func (s *Store) ClaimGrantIssue(ctx context.Context, p *model.ClaimGrantIssueParams) (*model.ClaimGrantIssueResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptClaimGrantIssue, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "worker_id": p.WorkerID, "worker_instance_id": p.WorkerInstanceID,
		"capabilities": normCaps("capabilities", p.Capabilities), "grant_ttl": p.GrantTTL,
	})
	if err != nil {
		return nil, err
	}
	res := &model.ClaimGrantIssueResult{ExpiresAt: r.time("expires_at")}
	return res, r.err()
}

// ExecutionClaim implements model.ClaimStore.
func (s *Store) ExecutionClaim(ctx context.Context, p *model.ExecutionClaimParams) (*model.ClaimResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionClaim, s.keys.execKeys(p.ID), leaseArgs(args{
		"now": p.Now, "id": p.ID, "capabilities": normCaps("capabilities", p.Capabilities),
		"admission_token": p.AdmissionToken,
	}, &p.LeaseRequest))
	if err != nil {
		return nil, err
	}
	res := claimResult(r)
	return res, r.err()
}

// ExecutionGrantAndClaim implements model.ClaimStore.
func (s *Store) ExecutionGrantAndClaim(ctx context.Context, p *model.ExecutionGrantAndClaimParams) (*model.ClaimResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionGrantAndClaim, s.keys.execKeys(p.ID), leaseArgs(args{
		"now": p.Now, "id": p.ID, "capabilities": normCaps("capabilities", p.Capabilities),
		"admission_token": p.AdmissionToken,
	}, &p.LeaseRequest))
	if err != nil {
		return nil, err
	}
	res := claimResult(r)
	return res, r.err()
}

// ExecutionClaimNext implements model.ClaimStore.
func (s *Store) ExecutionClaimNext(ctx context.Context, p *model.ExecutionClaimNextParams) (*model.ExecutionClaimNextResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	if p.Inline != nil && !s.InlineAdmission() {
		return nil, model.InlineUnsupported("Inline")
	}
	r, err := s.run(ctx, scriptExecutionClaimNext, s.keys.partKeys(p.Partition), leaseArgs(args{
		"now":                 p.Now,
		"lane":                p.Lane,
		"namespace":           p.Namespace,
		"capabilities":        normCaps("capabilities", p.Capabilities),
		"live_capabilities":   normCaps("live_capabilities", p.LiveCapabilities),
		"scan_limit":          p.ScanLimit,
		"admission_grant_ttl": admissionGrantTTL(p.AdmissionGrantTTL),
		"inline":              s.inlineArg(p.Inline),
	}, &p.LeaseRequest))
	if err != nil {
		return nil, err
	}
	res := claimNextResult(r)
	return res, r.err()
}

// InlineAdmission implements model.InlineAdmitter: a standalone server
// (one node holds every slot) admits inline; a cluster does not, as a
// budget's or a quota's partition is on another slot than the execution.
func (s *Store) InlineAdmission() bool {
	return s.client.Mode() != valkey.ClientModeCluster
}

// inlineArg is a's argument for the library's inline_parse: one line per
// budget ("b", id, budget key) and per quota policy ("q", id, policy key,
// buckets key), tab-separated ("" for nil). A prefix holds no control
// character (New), nor does a key built from it.
func (s *Store) inlineArg(a *model.InlineAdmission) string {
	if a == nil {
		return ""
	}
	var b strings.Builder
	for _, id := range a.Budgets {
		b.WriteString("b\t" + id.String() + "\t" + s.keys.budgetKeys(s.cfg, id)["budget"] + "\n")
	}
	for _, id := range a.Quotas {
		k := s.keys.quotaKeys(s.cfg, id)
		b.WriteString("q\t" + id.String() + "\t" + k["quota"] + "\t" + k["buckets"] + "\n")
	}
	return b.String()
}

// admissionGrantTTL is the grant claim-next issues on a head that needs
// admission (0: the default).
func admissionGrantTTL(d time.Duration) time.Duration {
	if d == 0 {
		return model.DefaultAdmissionGrantTTL
	}
	return d
}

// claimNextResult decodes the reply of the library's claim_next: a claimed
// execution's fields are at the same level, with claimed = 1, and so are a
// granted admission candidate's, with admit = 1.
func claimNextResult(r *reply) *model.ExecutionClaimNextResult {
	res := &model.ExecutionClaimNextResult{Skipped: r.int("skipped"), Paused: r.has("paused")}
	res.Blocked = append(res.Blocked, r.execIDs("blocked")...)
	if r.has("claimed") {
		res.Claimed = claimResult(r)
	}
	if r.has("admit") {
		res.Admit = &model.AdmissionCandidate{
			ID:             r.execID("admit_id"),
			Budgets:        parseBudgets(r, r.str("admit_budgets")),
			Quota:          model.QuotaID(r.uuid("admit_quota")),
			QuotaKey:       r.str("admit_quota_key"),
			GrantExpiresAt: r.time("admit_expires_at"),
		}
	}
	return res
}

// parseBudgets reads an execution's budgets CSV ("": nil).
func parseBudgets(r *reply, csv string) []model.BudgetID {
	var out []model.BudgetID
	for _, s := range splitCSV(csv) {
		u, err := model.ParseUUID(s)
		if err != nil {
			r.fail("budgets: malformed id %q", s)
			return nil
		}
		out = append(out, model.BudgetID(u))
	}
	return out
}

// ExecutionBlock implements model.ClaimStore.
func (s *Store) ExecutionBlock(ctx context.Context, p *model.ExecutionBlockParams) (*model.ExecutionBlockResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptExecutionBlock, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "reason": p.Reason.String(), "detail": p.Detail, "budget": p.Budget.String(),
	})
	if err != nil {
		return nil, err
	}
	res := &model.ExecutionBlockResult{
		EligibilityState: enum(r, "eligibility_state", false, model.ParseEligibilityState),
	}
	return res, r.err()
}

// ExecutionUnblock implements model.ClaimStore.
func (s *Store) ExecutionUnblock(ctx context.Context, p *model.ExecutionUnblockParams) (*model.ExecutionUnblockResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	_, err := s.run(ctx, scriptExecutionUnblock, s.keys.execKeys(p.ID), args{
		"now": p.Now, "id": p.ID, "expected_reason": p.ExpectedReason.String(),
	})
	if err != nil {
		return nil, err
	}
	return &model.ExecutionUnblockResult{}, nil
}
