package valkeystore

import (
	"fmt"
	"strings"

	"github.com/flowfabric/flowfabric/model"
)

// indexLua is the generated part of the library that names lane indexes:
// the one eligibility → index mapping, model.IndexFor, written as Lua.
// The functions are chains of comparisons of interned strings, eligible_now
// first, so the hot path (a claim or completion leaving the eligible
// index) costs one comparison, as the hand-written helpers did.
func indexLua() string {
	var b strings.Builder
	b.WriteString("-- runnable_index names the lane index of a runnable execution in\n" +
		"-- eligibility state es (model.IndexFor); nil for any other state.\n" +
		"local function runnable_index(es)\n")
	for es := model.EligibilityState(1); es.String() != ""; es++ {
		if name := model.IndexFor(es); name != "" {
			fmt.Fprintf(&b, "  if es == '%s' then return '%s' end\n", es, name)
		}
	}
	b.WriteString("  return nil\nend\n")

	b.WriteString("-- blocked_index names the index of a blocked eligibility state\n" +
		"-- (\"blocked_by_route\": \"blocked:route\"); nil for any other state.\n" +
		"local function blocked_index(es)\n")
	for _, es := range model.BlockedStates {
		fmt.Fprintf(&b, "  if es == '%s' then return '%s' end\n", es, model.IndexFor(es))
	}
	b.WriteString("  return nil\nend\n")

	b.WriteString("-- The blocked indexes in the order ExecutionIndexes checks them.\nlocal BLOCKED_NAMES = {")
	for i, name := range model.BlockedIndexNames() {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " '%s'", name)
	}
	b.WriteString(" }\n")
	return b.String()
}
