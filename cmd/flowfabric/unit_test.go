package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

func TestParseInterleaved(t *testing.T) {
	for _, c := range []struct {
		args   []string
		pos    []string
		reason string
	}{
		{[]string{"a", "b", "-reason", "r"}, []string{"a", "b"}, "r"},
		{[]string{"-reason", "r", "a", "b"}, []string{"a", "b"}, "r"},
		{[]string{"a", "-reason", "r", "b"}, []string{"a", "b"}, "r"},
		{[]string{"a", "--", "-reason", "b"}, []string{"a", "-reason", "b"}, ""},
		{nil, nil, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		reason := fs.String("reason", "", "")
		pos, err := parseInterleaved(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *reason != c.reason {
			t.Errorf("%q: got %q, reason %q, %v; want %q, %q", c.args, pos, *reason, err, c.pos, c.reason)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterleaved(fs, []string{"a", "-nope"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}

func TestExitCode(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		code int
		kind string
	}{
		{nil, 0, ""},
		{usagef("bad"), 2, "usage"},
		{fmt.Errorf("x: %w", model.InvalidField("ID", "malformed")), 2, "invalid_input"},
		{fmt.Errorf("flowfabric: describe: %w", flowfabric.ErrNotFound), 1, "execution_not_found"},
		{flowfabric.ErrNotTerminal, 1, "execution_not_terminal"},
		{fmt.Errorf("ping: %w", opErr), 3, "unreachable"},
		{&unreachableError{err: errors.New("no route")}, 3, "unreachable"},
		{io.EOF, 3, "unreachable"},
		{context.DeadlineExceeded, 3, "unreachable"},
		{context.Canceled, 1, "error"},
		{&bulkError{action: "cancel", failed: 1, total: 2, code: 3, firstKind: "unreachable"}, 3, "unreachable"},
		{&bulkError{action: "cancel", failed: 2, total: 2, code: 1, firstKind: "execution_not_found"}, 1, "execution_not_found"},
	} {
		if got := exitCode(c.err); got != c.code {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.code)
		}
		if c.err == nil {
			continue
		}
		if got := errorKind(c.err); got != c.kind {
			t.Errorf("errorKind(%v) = %q, want %q", c.err, got, c.kind)
		}
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "cancel", 20)
	for i := range 20 {
		p.step(i != 7)
	}
	p.finish()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// not a terminal: a line per tenth, then the summary
	if len(lines) != 11 {
		t.Fatalf("progress lines: %d\n%s", len(lines), b.String())
	}
	if lines[0] != "cancel [===>                          ] 2/20, 0 failed" ||
		lines[9] != "cancel [==============================] 20/20, 1 failed" ||
		!strings.HasPrefix(lines[10], "cancel: 19 done, 1 failed of 20 in ") {
		t.Fatalf("progress:\n%s", b.String())
	}
	b.Reset()
	newProgress(&b, "delete", 0).finish()
	if got := strings.TrimSpace(b.String()); got != "delete [==============================] 0/0, 0 failed" {
		t.Fatalf("empty progress: %q", got)
	}
}

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {90, 90 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(s, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
	l := latencyMS([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond})
	if l.P50 != 2 || l.P90 != 3 || l.P99 != 3 || l.Max != 3 {
		t.Errorf("latencyMS: %+v", l)
	}
	if got := rate(100, 2*time.Second); got != 50 {
		t.Errorf("rate: %v", got)
	}
	if got := rate(100, 0); got != 0 {
		t.Errorf("rate over no time: %v", got)
	}
}
