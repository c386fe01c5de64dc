package valkeystore

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// Decoders of the values scripts return, shared by the operations.

// vector reads a state vector (fields named as in the core hash).
func vector(r *reply) model.StateVector {
	return model.StateVector{
		LifecyclePhase:   enum(r, "lifecycle_phase", false, model.ParseLifecyclePhase),
		OwnershipState:   enum(r, "ownership_state", false, model.ParseOwnershipState),
		EligibilityState: enum(r, "eligibility_state", false, model.ParseEligibilityState),
		BlockingReason:   enum(r, "blocking_reason", false, model.ParseBlockingReason),
		BlockingDetail:   r.str("blocking_detail"),
		TerminalOutcome:  enum(r, "terminal_outcome", false, model.ParseTerminalOutcome),
		AttemptState:     enum(r, "attempt_state", false, model.ParseAttemptState),
	}
}

func publicState(r *reply) model.PublicState { return vector(r).PublicState() }

// claimResult reads what lua/lib/claim.lua's claim returns.
func claimResult(r *reply) *model.ClaimResult {
	res := &model.ClaimResult{
		ID: r.execID("id"),
		Lease: model.Lease{
			ID:               model.LeaseID(r.uuid("lease_id")),
			Epoch:            r.u64("epoch"),
			WorkerID:         model.WorkerID(r.str("worker_id")),
			WorkerInstanceID: model.WorkerInstanceID(r.str("worker_instance_id")),
			AcquiredAt:       r.time("acquired_at"),
			ExpiresAt:        r.time("expires_at"),
			RenewBy:          r.time("renew_by"),
		},
		AttemptID:    model.AttemptID(r.uuid("attempt_id")),
		AttemptIndex: r.int("attempt_index"),
		AttemptType:  enum(r, "attempt_type", false, model.ParseAttemptType),
		Resumed:      r.bool("resumed"),
		Namespace:    model.Namespace(r.str("ns")),
		Lane:         model.LaneID(r.str("lane")),
		Kind:         model.Kind(r.str("kind")),
		Priority:     r.int("priority"),
		Payload:      r.bytes("payload"),
		Tags:         nilIfEmpty(r.strMap("tags")),
		RetryCount:   r.int("retry_count"),
		MaxRetries:   r.int("retry_max"),
		CreatedAt:    r.time("created_at"),
		TimeoutAt:    r.time("timeout_at"),
	}
	if r.has("meta") { // an execution with metadata
		res.Metadata = r.strMap("meta")
	}
	if r.has("adm_token") { // an execution with budgets or a quota
		res.Budgets = parseBudgets(r, r.str("budgets"))
		res.Quota = model.QuotaID(r.uuid("quota"))
		res.QuotaKey = r.str("quota_key")
		res.AdmissionToken = r.str("adm_token")
	}
	return res
}

// nilIfEmpty returns nil for an empty map (claim results carry nil tags
// when there are none, as memstore's do).
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// snapshot reads the core hash (c) and tags of one execution.
func snapshot(c *reply, tags map[string]string) *model.ExecutionSnapshot {
	s := &model.ExecutionSnapshot{
		ID:                       c.execID("id"),
		Namespace:                model.Namespace(c.str("ns")),
		Lane:                     model.LaneID(c.str("lane")),
		Kind:                     model.Kind(c.str("kind")),
		Priority:                 c.int("priority"),
		State:                    vector(c),
		CreatedAt:                c.time("created_at"),
		LastMutationAt:           c.time("last_mutation_at"),
		LastTransitionAt:         c.time("last_transition_at"),
		StartedAt:                c.time("started_at"),
		TerminalAt:               c.time("terminal_at"),
		DelayUntil:               c.time("delay_until"),
		RequiredCapabilities:     c.caps("required_caps"),
		RetryPolicy:              retryPolicy(c),
		RetryCount:               c.int("retry_count"),
		MaxReclaims:              c.int("max_reclaims"),
		ReclaimCount:             c.int("reclaim_count"),
		MaxReplays:               c.int("max_replays"),
		ReplayCount:              c.int("replay_count"),
		AttemptTimeout:           c.ms("attempt_timeout"),
		Deadline:                 c.time("deadline"),
		Retention:                model.Retention{Completed: c.ms("ret_ok"), Failed: c.ms("ret_failed"), Cancelled: c.ms("ret_cancelled")},
		TotalAttempts:            c.int("total_attempts"),
		LeaseEpoch:               c.u64("epoch"),
		LeaseExpiredAt:           c.time("lease_expired_at"),
		LeaseRevokedAt:           c.time("lease_revoked_at"),
		RevokeReason:             c.str("revoke_reason"),
		ProgressPercent:          c.int("progress_pct"),
		ProgressMessage:          c.str("progress_msg"),
		ProgressUpdatedAt:        c.time("progress_at"),
		FailureReason:            c.str("failure_reason"),
		FailureCategory:          model.FailureCategory(c.str("failure_category")),
		CancellationReason:       c.str("cancellation_reason"),
		CancelledBy:              c.str("cancelled_by"),
		LastCapabilityMismatchAt: c.time("last_cap_mismatch_at"),
		Tags:                     tags,
		Budgets:                  parseBudgets(c, c.str("budgets")),
		Quota:                    model.QuotaID(c.uuid("quota")),
		QuotaKey:                 c.str("quota_key"),
		AdmissionToken:           c.str("adm_token"),
	}
	s.PublicState = s.State.PublicState()
	if cur := c.int("cur_attempt"); cur >= 0 {
		s.CurrentAttempt = &model.AttemptRef{ID: model.AttemptID(c.uuid("cur_attempt_id")), Index: cur}
	}
	if typ := enum(c, "pending_type", true, model.ParseAttemptType); typ != 0 {
		s.Pending = &model.PendingAttempt{
			Type:          typ,
			Reason:        c.str("pending_reason"),
			RequestedBy:   c.str("pending_requested_by"),
			PreviousIndex: c.int("pending_prev_index"),
		}
	}
	if c.str("lease_id") != "" {
		s.CurrentLease = &model.Lease{
			ID:               model.LeaseID(c.uuid("lease_id")),
			Epoch:            s.LeaseEpoch,
			WorkerID:         model.WorkerID(c.str("lease_worker_id")),
			WorkerInstanceID: model.WorkerInstanceID(c.str("lease_wi")),
			AcquiredAt:       c.time("lease_acquired_at"),
			ExpiresAt:        c.time("lease_expires_at"),
			RenewBy:          c.time("lease_renew_by"),
		}
	}
	if kind := enum(c, "grant_kind", true, model.ParseGrantKind); kind != 0 {
		s.Grant = &model.Grant{
			Kind:             kind,
			WorkerID:         model.WorkerID(c.str("grant_worker_id")),
			WorkerInstanceID: model.WorkerInstanceID(c.str("grant_wi")),
			CreatedAt:        c.time("grant_created_at"),
			ExpiresAt:        c.time("grant_expires_at"),
		}
	}
	return s
}

// retryPolicy reads the policy exactly as it was given at create.
func retryPolicy(c *reply) model.RetryPolicy {
	p := model.RetryPolicy{
		MaxRetries:   c.int("retry_max"),
		Delay:        c.ms("retry_delay_ms"),
		InitialDelay: c.ms("retry_initial_ms"),
		MaxDelay:     c.ms("retry_max_delay_ms"),
	}
	if c.str("retry_backoff") == model.BackoffFixed.String() {
		p.Backoff = model.BackoffFixed
	}
	p.Multiplier = c.float("retry_multiplier")
	return p
}

// attempt reads one attempt hash (plus its index).
func attempt(a *reply) model.Attempt {
	return model.Attempt{
		Index:            a.int("index"),
		ID:               model.AttemptID(a.uuid("id")),
		Type:             enum(a, "type", false, model.ParseAttemptType),
		Status:           enum(a, "status", false, model.ParseAttemptStatus),
		LeaseID:          model.LeaseID(a.uuid("lease_id")),
		LeaseEpoch:       a.u64("lease_epoch"),
		WorkerID:         model.WorkerID(a.str("worker_id")),
		WorkerInstanceID: model.WorkerInstanceID(a.str("wi")),
		StartedAt:        a.time("started_at"),
		EndedAt:          a.time("ended_at"),
		FailureReason:    a.str("failure_reason"),
		FailureCategory:  model.FailureCategory(a.str("failure_category")),
	}
}

// worker reads one worker record.
func worker(ns model.Namespace, w *reply) model.WorkerInfo {
	var lanes []model.LaneID
	for _, l := range splitCSV(w.str("lanes")) {
		lanes = append(lanes, model.LaneID(l))
	}
	return model.WorkerInfo{
		Namespace:        ns,
		WorkerID:         model.WorkerID(w.str("worker_id")),
		WorkerInstanceID: model.WorkerInstanceID(w.str("instance")),
		Lanes:            slices.Clip(lanes),
		Capabilities:     w.caps("caps"),
		TTL:              w.ms("ttl"),
		RegisteredAt:     w.time("registered_at"),
		LastHeartbeatAt:  w.time("heartbeat_at"),
		ExpiresAt:        w.time("expires_at"),
	}
}

func splitCSV(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// leaseEvent reads one lease-history entry,
// "<seq>|<epoch>|<attempt>|<at>|<kind>|<lease id>|<instance>|<reason>".
func leaseEvent(r *reply, entry string) model.LeaseEvent {
	f := strings.SplitN(entry, "|", 8)
	if len(f) != 8 {
		r.fail("events: malformed entry %q", entry)
		return model.LeaseEvent{}
	}
	seq, err1 := strconv.ParseUint(f[0], 10, 64)
	epoch, err2 := strconv.ParseUint(f[1], 10, 64)
	att, err3 := strconv.Atoi(f[2])
	at, err4 := strconv.ParseInt(f[3], 10, 64)
	var lease model.UUID
	var err5 error
	if f[5] != "" {
		lease, err5 = model.ParseUUID(f[5])
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		r.fail("events: malformed entry %q: %v", entry, err)
		return model.LeaseEvent{}
	}
	return model.LeaseEvent{
		Seq:              seq,
		Kind:             model.LeaseEventKind(f[4]),
		LeaseID:          model.LeaseID(lease),
		LeaseEpoch:       epoch,
		AttemptIndex:     att,
		WorkerInstanceID: model.WorkerInstanceID(f[6]),
		At:               model.FromMillis(at),
		Reason:           f[7],
	}
}
