package flowfabric_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// engine, scanner runner and worker must be gone after Stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
