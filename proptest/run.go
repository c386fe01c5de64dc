package proptest

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// RunStateMachine runs random operation sequences against stores opened by
// newStore and checks the invariants after every step. See the package
// documentation for what it covers and how to replay a failure.
//
// Do not call it from parallel subtests that share a fail-file directory
// with other rapid tests of the same name.
func RunStateMachine(t *testing.T, newStore NewStoreFunc, opts Options) {
	t.Helper()
	opts = opts.withDefaults(DefaultChecks)
	checkRounds(t, opts, func(rt *rapid.T, steps int) {
		runMachine(t, rt, []NewStoreFunc{newStore}, opts, steps)
	})
}

// RunDifferential applies the same random operation sequences (with the
// same times and ids) to a store from newA and one from newB. After every
// call it compares their answers (results and errors, see ErrorView), after
// every step everything both show (Observation: describe snapshots, index
// membership, attempts, lease history, results, listing pages, due timers,
// live workers, streams, event feeds), and reports the first difference
// as a go-cmp diff (-A +B). Both stores are also checked against the invariants.
func RunDifferential(t *testing.T, newA, newB NewStoreFunc, opts Options) {
	t.Helper()
	opts = opts.withDefaults(DefaultDifferentialChecks)
	checkRounds(t, opts, func(rt *rapid.T, steps int) {
		runMachine(t, rt, []NewStoreFunc{newA, newB}, opts, steps)
	})
}

// StateMachineProperty returns the property RunStateMachine checks, with
// opts.Steps steps per sequence, for use with rapid.Check or rapid.MakeFuzz
// (go test -fuzz):
//
//	f.Fuzz(rapid.MakeFuzz(proptest.StateMachineProperty(f, newStore, proptest.Options{})))
func StateMachineProperty(t testing.TB, newStore NewStoreFunc, opts Options) func(*rapid.T) {
	opts = opts.withDefaults(DefaultChecks)
	return func(rt *rapid.T) { runMachine(t, rt, []NewStoreFunc{newStore}, opts, opts.Steps) }
}

// DifferentialProperty is StateMachineProperty for RunDifferential.
func DifferentialProperty(t testing.TB, newA, newB NewStoreFunc, opts Options) func(*rapid.T) {
	opts = opts.withDefaults(DefaultDifferentialChecks)
	return func(rt *rapid.T) { runMachine(t, rt, []NewStoreFunc{newA, newB}, opts, opts.Steps) }
}

func runMachine(outer testing.TB, rt *rapid.T, opens []NewStoreFunc, opts Options, steps int) {
	rt.Helper()
	tb := newSequenceTB(outer, rt)
	tb.feeds = drawFeeds(rt)
	stores := make([]model.Store, len(opens))
	for i, open := range opens {
		stores[i] = open(tb)
	}
	m, err := newMachine(rt.Context(), stores, opts)
	if err != nil {
		rt.Fatal(err)
	}
	m.feedsBuilt(tb)
	m.run(rt, steps)
}

// RunHostileInputs checks InputProperty over Options.Checks sequences
// (default 300).
func RunHostileInputs(t *testing.T, newStore NewStoreFunc, opts Options) {
	t.Helper()
	opts = opts.withDefaults(DefaultHostileChecks)
	checkRounds(t, opts, func(rt *rapid.T, _ int) { InputProperty(t, newStore, opts)(rt) })
}

// InputProperty returns a property for rapid.Check or rapid.MakeFuzz (go
// test -fuzz): after a few random valid steps it calls one store operation
// with parameters drawn from hostile generators (odd strings, invalid
// UTF-8, huge and negative numbers and durations, zero and far times,
// out-of-range partitions, malformed capabilities, tags, fences and
// sources). When the parameters fail their Validate method, the store must
// refuse them with exactly that error (a validation error naming its field)
// and change nothing; otherwise it must not panic and the invariants must
// still hold.
//
// Only opts.KnownViolations and opts.MaxExecutions are used. t serves only
// what outlives a sequence (Name, TempDir, Setenv); under f.Fuzz, where
// *testing.F methods must not be called, pass f only if newStore needs none
// of those.
func InputProperty(t testing.TB, newStore NewStoreFunc, opts Options) func(*rapid.T) {
	opts = opts.withDefaults(DefaultChecks)
	return func(rt *rapid.T) {
		rt.Helper()
		tb := newSequenceTB(t, rt)
		tb.feeds = drawFeeds(rt)
		m, err := newMachine(rt.Context(), []model.Store{newStore(tb)}, opts)
		if err != nil {
			rt.Fatal(err)
		}
		m.feedsBuilt(tb)
		defer endOnOverrun()
		m.observe(rt)
		warm := rapid.IntRange(0, 15).Draw(rt, "warmup_steps")
		for m.step = 1; m.step <= warm; m.step++ {
			m.runStep(rt, pickAction(rt))
		}
		m.runStep(rt, &action{name: "HostileInput", run: (*machine).actHostile})
	}
}
