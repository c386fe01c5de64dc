// Package chaos holds the chaos suite: drains on real servers (which the
// tests start with redis-server or valkey-server from PATH, and skip
// without) while workers in separate processes are killed with SIGKILL,
// the server is killed and restarted on its append-only file, paused with
// SIGSTOP for longer than a lease, or a cluster master is killed. Each test
// counts what it submitted, what was acknowledged, completed and
// recovered, and fails unless every acknowledged execution completes
// exactly once (lost = 0, completed twice = 0); `go test -v` prints the
// counts, the recovery times and how long the drain took to end. A drain
// is bounded by its stalls, not its length: it fails when no pending
// execution completes for a minute (under the quota reconciler's
// two-minute grace, so a slot only that backstop would free fails it
// too), and then reports what holds the rest; a drain slowed by a loaded
// machine still finishes.
//
// The suite is bounded for CI; -chaos.jobs and -chaos.faults make it
// longer:
//
//	go test ./internal/chaos/ -v -chaos.jobs=20000 -chaos.faults=50
//
// The package has no non-test code.
package chaos
