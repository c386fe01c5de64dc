package valkeystore

import (
	"fmt"
	"maps"
	"slices"
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
// name into the index when the script is assembled), so loading and saving cost
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
//
// A fourth field, sf, is no part of the layout: it is the fence copy
// save_exec writes while the execution has an open stream, so that an
// append checks its caller without decoding the record (stream_fence in
// lua/lib/record.lua); a record without it is read as before.

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
// as its first hot number (layout_version) and checked by load_exec.
//
// The upgrade rule. Any change to recordFields (a field added, removed,
// moved, renamed, or made hot or cold) bumps recordVersion, adds the old
// layout (the golden string of version_test.go at the old version) to
// pastLayouts, and updates the golden; TestRecordLayoutGolden fails until
// all three are done. A record of a past version is then read through
// rec_upgrade (upgradeLua):
//
//   - if each of the old layout's four arrays is a prefix of the current
//     one (fields were only appended), the missing trailing fields take
//     their blank values: nothing else to write;
//   - otherwise recordUpgrades must hold a Lua decoder from that version
//     to the current one; without it the package does not initialise
//     (and the golden test says so). A decoder names its target version,
//     so the next bump makes it stale and asks for it again.
//
// An upgraded record is saved in the current layout by the next script
// that writes it. A record of a version this build does not know (a
// newer build wrote it, or a past version was dropped from pastLayouts)
// is refused with a corruption error (model.ErrCorrupt), never misread or
// overwritten. So a new build reads every record an old build wrote, but
// not the reverse: during a rolling deploy across a version change, an old
// process meeting a record a new process has written refuses that
// operation.
//
// v6 changed no field: it marks records counted in I:counts (ExecutionCounts).
// A record read at a version before v6 is not counted until a script of
// v6 or later saves it, and is not taken off a counter when deleted; one
// read at v6 or later is counted (load_exec). v7 appended md (metadata),
// v8 fl (maybe a flow member); v9 moved budgets, quota, quota_key and
// adm_token from the cold strings to the end of the hot ones (the
// decoders of v3–v8 in recordUpgrades).
const recordVersion = 9

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
	// v2: the open (pending or active) waitpoints, hot so that an ending
	// execution that has none touches no waitpoint key (lua/lib/wait.lua)
	nfield("wp_open"),
	// v3: admission (model.AdmissionStore; lua/lib/admission.lua). adm is
	// 1 when the execution has budgets or a quota, the one comparison the
	// claim and release paths pay for an execution without; the rest is
	// cold: the attachments (budgets a CSV of ids in the given order), the
	// admission token the lease holds, and the budget whose blocked group
	// the execution is in while blocked on a budget
	//
	// v9 made budgets, quota, quota_key and adm_token hot: an admitted
	// execution's claim and completion read or write them on every run
	// (inline admission, the release outbox), and a cold read and save
	// cost ~5 µs each; four blank strings cost a job without admission
	// next to nothing
	nfield("adm"), sfield("budgets"), sfield("quota"), sfield("quota_key"),
	sfield("adm_token"), cold(sfield("blocked_budget")),
	// v4: attempt streams (model.StreamStore; lua/lib/stream.lua). The
	// index + 1 of the attempt whose stream is open (0: none), so that an
	// attempt's end, a lease-expiry mark and a revoke pay one comparison
	// when no frame was appended; the streams themselves are X:stream:<i>
	// and X:stream:<i>:meta (keys.go)
	nfield("stream_open"),
	// v5: retention (model.RetentionStore; execution_delete.lua): how long
	// the execution is kept once terminal, in ms per outcome class (0:
	// for good), read when it ends; a completion's is hot. idem_key is the
	// idempotency key it was created with, which a delete frees
	nfield("ret_ok"), cold(nfield("ret_failed")), cold(nfield("ret_cancelled")), cold(sfield("idem_key")),
	// v7: metadata (headers; model.ExecutionCreateParams.Metadata). md is 1
	// when X:meta holds some, so that a claim of an execution without
	// any pays one comparison and no read
	nfield("md"),
	// v8: fl is 0 when the execution is surely in no flow (X:flow absent),
	// so that a completion of a solo job runs no GET of X:flow to learn
	// it (flow_settle, feed_add). It is 1 (maybe: read X:flow) for a
	// record of an earlier layout, which is why the blank value is 1 and a
	// new record sets 0 (new_exec); flow_join sets 1, and nothing sets 0
	// again (a stale 1 only costs the read).
	{"fl", fnum, false, "1"},
}

// recordSlot is where a field lives in a decoded record: cold or hot, the
// array (1 numbers, 2 strings) and the 1-based index in it.
type recordSlot struct {
	cold         bool
	array, index int
}

var recordSlots = mustSlots(recordFields)

// slotsOf places each field of a layout (see recordSlot).
func slotsOf(fields []recordField) (map[string]recordSlot, error) {
	m := make(map[string]recordSlot, len(fields))
	var n [2][3]int // [cold][array]
	for _, f := range fields {
		if _, dup := m[f.name]; dup || f.name == "k" || f.name == "c" {
			return nil, fmt.Errorf("valkeystore: bad record field %s", f.name)
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
	return m, nil
}

func mustSlots(fields []recordField) map[string]recordSlot {
	m, err := slotsOf(fields)
	if err != nil {
		panic(err)
	}
	return m
}

// expr is the Lua expression of the field in record e.
func (s recordSlot) expr() string {
	if s.cold {
		return fmt.Sprintf("rec_cold(e)[%d][%d]", s.array, s.index)
	}
	return fmt.Sprintf("e[%d][%d]", s.array, s.index)
}

// recordLua is the generated part of the library: the layout's constants
// and the helpers that depend on it. Each is a "local" definition, so
// scripts pick them like lua/lib's.
func recordLua() string {
	src, err := recordLuaFor(recordFields, recordVersion, pastLayouts, recordUpgrades)
	if err != nil {
		panic(err)
	}
	return src
}

// recordLuaFor generates recordLua for a given layout and its history.
func recordLuaFor(fields []recordField, version int, past map[int]string, decoders map[[2]int]string) (string, error) {
	slots, err := slotsOf(fields)
	if err != nil {
		return "", err
	}
	var names, blank, fmts [2][3][]string // [cold][array]
	for _, f := range fields {
		sl := slots[f.name]
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
	fmt.Fprintf(&b, "local REC_VERSION = %d\n", version)
	fmt.Fprintf(&b, "local REC_NUM_FMT = '[%s]'\n", strings.Join(fmts[0][1], ","))
	fmt.Fprintf(&b, "local REC_COLD_FMT = '[[%s],'\n", strings.Join(fmts[1][1], ","))
	fmt.Fprintf(&b, "local function rec_blank()\n  return { %s }, { %s }\nend\n", list(blank[0][1]), list(blank[0][2]))
	fmt.Fprintf(&b, "local function rec_blank_cold()\n  return { { %s }, { %s } }\nend\n", list(blank[1][1]), list(blank[1][2]))
	b.WriteString("-- the field names of each array: hot numbers, hot strings, cold numbers, cold strings\n")
	fmt.Fprintf(&b, "local function rec_names()\n  return { %s }, { %s }, { %s }, { %s }\nend\n",
		list(names[0][1]), list(names[0][2]), list(names[1][1]), list(names[1][2]))
	up, err := upgradeLua(fields, version, past, decoders)
	if err != nil {
		return "", err
	}
	b.WriteString(up)
	return b.String(), nil
}

// pastLayouts holds the layout of X:core at each earlier version this
// build still reads, in the format of layoutString.
var pastLayouts = map[int]string{
	// v9 moved budgets, quota, quota_key and adm_token hot
	8: `v8 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n adm:n budgets:sc quota:sc quota_key:sc adm_token:sc blocked_budget:sc stream_open:n ` +
		`ret_ok:n ret_failed:nc ret_cancelled:nc idem_key:sc md:n fl:n`,
	// v8 appended fl (a hot number, blank 1)
	7: `v7 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n adm:n budgets:sc quota:sc quota_key:sc adm_token:sc blocked_budget:sc stream_open:n ` +
		`ret_ok:n ret_failed:nc ret_cancelled:nc idem_key:sc md:n`,
	// v7 appended md (a hot number)
	6: `v6 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n adm:n budgets:sc quota:sc quota_key:sc adm_token:sc blocked_budget:sc stream_open:n ` +
		`ret_ok:n ret_failed:nc ret_cancelled:nc idem_key:sc`,
	// v6 changed no field (v6 records are counted in I:counts)
	5: `v5 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n adm:n budgets:sc quota:sc quota_key:sc adm_token:sc blocked_budget:sc stream_open:n ` +
		`ret_ok:n ret_failed:nc ret_cancelled:nc idem_key:sc`,
	// v5 appended ret_ok (a hot number), ret_failed and ret_cancelled
	// (cold numbers)
	4: `v4 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n adm:n budgets:sc quota:sc quota_key:sc adm_token:sc blocked_budget:sc stream_open:n`,
	// v4 appended stream_open (a hot number)
	3: `v3 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n adm:n budgets:sc quota:sc quota_key:sc adm_token:sc blocked_budget:sc`,
	// v3 appended adm (a hot number) and budgets, quota, quota_key,
	// adm_token, blocked_budget (cold strings)
	2: `v2 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc wp_open:n`,
	// v2 appended wp_open (a hot number)
	1: `v1 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
		`lifecycle_phase:s ownership_state:s eligibility_state:s blocking_reason:s ` +
		`blocking_detail:s terminal_outcome:s attempt_state:s last_mutation_at:n ` +
		`last_transition_at:n started_at:n terminal_at:n delay_until:n retry_max:n retry_backoff:sc ` +
		`retry_delay_ms:nc retry_initial_ms:nc retry_multiplier:sc retry_max_delay_ms:nc ` +
		`retry_count:n max_reclaims:nc reclaim_count:nc max_replays:nc replay_count:nc ` +
		`attempt_timeout:n deadline:n timeout_at:n total_attempts:n cur_attempt:n cur_attempt_id:s ` +
		`pending_type:s pending_reason:sc pending_requested_by:sc pending_prev_index:nc epoch:n ` +
		`lease_id:s lease_worker_id:s lease_wi:s lease_acquired_at:n lease_expires_at:n ` +
		`lease_renew_by:n lease_expired_at:n lease_revoked_at:n revoke_reason:sc hist_seq:n ` +
		`grant_kind:s grant_worker_id:sc grant_wi:sc grant_created_at:nc grant_expires_at:nc ` +
		`progress_pct:nc progress_msg:sc progress_at:nc last_cap_mismatch_at:nc failure_reason:sc ` +
		`failure_category:sc cancellation_reason:sc cancelled_by:sc op_kind:s op_operator:s ` +
		`op_fence_lease:s op_fence_epoch:s op_fence_attempt:s op_fail_result:sc op_delay_until:nc ` +
		`op_prior_phase:sc`,
}

// recordUpgrades holds, per (past version, current version), the Lua
// statements that turn a record of the past layout into the current one.
// They run inside rec_upgrade with the decoded arrays in n (hot numbers),
// s (hot strings) and c ({cold numbers, cold strings}), and must leave
// each array in the current layout's order; fields they leave out at the
// end take their blank values. Only a past layout that is not the current
// one with fields appended needs one.
var recordUpgrades = v9Upgrades()

// v9Upgrades are the decoders of layouts v3–v8 to v9: their hot strings
// are v9's less the four v9 moved from the cold strings (budgets, quota,
// quota_key, adm_token: cold strings 15–18 since v3), so those four are
// appended to s and removed from c. v1 and v2 have none of them: their
// arrays are prefixes of v9's.
func v9Upgrades() map[[2]int]string {
	const dec = `    local h, cs = #s, c[2]
    s[h + 1], s[h + 2], s[h + 3], s[h + 4] = cs[15], cs[16], cs[17], cs[18]
    for _ = 1, 4 do table.remove(cs, 15) end`
	m := map[[2]int]string{}
	for v := 3; v <= 8; v++ {
		m[[2]int{v, 9}] = dec
	}
	return m
}

// layoutString is the golden form of a layout: "v<version>" then each
// field as name:<kind>[c], kind n (number) or s (string), c when cold.
func layoutString(version int, fields []recordField) string {
	out := []string{fmt.Sprintf("v%d", version)}
	for _, f := range fields {
		k := "s"
		if f.kind == fnum {
			k = "n"
		}
		if f.cold {
			k += "c"
		}
		out = append(out, f.name+":"+k)
	}
	return strings.Join(out, " ")
}

// layoutArrays splits a layout string into its version and the field
// names of its four arrays ([cold][array], array 1 numbers, 2 strings).
func layoutArrays(layout string) (int, [2][3][]string, error) {
	var arrays [2][3][]string
	words := strings.Fields(layout)
	var version int
	if len(words) == 0 {
		return 0, arrays, fmt.Errorf("valkeystore: empty record layout")
	}
	if _, err := fmt.Sscanf(words[0], "v%d", &version); err != nil || version < 1 {
		return 0, arrays, fmt.Errorf("valkeystore: record layout %q: want v<version> first", words[0])
	}
	for _, w := range words[1:] {
		name, kind, ok := strings.Cut(w, ":")
		c, a := 0, 0
		switch kind {
		case "n":
			a = 1
		case "s":
			a = 2
		case "nc":
			c, a = 1, 1
		case "sc":
			c, a = 1, 2
		}
		if !ok || name == "" || a == 0 {
			return 0, arrays, fmt.Errorf("valkeystore: record layout v%d: bad field %q", version, w)
		}
		arrays[c][a] = append(arrays[c][a], name)
	}
	return version, arrays, nil
}

// isPrefix reports whether every array of old is a prefix of cur's.
func isPrefix(old, cur [2][3][]string) bool {
	for c := range 2 {
		for a := 1; a <= 2; a++ {
			o, n := old[c][a], cur[c][a]
			if len(o) > len(n) || !slices.Equal(o, n[:len(o)]) {
				return false
			}
		}
	}
	return true
}

// upgradeLua generates rec_upgrade, which load_exec calls for a record of
// another version: it reads the record of a past version into the
// current layout (see recordVersion) and refuses any other. It fails when
// a past layout has no upgrade path.
func upgradeLua(cur []recordField, version int, past map[int]string, decoders map[[2]int]string) (string, error) {
	_, curArrays, err := layoutArrays(layoutString(version, cur))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("-- rec_upgrade reads a record of a past layout version into this one (record.go)\n")
	b.WriteString("local function rec_upgrade(n, s, k)\n  local v = n[1]\n")
	b.WriteString("  local c = nil\n")
	for key := range decoders {
		if key[1] != version || past[key[0]] == "" {
			return "", fmt.Errorf("valkeystore: recordUpgrades has a stale decoder from v%d to v%d (current v%d)", key[0], key[1], version)
		}
	}
	versions := slices.Sorted(maps.Keys(past))
	for i, v := range versions {
		pv, arrays, err := layoutArrays(past[v])
		if err != nil {
			return "", err
		}
		if pv != v || v >= version {
			return "", fmt.Errorf("valkeystore: past record layout v%d is stamped v%d (current v%d)", v, pv, version)
		}
		kw := "elseif"
		if i == 0 {
			kw = "if"
		}
		fmt.Fprintf(&b, "  %s v == %d then\n    c = cjson.decode(redis.call('HGET', k.core, 'c'))\n", kw, v)
		if dec, ok := decoders[[2]int{v, version}]; ok {
			b.WriteString(dec)
			b.WriteString("\n")
		} else if !isPrefix(arrays, curArrays) {
			return "", fmt.Errorf("valkeystore: record layout v%d is not v%d with fields appended, and recordUpgrades has no decoder from v%d to v%d", v, version, v, version)
		}
	}
	if len(versions) > 0 {
		b.WriteString("  end\n")
	}
	b.WriteString("  if c == nil then\n    error('valkeystore: record layout version ' .. tostring(v) .. ' of ' .. k.core .. ', this build reads ' .. REC_VERSION)\n  end\n")
	b.WriteString("  local bn, bs = rec_blank()\n  local bc = rec_blank_cold()\n")
	b.WriteString("  for _, p in ipairs({ { n, bn }, { s, bs }, { c[1], bc[1] }, { c[2], bc[2] } }) do\n")
	b.WriteString("    for i = #p[1] + 1, #p[2] do p[1][i] = p[2][i] end\n  end\n")
	b.WriteString("  n[1] = REC_VERSION\n  return { n, s, k = k, c = c }\nend\n")
	return b.String(), nil
}
