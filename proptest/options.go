package proptest

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// Options sizes a run. The zero value means the defaults.
type Options struct {
	// Checks is how many operation sequences to run (RunStateMachine
	// default 1000, RunDifferential default 100). An explicit
	// -rapid.checks flag (or RAPID_CHECKS) wins over it.
	Checks int
	// Steps is how many operations each sequence has (default 50). An
	// explicit -rapid.steps flag (or RAPID_STEPS) wins over it. Unlike
	// rapid's Repeat, every sequence has exactly this many steps; shrinking
	// turns the steps a failure does not need into no-ops.
	Steps int
	// MaxExecutions caps the executions a sequence creates (default 6);
	// further creates replay ids and idempotency keys instead. The
	// children of awaits (ExecutionAwaitChildren) are not counted; they
	// stop at a few times the cap.
	MaxExecutions int
	// CompareEvery makes a differential run read the second store's full
	// observation only every CompareEvery steps and after the last step
	// (default 1: every step). Answers of every call are still compared at
	// once, and the first store is still observed and checked every step;
	// an observation of the second store equal to the first's satisfies the
	// same invariants. For slow stores (Lua on miniredis).
	CompareEvery int
	// KnownViolations tolerates invariant violations whose text contains
	// one of these substrings: for store bugs that are known and tracked,
	// so that the rest stays checked until they are fixed. Keep them narrow.
	KnownViolations []string
	// LeaseNotices checks the lease notices of the first store after every
	// step (see lease_notices.go). The first store must implement
	// model.LeaseNotifier and deliver a notice before the call that caused
	// it returns, as memstore does. In a differential run the later stores'
	// notices are compared with the first store's at every comparison.
	LeaseNotices bool

	// onCall, when set, sees every call's answer (for the coverage test).
	onCall func(op string, res any, err error)
	// boost names actions drawn in a third of the steps besides their
	// weight (for the coverage test's extra rounds; names must be in the
	// action table).
	boost []string
}

// Defaults.
const (
	DefaultChecks             = 1000
	DefaultDifferentialChecks = 100
	DefaultHostileChecks      = 300
	DefaultSteps              = 50
	DefaultMaxExecutions      = 6
)

// NewStoreFunc opens an empty store for one sequence. t belongs to that
// sequence: Cleanup runs when the sequence ends and Fatal fails it (so the
// failure shrinks like any other).
type NewStoreFunc func(t testing.TB) model.Store

func (o Options) withDefaults(checks int) Options {
	if o.Checks <= 0 {
		o.Checks = checks
	}
	if o.Steps <= 0 {
		o.Steps = DefaultSteps
	}
	if o.MaxExecutions <= 0 {
		o.MaxExecutions = DefaultMaxExecutions
	}
	if o.CompareEvery <= 0 {
		o.CompareEvery = 1
	}
	return o
}

// rapidFlag reports the value of a rapid command-line flag and whether the
// user set it (on the command line or through its environment variable).
func rapidFlag(name, env string) (string, bool) {
	f := flag.Lookup(name)
	if f == nil {
		return "", false
	}
	set := false
	flag.Visit(func(v *flag.Flag) {
		if v.Name == name {
			set = true
		}
	})
	if _, ok := os.LookupEnv(env); ok && env != "" {
		set = true
	}
	return f.Value.String(), set
}

// budget resolves how many times to call rapid.Check and how many steps a
// sequence has. rapid reads its check count from a global flag (default
// 100); rather than write that global (racy when tests run in parallel),
// the run calls rapid.Check as many times as needed to reach opts.Checks.
// With an explicit -rapid.checks, -rapid.seed or -rapid.failfile it calls
// it once, so a seed replays exactly.
func budget(opts Options) (rounds, steps int) {
	steps = opts.Steps
	if v, set := rapidFlag("rapid.steps", "RAPID_STEPS"); set {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			steps = n
		}
	}
	v, set := rapidFlag("rapid.checks", "RAPID_CHECKS")
	if set {
		return 1, steps
	}
	if s, set := rapidFlag("rapid.seed", "RAPID_SEED"); set && s != "0" {
		return 1, steps
	}
	if s, set := rapidFlag("rapid.failfile", "RAPID_FAILFILE"); set && s != "" {
		return 1, steps
	}
	per, err := strconv.Atoi(v)
	if err != nil || per <= 0 {
		per = 100
	}
	return (opts.Checks + per - 1) / per, steps
}

// checkRounds runs prop with rapid.Check until the budget is spent.
func checkRounds(t *testing.T, opts Options, prop func(rt *rapid.T, steps int)) {
	t.Helper()
	rounds, steps := budget(opts)
	t.Logf("proptest: %d round(s) of rapid.Check, %d steps per sequence", rounds, steps)
	for range rounds {
		rapid.Check(t, func(rt *rapid.T) { prop(rt, steps) })
		if t.Failed() {
			return
		}
	}
}
