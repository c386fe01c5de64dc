package model

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"
)

// IndexRepairer is optional (see Store): the repairing index reconciler
// (engine.md §1 scanner 3; issue 14). An execution's index membership
// follows from its record (ExpectedIndexes); IndexRepair walks one
// partition's all_executions in id order from a cursor and, for each
// execution it examines, files it in each index it belongs to and is
// missing from, takes it out of each index it does not belong to, and
// rescores an entry filed with the wrong score. memstore and valkeystore
// implement it; the scanner scan.IndexReconciler calls it.
//
// Repaired: the lane indexes of every lane of the partition (eligible,
// delayed, terminal, suspended, the blocked:* ones; memstore's active
// too), lease_expiry, attempt_timeout, execution_deadline, suspended,
// suspension_timeout, pending_waitpoint_expiry, retention and
// all_executions membership of a listed execution (memstore's worker
// lease sets too). An
// all_executions member whose record is gone is dangling: it is taken out
// of all_executions and of every index above. Not repaired: an execution
// missing from all_executions (the walk never meets it), an index entry
// of an execution that is in no all_executions, a stray member of a
// route or admission group (see RouteGroupIndex: a blocked execution
// missing from its group is repaired).
// A blocked index's score (the block time) is not checked; a missing
// blocked entry is filed at the record's last transition time. A flow
// member's retention entry is left alone: it stands for its flow, which
// FlowDelete moves and drops (see FlowDeleter).
type IndexRepairer interface {
	IndexRepair(ctx context.Context, p *IndexRepairParams) (*IndexRepairResult, error)
}

// IndexRepairParams repairs the indexes of up to Limit executions of one
// partition, in id order after Cursor.
type IndexRepairParams struct {
	Partition int
	// Cursor is an exclusive position in the partition's all_executions
	// (zero: from the start).
	Cursor ExecutionID
	// Limit bounds the executions examined (1–MaxPageSize).
	Limit int
	// DryRun reports what would be repaired and writes nothing.
	DryRun bool
	// Filter, when set, repairs only the executions it matches; the
	// others are examined (they count towards Limit and move Next) and
	// left alone. A dangling member (no record) matches.
	Filter ScannerFilter
	Now    time.Time
}

// Validate checks every field.
func (p *IndexRepairParams) Validate(cfg PartitionConfig) error {
	if err := checkPartition(cfg, p.Partition); err != nil {
		return err
	}
	if !p.Cursor.IsZero() {
		if err := checkCursor(cfg, "Cursor", p.Cursor, p.Partition); err != nil {
			return err
		}
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	if err := p.Filter.Validate("Filter"); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// RepairAction is what a repair did to one index entry; its String is the
// wire name.
type RepairAction uint8

// Repair actions.
const (
	RepairAdded    RepairAction = iota + 1 // "added": filed where it was missing
	RepairRemoved                          // "removed": taken out of an index it does not belong to
	RepairRescored                         // "rescored": its entry's score corrected
)

var repairActionNames = enumNames{"added", "removed", "rescored"}

func (v RepairAction) String() string { return repairActionNames.name(uint8(v)) }

// ParseRepairAction parses a wire name.
func ParseRepairAction(s string) (RepairAction, bool) {
	v, ok := repairActionNames.parse(s)
	return RepairAction(v), ok
}

// IndexRepair is one repaired (with DryRun: one damaged) index entry.
type IndexRepair struct {
	ExecutionID ExecutionID
	// Index is the index's name as ExecutionIndexes reports it
	// ("lane:<L>:eligible", "lease_expiry", ...).
	Index  string
	Action RepairAction
	// Score is the score filed (added, rescored; 0 when removed);
	// OldScore the score found (removed, rescored; 0 when added). Scores
	// are the sorted-set scores: Unix milliseconds for the timer indexes,
	// EligibleScore for eligible, 0 for all_executions and suspended.
	Score    int64
	OldScore int64
}

// IndexRepairResult reports one call.
type IndexRepairResult struct {
	// Examined counts the executions examined (at most Limit).
	Examined int
	// Next is the cursor for the next call (the last execution examined);
	// zero when the partition is done.
	Next ExecutionID
	// Repairs lists the repairs in execution id order, then index name
	// (byte order).
	Repairs []IndexRepair
}

// SortRepairs puts rs in IndexRepairResult's order: execution id (UUID
// byte order, all_executions' order), then index name.
func SortRepairs(rs []IndexRepair) {
	slices.SortStableFunc(rs, func(a, b IndexRepair) int {
		ua, ub := a.ExecutionID.UUID(), b.ExecutionID.UUID()
		if c := bytes.Compare(ua[:], ub[:]); c != 0 {
			return c
		}
		return strings.Compare(a.Index, b.Index)
	})
}

// SuspendedNoTimeoutScore is a suspended execution's score in its lane's
// suspended index when its suspension has no timeout.
const SuspendedNoTimeoutScore int64 = 9999999999999

// IndexFacts are the fields of an execution record its index membership
// follows from (times in Unix milliseconds, 0 unset).
type IndexFacts struct {
	Lane             LaneID
	Phase            LifecyclePhase
	Ownership        OwnershipState
	Eligibility      EligibilityState
	Outcome          TerminalOutcome
	Priority         int
	CreatedAt        int64
	LastTransitionAt int64
	DelayUntil       int64
	TerminalAt       int64
	Deadline         int64
	// TimeoutAt is the current attempt's timeout.
	TimeoutAt      int64
	LeaseExpiresAt int64
	LeaseRevokedAt int64
	// LeaseInstance holds the lease ("": none).
	LeaseInstance WorkerInstanceID
	Retention     Retention
	// SuspensionTimeoutAt is the open suspension's timeout (0: none).
	SuspensionTimeoutAt int64
	// PendingWaitpointExpiry is the earliest expiry of the execution's
	// pending waitpoints (0: none pending).
	PendingWaitpointExpiry int64
}

// ExpectedIndex is one index an execution belongs in.
type ExpectedIndex struct {
	Index string
	Score int64
	// Scored says the entry's score follows from the record and is
	// checked; otherwise only membership is (a missing entry is filed
	// with Score).
	Scored bool
}

// ExpectedIndexes lists the indexes an execution with facts f belongs in,
// among those IndexRepair repairs, in the naming of ExecutionIndexes. It
// includes a lane's active index and the holder's worker lease index,
// which valkeystore derives from the record rather than storing.
func ExpectedIndexes(f IndexFacts) []ExpectedIndex {
	out := []ExpectedIndex{{Index: "all_executions", Scored: true}}
	add := func(name string, score int64, scored bool) {
		out = append(out, ExpectedIndex{Index: name, Score: score, Scored: scored})
	}
	lane := "lane:" + string(f.Lane) + ":"
	v := StateVector{LifecyclePhase: f.Phase, EligibilityState: f.Eligibility}
	switch name := LaneIndexFor(v); {
	case name == "":
	case f.Phase == PhaseRunnable && f.Eligibility == EligibleNow:
		add(lane+name, EligibleScore(f.Priority, f.CreatedAt), true)
	case f.Phase == PhaseRunnable && f.Eligibility == NotEligibleUntilTime:
		add(lane+name, f.DelayUntil, true)
	case f.Phase == PhaseRunnable:
		add(lane+name, f.LastTransitionAt, false)
	case f.Phase == PhaseActive:
		add(lane+name, f.LeaseExpiresAt, false)
	case f.Phase == PhaseSuspended:
		score := f.SuspensionTimeoutAt
		if score == 0 {
			score = SuspendedNoTimeoutScore
		}
		add(lane+name, score, true)
	case f.Phase == PhaseTerminal:
		add(lane+name, f.TerminalAt, true)
	}
	if f.Phase == PhaseActive {
		exp := f.LeaseExpiresAt
		if f.Ownership == OwnershipLeaseRevoked {
			exp = f.LeaseRevokedAt
		}
		add("lease_expiry", exp, true)
		if f.TimeoutAt != 0 {
			add("attempt_timeout", f.TimeoutAt, true)
		}
	}
	if f.Deadline != 0 && f.Phase != PhaseTerminal {
		add("execution_deadline", f.Deadline, true)
	}
	if f.Phase == PhaseSuspended {
		add("suspended", 0, true)
		if f.SuspensionTimeoutAt != 0 {
			add(IndexSuspensionTimeout.String(), f.SuspensionTimeoutAt, true)
		}
	}
	if f.Phase == PhaseTerminal {
		if d := f.Retention.For(f.Outcome); d > 0 {
			add(IndexRetention.String(), f.TerminalAt+d.Milliseconds(), true)
		}
	}
	if f.PendingWaitpointExpiry != 0 {
		add(IndexWaitpointExpiry.String(), f.PendingWaitpointExpiry, true)
	}
	if f.LeaseInstance != "" {
		add("worker:"+string(f.LeaseInstance)+":leases", 0, false)
	}
	return out
}

// IndexTamperer is optional, a test hook and nothing else: it damages one
// index entry of an execution so the conformance suite and the
// differential can check IndexRepair. The engine never calls it; a
// production caller has no use for it. memstore and valkeystore implement
// it.
type IndexTamperer interface {
	IndexTamper(ctx context.Context, p *IndexTamperParams) error
}

// IndexTamperParams adds, removes or rescores the entry of execution ID in
// one index, whatever its record says.
type IndexTamperParams struct {
	ID ExecutionID
	// Index is named as ExecutionIndexes names it; a lane index names a
	// lane the partition has. The indexes valkeystore does not store
	// (lane:<L>:active, worker:<wi>:leases) are refused. A blocked group
	// (RouteGroupIndex, BudgetGroupIndex, QuotaGroupIndex) takes only
	// RepairRemoved.
	Index string
	// Action is RepairAdded (file it with Score), RepairRemoved or
	// RepairRescored (file it with Score, present or not). The score-less
	// indexes (all_executions, suspended) take no RepairRescored and
	// ignore Score.
	Action RepairAction
	Score  int64
}

// TamperIndexes are the partition-level indexes IndexTamper takes.
var TamperIndexes = []string{
	"all_executions", "attempt_timeout", "execution_deadline", "lease_expiry",
	IndexWaitpointExpiry.String(), IndexRetention.String(), "suspended", IndexSuspensionTimeout.String(),
}

// TamperLaneIndexes are the lane indexes IndexTamper takes
// ("lane:<L>:<name>").
func TamperLaneIndexes() []string {
	return append([]string{"eligible", "delayed", "terminal", "suspended"}, BlockedIndexNames()...)
}

// Validate checks every field.
func (p *IndexTamperParams) Validate(cfg PartitionConfig) error {
	if err := cfg.CheckExecutionID(p.ID); err != nil {
		return err
	}
	if p.Action < RepairAdded || p.Action > RepairRescored {
		return invalidField("Action", "unknown")
	}
	if lane, _, ok := SplitGroupIndex(p.Index); ok {
		// a blocked group: only a membership taken away
		if err := lane.Validate(); err != nil {
			return prefixField(err, "Index.")
		}
		if p.Action != RepairRemoved {
			return invalidField("Action", "group_removal_only")
		}
		return nil
	}
	lane, name, ok := SplitLaneIndex(p.Index)
	switch {
	case ok:
		if err := lane.Validate(); err != nil {
			return prefixField(err, "Index.")
		}
		if !slices.Contains(TamperLaneIndexes(), name) {
			return invalidField("Index", "not_tamperable")
		}
	case !slices.Contains(TamperIndexes, p.Index):
		return invalidField("Index", "not_tamperable")
	case p.Action == RepairRescored && (p.Index == "all_executions" || p.Index == "suspended"):
		return invalidField("Action", "unscored_index")
	}
	return nil
}

// SplitLaneIndex splits "lane:<L>:<name>" into its lane and name.
func SplitLaneIndex(index string) (LaneID, string, bool) {
	rest, ok := strings.CutPrefix(index, "lane:")
	if !ok {
		return "", "", false
	}
	// a blocked index is "blocked:<reason>": the lane ends before it
	if j := strings.LastIndex(rest, ":blocked:"); j >= 0 {
		return LaneID(rest[:j]), rest[j+1:], true
	}
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return "", "", false
	}
	return LaneID(rest[:i]), rest[i+1:], true
}

// Blocked groups. A route-blocked execution is in its lane's route group
// ("lane:<L>:route:<ns>:<csv>", csv its required capabilities), a
// budget-blocked one in its budget's admission group
// ("lane:<L>:adm:b:<budget>"), a quota-blocked one in its bucket's
// ("lane:<L>:adm:q:<quota>:<key>"): the groups the unblock scanners walk.
// IndexRepair names them so, both stores alike (they are valkeystore's
// key suffixes). It files a blocked execution missing from its group
// (and lists the group) at the record's last transition time, through
// the helper blocking uses; membership only, the score is not checked. It
// leaves a stray member alone: the unblock operations check the reason
// under the store's atomicity and drop it.

// RouteGroupIndex names a route group.
func RouteGroupIndex(lane LaneID, ns Namespace, csv string) string {
	return "lane:" + string(lane) + ":route:" + string(ns) + ":" + csv
}

// BudgetGroupIndex names a budget's admission group.
func BudgetGroupIndex(lane LaneID, b BudgetID) string {
	return "lane:" + string(lane) + ":adm:b:" + b.String()
}

// QuotaGroupIndex names a quota bucket's admission group.
func QuotaGroupIndex(lane LaneID, q QuotaID, key string) string {
	return "lane:" + string(lane) + ":adm:q:" + q.String() + ":" + key
}

// SplitGroupIndex splits a group name into its lane and the rest
// ("route:<ns>:<csv>", "adm:b:<budget>", "adm:q:<quota>:<key>").
func SplitGroupIndex(index string) (LaneID, string, bool) {
	rest, ok := strings.CutPrefix(index, "lane:")
	if !ok {
		return "", "", false
	}
	best := -1
	for _, m := range []string{":route:", ":adm:b:", ":adm:q:"} {
		if i := strings.Index(rest, m); i > 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false
	}
	return LaneID(rest[:best]), rest[best+1:], true
}
