package redisserver

import (
	"strings"
	"testing"
)

func TestStandalone(t *testing.T) {
	s := Start(t, nil)
	if got, err := s.Do("PING"); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Do("GET", "k"); got != "v" {
		t.Fatalf("GET = %q", got)
	}
	if _, err := s.Do("NOSUCHCOMMAND"); err == nil {
		t.Fatal("an unknown command succeeded")
	}
}

func TestAppendOnlyRestartAndKill(t *testing.T) {
	s := Start(t, &Options{AppendOnly: true})
	if _, err := s.Do("SET", "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("running after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Do("GET", "k"); got != "v1" {
		t.Fatalf("after kill and restart GET = %q, want v1", got)
	}
	if _, err := s.Do("SET", "k", "v2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Do("GET", "k"); got != "v2" {
		t.Fatalf("after restart GET = %q, want v2", got)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestCluster(t *testing.T) {
	c := StartCluster(t, 3)
	if len(c.Addrs()) != 3 {
		t.Fatalf("addrs = %v", c.Addrs())
	}
	for _, n := range c.Nodes {
		info, err := n.Do("CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("%s: %v %s", n.Addr(), err, info)
		}
	}
	// Every slot is served: a key lands on exactly one master.
	served := 0
	for _, n := range c.Nodes {
		if _, err := n.Do("SET", "{probe}k", "v"); err == nil {
			served++
		} else if !strings.HasPrefix(err.Error(), "MOVED") {
			t.Fatalf("%s: %v", n.Addr(), err)
		}
	}
	if served != 1 {
		t.Fatalf("key served by %d nodes", served)
	}
}
