package sim_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/sim"
)

var (
	seeds   = flag.Int("sim.seeds", 0, "how many seeds TestSeeds runs (0: 300, 100 under the race detector)")
	first   = flag.Uint64("sim.first", 1, "the first seed TestSeeds runs")
	oneSeed = flag.Uint64("sim.seed", 0, "run only this seed and print its history")
	steps   = flag.Int("sim.steps", 0, "workload steps per seed (0: the default, 300)")
	calm    = flag.Bool("sim.calm", false, "with -sim.seed: replay a calm run (TestCalm's)")
)

// report fails t with the seed, the violations and the shrunk history.
func report(t *testing.T, r *sim.Result) {
	t.Helper()
	s := sim.Shrink(r)
	o := s.Options
	t.Errorf("seed %d failed: %s\nshrunk to %d steps, faults %v (%+v), kills %v, operator %v: %s\n"+
		"replay (the whole history): go test ./sim/ -run TestSeeds -sim.seed=%d -sim.steps=%d -sim.calm=%v -v\n"+
		"shrunk history of the executions named:\n%s",
		r.Options.Seed, strings.Join(r.Violations, "; "), o.Steps, !o.NoFaults, *o.Faults, !o.NoKills, !o.NoOperator,
		strings.Join(s.Violations, "; "), o.Seed, o.Steps, o.Calm, s.Focus())
}

// TestSeeds runs many seeds (flags: -sim.seeds, -sim.first, -sim.seed,
// -sim.steps).
func TestSeeds(t *testing.T) {
	if *oneSeed != 0 {
		r := sim.Run(sim.Options{Seed: *oneSeed, Steps: *steps, Calm: *calm})
		t.Log("\n" + r.History())
		if r.Failed() {
			report(t, r)
		}
		return
	}
	n := *seeds
	if n == 0 {
		n = 300
		if raceDetector {
			n = 100
		}
	}
	submitted, completed := 0, 0
	var sus sim.SuspendStats
	var adm sim.AdmissionStats
	var str sim.StreamStats
	var ret sim.RetentionStats
	var longest time.Duration
	var longestSeed uint64
	for s := *first; s < *first+uint64(n); s++ {
		r := sim.Run(sim.Options{Seed: s, Steps: *steps})
		submitted += r.Submitted
		completed += r.Completed
		sus.Add(r.Suspend)
		adm.Add(r.Admission)
		str.Add(r.Stream)
		ret.Deleted += r.Retention.Deleted
		ret.Trimmed += r.Retention.Trimmed
		ret.Flows += r.Retention.Flows
		ret.FlowsTrimmed += r.Retention.FlowsTrimmed
		if r.Drain > longest {
			longest, longestSeed = r.Drain, s
		}
		if r.Failed() {
			report(t, r)
			return
		}
	}
	t.Logf("%d seeds: %d executions acknowledged, %d completed, none lost; longest drain %v (seed %d); suspension: %+v; admission: %+v; streams: %+v; retention: %+v",
		n, submitted, completed, longest, longestSeed, sus, adm, str, ret)
}

// TestDeterministic runs seeds twice: the event logs must be
// byte-identical.
func TestDeterministic(t *testing.T) {
	for s := uint64(1); s <= 5; s++ {
		a, b := sim.Run(sim.Options{Seed: s}), sim.Run(sim.Options{Seed: s})
		if a.History() != b.History() {
			t.Fatalf("seed %d: two runs differ:\n%s", s, firstDiff(a.Log, b.Log))
		}
		if len(a.Log) < 100 || a.Submitted == 0 {
			t.Fatalf("seed %d: %d log lines, %d submitted: the run did nothing", s, len(a.Log), a.Submitted)
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

// regressions are seeds that once failed, with what they found.
var regressions = []struct {
	seed uint64
	calm bool
	why  string
}{
	{652, false, "the simulator's own handler waited with no deadline (Wait(ctx, 0, nil)) and hung the drain"},
	{78, true, "a worker tracked tasks by execution id: a handler ignoring its context outlived its attempt, " +
		"the retry ran on the same worker, and the old task's end dropped the new one, whose lease then expired " +
		"(TestSameExecutionTwiceOnOneWorker)"},
	{1102, false, "a signal delivery the network applied twice was stored twice under one signal id " +
		"(storetest Suspend/SignalReplayByID)"},
	{5447, false, "two concurrent SubmitFlow calls with one key and different graphs: the one that found the flow " +
		"sealed by the other reported success for nodes that do not exist (now ErrIdempotencyConflict)"},
	{272, false, "two claimers were granted one quota execution (the second grant replaced the first); both admitted it, " +
		"the second's admission a takeover of the first's, the first claimed and ran, the second's claim failed and " +
		"released its token, which was now the running lease's admission: a third handler ran in a bucket of 2 " +
		"(claim: undoAdmission hands a taken-over admission back to the lease that holds one)"},
	{2, true, "an execution whose quota policy did not exist yet failed every claim of its lane with a warning " +
		"(claim: it is blocked on the quota, as on a missing budget)"},
}

func TestRegressionSeeds(t *testing.T) {
	for _, c := range regressions {
		if r := sim.Run(sim.Options{Seed: c.seed, Calm: c.calm}); r.Failed() {
			t.Errorf("regression (%s):", c.why)
			report(t, r)
		}
	}
}

// TestShrink: a failing run shrinks to a failing run no longer than it.
func TestShrink(t *testing.T) {
	r := sim.Run(sim.Options{Seed: 3, Steps: 200, FailAt: 120})
	if !r.Failed() {
		t.Fatal("an injected violation did not fail the run")
	}
	s := sim.Shrink(r)
	if !s.Failed() || s.Options.Steps != 120 || !strings.Contains(s.History(), "VIOLATION") {
		t.Fatalf("shrunk to %d steps, failed %v", s.Options.Steps, s.Failed())
	}
}

// TestCalm runs healthy systems (no faults, deaths, stalls or jumps):
// besides every other check, no lease may expire there.
func TestCalm(t *testing.T) {
	n := uint64(40)
	if raceDetector {
		n = 15
	}
	if *seeds > 0 {
		n = uint64(*seeds)
	}
	for s := *first; s < *first+n; s++ {
		if r := sim.Run(sim.Options{Seed: s, Calm: true, Steps: *steps}); r.Failed() {
			report(t, r)
			return
		}
	}
}
