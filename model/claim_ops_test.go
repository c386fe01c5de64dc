package model

import "testing"

// Empty is what the engine's spread-lane probes learn from: only a result
// that examined the partition and found no head at all counts.
func TestClaimNextResultEmpty(t *testing.T) {
	for _, c := range []struct {
		name string
		r    ExecutionClaimNextResult
		want bool
	}{
		{"nothing", ExecutionClaimNextResult{}, true},
		{"paused", ExecutionClaimNextResult{Paused: true}, false},
		{"claimed", ExecutionClaimNextResult{Claimed: &ClaimResult{}}, false},
		{"admission", ExecutionClaimNextResult{Admit: &AdmissionCandidate{}}, false},
		{"skipped", ExecutionClaimNextResult{Skipped: 1}, false},
		{"blocked", ExecutionClaimNextResult{Blocked: []ExecutionID{{}}}, false},
	} {
		if got := c.r.Empty(); got != c.want {
			t.Errorf("%s: Empty() = %v, want %v", c.name, got, c.want)
		}
	}
}
