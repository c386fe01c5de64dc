package valkeystore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// TestIndexLua runs the generated index helpers on a server and checks
// that they name the same index as model.IndexFor for every eligibility
// state (and nothing for an unknown one), and that BLOCKED_NAMES is
// model.BlockedIndexNames.
func TestIndexLua(t *testing.T) {
	c := miniredisClient(t)
	var states []string
	var want []string
	for es := model.EligibilityState(1); es.String() != ""; es++ {
		states = append(states, es.String())
		blocked := ""
		if slices.Contains(model.BlockedStates, es) {
			blocked = model.IndexFor(es)
		}
		want = append(want, model.IndexFor(es), blocked)
	}
	states = append(states, "no_such_state")
	want = append(want, "", "")
	want = append(want, model.BlockedIndexNames()...)
	src := indexLua() + `
local out = {}
for _, es in ipairs(ARGV) do
  out[#out + 1] = runnable_index(es) or ''
  out[#out + 1] = blocked_index(es) or ''
end
for _, name in ipairs(BLOCKED_NAMES) do out[#out + 1] = name end
return out
`
	got, err := c.Do(context.Background(), c.B().Eval().Script(src).Numkeys(0).Arg(states...).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Lua mapping (runnable_index, blocked_index per state of %q, then BLOCKED_NAMES):\n got %q\nwant %q", states, got, want)
	}
}

// TestPublicStateLua runs the generated public_state on a server for every
// lifecycle phase, eligibility state and terminal outcome (each also
// blank, as stored records may leave them) and compares it with
// model.DerivePublicState.
func TestPublicStateLua(t *testing.T) {
	c := miniredisClient(t)
	var args, want []string
	name := func(s fmt.Stringer) string { return s.String() }
	for lp := model.LifecyclePhase(0); lp == 0 || lp.String() != ""; lp++ {
		for es := model.EligibilityState(0); es == 0 || es.String() != ""; es++ {
			for to := model.TerminalOutcome(0); to == 0 || to.String() != ""; to++ {
				args = append(args, name(lp), name(es), name(to))
				want = append(want, model.DerivePublicState(lp, es, to).String())
			}
		}
	}
	src := publicStateLua() + `
local out = {}
for i = 1, #ARGV, 3 do
  out[#out + 1] = public_state({ lifecycle_phase = ARGV[i], eligibility_state = ARGV[i + 1], terminal_outcome = ARGV[i + 2] })
end
return out
`
	got, err := c.Do(context.Background(), c.B().Eval().Script(src).Numkeys(0).Arg(args...).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d states for %d cases", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("public_state(phase %q, eligibility %q, outcome %q) = %q, want %q",
				args[3*i], args[3*i+1], args[3*i+2], got[i], want[i])
		}
	}
}
