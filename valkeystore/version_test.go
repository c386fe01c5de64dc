package valkeystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// recordLayoutGolden is the layout of X:core at recordVersion. A change to
// recordFields fails TestRecordLayoutGolden until recordVersion is bumped
// and this golden is updated with it (and an upgrade path written: see
// recordVersion).
const recordLayoutGolden = `v9 layout_version:n id:s ns:s lane:s kind:s priority:n created_at:n required_caps:s ` +
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
	`op_prior_phase:sc wp_open:n adm:n budgets:s quota:s quota_key:s adm_token:s blocked_budget:sc stream_open:n ` +
	`ret_ok:n ret_failed:nc ret_cancelled:nc idem_key:sc md:n fl:n`

func recordLayout() string { return layoutString(recordVersion, recordFields) }

// TestRecordLayoutGolden fails when the layout of X:core changes without
// its version: see recordVersion for the upgrade rule.
func TestRecordLayoutGolden(t *testing.T) {
	if got := recordLayout(); got != recordLayoutGolden {
		t.Fatalf("record layout changed: bump recordVersion, add the old golden to pastLayouts "+
			"(with a decoder in recordUpgrades unless fields were only appended), and update recordLayoutGolden.\n got: %s\nwant: %s", got, recordLayoutGolden)
	}
	// The other positional encodings of an execution are versioned by its
	// record: the lease history (read only through the_exec, so after the
	// record's check) and the grant (record fields). Changing the history
	// entry changes the layout too: bump recordVersion with it.
	lib, err := luaFiles.ReadFile("lua/lib/attempt.lua")
	if err != nil {
		t.Fatal(err)
	}
	const hist = `string.format('%d|%d|%d|%d|', e.hist_seq, e.epoch, e.cur_attempt, now)
      .. kind .. '|' .. e.lease_id .. '|' .. e.lease_wi .. '|' .. reason)`
	if recordVersion != 9 || !strings.Contains(string(lib), hist) {
		t.Fatalf("the lease history entry of layout v9 changed: bump recordVersion, write the upgrade path, and update this test")
	}
	// load_exec reads the version as e[1][1]
	if sl := recordSlots["layout_version"]; sl != (recordSlot{false, 1, 1}) {
		t.Fatalf("layout_version is at %+v, want the first hot number", sl)
	}
}

// TestRecordOtherVersionRefused stamps a stored record with another layout
// version: every script reading it refuses with a corruption error and
// changes nothing (miniredis and real servers).
func TestRecordOtherVersionRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		id := sq.exec(1)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		core := s.keys.execKeys(id)["core"]
		n, err := c.Do(bg, c.B().Hget().Key(core).Field("n").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[%d,", recordVersion)
		if !strings.HasPrefix(n, want) {
			t.Fatalf("record n = %s, want the version first (%s)", n, want)
		}
		other := "[99," + n[len(want):]
		if err := c.Do(bg, c.B().Hset().Key(core).FieldValue().FieldValue("n", other).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		_, err = s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
		var me *model.Error
		if !errors.Is(err, model.ErrCorrupt) || !errors.As(err, &me) || !strings.Contains(err.Error(), "layout version 99") {
			t.Fatalf("describe of a v99 record: err = %v, want ErrCorrupt naming the version", err)
		}
		_, err = s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: id, Source: model.SourceOperator, Reason: "x", Now: t0})
		if !errors.Is(err, model.ErrCorrupt) {
			t.Fatalf("cancel of a v99 record: err = %v, want ErrCorrupt", err)
		}
		if got, _ := c.Do(bg, c.B().Hget().Key(core).Field("n").Build()).ToString(); got != other {
			t.Fatalf("refused record changed: %s", got)
		}
	})
}

// Synthetic layouts for the upgrade tests: v1, v2 = v1 with a field
// appended to each array, v3 = v1 with two hot numbers swapped.
var (
	upV1 = []recordField{
		{"layout_version", fnum, false, "1"}, nfield("a"), nfield("b"), sfield("x"), sfield("y"),
		cold(nfield("cn")), cold(sfield("cs")),
	}
	upV2 = append(slices.Clone(upV1), nfield("z"), recordField{"w", fstr, false, "'w0'"},
		recordField{"cz", fnum, true, "3"}, recordField{"cw", fstr, true, "'cw0'"})
	upV3 = []recordField{
		{"layout_version", fnum, false, "1"}, nfield("b"), nfield("a"), sfield("x"), sfield("y"),
		cold(nfield("cn")), cold(sfield("cs")),
	}
)

// TestRecordUpgradePaths checks which past layouts a build accepts: one
// with fields appended needs nothing, any other needs a decoder to the
// current version, and a decoder to an older version is refused as stale.
func TestRecordUpgradePaths(t *testing.T) {
	v1 := map[int]string{1: layoutString(1, upV1)}
	if _, err := upgradeLua(upV2, 2, v1, nil); err != nil {
		t.Fatalf("appended fields: %v", err)
	}
	if _, err := upgradeLua(upV3, 3, v1, nil); err == nil || !strings.Contains(err.Error(), "no decoder from v1 to v3") {
		t.Fatalf("moved fields without a decoder: err = %v", err)
	}
	if _, err := upgradeLua(upV3, 3, v1, map[[2]int]string{{1, 3}: "n[2], n[3] = n[3], n[2]"}); err != nil {
		t.Fatalf("moved fields with a decoder: %v", err)
	}
	if _, err := upgradeLua(upV3, 3, v1, map[[2]int]string{{1, 2}: "n[2], n[3] = n[3], n[2]"}); err == nil || !strings.Contains(err.Error(), "stale decoder from v1 to v2") {
		t.Fatalf("decoder to an older version: err = %v", err)
	}
	if _, err := upgradeLua(upV2, 2, map[int]string{1: layoutString(2, upV1)}, nil); err == nil {
		t.Fatal("past layout stamped with another version accepted")
	}
	// The build's own history has a path for every past layout (init
	// panics otherwise; this names the culprit).
	if _, err := upgradeLua(recordFields, recordVersion, pastLayouts, recordUpgrades); err != nil {
		t.Fatal(err)
	}
	if _, ok := pastLayouts[recordVersion]; ok {
		t.Fatalf("pastLayouts holds the current version %d", recordVersion)
	}
}

// upgradeScript assembles a test script on a synthetic layout: its
// generated record definitions, the library's load_exec, rec_cold and
// save_exec, then body (with the record's keys in k).
func upgradeScript(t *testing.T, fields []recordField, version int, past map[int]string, dec map[[2]int]string, body string) string {
	t.Helper()
	gen, err := recordLuaFor(fields, version, past, dec)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(gen)
	// the counters (count_add and the rest, public_state), the lane
	// listing (lane_relist) and the stream's fence copy (stream_fence)
	// need the real layout's fields; these layouts test reading and
	// writing only
	b.WriteString("local function public_state(e) return 'waiting' end\nlocal function count_add(e, ps, d) end\n" +
		"local count_held\nlocal function count_field(e, ps) return ps end\nlocal function count_by(f, d) end\n" +
		"local function lane_relist(e) end\nlocal function stream_fence(e) return '-' end\n")
	for _, name := range []string{"load_exec", "rec_cold", "save_exec"} {
		found := false
		for _, d := range library.defs {
			if d.name == name {
				b.WriteString(d.text)
				found = true
			}
		}
		if !found {
			t.Fatalf("library has no %s", name)
		}
	}
	b.WriteString("local k = { core = KEYS[1] }\n")
	b.WriteString(body)
	return b.String()
}

// TestRecordUpgradeReadsPastLayouts stores a record of layout v1 and
// reads it with builds of v2 (fields appended: they take their blank
// values) and v3 (fields moved: its decoder runs); a script that writes
// saves it in the new layout, which the v1 build then refuses (miniredis
// and real servers).
func TestRecordUpgradeReadsPastLayouts(t *testing.T) {
	const dump = `local e = load_exec(k)
local c = rec_cold(e)
return cjson.encode({ e[1], e[2], c[1], c[2] })`
	const save = `local e = load_exec(k)
rec_cold(e)
save_exec(e)
return redis.call('HMGET', k.core, 'n', 's', 'c')`
	v1 := map[int]string{1: layoutString(1, upV1)}
	v2dump := upgradeScript(t, upV2, 2, v1, nil, dump)
	v2save := upgradeScript(t, upV2, 2, v1, nil, save)
	v3dump := upgradeScript(t, upV3, 3, v1, map[[2]int]string{{1, 3}: "    n[2], n[3] = n[3], n[2]"}, dump)
	v1dump := upgradeScript(t, upV1, 1, nil, nil, dump)
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		key := fmt.Sprintf("upgrade%d:{x}:core", prefixSeq.Add(1))
		put := func() {
			t.Helper()
			if err := c.Do(bg, c.B().Hset().Key(key).FieldValue().FieldValue("n", "[1,5,6]").
				FieldValue("s", `["x1","y1"]`).FieldValue("c", `[[7],["cs1"]]`).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		eval := func(src string) (valkey.ValkeyMessage, error) {
			return c.Do(bg, c.B().Eval().Script(src).Numkeys(1).Key(key).Build()).ToMessage()
		}
		str := func(src string) string {
			t.Helper()
			m, err := eval(src)
			if err != nil {
				t.Fatal(err)
			}
			out, err := m.ToString()
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		put()
		if got, want := str(v1dump), `[[1,5,6],["x1","y1"],[7],["cs1"]]`; got != want {
			t.Fatalf("v1 reads v1: %s, want %s", got, want)
		}
		if got, want := str(v2dump), `[[2,5,6,0],["x1","y1","w0"],[7,3],["cs1","cw0"]]`; got != want {
			t.Fatalf("v2 reads v1: %s, want %s", got, want)
		}
		if got, want := str(v3dump), `[[3,6,5],["x1","y1"],[7],["cs1"]]`; got != want {
			t.Fatalf("v3 reads v1: %s, want %s", got, want)
		}
		m, err := eval(v2save)
		if err != nil {
			t.Fatal(err)
		}
		saved, err := m.AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"[2,5,6,0]", `["x1","y1","w0"]`, `[[7,3],["cs1","cw0"]]`}; !slices.Equal(saved, want) {
			t.Fatalf("v2 saved %q, want %q", saved, want)
		}
		if _, err := eval(v1dump); err == nil || !strings.Contains(err.Error(), "record layout version 2") {
			t.Fatalf("v1 reading a v2 record: err = %v, want a layout version refusal", err)
		}
		if got, _ := c.Do(bg, c.B().Hget().Key(key).Field("n").Build()).ToString(); got != "[2,5,6,0]" {
			t.Fatalf("refused record changed: %s", got)
		}
	})
}

// coreReader returns a reader of the fields of id's X:core.
func coreReader(t *testing.T, c valkey.Client, s *Store, id model.ExecutionID) func(field string) string {
	core := s.keys.execKeys(id)["core"]
	return func(f string) string {
		t.Helper()
		v, err := c.Do(bg, c.B().Hget().Key(core).Field(f).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// writeRecord stores the fields n, s (hot strings) and c of id's X:core
// as given.
func writeRecord(t *testing.T, c valkey.Client, s *Store, id model.ExecutionID, n, hs, cf string) {
	t.Helper()
	core := s.keys.execKeys(id)["core"]
	if err := c.Do(bg, c.B().Hset().Key(core).FieldValue().FieldValue("n", n).FieldValue("s", hs).FieldValue("c", cf).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// backToV8 turns the hot strings hs and cold fields c of a record of the
// current layout (v9) into v8's: the four hot strings v9 moved (budgets,
// quota, quota_key, adm_token, the last four) go back to cold strings
// 15–18. Layouts before v8 are v8's with fields dropped (cutBack).
func backToV8(t *testing.T, hs, c string) (string, string) {
	t.Helper()
	if recordVersion != 9 {
		t.Fatalf("recordVersion %d: backToV8 undoes v9", recordVersion)
	}
	var strs, cold, cs []json.RawMessage
	if err := json.Unmarshal([]byte(hs), &strs); err != nil || len(strs) < 4 {
		t.Fatalf("record s = %s: %v", hs, err)
	}
	if err := json.Unmarshal([]byte(c), &cold); err != nil || len(cold) != 2 {
		t.Fatalf("record c = %s: %v", c, err)
	}
	if err := json.Unmarshal(cold[1], &cs); err != nil || len(cs) < 14 {
		t.Fatalf("record c = %s: %v", c, err)
	}
	moved := strs[len(strs)-4:]
	cs = slices.Concat(cs[:14], moved, cs[14:])
	return rawList(strs[:len(strs)-4]), "[" + string(cold[0]) + "," + rawList(cs) + "]"
}

// rawList joins JSON values into a JSON array.
func rawList(xs []json.RawMessage) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return "[" + strings.Join(out, ",") + "]"
}

// cutBack turns a record of layout v8 (hot numbers n, cold fields c; a
// current record through backToV8) into one of layout version v as a v
// build wrote it: the fields appended since are dropped from the end of
// each array (hot numbers, cold numbers, cold strings; hot strings did
// not grow from v1 to v8). It fails t unless the dropped fields hold
// their blank values.
func cutBack(t *testing.T, n, c string, v, hot, coldNums, coldStrs int) (string, string) {
	t.Helper()
	var nums, cold []json.RawMessage
	if err := json.Unmarshal([]byte(n), &nums); err != nil || len(nums) <= hot {
		t.Fatalf("record n = %s: %v", n, err)
	}
	if err := json.Unmarshal([]byte(c), &cold); err != nil || len(cold) != 2 {
		t.Fatalf("record c = %s: %v", c, err)
	}
	var cn, cs []json.RawMessage
	if err := json.Unmarshal(cold[0], &cn); err != nil || len(cn) < coldNums {
		t.Fatalf("record c = %s: %v", c, err)
	}
	if err := json.Unmarshal(cold[1], &cs); err != nil || len(cs) < coldStrs {
		t.Fatalf("record c = %s: %v", c, err)
	}
	blank := func(xs []json.RawMessage, zero string) {
		for _, x := range xs {
			if string(x) != zero {
				t.Fatalf("record n = %s, c = %s: a field appended after v%d is not blank", n, c, v)
			}
		}
	}
	blank(nums[len(nums)-hot:], "0")
	blank(cn[len(cn)-coldNums:], "0")
	blank(cs[len(cs)-coldStrs:], `""`)
	nums = append([]json.RawMessage{json.RawMessage(strconv.Itoa(v))}, nums[1:len(nums)-hot]...)
	return rawList(nums), "[" + rawList(cn[:len(cn)-coldNums]) + "," + rawList(cs[:len(cs)-coldStrs]) + "]"
}

// TestRecordV2ReadAsCurrent stores a record of layout v2 (the current one
// less the fields v3 appended: adm, and the cold budgets, quota,
// quota_key, adm_token, blocked_budget; the one v4 appended: stream_open;
// and those v5 appended: ret_ok, and the cold ret_failed, ret_cancelled,
// idem_key), as a v2 build wrote it: this build reads it with no admission
// and no retention, claims and completes it, and saves it in the current
// layout (miniredis and real servers).
func TestRecordV2ReadAsCurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		id := sq.exec(1)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		get := coreReader(t, c, s, id)
		s8, c8 := backToV8(t, get("s"), get("c"))
		n2, c2 := cutBack(t, get("n"), c8, 2, 5, 2, 6)
		writeRecord(t, c, s, id, n2, s8, c2)
		// a v2 build counted nothing (v6 added I:counts)
		if err := c.Do(bg, c.B().Del().Key(s.keys.idx(id.Partition())+"counts").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		d, err := s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
		if err != nil || d.Budgets != nil || !model.UUID(d.Quota).IsZero() || d.AdmissionToken != "" || d.Retention != (model.Retention{}) {
			t.Fatalf("describe of a v2 record: %+v, %v", d, err)
		}
		// lane_release trusts the counters, so with this record uncounted a
		// delete may have dropped its lane from I:lanes: its first save by
		// this build lists the lane again
		lanes := s.keys.idx(id.Partition()) + "lanes"
		if err := c.Do(bg, c.B().Zrem().Key(lanes).Member(string(d.Lane)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
		if err != nil || r.AdmissionToken != "" || r.Budgets != nil {
			t.Fatalf("claim of a v2 record: %+v, %v", r, err)
		}
		if err := c.Do(bg, c.B().Zscore().Key(lanes).Member(string(d.Lane)).Build()).Error(); err != nil {
			t.Fatalf("the upgraded record's first save did not list its lane %q again: %v", d.Lane, err)
		}
		if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Now: at(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[%d,", recordVersion)
		if n := get("n"); !strings.HasPrefix(n, want) || !strings.HasSuffix(n, ",0,0,0,0,1]") {
			t.Fatalf("saved record n = %s, want the current layout (fl 1: maybe in a flow)", n)
		}
		// counted from its first save by this build, never uncounted from
		// the state it had before
		cr, err := s.ExecutionCounts(bg, &model.ExecutionCountsParams{})
		if err != nil || len(cr.Rows) != 1 || cr.Rows[0].State != model.PublicCompleted || cr.Rows[0].Count != 1 {
			t.Fatalf("counts after the upgraded record completed: %+v, %v", cr, err)
		}
	})
}

// TestRecordV3ReadAsCurrent stores a record of layout v3 (the current one
// less stream_open, which v4 appended, and ret_ok, ret_failed,
// ret_cancelled and idem_key, which v5 appended) as a v3 build wrote it,
// of an active execution: this build reads it with no open stream, opens
// one with the first frame (saving the record in the current layout), and
// the completion closes it (miniredis and real servers).
func TestRecordV3ReadAsCurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		id := sq.exec(1)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		hget := coreReader(t, c, s, id)
		get := func() string { return hget("n") }
		want := fmt.Sprintf("[%d,", recordVersion)
		s8, c8 := backToV8(t, hget("s"), hget("c"))
		n3, c3 := cutBack(t, get(), c8, 3, 4, 2, 1)
		writeRecord(t, c, s, id, n3, s8, c3)
		read := func(now time.Time) *model.StreamReadResult {
			t.Helper()
			res, err := s.StreamRead(bg, &model.StreamReadParams{ID: id, Count: 10, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := read(at(time.Second)); res.Closed || res.LastSequence != 0 {
			t.Fatalf("read of a v3 record's attempt: %+v, want open and empty", res)
		}
		if get() != n3 {
			t.Fatal("a read rewrote the v3 record")
		}
		if _, err := s.StreamAppend(bg, frameP(id, r.Fence(), model.StreamDurable, "x", at(time.Second))); err != nil {
			t.Fatal(err)
		}
		if n := get(); !strings.HasPrefix(n, want) || !strings.HasSuffix(n, ",1,0,0,1]") {
			t.Fatalf("record n = %s after the first frame, want the current layout with stream_open 1 (and fl 1)", n)
		}
		if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Now: at(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if res := read(at(2 * time.Second)); !res.Closed || res.ClosedReason != "ended_success" || !res.ClosedAt.Equal(at(2*time.Second)) || res.LastSequence != 1 {
			t.Fatalf("read after the completion: %+v, want closed (ended_success) at 2s", res)
		}
	})
}

// TestRecordV6ReadAsCurrent stores a record of layout v6 (the current one
// less md, which v7 appended) as a v6 build wrote it, counted in I:counts
// as that build counted it: this build reads it without metadata, claims
// and completes it, and moves its count instead of counting it twice
// (miniredis and real servers).
func TestRecordV6ReadAsCurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		id := sq.exec(1)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		get := coreReader(t, c, s, id)
		s8, c8 := backToV8(t, get("s"), get("c"))
		n6, c6 := cutBack(t, get("n"), c8, 6, 2, 0, 0)
		writeRecord(t, c, s, id, n6, s8, c6)
		d, err := s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
		if err != nil || d.Metadata != nil || d.PublicState != model.PublicWaiting {
			t.Fatalf("describe of a v6 record: %+v, %v", d, err)
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
		if err != nil || r.Metadata != nil {
			t.Fatalf("claim of a v6 record: %+v, %v", r, err)
		}
		if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Now: at(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if n := get("n"); !strings.HasPrefix(n, fmt.Sprintf("[%d,", recordVersion)) || !strings.HasSuffix(n, ",0,1]") {
			t.Fatalf("saved record n = %s, want the current layout", n)
		}
		cr, err := s.ExecutionCounts(bg, &model.ExecutionCountsParams{})
		if err != nil || len(cr.Rows) != 1 || cr.Rows[0].State != model.PublicCompleted || cr.Rows[0].Count != 1 {
			t.Fatalf("counts after the v6 record completed: %+v, %v (want one completed, counted once)", cr, err)
		}
	})
}

// TestRecordV7FlowMemberSettles stores a flow member's record as a v7
// build wrote it (no fl, which v8 appended): this build reads fl as 1
// (maybe in a flow), so the member's completion still reads X:flow,
// resolves its edge and releases its downstream (miniredis and real
// servers). A blank of 0 would have left the downstream held for good.
func TestRecordV7FlowMemberSettles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		f := model.FlowID(sq.uuid())
		if _, err := s.FlowCreate(bg, &model.FlowCreateParams{Flow: f, Now: t0}); err != nil {
			t.Fatal(err)
		}
		part := s.Partitions().FlowPartition(f)
		up, down := sq.exec(part), sq.exec(part)
		var rev uint64
		for _, id := range []model.ExecutionID{up, down} {
			if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
				t.Fatal(err)
			}
			r, err := s.FlowAddMember(bg, &model.FlowAddMemberParams{Flow: f, Execution: id, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			rev = r.GraphRevision
		}
		if _, err := s.EdgeStage(bg, &model.EdgeStageParams{Flow: f, Edge: model.EdgeID(sq.uuid()), Upstream: up,
			Downstream: down, ExpectedGraphRevision: rev, Now: t0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FlowSeal(bg, &model.FlowSealParams{Flow: f, Now: at(time.Second)}); err != nil {
			t.Fatal(err)
		}
		get := coreReader(t, c, s, up)
		var nums []json.RawMessage
		if err := json.Unmarshal([]byte(get("n")), &nums); err != nil || string(nums[len(nums)-1]) != "1" {
			t.Fatalf("record n = %s (%v), want fl 1 last for a flow member", get("n"), err)
		}
		nums[0] = json.RawMessage("7")
		n7, err := json.Marshal(nums[:len(nums)-1])
		if err != nil {
			t.Fatal(err)
		}
		s8, c8 := backToV8(t, get("s"), get("c"))
		writeRecord(t, c, s, up, string(n7), s8, c8)
		state := func(id model.ExecutionID) model.PublicState {
			t.Helper()
			d, err := s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			return d.PublicState
		}
		if st := state(down); st == model.PublicWaiting {
			t.Fatal("the downstream is waiting before its upstream completed")
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: up, LeaseRequest: sq.req("wi", ttl), Now: at(2 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: up, Fence: r.Fence(), Now: at(3 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if st := state(down); st != model.PublicWaiting {
			t.Fatalf("the downstream is %v after its v7 upstream completed, want waiting (the edge resolved)", st)
		}
	})
}

// TestRecordV8AdmittedReadAsCurrent stores the record of an admitted,
// running execution with a budget and a quota as a v8 build wrote it (its
// attachments and admission token cold): this build reads them (v8's
// decoder moves them to the hot strings), and the completion queues the
// admission in the release outbox and saves the record in the current
// layout (miniredis and real servers).
func TestRecordV8AdmittedReadAsCurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		bud, q := model.BudgetID(sq.uuid()), model.QuotaID(sq.uuid())
		if _, err := s.BudgetCreate(bg, &model.BudgetCreateParams{ID: bud, Limits: map[string]model.BudgetLimit{"tokens": {Hard: 10}}, Now: t0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.QuotaCreate(bg, &model.QuotaCreateParams{ID: q, Concurrency: 2, Now: t0}); err != nil {
			t.Fatal(err)
		}
		id := sq.exec(1)
		p := createP(id, t0)
		p.Budgets, p.Quota, p.QuotaKey = []model.BudgetID{bud}, q, "k"
		if _, err := s.ExecutionCreate(bg, p); err != nil {
			t.Fatal(err)
		}
		r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, AdmissionToken: "tok-1",
			LeaseRequest: sq.req("wi", ttl), Now: at(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		get := coreReader(t, c, s, id)
		if hs := get("s"); !strings.HasSuffix(hs, fmt.Sprintf(`,"%s","%s","k","tok-1"]`, bud, q)) {
			t.Fatalf("record s = %s, want the attachments and the token as the last hot strings", hs)
		}
		s8, c8 := backToV8(t, get("s"), get("c"))
		var nums []json.RawMessage
		if err := json.Unmarshal([]byte(get("n")), &nums); err != nil {
			t.Fatal(err)
		}
		nums[0] = json.RawMessage("8")
		n8, err := json.Marshal(nums)
		if err != nil {
			t.Fatal(err)
		}
		writeRecord(t, c, s, id, string(n8), s8, c8)
		d, err := s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
		if err != nil || !slices.Equal(d.Budgets, []model.BudgetID{bud}) || d.Quota != q || d.QuotaKey != "k" || d.AdmissionToken != "tok-1" {
			t.Fatalf("describe of a v8 record: %+v, %v", d, err)
		}
		if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Now: at(2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		pend, err := s.QuotaReleasePending(bg, &model.QuotaReleasePendingParams{Partition: 1, Limit: 10})
		if err != nil || len(pend.Items) != 1 || pend.Items[0] != (model.QuotaHold{Execution: id, Quota: q, Key: "k", Token: "tok-1", At: at(2 * time.Second)}) {
			t.Fatalf("outbox after the v8 record completed: %+v, %v", pend, err)
		}
		if n := get("n"); !strings.HasPrefix(n, fmt.Sprintf("[%d,", recordVersion)) {
			t.Fatalf("saved record n = %s, want the current layout", n)
		}
		if hs := get("s"); !strings.HasSuffix(hs, fmt.Sprintf(`,"%s","%s","k",""]`, bud, q)) {
			t.Fatalf("saved record s = %s, want the attachments hot and the token released", hs)
		}
	})
}
