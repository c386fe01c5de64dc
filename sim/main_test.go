package sim_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives its tests: a run
// ends every simulated goroutine it started (Sched.Close), including
// those of processes that died.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
