package redisserver

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// allowedCPUs reads a process's Cpus_allowed_list from /proc.
func allowedCPUs(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc status to read the affinity from: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == "Cpus_allowed_list" {
			return strings.TrimSpace(v)
		}
	}
	t.Skip("/proc status has no Cpus_allowed_list")
	return ""
}

func TestServerCPUsPinsTheServer(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset is not on PATH")
	}
	if _, ok := Binary(); !ok {
		t.Skip(ErrNotInstalled.Error())
	}
	// The first CPU this process may use is one the server may use too.
	first, _, _ := strings.Cut(allowedCPUs(t, os.Getpid()), ",")
	first, _, _ = strings.Cut(first, "-")
	t.Setenv(ServerCPUsEnv, first)
	s := Start(t, nil)
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	if got := allowedCPUs(t, pid); got != first {
		t.Fatalf("the server's Cpus_allowed_list = %q, want %q", got, first)
	}
	if got, err := s.Do("PING"); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
}

func TestServerCPUsValidation(t *testing.T) {
	for _, v := range []string{"", " ", "1", "2-3", "0,2", "0-1,3"} {
		t.Setenv(ServerCPUsEnv, v)
		if _, err := ServerCPUs(); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"a", "1-", "-1", "1,,2", "1;rm", "1 2", "99999"} {
		t.Setenv(ServerCPUsEnv, v)
		_, err := ServerCPUs()
		if err == nil || !strings.Contains(err.Error(), ServerCPUsEnv) {
			t.Errorf("%q: error %v, want one naming %s", v, err, ServerCPUsEnv)
		}
		if _, err := New(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), ServerCPUsEnv) {
			t.Errorf("%q: New's error %v, want one naming %s", v, err, ServerCPUsEnv)
		}
	}
}
