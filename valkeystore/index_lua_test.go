package valkeystore

import (
	"context"
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
