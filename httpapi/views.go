package httpapi

import (
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// The JSON views of the responses. They are this package's contract, kept
// stable on their own: the engine's Go types may grow or change without
// changing what a client reads. Times are RFC 3339 in UTC with
// milliseconds and are left out when unset; durations are Go duration
// strings.

// timeLayout is RFC 3339 with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// jsonTime is a time in the wire form; the zero time is left out (omitzero).
type jsonTime time.Time

func (t jsonTime) IsZero() bool { return time.Time(t).IsZero() }

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(timeLayout) + `"`), nil
}

// jsonDuration is a duration as a Go duration string.
type jsonDuration time.Duration

func (d jsonDuration) IsZero() bool { return d == 0 }

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

type executionView struct {
	ID          string          `json:"id"`
	Namespace   string          `json:"namespace"`
	Lane        string          `json:"lane"`
	Kind        string          `json:"kind"`
	Priority    int             `json:"priority"`
	FlowID      string          `json:"flow_id,omitempty"`
	State       string          `json:"state"`
	StateVector stateVectorView `json:"state_vector"`

	Tags                 map[string]string `json:"tags,omitempty"`
	Metadata             map[string]string `json:"metadata,omitempty"`
	RequiredCapabilities []string          `json:"required_capabilities,omitempty"`
	RetryPolicy          model.RetryPolicy `json:"retry_policy"`
	RetryCount           int               `json:"retry_count"`
	MaxReclaims          int               `json:"max_reclaims"`
	ReclaimCount         int               `json:"reclaim_count"`
	MaxReplays           int               `json:"max_replays"`
	ReplayCount          int               `json:"replay_count"`
	AttemptTimeout       jsonDuration      `json:"attempt_timeout,omitzero"`
	Deadline             jsonTime          `json:"deadline,omitzero"`

	Attempts       int             `json:"attempts"`
	CurrentAttempt *attemptRefView `json:"current_attempt,omitempty"`
	PendingAttempt *pendingView    `json:"pending_attempt,omitempty"`
	LeaseEpoch     uint64          `json:"lease_epoch"`
	Lease          *leaseView      `json:"lease,omitempty"`
	LeaseExpiredAt jsonTime        `json:"lease_expired_at,omitzero"`
	LeaseRevokedAt jsonTime        `json:"lease_revoked_at,omitzero"`
	RevokeReason   string          `json:"revoke_reason,omitempty"`
	Grant          *grantView      `json:"grant,omitempty"`
	Progress       *progressView   `json:"progress,omitempty"`
	// Suspension is set while the execution is suspended: what it waits
	// for and its current waitpoint (GET …/suspension has the rest).
	Suspension *currentSuspensionView `json:"suspension,omitempty"`

	FailureReason            string   `json:"failure_reason,omitempty"`
	FailureCategory          string   `json:"failure_category,omitempty"`
	CancellationReason       string   `json:"cancellation_reason,omitempty"`
	CancelledBy              string   `json:"cancelled_by,omitempty"`
	LastCapabilityMismatchAt jsonTime `json:"last_capability_mismatch_at,omitzero"`

	CreatedAt        jsonTime `json:"created_at,omitzero"`
	LastMutationAt   jsonTime `json:"last_mutation_at,omitzero"`
	LastTransitionAt jsonTime `json:"last_transition_at,omitzero"`
	StartedAt        jsonTime `json:"started_at,omitzero"`
	TerminalAt       jsonTime `json:"terminal_at,omitzero"`
	DelayUntil       jsonTime `json:"delay_until,omitzero"`
}

type currentSuspensionView struct {
	ID               string   `json:"id"`
	Reason           string   `json:"reason"`
	CurrentWaitpoint string   `json:"current_waitpoint"`
	TimeoutAt        jsonTime `json:"timeout_at,omitzero"`
	Escalated        bool     `json:"escalated,omitempty"`
}

type stateVectorView struct {
	LifecyclePhase   string `json:"lifecycle_phase"`
	OwnershipState   string `json:"ownership_state"`
	EligibilityState string `json:"eligibility_state"`
	BlockingReason   string `json:"blocking_reason"`
	BlockingDetail   string `json:"blocking_detail,omitempty"`
	TerminalOutcome  string `json:"terminal_outcome"`
	AttemptState     string `json:"attempt_state"`
}

type attemptRefView struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
}

type pendingView struct {
	Type          string `json:"type"`
	Reason        string `json:"reason,omitempty"`
	RequestedBy   string `json:"requested_by,omitempty"`
	PreviousIndex int    `json:"previous_index"`
}

type leaseView struct {
	ID               string   `json:"id"`
	Epoch            uint64   `json:"epoch"`
	WorkerID         string   `json:"worker_id"`
	WorkerInstanceID string   `json:"worker_instance_id"`
	AcquiredAt       jsonTime `json:"acquired_at,omitzero"`
	ExpiresAt        jsonTime `json:"expires_at,omitzero"`
	RenewBy          jsonTime `json:"renew_by,omitzero"`
}

type grantView struct {
	Kind             string   `json:"kind"`
	WorkerID         string   `json:"worker_id"`
	WorkerInstanceID string   `json:"worker_instance_id"`
	CreatedAt        jsonTime `json:"created_at,omitzero"`
	ExpiresAt        jsonTime `json:"expires_at,omitzero"`
}

type progressView struct {
	Percent   int      `json:"percent"`
	Message   string   `json:"message,omitempty"`
	UpdatedAt jsonTime `json:"updated_at,omitzero"`
}

func viewExecution(s *flowfabric.Snapshot) executionView {
	v := executionView{
		ID: s.ID.String(), Namespace: string(s.Namespace), Lane: string(s.Lane), Kind: string(s.Kind),
		Priority: s.Priority, FlowID: s.Flow.String(), State: s.PublicState.String(),
		StateVector: stateVectorView{
			LifecyclePhase: s.State.LifecyclePhase.String(), OwnershipState: s.State.OwnershipState.String(),
			EligibilityState: s.State.EligibilityState.String(), BlockingReason: s.State.BlockingReason.String(),
			BlockingDetail: s.State.BlockingDetail, TerminalOutcome: s.State.TerminalOutcome.String(),
			AttemptState: s.State.AttemptState.String(),
		},
		Tags: s.Tags, Metadata: s.Metadata, RequiredCapabilities: s.RequiredCapabilities, RetryPolicy: s.RetryPolicy,
		RetryCount: s.RetryCount, MaxReclaims: s.MaxReclaims, ReclaimCount: s.ReclaimCount,
		MaxReplays: s.MaxReplays, ReplayCount: s.ReplayCount, AttemptTimeout: jsonDuration(s.AttemptTimeout),
		Deadline: jsonTime(s.Deadline), Attempts: s.TotalAttempts, LeaseEpoch: s.LeaseEpoch,
		LeaseExpiredAt: jsonTime(s.LeaseExpiredAt), LeaseRevokedAt: jsonTime(s.LeaseRevokedAt),
		RevokeReason: s.RevokeReason, FailureReason: s.FailureReason, FailureCategory: string(s.FailureCategory),
		CancellationReason: s.CancellationReason, CancelledBy: s.CancelledBy,
		LastCapabilityMismatchAt: jsonTime(s.LastCapabilityMismatchAt),
		CreatedAt:                jsonTime(s.CreatedAt), LastMutationAt: jsonTime(s.LastMutationAt),
		LastTransitionAt: jsonTime(s.LastTransitionAt), StartedAt: jsonTime(s.StartedAt),
		TerminalAt: jsonTime(s.TerminalAt), DelayUntil: jsonTime(s.DelayUntil),
	}
	if a := s.CurrentAttempt; a != nil {
		v.CurrentAttempt = &attemptRefView{ID: a.ID.String(), Index: a.Index}
	}
	if p := s.Pending; p != nil {
		v.PendingAttempt = &pendingView{Type: p.Type.String(), Reason: p.Reason, RequestedBy: p.RequestedBy,
			PreviousIndex: p.PreviousIndex}
	}
	if l := s.CurrentLease; l != nil {
		v.Lease = &leaseView{ID: l.ID.String(), Epoch: l.Epoch, WorkerID: string(l.WorkerID),
			WorkerInstanceID: string(l.WorkerInstanceID), AcquiredAt: jsonTime(l.AcquiredAt),
			ExpiresAt: jsonTime(l.ExpiresAt), RenewBy: jsonTime(l.RenewBy)}
	}
	if g := s.Grant; g != nil {
		v.Grant = &grantView{Kind: g.Kind.String(), WorkerID: string(g.WorkerID),
			WorkerInstanceID: string(g.WorkerInstanceID), CreatedAt: jsonTime(g.CreatedAt), ExpiresAt: jsonTime(g.ExpiresAt)}
	}
	if s.ProgressPercent != 0 || s.ProgressMessage != "" || !s.ProgressUpdatedAt.IsZero() {
		v.Progress = &progressView{Percent: s.ProgressPercent, Message: s.ProgressMessage,
			UpdatedAt: jsonTime(s.ProgressUpdatedAt)}
	}
	return v
}

type attemptView struct {
	Index            int      `json:"index"`
	ID               string   `json:"id"`
	Type             string   `json:"type"`
	Status           string   `json:"status"`
	LeaseID          string   `json:"lease_id,omitempty"`
	LeaseEpoch       uint64   `json:"lease_epoch"`
	WorkerID         string   `json:"worker_id,omitempty"`
	WorkerInstanceID string   `json:"worker_instance_id,omitempty"`
	StartedAt        jsonTime `json:"started_at,omitzero"`
	EndedAt          jsonTime `json:"ended_at,omitzero"`
	FailureReason    string   `json:"failure_reason,omitempty"`
	FailureCategory  string   `json:"failure_category,omitempty"`
}

func viewAttempt(a flowfabric.Attempt) attemptView {
	return attemptView{
		Index: a.Index, ID: a.ID.String(), Type: a.Type.String(), Status: a.Status.String(),
		LeaseID: a.LeaseID.String(), LeaseEpoch: a.LeaseEpoch, WorkerID: string(a.WorkerID),
		WorkerInstanceID: string(a.WorkerInstanceID), StartedAt: jsonTime(a.StartedAt), EndedAt: jsonTime(a.EndedAt),
		FailureReason: a.FailureReason, FailureCategory: string(a.FailureCategory),
	}
}

type leaseEventView struct {
	Seq              uint64   `json:"seq"`
	Kind             string   `json:"kind"`
	LeaseID          string   `json:"lease_id,omitempty"`
	LeaseEpoch       uint64   `json:"lease_epoch"`
	AttemptIndex     int      `json:"attempt_index"`
	WorkerInstanceID string   `json:"worker_instance_id,omitempty"`
	At               jsonTime `json:"at,omitzero"`
	Reason           string   `json:"reason,omitempty"`
}

func viewLeaseEvent(e flowfabric.LeaseEvent) leaseEventView {
	return leaseEventView{
		Seq: e.Seq, Kind: string(e.Kind), LeaseID: e.LeaseID.String(), LeaseEpoch: e.LeaseEpoch,
		AttemptIndex: e.AttemptIndex, WorkerInstanceID: string(e.WorkerInstanceID), At: jsonTime(e.At), Reason: e.Reason,
	}
}

type flowView struct {
	ID            string            `json:"id"`
	Partition     int               `json:"partition"`
	State         string            `json:"state"`
	Sealed        bool              `json:"sealed"`
	MemberCount   int               `json:"member_count"`
	EdgeCount     int               `json:"edge_count"`
	GraphRevision uint64            `json:"graph_revision"`
	Counts        map[string]int    `json:"counts"`
	CancelPolicy  string            `json:"cancel_policy,omitempty"`
	CancelReason  string            `json:"cancel_reason,omitempty"`
	CancelledAt   jsonTime          `json:"cancelled_at,omitzero"`
	CreatedAt     jsonTime          `json:"created_at,omitzero"`
	LastMutation  jsonTime          `json:"last_mutation_at,omitzero"`
	Tags          map[string]string `json:"tags,omitempty"`
}

func viewFlow(s *flowfabric.FlowSnapshot) flowView {
	counts := make(map[string]int, len(s.Counts))
	for ps, n := range s.Counts {
		if n != 0 {
			counts[ps.String()] = n
		}
	}
	return flowView{
		ID: s.ID.String(), Partition: s.Partition, State: s.State.String(), Sealed: s.Sealed,
		MemberCount: s.MemberCount, EdgeCount: s.EdgeCount, GraphRevision: s.GraphRevision, Counts: counts,
		CancelPolicy: s.CancelPolicy.String(), CancelReason: s.CancelReason, CancelledAt: jsonTime(s.CancelledAt),
		CreatedAt: jsonTime(s.CreatedAt), LastMutation: jsonTime(s.LastMutationAt), Tags: s.Tags,
	}
}
