package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
