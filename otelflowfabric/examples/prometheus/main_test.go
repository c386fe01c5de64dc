package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestServesMetrics: the example starts, runs a round of jobs, and
// /metrics shows flowfabric's counters, histograms and gauge in
// Prometheus's text format.
func TestServesMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, io.Discard, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run ended early: %v", err)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	for _, want := range []string{
		`flowfabric_submitted_total{flowfabric_kind="resize_image",flowfabric_lane="default"`,
		`flowfabric_completed_total{flowfabric_kind="resize_image",flowfabric_lane="default"`,
		`flowfabric_retried_total{error_type="transient",flowfabric_kind="resize_image",flowfabric_lane="default"`,
		`flowfabric_failed_total{error_type="permanent",flowfabric_kind="resize_image",flowfabric_lane="default"`,
		`flowfabric_claimed_total`,
		`flowfabric_attempt_duration_seconds_bucket`,
		`flowfabric_queue_wait_seconds_bucket`,
		`flowfabric_scanner_pass_duration_seconds_bucket`,
		`flowfabric_executions{flowfabric_lane="default",flowfabric_namespace="default",flowfabric_state="completed"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
