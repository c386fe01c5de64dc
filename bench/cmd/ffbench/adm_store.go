package main

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// admCountingStore is a countingStore that also forwards (and counts) the
// wrapped store's model.AdmissionStore: the engine finds budgets and
// quotas by a type assertion on the store it is given, which an embedded
// model.Store alone would hide.
type admCountingStore struct {
	*countingStore
	as model.AdmissionStore
	bl model.Blocker
}

func newAdmCountingStore(c *countingStore, as model.AdmissionStore, bl model.Blocker) *admCountingStore {
	return &admCountingStore{countingStore: c, as: as, bl: bl}
}

// ExecutionBlock is how the claim path blocks an execution on a budget
// or a quota (claim.AdmissionStore).
func (c *admCountingStore) ExecutionBlock(ctx context.Context, p *model.ExecutionBlockParams) (*model.ExecutionBlockResult, error) {
	return counted(c.countingStore, "ExecutionBlock", c.bl.ExecutionBlock, ctx, p)
}

func (c *admCountingStore) ExecutionUnblock(ctx context.Context, p *model.ExecutionUnblockParams) (*model.ExecutionUnblockResult, error) {
	return counted(c.countingStore, "ExecutionUnblock", c.bl.ExecutionUnblock, ctx, p)
}

// InlineAdmission forwards the wrapped store's model.InlineAdmitter, so
// the engine admits inline where the store can.
func (c *admCountingStore) InlineAdmission() bool {
	ia, ok := c.as.(model.InlineAdmitter)
	return ok && ia.InlineAdmission()
}

func counted[P, R any](c *countingStore, name string, f func(context.Context, P) (R, error), ctx context.Context, p P) (R, error) {
	c.count(name)
	return f(ctx, p)
}

var (
	_ model.AdmissionStore = (*admCountingStore)(nil)
	_ model.Blocker        = (*admCountingStore)(nil)
)

func (c *admCountingStore) BudgetCreate(ctx context.Context, p *model.BudgetCreateParams) (*model.BudgetCreateResult, error) {
	return counted(c.countingStore, "BudgetCreate", c.as.BudgetCreate, ctx, p)
}

func (c *admCountingStore) BudgetReport(ctx context.Context, p *model.BudgetReportParams) (*model.BudgetReportResult, error) {
	return counted(c.countingStore, "BudgetReport", c.as.BudgetReport, ctx, p)
}

func (c *admCountingStore) BudgetRelease(ctx context.Context, p *model.BudgetReleaseParams) (*model.BudgetReleaseResult, error) {
	return counted(c.countingStore, "BudgetRelease", c.as.BudgetRelease, ctx, p)
}

func (c *admCountingStore) BudgetReset(ctx context.Context, p *model.BudgetResetParams) (*model.BudgetResetResult, error) {
	return counted(c.countingStore, "BudgetReset", c.as.BudgetReset, ctx, p)
}

func (c *admCountingStore) BudgetResetDue(ctx context.Context, p *model.BudgetResetDueParams) (*model.BudgetResetDueResult, error) {
	return counted(c.countingStore, "BudgetResetDue", c.as.BudgetResetDue, ctx, p)
}

func (c *admCountingStore) BudgetReconcile(ctx context.Context, p *model.BudgetReconcileParams) (*model.BudgetReconcileResult, error) {
	return counted(c.countingStore, "BudgetReconcile", c.as.BudgetReconcile, ctx, p)
}

func (c *admCountingStore) BudgetStatus(ctx context.Context, p *model.BudgetStatusParams) (*model.BudgetStatus, error) {
	return counted(c.countingStore, "BudgetStatus", c.as.BudgetStatus, ctx, p)
}

func (c *admCountingStore) QuotaCreate(ctx context.Context, p *model.QuotaCreateParams) (*model.QuotaCreateResult, error) {
	return counted(c.countingStore, "QuotaCreate", c.as.QuotaCreate, ctx, p)
}

func (c *admCountingStore) QuotaAdmit(ctx context.Context, p *model.QuotaAdmitParams) (*model.QuotaAdmitResult, error) {
	return counted(c.countingStore, "QuotaAdmit", c.as.QuotaAdmit, ctx, p)
}

func (c *admCountingStore) QuotaRelease(ctx context.Context, p *model.QuotaReleaseParams) (*model.QuotaReleaseResult, error) {
	return counted(c.countingStore, "QuotaRelease", c.as.QuotaRelease, ctx, p)
}

func (c *admCountingStore) QuotaStatus(ctx context.Context, p *model.QuotaStatusParams) (*model.QuotaStatus, error) {
	return counted(c.countingStore, "QuotaStatus", c.as.QuotaStatus, ctx, p)
}

func (c *admCountingStore) QuotaReconcile(ctx context.Context, p *model.QuotaReconcileParams) (*model.QuotaReconcileResult, error) {
	return counted(c.countingStore, "QuotaReconcile", c.as.QuotaReconcile, ctx, p)
}

func (c *admCountingStore) AdmissionBlocked(ctx context.Context, p *model.AdmissionBlockedParams) (*model.AdmissionBlockedResult, error) {
	return counted(c.countingStore, "AdmissionBlocked", c.as.AdmissionBlocked, ctx, p)
}

func (c *admCountingStore) AdmissionUnblock(ctx context.Context, p *model.AdmissionUnblockParams) (*model.AdmissionUnblockResult, error) {
	return counted(c.countingStore, "AdmissionUnblock", c.as.AdmissionUnblock, ctx, p)
}

func (c *admCountingStore) QuotaReleasePending(ctx context.Context, p *model.QuotaReleasePendingParams) (*model.QuotaReleasePendingResult, error) {
	return counted(c.countingStore, "QuotaReleasePending", c.as.QuotaReleasePending, ctx, p)
}

func (c *admCountingStore) QuotaReleaseAck(ctx context.Context, p *model.QuotaReleaseAckParams) (*model.QuotaReleaseAckResult, error) {
	return counted(c.countingStore, "QuotaReleaseAck", c.as.QuotaReleaseAck, ctx, p)
}
