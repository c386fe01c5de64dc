package chaos

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any goroutine outlives them (in
// the test process and in every worker process it starts). valkey-go's
// cluster client, after a topology refresh failed (a master was killed),
// leaves a goroutine sleeping out its retry back-off past Close; it ends
// on its own and is not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"))
}
