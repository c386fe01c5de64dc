package valkeystore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// The fence copy (stream_fence, lua/lib/record.lua): while an execution's
// stream is open, X:core's field sf copies what validate_lease reads, so
// stream_append checks a caller's fence without loading the record. The
// conformance suite's stream cases (AppendRefusedOrder's *Open cases,
// AppendAfterRenew, the lost-lease and suspend cases) hold the answers
// equal to memstore's; these tests hold the copy current and the record
// unread.

// TestStreamAppendCommands pins the commands of an append: the first one
// of an attempt loads the record, marks the stream open, writes the meta
// and marks the stream persistent and server-numbered (X:core's sp);
// later durable frames read the copy and sp, never the record or the
// meta: the server numbers the entry (XADD 0-*) and counts the frames
// (XLEN). A record without a copy, or without sp, gets it back from its
// next append, which takes the full path.
func TestStreamAppendCommands(t *testing.T) {
	for _, m := range []struct {
		calls ScriptCalls
		cmd   string
	}{{ScriptCallsFunctions, "fcall"}, {ScriptCallsEval, "evalsha"}} {
		t.Run(m.cmd, func(t *testing.T) {
			srv := redisserver.Start(t, nil)
			c := newClient(t, srv.Addr())
			s := newStoreWith(t, c, &Options{ScriptCalls: m.calls})
			e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
			e.createN(t, 3, nil)
			cs := e.claimN(t, 3, time.Hour)
			appendTo := func(r *model.ClaimResult) func() error {
				return func() error {
					_, err := s.StreamAppend(bg, e.frameP(r))
					return err
				}
			}
			// once first: the script is loaded
			if err := appendTo(cs[0])(); err != nil {
				t.Fatal(err)
			}
			core := s.keys.execBase(cs[1].ID) + ":core"
			// the first frame loads the record and the meta; later ones
			// neither
			const (
				first = "hmget=3 hset=3 publish=1 xadd=1 xlen=1"
				load  = "hmget=3 hset=2 publish=1 xadd=1 xlen=1"
				fast  = "hmget=1 publish=1 xadd=1 xlen=1"
			)
			for _, tc := range []struct {
				name string
				op   func() error
				want string
			}{
				{"first frame", appendTo(cs[1]), first},
				{"second frame", appendTo(cs[1]), fast},
				{"third frame", appendTo(cs[1]), fast},
				{"copy dropped", func() error {
					if err := c.Do(bg, c.B().Hdel().Key(core).Field("sf").Build()).Error(); err != nil {
						return err
					}
					return appendTo(cs[1])()
				}, "hdel=1 " + load},
				{"copy restored", appendTo(cs[1]), fast},
				{"sp dropped", func() error {
					if err := c.Do(bg, c.B().Hdel().Key(core).Field("sp").Build()).Error(); err != nil {
						return err
					}
					return appendTo(cs[1])()
				}, "hdel=1 hmget=2 hset=2 publish=1 xadd=1 xlen=1"},
				{"sp restored", appendTo(cs[1]), fast},
			} {
				g, err := ranCommands(t, c, tc.op)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				w := strings.Fields(m.cmd + "=1 " + tc.want)
				slices.Sort(w)
				if want := strings.Join(w, " "); g != want {
					t.Errorf("%s ran %s, want %s", tc.name, g, want)
				}
			}
			r, err := s.StreamRead(bg, &model.StreamReadParams{ID: cs[1].ID, Attempt: 0, Count: 100, Now: e.now()})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Frames) != 7 || r.LastSequence != 7 {
				t.Fatalf("read %d frames, last %d; want 7 frames, last 7", len(r.Frames), r.LastSequence)
			}
		})
	}
}

// TestStreamFenceCopyLifecycle follows the copy through an attempt: absent
// until the first frame, rewritten by a renewal, '-' while the attempt is
// delayed, current again under the next claim, and gone once the attempt
// ends; at every step it equals what stream_fence makes of the record.
func TestStreamFenceCopyLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, nil)
		c := s.client
		e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
		id := e.createN(t, 1, nil)[0]
		r := e.claimN(t, 1, time.Minute)[0]
		copyOf := func(step string) string {
			t.Helper()
			got, want := fenceCopy(t, c, s, id)
			if got != want {
				t.Fatalf("%s: X:core sf %q, the record's copy %q", step, got, want)
			}
			return got
		}
		if got := copyOf("claimed"); got != "" {
			t.Fatalf("claimed, no frame yet: sf %q, want none", got)
		}
		mustDo := func(step string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
		_, err := s.StreamAppend(bg, e.frameP(r))
		mustDo("append", err)
		first := copyOf("first frame")
		if !strings.HasPrefix(first, "0|") || !strings.HasSuffix(first, fenceText(r.Fence())) {
			t.Fatalf("first frame: sf %q, want attempt 0 and the claim's fence", first)
		}
		_, err = s.LeaseRenew(bg, &model.LeaseRenewParams{ID: id, Fence: r.Fence(), LeaseTTL: time.Hour, Now: e.now()})
		mustDo("renew", err)
		if got := copyOf("renewed"); got == first {
			t.Fatalf("renewed: sf %q did not move its expiry", got)
		}
		_, err = s.ExecutionDelay(bg, &model.ExecutionDelayParams{ID: id, Fence: r.Fence(), DelayUntil: e.now().Add(time.Second), Now: e.now()})
		mustDo("delay", err)
		if got := copyOf("delayed"); got != "-" {
			t.Fatalf("delayed: sf %q, want -", got)
		}
		e.skip(time.Second)
		_, err = s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: id, Lane: costLane, Now: e.now()})
		mustDo("promote", err)
		r = e.claimN(t, 1, time.Minute)[0]
		if r.ID != id || !r.Resumed {
			t.Fatalf("claim after the delay: %+v, want %v resumed", r, id)
		}
		if got := copyOf("claimed again"); !strings.HasSuffix(got, fenceText(r.Fence())) {
			t.Fatalf("claimed again: sf %q, want the new lease", got)
		}
		_, err = s.StreamAppend(bg, e.frameP(r))
		mustDo("append after the claim", err)
		_, err = s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Now: e.now()})
		mustDo("complete", err)
		if got := copyOf("completed"); got != "" {
			t.Fatalf("completed: sf %q, want none", got)
		}
	})
}

// fenceText is a fence as the copy ends with it.
func fenceText(f model.Fence) string {
	return fmt.Sprintf("|%s|%d|%s", f.LeaseID, f.LeaseEpoch, f.AttemptID)
}

// fenceCopySrc returns X:core's sf (” when absent) and what stream_fence
// makes of the record when its stream is open (” otherwise).
var fenceCopySrc = func() string {
	s, err := assemble("fence_copy", "fence_copy.lua", "-- KEYS: core\n-- ARGV:\n\n"+
		"local e = the_exec()\nlocal want = ''\n"+
		"if e ~= nil and e.stream_open ~= 0 then want = stream_fence(e) end\n"+
		"return { redis.call('HGET', K_core, 'sf') or '', want }\n")
	if err != nil {
		panic(err)
	}
	return s.src
}()

func fenceCopy(t testing.TB, c valkey.Client, s *Store, id model.ExecutionID) (got, want string) {
	t.Helper()
	out, err := c.Do(bg, c.B().Eval().Script(fenceCopySrc).Numkeys(1).Key(s.keys.execBase(id)+":core").Build()).AsStrSlice()
	if err != nil || len(out) != 2 {
		t.Fatalf("fence copy of %v: %v %v", id, out, err)
	}
	return out[0], out[1]
}

// checkFenceCopies fails t unless every execution of s has the fence copy
// its record makes (the differential test runs it after each sequence).
func checkFenceCopies(t testing.TB, c valkey.Client, s *Store) {
	t.Helper()
	ctx := context.Background()
	for part := range s.Partitions().FlowPartitions {
		var after model.ExecutionID
		for {
			r, err := s.ExecutionList(ctx, &model.ExecutionListParams{Partition: part, After: after, Limit: 1000})
			if err != nil {
				t.Fatalf("ExecutionList(p%d): %v", part, err)
			}
			for _, id := range r.IDs {
				if got, want := fenceCopy(t, c, s, id); got != want {
					t.Fatalf("%v: X:core sf %q, the record's copy %q", id, got, want)
				}
			}
			if r.Next.IsZero() {
				break
			}
			after = r.Next
		}
	}
}
