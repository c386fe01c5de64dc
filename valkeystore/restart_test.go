package valkeystore

import (
	"errors"
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
	// The client learns of the dropped connection on its next command and
	// dials again: retry until that is done.
	var after *model.ExecutionSnapshot
	err = reconnected(func() (err error) {
		after, err = s.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: id})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after, cmpOpts); d != "" {
		t.Fatalf("state changed across the restart:\n%s", d)
	}
	if err := reconnected(func() error {
		_, err := s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: id, Fence: r.Fence(), Result: []byte("ok"), Now: at(2 * time.Second)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ExecutionResult(bg, &model.ExecutionResultParams{ID: id})
	if err != nil || string(res.Result) != "ok" {
		t.Fatalf("result = %v, %v", res, err)
	}
}

// reconnected runs op until it stops failing on the connection (at most a
// few tries: each one makes the client dial again). Errors of the store
// itself are returned at once; a repeated completion replays.
func reconnected(op func() error) error {
	var err error
	for range 20 {
		err = op()
		var me *model.Error
		if err == nil || errors.As(err, &me) {
			return err
		}
	}
	return err
}
