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

// Quota policies (model.AdmissionStore): one script per operation on the
// policy's partition {q:K} (lua/quota_*.lua, lua/lib/quota.lua).

// QuotaCreate implements model.AdmissionStore.
func (s *Store) QuotaCreate(ctx context.Context, p *model.QuotaCreateParams) (*model.QuotaCreateResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptQuotaCreate, s.keys.quotaKeys(s.cfg, p.ID), args{
		"now": p.Now, "id": p.ID, "rate": p.Rate, "window": p.Window, "jitter": p.Jitter, "concurrency": p.Concurrency,
	})
	if err != nil {
		return nil, err
	}
	res := &model.QuotaCreateResult{Created: r.bool("created")}
	return res, r.err()
}

// QuotaAdmit implements model.AdmissionStore.
func (s *Store) QuotaAdmit(ctx context.Context, p *model.QuotaAdmitParams) (*model.QuotaAdmitResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptQuotaAdmit, s.keys.quotaKeys(s.cfg, p.ID), args{
		"now": p.Now, "id": p.ID, "key": p.Key, "execution": p.Execution, "token": p.Token, "jitter": p.Jitter,
	})
	if err != nil {
		return nil, err
	}
	res := &model.QuotaAdmitResult{
		Outcome:    outcomeNamed[model.QuotaOutcome](r, "outcome"),
		RetryAfter: r.ms("retry_after"),
		InWindow:   r.int("in_window"),
		Active:     r.int("active"),
	}
	return res, r.err()
}

// QuotaRelease implements model.AdmissionStore.
func (s *Store) QuotaRelease(ctx context.Context, p *model.QuotaReleaseParams) (*model.QuotaReleaseResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptQuotaRelease, s.keys.quotaKeys(s.cfg, p.ID), args{
		"now": p.Now, "id": p.ID, "key": p.Key, "execution": p.Execution, "token": p.Token,
	})
	if err != nil {
		return nil, err
	}
	res := &model.QuotaReleaseResult{Released: r.bool("released")}
	return res, r.err()
}

// QuotaStatus implements model.AdmissionStore.
func (s *Store) QuotaStatus(ctx context.Context, p *model.QuotaStatusParams) (*model.QuotaStatus, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptQuotaStatus, s.keys.quotaKeys(s.cfg, p.ID), args{"now": p.Now, "key": p.Key})
	if err != nil {
		return nil, err
	}
	st := &model.QuotaStatus{
		ID:          p.ID,
		Key:         p.Key,
		Rate:        r.int("rate"),
		Window:      r.ms("window"),
		Jitter:      r.ms("jitter"),
		Concurrency: r.int("concurrency"),
		CreatedAt:   r.time("created_at"),
		InWindow:    r.int("in_window"),
		Active:      r.int("active"),
		RetryAfter:  r.ms("retry_after"),
	}
	free := -1
	if st.Rate > 0 {
		free = st.Rate - st.InWindow
	}
	if st.Concurrency > 0 && (free < 0 || st.Concurrency-st.Active < free) {
		free = st.Concurrency - st.Active
	}
	st.Free = max(0, free)
	return st, r.err()
}

// QuotaReconcile implements model.AdmissionStore. The script reports the
// stale admissions bucket by bucket; they are ordered by (policy, key,
// execution) and cut to Limit here.
func (s *Store) QuotaReconcile(ctx context.Context, p *model.QuotaReconcileParams) (*model.QuotaReconcileResult, error) {
	if err := p.Validate(s.cfg); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptQuotaReconcile, s.keys.quotaPartKeys(p.Partition), args{
		"now": p.Now, "stale_before": p.StaleBefore, "limit": p.Limit,
	})
	if err != nil {
		return nil, err
	}
	res := &model.QuotaReconcileResult{Trimmed: r.int("trimmed"), Buckets: r.int("buckets")}
	for _, row := range r.rows("stale", 5) {
		id, err1 := model.ParseUUID(row[0])
		ex, err2 := model.ParseExecutionID(row[2])
		at, err3 := strconv.ParseInt(row[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			r.fail("stale: malformed row %q", row)
			break
		}
		res.Stale = append(res.Stale, model.QuotaAdmission{
			ID: model.QuotaID(id), Key: row[1], Execution: ex, Token: row[3], AdmittedAt: model.FromMillis(at),
		})
	}
	slices.SortFunc(res.Stale, func(a, b model.QuotaAdmission) int {
		if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
			return c
		}
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.Execution.String(), b.Execution.String())
	})
	if len(res.Stale) > p.Limit {
		res.Stale, res.More = res.Stale[:p.Limit], true
	}
	return res, r.err()
}
