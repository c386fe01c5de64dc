package valkeystore

import (
	"testing"

	"github.com/flowfabric/flowfabric/internal/redisserver"
)

// TestServerVersions logs the server binaries the real-server backends run.
func TestServerVersions(t *testing.T) {
	bins := redisserver.Binaries()
	if len(bins) == 0 {
		t.Skip(redisserver.ErrNotInstalled.Error())
	}
	for i, b := range bins {
		role := "standalone and cluster"
		if i > 0 {
			role = "second-server"
		}
		t.Logf("%s: %s", role, redisserver.Version(b))
	}
}
