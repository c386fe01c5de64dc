package model

import (
	"slices"
	"strings"
	"testing"
)

// TestIndexFor pins the eligibility → index mapping: the blocked states
// map to "blocked:" and the rest of their spec name, every other state of
// a runnable execution to its own index, and NotApplicable to none.
func TestIndexFor(t *testing.T) {
	for es := EligibleNow; es <= NotApplicable; es++ {
		got := IndexFor(es)
		var want string
		switch {
		case es == EligibleNow:
			want = "eligible"
		case es == NotEligibleUntilTime:
			want = "delayed"
		case strings.HasPrefix(es.String(), "blocked_by_"):
			want = "blocked:" + strings.TrimPrefix(es.String(), "blocked_by_")
			if !slices.Contains(BlockedStates, es) {
				t.Errorf("BlockedStates lacks %v", es)
			}
		}
		if got != want {
			t.Errorf("IndexFor(%v) = %q, want %q", es, got, want)
		}
	}
	names := BlockedIndexNames()
	for i, es := range BlockedStates {
		if names[i] != IndexFor(es) || slices.Index(names, names[i]) != i {
			t.Errorf("BlockedIndexNames() = %q, entry %d not IndexFor(%v) or repeated", names, i, es)
		}
	}
	if got := LaneIndexFor(StateVector{LifecyclePhase: PhaseRunnable, EligibilityState: BlockedByRoute}); got != "blocked:route" {
		t.Errorf("LaneIndexFor(runnable/blocked_by_route) = %q", got)
	}
	if got := LaneIndexFor(StateVector{LifecyclePhase: PhaseTerminal, EligibilityState: NotApplicable}); got != "terminal" {
		t.Errorf("LaneIndexFor(terminal) = %q", got)
	}
}
