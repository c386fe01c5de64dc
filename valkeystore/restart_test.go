package valkeystore

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// TestStateSurvivesRestart kills a server running with appendfsync always
// and restarts it: every acknowledged transition is there, and the store
// goes on (its scripts are loaded again: EVALSHA falls back to EVAL). Reads
// are read-only scripts, which the client retries over the broken
// connection; a write on a broken connection fails (it may or may not have
// run) and is the caller's to retry.
func TestStateSurvivesRestart(t *testing.T) {
	srv := redisserver.Start(t, &redisserver.Options{AppendOnly: true})
	s := newStoreWith(t, newClient(t, srv.Addr()), nil)
	var sq seq
	id := sq.exec(4)
	c := createP(id, at(0))
	c.Payload = []byte("p")
	if _, err := s.ExecutionCreate(bg, c); err != nil {
		t.Fatal(err)
	}
	r, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi1", time.Minute), Now: at(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	after, err := s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after, cmpOpts); d != "" {
		t.Fatalf("state changed across the restart:\n%s", d)
	}
	if _, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Result: []byte("ok"), Now: at(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ExecutionResult(bg, &model.ExecutionResultParams{ID: id})
	if err != nil || string(res.Result) != "ok" {
		t.Fatalf("result = %v, %v", res, err)
	}
}
