package valkeystore

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/flowfabric/flowfabric/internal/redisserver"
)

// Tests run on three backends: miniredis in-process, one real standalone
// server and one real 3-master cluster. The real servers are shared by the
// whole test binary (started on first use, stopped by TestMain); each store
// gets its own key prefix, so parallel tests do not see each other.

type backend struct {
	name string
	// client returns a client for a fresh store; it skips t when the
	// backend is unavailable.
	client func(t testing.TB) valkey.Client
	// server returns a function that makes clients of one server, for
	// tests of several processes sharing a server.
	server func(t testing.TB) func() valkey.Client
}

var backends = []backend{
	{"miniredis", miniredisClient, func(t testing.TB) func() valkey.Client {
		m := miniredis.RunT(t)
		return func() valkey.Client { return newClient(t, m.Addr()) }
	}},
	{"standalone", standaloneClient, func(t testing.TB) func() valkey.Client {
		return func() valkey.Client { return standaloneClient(t) }
	}},
	{"cluster", clusterClient, func(t testing.TB) func() valkey.Client {
		return func() valkey.Client { return clusterClient(t) }
	}},
	// second-server runs the standalone tests on the other server binary
	// when both valkey-server and redis-server are installed (skipped
	// otherwise), so both are covered in one run.
	{"second-server", secondClient, func(t testing.TB) func() valkey.Client {
		return func() valkey.Client { return secondClient(t) }
	}},
}

var (
	secondOnce sync.Once
	secondSrv  *redisserver.Server
	secondErr  error
)

func secondClient(t testing.TB) valkey.Client {
	secondOnce.Do(func() {
		bins := redisserver.Binaries()
		if len(bins) < 2 {
			secondErr = errSingleBinary
			return
		}
		dir, err := sharedTempDir()
		if err != nil {
			secondErr = err
			return
		}
		d := dir + "/second"
		if err := os.MkdirAll(d, 0o755); err != nil {
			secondErr = err
			return
		}
		secondSrv, secondErr = redisserver.New(d, &redisserver.Options{Binary: bins[1]})
	})
	if errors.Is(secondErr, errSingleBinary) {
		t.Skip("only one of valkey-server and redis-server is installed; the standalone backend covers it")
	}
	skipOrFail(t, secondErr)
	return newClient(t, secondSrv.Addr())
}

var errSingleBinary = errors.New("one server binary")

var (
	sharedDir string

	standaloneOnce sync.Once
	standaloneSrv  *redisserver.Server
	standaloneErr  error

	clusterOnce sync.Once
	clusterSrv  *redisserver.Cluster
	clusterErr  error

	prefixSeq atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if standaloneSrv != nil {
		_ = standaloneSrv.Kill()
	}
	if secondSrv != nil {
		_ = secondSrv.Kill()
	}
	if clusterSrv != nil {
		clusterSrv.Close()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	if code == 0 {
		// Stop and Close leave nothing running, including after the
		// outages some tests inflict (killed and paused servers).
		// valkey-go's cluster client closes a connection a topology
		// refresh replaced after a fixed 5 s (cluster.go, _refresh): bounded,
		// and not ours to stop.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	sharedDirOnce sync.Once
	sharedDirErr  error
)

func sharedTempDir() (string, error) {
	sharedDirOnce.Do(func() { sharedDir, sharedDirErr = os.MkdirTemp("", "valkeystore-test-") })
	return sharedDir, sharedDirErr
}

func miniredisClient(t testing.TB) valkey.Client {
	m := miniredis.RunT(t)
	return newClient(t, m.Addr())
}

func standaloneClient(t testing.TB) valkey.Client {
	standaloneOnce.Do(func() {
		dir, err := sharedTempDir()
		if err != nil {
			standaloneErr = err
			return
		}
		d := dir + "/standalone"
		if err := os.MkdirAll(d, 0o755); err != nil {
			standaloneErr = err
			return
		}
		standaloneSrv, standaloneErr = redisserver.New(d, nil)
	})
	skipOrFail(t, standaloneErr)
	return newClient(t, standaloneSrv.Addr())
}

func clusterClient(t testing.TB) valkey.Client {
	clusterOnce.Do(func() {
		dir, err := sharedTempDir()
		if err != nil {
			clusterErr = err
			return
		}
		clusterSrv, clusterErr = redisserver.NewCluster(dir+"/cluster", 3)
	})
	skipOrFail(t, clusterErr)
	return newClient(t, clusterSrv.Addrs()...)
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, redisserver.ErrNotInstalled) || errors.Is(err, redisserver.ErrNoCLI) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
}

func newClient(t testing.TB, addrs ...string) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		t.Fatalf("valkey client for %v: %v", addrs, err)
	}
	t.Cleanup(c.Close)
	return c
}

// newStore returns a store with its own prefix on backend b.
func newStore(t testing.TB, b backend, opts *Options) *Store {
	t.Helper()
	return newStoreWith(t, b.client(t), opts)
}

// newStoreWith returns a store on client c (its own prefix unless opts has
// one).
func newStoreWith(t testing.TB, c valkey.Client, opts *Options) *Store {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("t%d", prefixSeq.Add(1))
	}
	s, err := New(c, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// forEachBackend runs f as a parallel subtest per backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}
