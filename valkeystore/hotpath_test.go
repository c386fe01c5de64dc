package valkeystore

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// TestHotPathCommands pins the commands each operation of a job's path runs
// on a real server (its own, so the counts are exact), as a function and
// with EVALSHA (the same commands inside either): a regression here
// (a cold-field read, a redundant index write) is a cost on every job.
// Without feeds (the default) the path runs no feed command. With both,
// a lease event (claim, renew, the completion's release) adds an XADD, a
// completion an XADD and a STRLEN of the result, and each event a PUBLISH
// that carries it (an execution in a flow adds one GET of X:flow per
// script that writes its events; a solo job's record says it has none).
// Every change of public state moves a counter of I:counts (ExecutionCounts):
// one HINCRBY for a create, two per transition (an HDEL when a counter
// reaches zero), except that a completion's move out of "active" and its
// next claim's move into it cancel (count_hold in lua/lib/record.lua):
// complete + claim next runs two, not four.
func TestHotPathCommands(t *testing.T) {
	hotPath(t, model.Feeds{}, map[string]string{
		"create":     "script=1 exists=1 hincrby=1 hset=1 publish=1 set=1 zadd=3",
		"claim_next": "script=1 exists=1 get=1 hgetall=1 hincrby=2 hmget=1 hset=2 rpush=1 zadd=1 zrange=1 zrem=1",
		"renew":      "script=1 hmget=1 hset=1 zadd=1",
		// A completion of a solo job does not read X:flow: the record's fl
		// says it is in no flow (flow_settle).
		"complete":      "script=1 hincrby=2 hmget=1 hset=2 rpush=1 set=1 zadd=1 zrem=1",
		"complete_next": "script=1 exists=1 get=1 hgetall=1 hincrby=2 hmget=2 hset=4 rpush=2 set=1 zadd=2 zrange=1 zrem=2",
	})
	hotPath(t, model.Feeds{Completions: true, Leases: true}, map[string]string{
		"create":        "script=1 exists=1 hincrby=1 hset=1 publish=1 set=1 zadd=3",
		"claim_next":    "script=1 exists=1 get=1 hgetall=1 hincrby=2 hmget=1 hset=2 publish=1 rpush=1 xadd=1 zadd=1 zrange=1 zrem=1",
		"renew":         "script=1 hmget=1 hset=1 publish=1 xadd=1 zadd=1",
		"complete":      "script=1 hincrby=2 hmget=1 hset=2 publish=2 rpush=1 set=1 strlen=1 xadd=2 zadd=1 zrem=1",
		"complete_next": "script=1 exists=1 get=1 hgetall=1 hincrby=2 hmget=2 hset=4 publish=3 rpush=2 set=1 strlen=1 xadd=3 zadd=2 zrange=1 zrem=2",
	})
}

// hotPath checks want (with "script" the script call's command) with
// scripts run as functions and with EVALSHA.
func hotPath(t *testing.T, feeds model.Feeds, want map[string]string) {
	for _, m := range []struct {
		calls ScriptCalls
		cmd   string
	}{{ScriptCallsFunctions, "fcall"}, {ScriptCallsEval, "evalsha"}} {
		w := make(map[string]string, len(want))
		for k, v := range want {
			f := strings.Fields(strings.Replace(v, "script=", m.cmd+"=", 1))
			slices.Sort(f)
			w[k] = strings.Join(f, " ")
		}
		hotPathWith(t, feeds, m.calls, w)
	}
}

func hotPathWith(t *testing.T, feeds model.Feeds, calls ScriptCalls, want map[string]string) {
	srv := redisserver.Start(t, nil)
	c := newClient(t, srv.Addr())
	s := newStoreWith(t, c, &Options{Feeds: feeds, ScriptCalls: calls})
	e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
	e.createN(t, 8, nil)
	cs := e.claimN(t, 4, time.Hour)
	renew := func(r *model.ClaimResult) error {
		_, err := s.LeaseRenew(bg, &model.LeaseRenewParams{ID: r.ID, Fence: r.Fence(), LeaseTTL: time.Hour, Now: e.now()})
		return err
	}
	complete := func(r *model.ClaimResult, next bool) error {
		p := &model.ExecutionCompleteParams{ID: r.ID, Fence: r.Fence(), Now: e.now()}
		if next {
			p.Next = e.nextClaim(time.Hour)
		}
		res, err := s.ExecutionComplete(bg, p)
		if err == nil && next && res.Next.Claimed == nil {
			t.Error("complete with next claimed nothing")
		}
		return err
	}
	// every script once first: loaded, and the partition's keys exist
	if err := errors.Join(renew(cs[0]), complete(cs[0], false), complete(cs[1], true)); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"create", func() error { _, err := e.create(nil); return err }},
		{"claim_next", func() error { e.claimN(t, 1, time.Hour); return nil }},
		{"renew", func() error { return renew(cs[2]) }},
		{"complete", func() error { return complete(cs[2], false) }},
		{"complete_next", func() error { return complete(cs[3], true) }},
	} {
		g, err := ranCommands(t, c, tc.op)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if g != want[tc.name] {
			t.Errorf("feeds %+v, script calls %q: %s ran %s, want %s", feeds, calls, tc.name, g, want[tc.name])
		}
	}
}

// ranCommands runs op and returns the commands the server ran meanwhile,
// as sorted "name=count" words. The handshake of a connection the client
// opened meanwhile (HELLO, CLIENT SETINFO) is left out: it is not the
// operation's. (CI once saw TestSweepCommands count two CLIENT SETINFO.)
func ranCommands(t testing.TB, c valkey.Client, op func() error) (string, error) {
	before := commandCounts(t, c)
	if err := op(); err != nil {
		return "", err
	}
	after := commandCounts(t, c)
	var got []string
	for _, name := range sortedKeys(after) {
		if d := after[name] - before[name]; d != 0 && !handshake[name] {
			got = append(got, name+"="+strconv.FormatInt(d, 10))
		}
	}
	return strings.Join(got, " "), nil
}

// handshake names the commands valkey-go sends when it opens a connection.
var handshake = map[string]bool{"hello": true, "client|setinfo": true, "client|setname": true, "select": true}

// commandCounts reads INFO commandstats: calls per command, INFO excluded.
func commandCounts(t testing.TB, c valkey.Client) map[string]int64 {
	out := make(map[string]int64)
	for _, line := range strings.Split(info(t, c, "commandstats"), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || name == "info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		out[name], _ = strconv.ParseInt(calls, 10, 64)
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestSweepCommands pins what the Sweeper's PartitionDue costs on a real
// server: an empty partition answers with one EXISTS over its keys (a
// quiet system's sweep is mostly empty partitions: S3's idle budget), and
// a partition holding work reads each of its indexes. The conformance
// suite checks the answers themselves.
func TestSweepCommands(t *testing.T) {
	srv := redisserver.Start(t, nil)
	c := newClient(t, srv.Addr())
	s := newStoreWith(t, c, &Options{ScriptCalls: ScriptCallsFunctions})
	e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
	empty := (e.part + 1) % s.Partitions().FlowPartitions
	e.createN(t, 1, nil)
	due := func(part int) error {
		_, err := s.PartitionDue(bg, &model.PartitionDueParams{Partition: part})
		return err
	}
	// once first: the library is loaded
	if err := due(empty); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		part int
		want string
	}{
		{"empty", empty, "exists=1 fcall_ro=1"},
		{"one waiting execution", e.part, "exists=1 fcall_ro=1 zcard=4 zrange=8"},
	} {
		g, err := ranCommands(t, c, func() error { return due(tc.part) })
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if g != tc.want {
			t.Errorf("PartitionDue of the %s partition ran %s, want %s", tc.name, g, tc.want)
		}
	}
}
