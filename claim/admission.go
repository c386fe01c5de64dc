package claim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// AdmissionStore is the part of model.AdmissionStore (and model.Blocker)
// the scheduler uses to admit executions that have budgets or a quota
// (engine.md §2 steps 5–7). A store without it never returns admission
// candidates.
type AdmissionStore interface {
	BudgetStatus(ctx context.Context, p *model.BudgetStatusParams) (*model.BudgetStatus, error)
	QuotaStatus(ctx context.Context, p *model.QuotaStatusParams) (*model.QuotaStatus, error)
	QuotaAdmit(ctx context.Context, p *model.QuotaAdmitParams) (*model.QuotaAdmitResult, error)
	QuotaRelease(ctx context.Context, p *model.QuotaReleaseParams) (*model.QuotaReleaseResult, error)
	ExecutionBlock(ctx context.Context, p *model.ExecutionBlockParams) (*model.ExecutionBlockResult, error)
}

// AdmissionBlock is an execution the claim path blocked on a budget or a
// quota, for the unblock scanner: RetryAt, when set, is when a rate
// refusal's window frees a slot.
type AdmissionBlock struct {
	ID      model.ExecutionID
	Reason  model.BlockingReason
	RetryAt time.Time
}

// admission is one claim call's admission state: budgets are read once
// per call (the seeds' per-call cache) and a read error aborts the call
// (fail-closed, engine.md §9 bug 1).
type admission struct {
	budgets map[model.BudgetID]*model.BudgetStatus // nil entry: budget not found
}

// jitterCache remembers each quota policy's jitter (policies never
// change: a create with another definition is refused).
type jitterCache struct {
	mu sync.Mutex
	m  map[model.QuotaID]time.Duration
}

func (c *jitterCache) get(q model.QuotaID) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.m[q]
	return j, ok
}

func (c *jitterCache) put(q model.QuotaID, j time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[model.QuotaID]time.Duration)
	}
	c.m[q] = j
}

// errNoAdmissionStore is returned when a store hands out an admission
// candidate without implementing AdmissionStore (a broken store).
var errNoAdmissionStore = errors.New("claim: the store returned an admission candidate but does not implement claim.AdmissionStore")

// Admit runs admission for a head the store granted to the worker
// (ExecutionClaimNextResult.Admit) and claims it: each budget is read
// (one read per budget per call) and an exhausted or missing one blocks
// the execution on it; the quota bucket admits it or the execution is
// blocked on the quota; then the grant is claimed with the admission's
// token. It returns the claim, or nil when the execution was blocked or
// lost to a race (out records blocks). A budget or quota read error is
// returned and nothing is claimed (fail-closed); an admission whose claim
// fails is released.
func (s *Scheduler) Admit(ctx context.Context, req *Request, c *model.AdmissionCandidate, out *Outcome) (*model.ClaimResult, error) {
	return s.admit(ctx, req, c, &admission{}, out)
}

func (s *Scheduler) admit(ctx context.Context, req *Request, c *model.AdmissionCandidate, a *admission, out *Outcome) (*model.ClaimResult, error) {
	if s.adm == nil {
		return nil, errNoAdmissionStore
	}
	now := s.clock.Now()
	for _, b := range c.Budgets {
		st, ok := a.budgets[b]
		if !ok {
			var err error
			st, err = s.adm.BudgetStatus(ctx, &model.BudgetStatusParams{ID: b, Now: now})
			if errors.Is(err, model.ErrBudgetNotFound) {
				st, err = nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("claim: reading budget %s of %s (the execution stays unclaimed): %w", b, c.ID, err)
			}
			if a.budgets == nil {
				a.budgets = make(map[model.BudgetID]*model.BudgetStatus)
			}
			a.budgets[b] = st
		}
		detail := ""
		switch {
		case st == nil:
			detail = "budget " + b.String() + " does not exist"
		case st.Exhausted != "":
			detail = "budget " + b.String() + " exhausted: " + st.Exhausted
		default:
			continue
		}
		return nil, s.block(ctx, c.ID, model.WaitingForBudget, b, detail, time.Time{}, out)
	}
	leaseID, attemptID := req.NewIDs()
	token := ""
	var outcome model.QuotaOutcome
	if !model.UUID(c.Quota).IsZero() {
		token = leaseID.String()
		jitter, err := s.jitter(ctx, c, now)
		if errors.Is(err, model.ErrQuotaNotFound) {
			return nil, s.block(ctx, c.ID, model.WaitingForQuota, model.BudgetID{}, quotaMissing(c), time.Time{}, out)
		}
		if err != nil {
			return nil, err
		}
		// the admission's own time, not the call's start: the budget and
		// jitter reads may have taken long (a stalled claimer), and a
		// window trimmed at a later Now no longer holds the entries an
		// earlier Now would count (the simulator's seed 963)
		now = s.clock.Now()
		r, err := s.adm.QuotaAdmit(ctx, &model.QuotaAdmitParams{
			ID: c.Quota, Key: c.QuotaKey, Execution: c.ID, Token: token, Jitter: jitter, Now: now,
		})
		if errors.Is(err, model.ErrQuotaNotFound) {
			return nil, s.block(ctx, c.ID, model.WaitingForQuota, model.BudgetID{}, quotaMissing(c), time.Time{}, out)
		}
		if err != nil {
			return nil, fmt.Errorf("claim: admitting %s to quota %s (the execution stays unclaimed): %w", c.ID, c.Quota, err)
		}
		outcome = r.Outcome
		switch r.Outcome {
		case model.QuotaRateExceeded:
			return nil, s.block(ctx, c.ID, model.WaitingForQuota, model.BudgetID{},
				"quota "+c.Quota.String()+" rate exceeded; retry after "+r.RetryAfter.String(), now.Add(r.RetryAfter), out)
		case model.QuotaConcurrencyExceeded:
			return nil, s.block(ctx, c.ID, model.WaitingForQuota, model.BudgetID{},
				"quota "+c.Quota.String()+" concurrency exceeded", time.Time{}, out)
		}
	}
	res, err := s.store.ExecutionClaim(ctx, &model.ExecutionClaimParams{
		ID: c.ID, Capabilities: req.Capabilities, AdmissionToken: token,
		LeaseRequest: model.LeaseRequest{
			WorkerID: req.WorkerID, WorkerInstanceID: req.WorkerInstanceID,
			LeaseID: leaseID, AttemptID: attemptID, LeaseTTL: req.LeaseTTL,
		},
		Now: s.clock.Now(),
	})
	if err != nil {
		if token != "" {
			s.undoAdmission(ctx, c, token, outcome)
		}
		var me *model.Error
		if errors.As(err, &me) && (me.Retryable() || me.Code == model.CodeExecutionNotEligible) {
			out.Skipped++ // lost to a race (the grant lapsed, the execution moved)
			return nil, nil
		}
		return nil, fmt.Errorf("claim: claiming admitted %s: %w", c.ID, err)
	}
	s.learnInline(c)
	return res, nil
}

// Inline is the model.InlineAdmission to send with a claim-next or a
// completion's next claim (nil when the store cannot admit inline, or no
// execution with budgets or a quota was admitted yet). It lists the
// budgets and quota policies of the last executions this scheduler
// admitted and claimed (at most model.MaxInlineAdmissionIDs of each, the
// newest first), so a lane whose executions share a budget or a quota
// admits them in the claim's own step after the first. The value is
// shared: callers must not change it.
func (s *Scheduler) Inline() *model.InlineAdmission { return s.inline.Load() }

// learnInline adds the attachments of c, just admitted and claimed, to
// Inline (copy on write: a claim in flight keeps the list it read).
func (s *Scheduler) learnInline(c *model.AdmissionCandidate) {
	if !s.inlineOK {
		return
	}
	cur := s.inline.Load()
	if cur.Covers(c.Budgets, c.Quota) {
		return
	}
	s.inlineMu.Lock()
	defer s.inlineMu.Unlock()
	cur = s.inline.Load()
	next := &model.InlineAdmission{}
	if cur != nil {
		next.Budgets, next.Quotas = cur.Budgets, cur.Quotas
	}
	next.Budgets = newestFirst(next.Budgets, c.Budgets)
	if !model.UUID(c.Quota).IsZero() {
		next.Quotas = newestFirst(next.Quotas, []model.QuotaID{c.Quota})
	}
	s.inline.Store(next)
}

// newestFirst returns add (those not in old) then old, cut to
// model.MaxInlineAdmissionIDs, in a new slice.
func newestFirst[T comparable](old, add []T) []T {
	out := make([]T, 0, model.MaxInlineAdmissionIDs)
	for _, x := range add {
		if !slices.Contains(out, x) && len(out) < model.MaxInlineAdmissionIDs {
			out = append(out, x)
		}
	}
	for _, x := range old {
		if !slices.Contains(out, x) && len(out) < model.MaxInlineAdmissionIDs {
			out = append(out, x)
		}
	}
	return out
}

// quotaMissing is the block detail of an execution whose quota policy does
// not exist. Like a missing budget, a missing quota blocks the execution
// (the unblock scanner keeps it blocked while the policy is missing, and
// lets it go once the policy exists and has room): an error instead would
// leave it at the head of its lane, and every claim of the lane would
// fail on it until the policy is created (the simulator's calm seed 2).
func quotaMissing(c *model.AdmissionCandidate) string {
	return "quota " + c.Quota.String() + " does not exist"
}

// undoAdmission gives back the admission (token, outcome) of a claim that
// failed. The execution's record is read first, since the admission may
// not be this claim's alone:
//
//   - the record holds token: the claim applied and only its reply was
//     lost; the lease holds the admission (its end releases it);
//   - the record holds another token: another claimer, whose grant
//     replaced this one's (a grant lapsed while this claimer was slow),
//     admitted and claimed the execution first, and this admission, an
//     AlreadyAdmitted takeover, replaced the running lease's token:
//     releasing it would free the slot of a running attempt (the
//     simulator's seed 272), so the admission is handed back to the lease
//     (a takeover with its token; nothing is charged);
//   - otherwise (no lease holds one) it is released by token.
//
// A failed read or step is left to the quota reconciler, which releases
// an admission no record holds once older than its grace.
func (s *Scheduler) undoAdmission(ctx context.Context, c *model.AdmissionCandidate, token string, outcome model.QuotaOutcome) {
	held := ""
	if ds, ok := s.store.(describeStore); ok {
		snap, err := ds.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: c.ID})
		if err != nil && !errors.Is(err, model.ErrNotFound) {
			return
		}
		if err == nil {
			held = snap.AdmissionToken
		}
	}
	switch {
	case held == token:
		return
	case held != "" && outcome == model.QuotaAlreadyAdmitted:
		_, _ = s.adm.QuotaAdmit(ctx, &model.QuotaAdmitParams{
			ID: c.Quota, Key: c.QuotaKey, Execution: c.ID, Token: held, Now: s.clock.Now(),
		})
		return
	}
	_, _ = s.adm.QuotaRelease(ctx, &model.QuotaReleaseParams{
		ID: c.Quota, Key: c.QuotaKey, Execution: c.ID, Token: token, Now: s.clock.Now(),
	})
}

// block parks an execution that failed admission. A race (it is no longer
// eligible) is not an error.
func (s *Scheduler) block(ctx context.Context, id model.ExecutionID, reason model.BlockingReason, budget model.BudgetID,
	detail string, retryAt time.Time, out *Outcome) error {
	_, err := s.adm.ExecutionBlock(ctx, &model.ExecutionBlockParams{
		ID: id, Reason: reason, Budget: budget, Detail: detail, Now: s.clock.Now(),
	})
	var me *model.Error
	switch {
	case err == nil:
		out.AdmissionBlocked = append(out.AdmissionBlocked, AdmissionBlock{ID: id, Reason: reason, RetryAt: retryAt})
		return nil
	case errors.As(err, &me) && (me.Code == model.CodeExecutionNotEligible || me.Code == model.CodeExecutionNotActive || me.Retryable()):
		out.Skipped++
		return nil
	}
	return fmt.Errorf("claim: blocking %s on %s: %w", id, reason, err)
}

// jitter draws the random part of a rate refusal's retry time for c,
// within its policy's jitter, deterministically from the execution and
// the time (so the simulator stays reproducible).
func (s *Scheduler) jitter(ctx context.Context, c *model.AdmissionCandidate, now time.Time) (time.Duration, error) {
	j, ok := s.jitters.get(c.Quota)
	if !ok {
		st, err := s.adm.QuotaStatus(ctx, &model.QuotaStatusParams{ID: c.Quota, Key: c.QuotaKey, Now: now})
		if err != nil {
			return 0, fmt.Errorf("claim: reading quota %s of %s (the execution stays unclaimed): %w", c.Quota, c.ID, err)
		}
		j = st.Jitter
		s.jitters.put(c.Quota, j)
	}
	if j <= 0 {
		return 0, nil
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(c.ID.String()))
	var b [8]byte
	ms := uint64(now.UnixMilli())
	for i := range b {
		b[i] = byte(ms >> (8 * i))
	}
	_, _ = h.Write(b[:])
	return time.Duration(h.Sum64() % uint64(j.Milliseconds()+1) * uint64(time.Millisecond)), nil
}
