package valkeystore

import (
	"fmt"
	"strings"
)

// The execution record (X:core) is a HASH of three JSON arrays, each
// field of recordFields in one of them, in declaration order:
//
//	n  the hot numbers   [<number>,...]
//	s  the hot strings   ["<string>",...]
//	c  the cold fields   [[<number>,...],["<string>",...]]
//
// A script reads n and s with one HMGET and decodes each with one
// cjson.decode: the record e is {numbers, strings}, and a script naming a
// hot field e.<name> reads e[1][<i>] or e[2][<i>] (rewrite.go turns the
// name into the index when the script is built), so loading and saving cost
// a few C calls and nothing per field in Lua. Cold fields are the ones no
// create-claim-complete-renew path touches (policy, limits and counters,
// grant and pending details, progress, outcome): e.<name> becomes
// rec_cold(e)[<1|2>][<i>], which reads and decodes c on first use; a script
// that used them saves c too.
//
// Numbers are printed with one string.format("%d,...") (exact for every
// integer, unlike cjson's 14 significant digits, and a third of cjson's
// cost); strings are encoded by cjson. Every text the store keeps is valid
// UTF-8, so cjson and miniredis's encoding/json agree byte for byte. Go
// never decodes a record: ExecutionDescribe's script returns the fields by
// name.

type fieldKind uint8

const (
	fstr fieldKind = iota
	fnum
)

type recordField struct {
	name string
	kind fieldKind
	cold bool
	def  string // Lua literal of the blank value
}

func sfield(name string) recordField { return recordField{name, fstr, false, "''"} }
func nfield(name string) recordField { return recordField{name, fnum, false, "0"} }

// cold marks fields kept in c (see above).
func cold(f recordField) recordField {
	f.cold = true
	return f
}

// recordVersion is the layout version of X:core, stamped in every record
// as its first hot number (layout_version) and checked by load_exec: a
// script meeting a record of another version refuses it with a corruption
// error (model.ErrCorrupt) instead of misreading it.
//
// The upgrade rule: any change to recordFields (a field added, removed,
// moved, renamed, or made hot or cold) bumps recordVersion and updates
// recordLayoutGolden in record_test.go, whose test fails until both are
// done. Because the version is checked for equality, a new version is not
// readable by a process running the old build and vice versa: a rolling
// deploy across a layout change is not supported; drain (stop every
// process of the old build) first, or run a migration. Reading an older
// layout needs a decoder for it (an upgrade step in load_exec), written
// with the change.
const recordVersion = 1

// recordFields is the layout of X:core. Changing it changes the stored
// format; see recordVersion.
var recordFields = []recordField{
	// the layout version; must stay the first hot number (load_exec reads e[1][1])
	{"layout_version", fnum, false, fmt.Sprint(recordVersion)},
	// identity
	sfield("id"), sfield("ns"), sfield("lane"), sfield("kind"), nfield("priority"), nfield("created_at"),
	sfield("required_caps"),
	// state
	sfield("lifecycle_phase"), sfield("ownership_state"), sfield("eligibility_state"),
	sfield("blocking_reason"), sfield("blocking_detail"), sfield("terminal_outcome"), sfield("attempt_state"),
	nfield("last_mutation_at"), nfield("last_transition_at"), nfield("started_at"), nfield("terminal_at"),
	nfield("delay_until"),
	// policy, limits and counters (retry_max is hot: every claim returns it)
	nfield("retry_max"), cold(sfield("retry_backoff")), cold(nfield("retry_delay_ms")),
	cold(nfield("retry_initial_ms")), cold(sfield("retry_multiplier")), cold(nfield("retry_max_delay_ms")),
	nfield("retry_count"), cold(nfield("max_reclaims")), cold(nfield("reclaim_count")),
	cold(nfield("max_replays")), cold(nfield("replay_count")), nfield("attempt_timeout"),
	nfield("deadline"), nfield("timeout_at"),
	// attempts; pending_* beyond the type are set and cleared with it
	nfield("total_attempts"), {"cur_attempt", fnum, false, "-1"}, sfield("cur_attempt_id"),
	sfield("pending_type"), cold(sfield("pending_reason")), cold(sfield("pending_requested_by")),
	cold(nfield("pending_prev_index")),
	// lease
	nfield("epoch"), sfield("lease_id"), sfield("lease_worker_id"), sfield("lease_wi"),
	nfield("lease_acquired_at"), nfield("lease_expires_at"), nfield("lease_renew_by"),
	nfield("lease_expired_at"), nfield("lease_revoked_at"), cold(sfield("revoke_reason")), // set and cleared with lease_revoked_at
	nfield("hist_seq"),
	// grant; grant_* beyond the kind are set and cleared with it
	sfield("grant_kind"), cold(sfield("grant_worker_id")), cold(sfield("grant_wi")),
	cold(nfield("grant_created_at")), cold(nfield("grant_expires_at")),
	// progress, capability mismatch
	cold(nfield("progress_pct")), cold(sfield("progress_msg")), cold(nfield("progress_at")),
	cold(nfield("last_cap_mismatch_at")),
	// outcome
	cold(sfield("failure_reason")), cold(sfield("failure_category")), cold(sfield("cancellation_reason")),
	cold(sfield("cancelled_by")),
	// the last replayable operation; its results are set only by fail,
	// delay and cancel
	sfield("op_kind"), sfield("op_operator"), sfield("op_fence_lease"), sfield("op_fence_epoch"),
	sfield("op_fence_attempt"), cold(sfield("op_fail_result")), cold(nfield("op_delay_until")),
	cold(sfield("op_prior_phase")),
}

// recordSlot is where a field lives in a decoded record: cold or hot, the
// array (1 numbers, 2 strings) and the 1-based index in it.
type recordSlot struct {
	cold         bool
	array, index int
}

var recordSlots = func() map[string]recordSlot {
	m := make(map[string]recordSlot, len(recordFields))
	var n [2][3]int // [cold][array]
	for _, f := range recordFields {
		if _, dup := m[f.name]; dup || f.name == "k" || f.name == "c" {
			panic("valkeystore: bad record field " + f.name)
		}
		c, a := 0, 2
		if f.cold {
			c = 1
		}
		if f.kind == fnum {
			a = 1
		}
		n[c][a]++
		m[f.name] = recordSlot{f.cold, a, n[c][a]}
	}
	return m
}()

// expr is the Lua expression of the field in record e.
func (s recordSlot) expr() string {
	if s.cold {
		return fmt.Sprintf("rec_cold(e)[%d][%d]", s.array, s.index)
	}
	return fmt.Sprintf("e[%d][%d]", s.array, s.index)
}

// recordLua is the generated part of the library: the layout's constants
// and the helpers that depend on it. Each is a "local" definition, so
// scripts pick them like lib.lua's.
func recordLua() string {
	var names, blank, fmts [2][3][]string // [cold][array]
	for _, f := range recordFields {
		sl := recordSlots[f.name]
		c := 0
		if sl.cold {
			c = 1
		}
		names[c][sl.array] = append(names[c][sl.array], "'"+f.name+"'")
		blank[c][sl.array] = append(blank[c][sl.array], f.def)
		if f.kind == fnum {
			fmts[c][sl.array] = append(fmts[c][sl.array], "%d")
		}
	}
	list := func(l []string) string { return strings.Join(l, ", ") }
	var b strings.Builder
	b.WriteString("-- generated from record.go\n")
	fmt.Fprintf(&b, "local REC_VERSION = %d\n", recordVersion)
	fmt.Fprintf(&b, "local REC_NUM_FMT = '[%s]'\n", strings.Join(fmts[0][1], ","))
	fmt.Fprintf(&b, "local REC_COLD_FMT = '[[%s],'\n", strings.Join(fmts[1][1], ","))
	fmt.Fprintf(&b, "local function rec_blank()\n  return { %s }, { %s }\nend\n", list(blank[0][1]), list(blank[0][2]))
	fmt.Fprintf(&b, "local function rec_blank_cold()\n  return { { %s }, { %s } }\nend\n", list(blank[1][1]), list(blank[1][2]))
	b.WriteString("-- the field names of each array: hot numbers, hot strings, cold numbers, cold strings\n")
	fmt.Fprintf(&b, "local function rec_names()\n  return { %s }, { %s }, { %s }, { %s }\nend\n",
		list(names[0][1]), list(names[0][2]), list(names[1][1]), list(names[1][2]))
	return b.String()
}
