package valkeystore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// recordLayoutGolden is the layout of X:core at recordVersion. A change to
// recordFields fails TestRecordLayoutGolden until recordVersion is bumped
// and this golden is updated with it (and an upgrade path written: see
// recordVersion).
const recordLayoutGolden = `v1 layout_version id ns lane kind priority created_at required_caps ` +
	`lifecycle_phase ownership_state eligibility_state blocking_reason blocking_detail terminal_outcome ` +
	`attempt_state last_mutation_at last_transition_at started_at terminal_at delay_until retry_max ` +
	`retry_backoff:c retry_delay_ms:c retry_initial_ms:c retry_multiplier:c retry_max_delay_ms:c ` +
	`retry_count max_reclaims:c reclaim_count:c max_replays:c replay_count:c attempt_timeout deadline ` +
	`timeout_at total_attempts cur_attempt cur_attempt_id pending_type pending_reason:c ` +
	`pending_requested_by:c pending_prev_index:c epoch lease_id lease_worker_id lease_wi ` +
	`lease_acquired_at lease_expires_at lease_renew_by lease_expired_at lease_revoked_at revoke_reason:c ` +
	`hist_seq grant_kind grant_worker_id:c grant_wi:c grant_created_at:c grant_expires_at:c ` +
	`progress_pct:c progress_msg:c progress_at:c last_cap_mismatch_at:c failure_reason:c ` +
	`failure_category:c cancellation_reason:c cancelled_by:c op_kind op_operator op_fence_lease ` +
	`op_fence_epoch op_fence_attempt op_fail_result:c op_delay_until:c op_prior_phase:c`

func recordLayout() string {
	out := []string{fmt.Sprintf("v%d", recordVersion)}
	for _, f := range recordFields {
		s := f.name
		if f.cold {
			s += ":c"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestRecordLayoutGolden fails when the layout of X:core changes without
// its version: see recordVersion for the upgrade rule.
func TestRecordLayoutGolden(t *testing.T) {
	if got := recordLayout(); got != recordLayoutGolden {
		t.Fatalf("record layout changed: bump recordVersion, write the upgrade path, and update recordLayoutGolden.\n got: %s\nwant: %s", got, recordLayoutGolden)
	}
	// The other positional encodings of an execution are versioned by its
	// record: the lease history (read only through the_exec, so after the
	// record's check) and the grant (record fields). Changing the history
	// entry changes the layout too: bump recordVersion with it.
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	const hist = `string.format('%d|%d|%d|%d|', e.hist_seq, e.epoch, e.cur_attempt, now)
      .. kind .. '|' .. e.lease_id .. '|' .. e.lease_wi .. '|' .. reason)`
	if recordVersion != 1 || !strings.Contains(string(lib), hist) {
		t.Fatalf("the lease history entry of layout v1 changed: bump recordVersion, write the upgrade path, and update this test")
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
