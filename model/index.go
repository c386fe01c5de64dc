package model

// The lane indexes of lua-semantics §3: per partition and lane, one sorted
// set per lifecycle phase, and for the runnable phase one per eligibility
// state. A store keeps each execution in exactly the one its state names
// (§6.3). The names are the spec's; ExecutionIndexes reports them as
// "lane:<lane>:<name>".

// BlockedStates lists the blocked eligibility states in the order their
// indexes are named by BlockedIndexNames (the order ExecutionIndexes
// reports them in when an execution were in several).
var BlockedStates = []EligibilityState{
	BlockedByDependencies, BlockedByBudget, BlockedByQuota,
	BlockedByRoute, BlockedByOperator, BlockedByLaneState,
}

// IndexFor names the lane index of a runnable execution in eligibility
// state es ("eligible", "delayed", "blocked:route", ...); "" for
// NotApplicable and any unknown value.
func IndexFor(es EligibilityState) string {
	switch es {
	case EligibleNow:
		return "eligible"
	case NotEligibleUntilTime:
		return "delayed"
	case BlockedByDependencies:
		return "blocked:dependencies"
	case BlockedByBudget:
		return "blocked:budget"
	case BlockedByQuota:
		return "blocked:quota"
	case BlockedByRoute:
		return "blocked:route"
	case BlockedByOperator:
		return "blocked:operator"
	case BlockedByLaneState:
		return "blocked:lane_state"
	}
	return ""
}

// BlockedIndexNames is IndexFor of each of BlockedStates, in that order.
func BlockedIndexNames() []string {
	out := make([]string, len(BlockedStates))
	for i, es := range BlockedStates {
		out[i] = IndexFor(es)
	}
	return out
}

// LaneIndexFor names the lane index an execution in state v belongs to:
// "active", "suspended", "terminal", or IndexFor of its eligibility state
// when runnable; "" for an unset phase.
func LaneIndexFor(v StateVector) string {
	switch v.LifecyclePhase {
	case PhaseRunnable:
		return IndexFor(v.EligibilityState)
	case PhaseActive:
		return "active"
	case PhaseSuspended:
		return "suspended"
	case PhaseTerminal:
		return "terminal"
	}
	return ""
}
