package valkeystore

import (
	"fmt"
	"strings"
	"time"

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

	// the index repair's derivation (lib/index.lua expected_indexes)
	b.WriteString("-- lane_index names the lane index of an execution in phase lp and\n" +
		"-- eligibility state es (model.LaneIndexFor); nil for none.\n" +
		"local function lane_index(lp, es)\n" +
		"  if lp == 'runnable' then return runnable_index(es) end\n")
	for lp := model.LifecyclePhase(1); lp.String() != ""; lp++ {
		if lp == model.PhaseRunnable {
			continue
		}
		if name := model.LaneIndexFor(model.StateVector{LifecyclePhase: lp}); name != "" {
			fmt.Fprintf(&b, "  if lp == '%s' then return '%s' end\n", lp, name)
		}
	}
	b.WriteString("  return nil\nend\n")
	b.WriteString("-- retention_field names the record field holding the retention of\n" +
		"-- outcome to (model.Retention.For); nil: none.\nlocal function retention_field(to)\n")
	probe := model.Retention{Completed: 1, Failed: 2, Cancelled: 3}
	fields := map[time.Duration]string{1: "ret_ok", 2: "ret_failed", 3: "ret_cancelled"}
	for to := model.TerminalOutcome(1); to.String() != ""; to++ {
		if f := fields[probe.For(to)]; f != "" {
			fmt.Fprintf(&b, "  if to == '%s' then return '%s' end\n", to, f)
		}
	}
	b.WriteString("  return nil\nend\n")
	fmt.Fprintf(&b, "local SUSPENDED_NO_TIMEOUT = %d\n", model.SuspendedNoTimeoutScore)
	return b.String()
}

// publicStateLua is the generated public_state(e): model.DerivePublicState
// written as Lua, one branch per lifecycle phase (a blank or unknown phase
// last). Each phase's result may depend on the terminal outcome or on the
// eligibility state, not both; the generator panics, at package init, if
// the derivation ever needs more.
func publicStateLua() string {
	var b strings.Builder
	b.WriteString("-- public_state derives the public state of e (model.DerivePublicState).\n" +
		"local function public_state(e)\n" +
		"  local lp, es, to = e.lifecycle_phase, e.eligibility_state, e.terminal_outcome\n")
	var ess []model.EligibilityState
	for es := model.EligibilityState(1); es.String() != ""; es++ {
		ess = append(ess, es)
	}
	var tos []model.TerminalOutcome
	for to := model.TerminalOutcome(1); to.String() != ""; to++ {
		tos = append(tos, to)
	}
	// branch writes the body deciding the state of phase lp
	branch := func(lp model.LifecyclePhase, indent string) {
		base := model.DerivePublicState(lp, 0, 0)
		byTo, byEs := false, false
		for _, es := range append(ess, 0) {
			for _, to := range append(tos, 0) {
				r := model.DerivePublicState(lp, es, to)
				byTo = byTo || r != model.DerivePublicState(lp, es, 0) // varies with the outcome
				byEs = byEs || r != model.DerivePublicState(lp, 0, to) // varies with the eligibility
			}
		}
		switch {
		case byTo && byEs:
			panic(fmt.Sprintf("valkeystore: the public state of phase %q depends on outcome and eligibility", lp))
		case byTo:
			for _, to := range tos {
				if r := model.DerivePublicState(lp, 0, to); r != base {
					fmt.Fprintf(&b, "%sif to == '%s' then return '%s' end\n", indent, to, r)
				}
			}
		case byEs:
			for _, es := range ess {
				if r := model.DerivePublicState(lp, es, 0); r != base {
					fmt.Fprintf(&b, "%sif es == '%s' then return '%s' end\n", indent, es, r)
				}
			}
		}
		fmt.Fprintf(&b, "%sreturn '%s'\n", indent, base)
	}
	for lp := model.LifecyclePhase(1); lp.String() != ""; lp++ {
		fmt.Fprintf(&b, "  if lp == '%s' then\n", lp)
		branch(lp, "    ")
		b.WriteString("  end\n")
	}
	branch(0, "  ")
	b.WriteString("end\n")
	return b.String()
}
