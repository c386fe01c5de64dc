package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// bin is the flowfabric binary TestMain builds; the tests run it as a
// subprocess, as a user or a script would.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flowfabric-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "flowfabric")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the CLI:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// secret is the waitpoint key the fixture's engine signs with.
const secret = "the cli tests' waitpoint secret, 32+ bytes"

// fixture is a server seeded by an engine and a worker in the test
// process; the CLI is run against the same server and prefix.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	addr   string
	prefix string
	engine *flowfabric.Engine
	tokens chan string
	// activity receives (without blocking the engine) when the
	// fixture's worker changed an execution
	activity chan struct{}
	// release lets the "live" handler finish
	release chan struct{}
}

func newFixture(t *testing.T, addr string) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	prefix := fmt.Sprintf("cli%d", time.Now().UnixNano())
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: prefix, Feeds: flowfabric.Feeds{Completions: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	ring, err := flowfabric.NewKeyRing(flowfabric.SigningKey{ID: "test", Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, addr: addr, prefix: prefix, tokens: make(chan string, 4), activity: make(chan struct{}, 1),
		release: make(chan struct{})}
	f.engine = flowfabric.New(store, &flowfabric.Config{WaitpointKeys: ring, OnActivity: func() {
		select {
		case f.activity <- struct{}{}:
		default:
		}
	}})
	w := flowfabric.NewWorker(f.engine, &flowfabric.WorkerConfig{Lanes: []flowfabric.LaneID{"work"}, PollInterval: 100 * time.Millisecond})
	handle := func(kind flowfabric.Kind, h func(ctx context.Context, info *flowfabric.TaskInfo) error) {
		if err := w.HandleRaw(kind, h); err != nil {
			t.Fatal(err)
		}
	}
	handle("ok", func(_ context.Context, info *flowfabric.TaskInfo) error { return info.SetResult([]byte("done")) })
	handle("boom", func(context.Context, *flowfabric.TaskInfo) error { return flowfabric.Permanent(errors.New("boom")) })
	handle("stream", func(ctx context.Context, info *flowfabric.TaskInfo) error {
		for _, line := range []string{"line 1", "line 2"} {
			if _, err := info.AppendFrame(ctx, "log", []byte(line), nil); err != nil {
				return err
			}
		}
		return nil
	})
	handle("live", func(ctx context.Context, info *flowfabric.TaskInfo) error {
		if _, err := info.AppendFrame(ctx, "log", []byte("first"), nil); err != nil {
			return err
		}
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		_, err := info.AppendFrame(ctx, "log", []byte("second"), nil)
		return err
	})
	handle("approve", func(ctx context.Context, info *flowfabric.TaskInfo) error {
		if info.Resumed {
			return info.SetResult([]byte("approved"))
		}
		wp, err := info.CreateWaitpoint(ctx, nil)
		if err != nil {
			return err
		}
		f.tokens <- wp.Token
		return flowfabric.Suspend(flowfabric.SignalFor("go"), &flowfabric.SuspendOpts{Waitpoint: wp})
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return f
}

// submit submits an execution and returns its id.
func (f *fixture) submit(kind string, opts *flowfabric.SubmitOpts) flowfabric.ExecutionID {
	f.t.Helper()
	if opts == nil {
		opts = &flowfabric.SubmitOpts{}
	}
	if opts.Lane == "" {
		opts.Lane = "work"
	}
	opts.RetryPolicy = flowfabric.NoRetries()
	r, err := f.engine.SubmitRaw(f.ctx, flowfabric.Kind(kind), nil, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.ID
}

// wait waits (with the engine's own wait) until id is terminal.
func (f *fixture) wait(id flowfabric.ExecutionID) *flowfabric.Snapshot {
	f.t.Helper()
	s, err := f.engine.Wait(f.ctx, id, 0)
	if err != nil {
		f.t.Fatalf("wait %s: %v", id, err)
	}
	return s
}

func (f *fixture) describe(id flowfabric.ExecutionID) *flowfabric.Snapshot {
	f.t.Helper()
	s, err := f.engine.Describe(f.ctx, id)
	if err != nil {
		f.t.Fatalf("describe %s: %v", id, err)
	}
	return s
}

// result is one run of the CLI.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// command returns the CLI command on the fixture's server and prefix.
func (f *fixture) command(args ...string) *exec.Cmd {
	all := append([]string{"-addr", f.addr, "-prefix", f.prefix, "-feeds", "completions"}, args...)
	cmd := exec.CommandContext(f.ctx, bin, all...)
	cmd.Env = cleanEnv()
	return cmd
}

// cleanEnv is the environment without FLOWFABRIC_ variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLOWFABRIC_") {
			env = append(env, kv)
		}
	}
	return env
}

func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", cmd.Args, err)
	}
	return r
}

// run runs the CLI and checks its exit code.
func (f *fixture) run(want int, args ...string) result {
	f.t.Helper()
	r := runCmd(f.t, f.command(args...))
	if r.code != want {
		f.t.Fatalf("flowfabric %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

// runJSON runs the CLI with -json, wants exit 0 and decodes stdout.
func (f *fixture) runJSON(out any, args ...string) result {
	f.t.Helper()
	r := f.run(0, append(args, "-json")...)
	if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
		f.t.Fatalf("flowfabric %s: decoding %q: %v", strings.Join(args, " "), r.stdout, err)
	}
	return r
}

func TestCLIMiniredis(t *testing.T) {
	testCLI(t, miniredis.RunT(t).Addr())
}

func TestCLIServer(t *testing.T) {
	testCLI(t, serverAddr(t))
}

// serverAddr starts a real server for the test and returns its address,
// or skips the test when no server binary is on PATH.
func serverAddr(t *testing.T) string {
	t.Helper()
	if _, ok := redisserver.Binary(); !ok {
		t.Skip("neither valkey-server nor redis-server is on PATH")
	}
	return redisserver.Start(t, nil).Addr()
}

func testCLI(t *testing.T, addr string) {
	f := newFixture(t, addr)
	completed := f.submit("ok", &flowfabric.SubmitOpts{Tags: map[string]string{"app.team": "a"}, Metadata: map[string]string{"x-req": "r1"}})
	failed := f.submit("boom", nil)
	streamed := f.submit("stream", nil)
	delayed := f.submit("ok", &flowfabric.SubmitOpts{Delay: time.Hour})
	waiting := f.submit("ok", &flowfabric.SubmitOpts{Lane: "idle"})
	approval := f.submit("approve", nil)
	for _, id := range []flowfabric.ExecutionID{completed, failed, streamed} {
		f.wait(id)
	}
	token := <-f.tokens
	// the token is sent before the handler suspends: wait for the
	// suspension, woken by the engine's activity hook
	for s := f.describe(approval); s.PublicState != flowfabric.PublicSuspended; s = f.describe(approval) {
		select {
		case <-f.activity:
		case <-f.ctx.Done():
			t.Fatalf("the approval did not suspend: %v", s.PublicState)
		}
	}

	t.Run("lanes", func(t *testing.T) {
		var doc struct {
			Namespace string
			Lanes     []laneRow
		}
		f.runJSON(&doc, "lanes")
		byLane := map[string]laneRow{}
		for _, l := range doc.Lanes {
			byLane[l.Lane] = l
		}
		if doc.Namespace != "default" || !byLane["idle"].Unserved || byLane["idle"].Counts["waiting"] != 1 ||
			byLane["work"].Workers != 1 || byLane["work"].Counts["completed"] != 2 || byLane["work"].Unserved {
			t.Fatalf("lanes: %+v", doc)
		}
		r := f.run(0, "lanes")
		if !strings.Contains(r.stdout, "UNSERVED") || !strings.Contains(r.stdout, "idle") {
			t.Fatalf("lanes table: %s", r)
		}
	})

	t.Run("count", func(t *testing.T) {
		var doc struct {
			Rows    []countRow
			ByState map[string]int64 `json:"by_state"`
			Total   int64
		}
		f.runJSON(&doc, "count")
		if doc.Total != 6 || doc.ByState["completed"] != 2 || doc.ByState["failed"] != 1 || doc.ByState["delayed"] != 1 ||
			doc.ByState["suspended"] != 1 || doc.ByState["waiting"] != 1 {
			t.Fatalf("count: %+v", doc)
		}
		f.runJSON(&doc, "count", "-lane", "idle")
		if doc.Total != 1 || len(doc.Rows) != 1 || doc.Rows[0].Kind != "ok" || doc.Rows[0].State != "waiting" {
			t.Fatalf("count -lane idle: %+v", doc)
		}
		f.runJSON(&doc, "count", "-namespace", "other")
		if doc.Total != 0 {
			t.Fatalf("count -namespace other: %+v", doc)
		}
		r := f.run(0, "count", "-kind", "boom")
		if !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "TOTAL") {
			t.Fatalf("count table: %s", r)
		}
	})

	t.Run("list", func(t *testing.T) {
		var doc struct {
			Executions []execRow
			Next       string
		}
		f.runJSON(&doc, "list", "-lane", "work", "-state", "completed,failed")
		got := map[string]string{}
		for _, e := range doc.Executions {
			got[e.ID] = e.State
		}
		if len(got) != 3 || got[completed.String()] != "completed" || got[failed.String()] != "failed" || doc.Next != "" {
			t.Fatalf("list: %+v", doc)
		}
		f.runJSON(&doc, "list", "-tag", "app.team=a")
		if len(doc.Executions) != 1 || doc.Executions[0].ID != completed.String() {
			t.Fatalf("list -tag: %+v", doc)
		}
		// page by page with the cursor: every execution once
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 6 {
				t.Fatalf("list: more pages than executions")
			}
			args := []string{"list", "-limit", "1"}
			if cursor != "" {
				args = append(args, "-cursor", cursor)
			}
			f.runJSON(&doc, args...)
			for _, e := range doc.Executions {
				if seen[e.ID] {
					t.Fatalf("list: %s twice", e.ID)
				}
				seen[e.ID] = true
			}
			if doc.Next == "" {
				break
			}
			cursor = doc.Next
		}
		if len(seen) != 6 {
			t.Fatalf("list by pages: %d executions", len(seen))
		}
		r := f.run(0, "list", "-limit", "2")
		if !strings.Contains(r.stdout, "STATE") || !strings.Contains(r.stdout, "next cursor: ") {
			t.Fatalf("list table: %s", r)
		}
		r = f.run(0, "list", "-ids", "-lane", "idle")
		if strings.TrimSpace(r.stdout) != waiting.String() {
			t.Fatalf("list -ids: %s", r)
		}
	})

	t.Run("describe", func(t *testing.T) {
		var v describeView
		f.runJSON(&v, "describe", completed.String())
		if v.ID != completed.String() || v.State != "completed" || v.ResultText == nil || *v.ResultText != "done" ||
			len(v.AttemptList) != 1 || v.AttemptList[0].Status == "" || len(v.LeaseHistory) < 2 || v.Tags["app.team"] != "a" || v.Metadata["x-req"] != "r1" {
			t.Fatalf("describe: %+v", v)
		}
		f.runJSON(&v, "describe", failed.String())
		if v.State != "failed" || v.FailureCategory != string(flowfabric.FailurePermanent) {
			t.Fatalf("describe failed: %+v", v)
		}
		r := f.run(0, "describe", completed.String())
		for _, want := range []string{"state:", "completed", "ATTEMPTS", "LEASE HISTORY", `"done"`, "x-req=r1", "app.team=a"} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("describe table lacks %q: %s", want, r)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		unknown := "{fp:0}:0190a6e0-0000-7000-8000-000000000001"
		r := f.run(1, "describe", unknown)
		if !strings.Contains(r.stderr, "execution_not_found") {
			t.Fatalf("not found: %s", r)
		}
		r = f.run(1, "describe", unknown, "-json")
		var e struct {
			Error, Kind string
			Exit        int
		}
		if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || e.Kind != "execution_not_found" || e.Exit != 1 {
			t.Fatalf("json error: %v %s", err, r)
		}
		f.run(2, "describe", "not-an-id")
		f.run(2, "describe")
		f.run(2, "cancel", "{fp:0}:nope")
		f.run(2, "bogus")
		f.run(2, "list", "-state", "sleeping")
		f.run(2, "list", "-limit", "5000") // refused by the engine's validation
		f.run(2, "list", "-nosuchflag")
		f.run(2, "cancel")
		f.run(2, "cancel", "-lane", "work")
		f.run(2, "pause", "bad lane!")
		r = f.run(0, "-h")
		if !strings.Contains(r.stderr, "Exit codes") || !strings.Contains(r.stderr, "ffbench") {
			t.Fatalf("help: %s", r)
		}
		r = f.run(0, "cancel", "-h")
		if !strings.Contains(r.stderr, "-find") || !strings.Contains(r.stderr, "Exit codes") {
			t.Fatalf("cancel help: %s", r)
		}
	})

	t.Run("retry", func(t *testing.T) {
		if s := f.describe(delayed); s.PublicState != flowfabric.PublicDelayed {
			t.Fatalf("delayed: %v", s.PublicState)
		}
		f.run(0, "retry", delayed.String())
		if s := f.wait(delayed); s.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("retried: %v", s.PublicState)
		}
		r := f.run(1, "retry", completed.String())
		if !strings.Contains(r.stderr, "execution_not_eligible") {
			t.Fatalf("retry completed: %s", r)
		}
	})

	t.Run("replay", func(t *testing.T) {
		var doc struct {
			Action    string
			Results   []actionResult
			Succeeded int
		}
		f.runJSON(&doc, "replay", failed.String(), "-reason", "once more")
		if doc.Action != "replay" || doc.Succeeded != 1 || len(doc.Results) != 1 || !doc.Results[0].OK {
			t.Fatalf("replay: %+v", doc)
		}
		if s := f.wait(failed); s.ReplayCount != 1 || s.PublicState != flowfabric.PublicFailed {
			t.Fatalf("replayed: %+v", s)
		}
		r := f.run(1, "replay", waiting.String())
		if !strings.Contains(r.stderr, "execution_not_terminal") {
			t.Fatalf("replay waiting: %s", r)
		}
	})

	t.Run("signal", func(t *testing.T) {
		key := "test:" + secret
		f.run(2, "signal", "-token", token, "-name", "go") // no key
		f.run(2, "signal", "-token", token, "-name", "go", "-payload", "{not json", "-waitpoint-key", key)
		r := f.run(1, "signal", "-token", token+"x", "-name", "go", "-waitpoint-key", key)
		if !strings.Contains(r.stderr, "invalid_token") {
			t.Fatalf("bad token: %s", r)
		}
		var d struct {
			Execution, Effect, State string
		}
		f.runJSON(&d, "signal", "-token", token, "-name", "go", "-payload", `{"ok":true}`, "-waitpoint-key", key)
		if d.Execution != approval.String() || d.Effect != "resumed" {
			t.Fatalf("signal: %+v", d)
		}
		if s := f.wait(approval); s.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("signalled: %v", s.PublicState)
		}
	})

	t.Run("pause", func(t *testing.T) {
		var v laneView
		f.runJSON(&v, "pause", "idle", "-reason", "maintenance")
		if !v.Paused || v.AlreadyPaused || v.Reason != "maintenance" {
			t.Fatalf("pause: %+v", v)
		}
		if r := f.run(0, "pause", "idle"); !strings.Contains(r.stdout, "already paused") {
			t.Fatalf("pause again: %s", r)
		}
		var doc struct{ Lanes []laneRow }
		f.runJSON(&doc, "lanes")
		for _, l := range doc.Lanes {
			if l.Lane == "idle" && !l.Paused {
				t.Fatalf("lanes after pause: %+v", doc)
			}
		}
		f.runJSON(&v, "resume", "idle")
		if v.WasPaused == nil || !*v.WasPaused {
			t.Fatalf("resume: %+v", v)
		}
		if r := f.run(0, "resume", "idle"); !strings.Contains(r.stdout, "was not paused") {
			t.Fatalf("resume again: %s", r)
		}
	})

	t.Run("tail", func(t *testing.T) {
		r := f.run(0, "tail", streamed.String(), "-json")
		var frames []frameView
		for line := range strings.SplitSeq(strings.TrimSpace(r.stdout), "\n") {
			var fv frameView
			if err := json.Unmarshal([]byte(line), &fv); err != nil {
				t.Fatalf("tail line %q: %v", line, err)
			}
			frames = append(frames, fv)
		}
		if len(frames) != 2 || *frames[0].Payload != "line 1" || *frames[1].Payload != "line 2" || frames[1].Seq <= frames[0].Seq {
			t.Fatalf("tail: %s", r)
		}
		r = f.run(0, "tail", streamed.String(), "-attempt", "0", "-after", fmt.Sprint(frames[0].Seq))
		if strings.Contains(r.stdout, "line 1") || !strings.Contains(r.stdout, "line 2") || !strings.Contains(r.stderr, "closed") {
			t.Fatalf("tail -after: %s", r)
		}
		r = f.run(1, "tail", streamed.String(), "-attempt", "5")
		if !strings.Contains(r.stderr, "attempt_not_found") {
			t.Fatalf("tail of a missing attempt: %s", r)
		}
	})

	t.Run("tail live", func(t *testing.T) {
		// tail follows a running attempt: it prints the first frame while
		// the handler waits, then the second once released, then ends
		// with the stream
		id := f.submit("live", nil)
		cmd := f.command("tail", id.String(), "-json")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var fv frameView
		if !sc.Scan() || json.Unmarshal(sc.Bytes(), &fv) != nil || fv.Payload == nil || *fv.Payload != "first" {
			t.Fatalf("tail live, first line %q: %v %s", sc.Text(), sc.Err(), errb.String())
		}
		if s := f.describe(id); s.PublicState != flowfabric.PublicActive {
			t.Fatalf("the live execution is %v while tailed", s.PublicState)
		}
		close(f.release)
		if !sc.Scan() || json.Unmarshal(sc.Bytes(), &fv) != nil || fv.Payload == nil || *fv.Payload != "second" {
			t.Fatalf("tail live, second line %q: %v %s", sc.Text(), sc.Err(), errb.String())
		}
		for sc.Scan() {
			t.Errorf("tail live: unexpected line %q", sc.Text())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("tail live: %v: %s", err, errb.String())
		}
		if s := f.wait(id); s.PublicState != flowfabric.PublicCompleted {
			t.Fatalf("live: %v", s.PublicState)
		}
	})

	t.Run("watch", func(t *testing.T) {
		r := f.run(2, "watch", "-feeds", "")
		if !strings.Contains(r.stderr, "-feeds completions") {
			t.Fatalf("watch without the feed: %s", r)
		}
		cmd := f.command("watch", "-json", "-count", "1", "-lane", "work")
		var out bytes.Buffer
		cmd.Stdout = &out
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		if !sc.Scan() || !strings.Contains(sc.Text(), "watching completions") {
			t.Fatalf("watch did not start: %q %v", sc.Text(), sc.Err())
		}
		drained := make(chan struct{})
		go func() {
			for sc.Scan() { // drain until the process closes stderr
			}
			close(drained)
		}()
		// the watch subscribed from the head: this completion comes after it
		id := f.submit("ok", nil)
		f.wait(id)
		<-drained // Wait closes the pipe: read it to its end first
		if err := cmd.Wait(); err != nil {
			t.Fatalf("watch: %v: %s", err, out.String())
		}
		var ev eventView
		if err := json.Unmarshal(out.Bytes(), &ev); err != nil {
			t.Fatalf("watch output %q: %v", out.String(), err)
		}
		if ev.Execution != id.String() || ev.Outcome != "success" && ev.Outcome != "completed" || ev.Cursor == "" || ev.Lane != "work" {
			t.Fatalf("watch event: %+v", ev)
		}
		// ctrl-C ends a watch with exit 0
		cmd = f.command("watch")
		stderr, err = cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc = bufio.NewScanner(stderr)
		if !sc.Scan() || !strings.Contains(sc.Text(), "watching completions") {
			t.Fatalf("watch did not start: %q %v", sc.Text(), sc.Err())
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() { // drain until the process closes stderr
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("watch after ctrl-C: %v", err)
		}
		// resuming from the start replays the feed: the first completion
		// recorded is one of the seeded executions
		r = f.run(0, "watch", "-from", "start", "-count", "1", "-json")
		if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev.Execution == "" {
			t.Fatalf("watch -from start: %v %s", err, r)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		f.run(0, "cancel", waiting.String(), "-reason", "not needed")
		s := f.describe(waiting)
		if s.PublicState != flowfabric.PublicCancelled || s.CancellationReason != "not needed" {
			t.Fatalf("cancelled: %v %q", s.PublicState, s.CancellationReason)
		}
		r := f.run(1, "cancel", "{fp:0}:0190a6e0-0000-7000-8000-000000000001")
		if !strings.Contains(r.stderr, "execution_not_found") {
			t.Fatalf("cancel unknown: %s", r)
		}
	})

	t.Run("bulk", func(t *testing.T) {
		var ids []flowfabric.ExecutionID
		for range 5 {
			ids = append(ids, f.submit("ok", &flowfabric.SubmitOpts{Lane: "bulk"}))
		}
		r := f.run(2, "cancel", "-find", "-lane", "bulk", "-state", "waiting")
		if !strings.Contains(r.stderr, "5 executions match") {
			t.Fatalf("bulk without -yes: %s", r)
		}
		if s := f.describe(ids[0]); s.PublicState != flowfabric.PublicWaiting {
			t.Fatalf("a bulk action without -yes changed %s: %v", ids[0], s.PublicState)
		}
		var doc struct {
			Results   []actionResult
			Succeeded int
			Failed    int
		}
		r = f.runJSON(&doc, "cancel", "-find", "-lane", "bulk", "-state", "waiting", "-yes", "-reason", "bulk")
		if doc.Succeeded != 5 || doc.Failed != 0 || len(doc.Results) != 5 || !strings.Contains(r.stderr, "cancel [==============================] 5/5, 0 failed") ||
			!strings.Contains(r.stderr, "cancel: 5 done, 0 failed of 5 in ") {
			t.Fatalf("bulk cancel: %+v %s", doc, r)
		}
		for _, id := range ids {
			if s := f.describe(id); s.PublicState != flowfabric.PublicCancelled {
				t.Fatalf("%s after bulk cancel: %v", id, s.PublicState)
			}
		}
		// a bulk action exits 1 when any execution fails
		r = f.run(1, "retry", "-find", "-lane", "bulk", "-yes")
		if !strings.Contains(r.stderr, "5 failed") || !strings.Contains(r.stderr, "execution_not_eligible") {
			t.Fatalf("bulk retry of cancelled executions: %s", r)
		}
		// several ids, one unknown: the others are done, the exit is 1
		r = f.run(1, "delete", ids[0].String(), "{fp:0}:0190a6e0-0000-7000-8000-000000000001", ids[1].String())
		if !strings.Contains(r.stdout, "deleted "+ids[0].String()) || !strings.Contains(r.stdout, "deleted "+ids[1].String()) {
			t.Fatalf("delete ids: %s", r)
		}
		r = f.run(0, "delete", "-find", "-lane", "bulk", "-yes")
		if !strings.Contains(r.stderr, "3 done, 0 failed of 3") {
			t.Fatalf("bulk delete: %s", r)
		}
		var c struct{ Total int64 }
		f.runJSON(&c, "count", "-lane", "bulk")
		if c.Total != 0 {
			t.Fatalf("count after bulk delete: %+v", c)
		}
	})

	t.Run("delete", func(t *testing.T) {
		f.run(0, "delete", completed.String())
		r := f.run(1, "delete", completed.String())
		if !strings.Contains(r.stderr, "execution_not_found") {
			t.Fatalf("delete twice: %s", r)
		}
		f.run(1, "describe", completed.String())
		f.run(2, "delete", "{fp:0}:nope")
	})
}

// TestCLICluster runs reads and an action with -cluster against a
// three-master cluster (skipped, saying why, without a server and its CLI
// on PATH).
func TestCLICluster(t *testing.T) {
	cl := redisserver.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prefix := fmt.Sprintf("clicl%d", time.Now().UnixNano())
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := flowfabric.New(store, nil)
	var ids []flowfabric.ExecutionID
	for range 3 {
		r, err := e.SubmitRaw(ctx, "job", nil, &flowfabric.SubmitOpts{Lane: "cl"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	cli := func(want int, args ...string) result {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-cluster", "-addr", strings.Join(cl.Addrs(), ","), "-prefix", prefix}, args...)...)
		cmd.Env = cleanEnv()
		r := runCmd(t, cmd)
		if r.code != want {
			t.Fatalf("flowfabric %v: want exit %d, got %s", args, want, r)
		}
		return r
	}
	// without -cluster the server's redirections are reported with a hint
	cmd := exec.CommandContext(ctx, bin, "-addr", cl.Addrs()[0], "-prefix", prefix, "count")
	cmd.Env = cleanEnv()
	if r := runCmd(t, cmd); r.code != 1 || !strings.Contains(r.stderr, "pass -cluster") {
		t.Fatalf("count on a cluster without -cluster: %s", r)
	}
	var c struct{ Total int64 }
	if err := json.Unmarshal([]byte(cli(0, "count", "-json").stdout), &c); err != nil || c.Total != 3 {
		t.Fatalf("count on the cluster: %v %+v", err, c)
	}
	cli(0, "cancel", "-find", "-lane", "cl", "-yes")
	for _, id := range ids {
		if s, err := e.Describe(ctx, id); err != nil || s.PublicState != flowfabric.PublicCancelled {
			t.Fatalf("%s after a bulk cancel on the cluster: %v %v", id, s, err)
		}
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	for _, args := range [][]string{{"lanes"}, {"describe", "{fp:0}:0190a6e0-0000-7000-8000-000000000001", "-json"}, {"bench", "-jobs", "5"}} {
		cmd := exec.Command(bin, append([]string{"-addr", addr}, args...)...)
		cmd.Env = cleanEnv()
		r := runCmd(t, cmd)
		if r.code != 3 || !strings.Contains(r.stderr, "unreachable") {
			t.Fatalf("%v against a closed port: %s", args, r)
		}
	}
	// the address from the environment
	cmd := exec.Command(bin, "count")
	cmd.Env = append(cleanEnv(), "FLOWFABRIC_ADDR="+addr)
	if r := runCmd(t, cmd); r.code != 3 || !strings.Contains(r.stderr, addr) {
		t.Fatalf("FLOWFABRIC_ADDR: %s", r)
	}
}

// benchDoc is the part of bench -json the tests read.
type benchDoc struct {
	Lane       string  `json:"lane"`
	Jobs       int     `json:"jobs"`
	Completed  int     `json:"completed"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	SubmitRate float64 `json:"submit_per_sec"`
	Latency    struct {
		P50, P90, P99, Max float64
	} `json:"latency_ms"`
	Kept    bool `json:"kept"`
	Deleted int  `json:"deleted"`
}

func TestBenchMiniredis(t *testing.T) {
	testBench(t, miniredis.RunT(t).Addr())
}

func TestBenchServer(t *testing.T) {
	testBench(t, serverAddr(t))
}

func testBench(t *testing.T, addr string) {
	f := newFixture(t, addr)
	laneTotal := func(lane string) int64 {
		t.Helper()
		var c struct{ Total int64 }
		f.runJSON(&c, "count", "-lane", lane)
		return c.Total
	}

	t.Run("run", func(t *testing.T) {
		var doc benchDoc
		r := f.runJSON(&doc, "bench", "-jobs", "200", "-workers", "4")
		if doc.Jobs != 200 || doc.Completed != 200 || doc.Lane != "ffbench" || doc.JobsPerSec <= 0 || doc.SubmitRate <= 0 ||
			doc.Latency.P50 > doc.Latency.P90 || doc.Latency.P90 > doc.Latency.P99 || doc.Latency.P99 > doc.Latency.Max ||
			doc.Latency.Max <= 0 || doc.Kept || doc.Deleted != 200 {
			t.Fatalf("bench: %+v\n%s", doc, r)
		}
		if !strings.Contains(r.stderr, "bench [==============================] 200/200, 0 failed") ||
			!strings.Contains(r.stderr, "delete: 200 done, 0 failed of 200") {
			t.Fatalf("bench progress: %s", r)
		}
		// the store is left without the bench's executions or workers
		if n := laneTotal("ffbench"); n != 0 {
			t.Fatalf("after bench: %d executions on its lane", n)
		}
		var lanes struct{ Lanes []laneRow }
		f.runJSON(&lanes, "lanes")
		for _, l := range lanes.Lanes {
			if l.Lane == "ffbench" {
				t.Fatalf("after bench, lanes lists its lane: %+v", l)
			}
		}
		// the table
		r = f.run(0, "bench", "-jobs", "20", "-workers", "2", "-payload", "8", "-batch", "7", "-submitters", "1")
		for _, want := range []string{"throughput", "jobs/s", "latency p99", "20 deleted"} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("bench table lacks %q: %s", want, r)
			}
		}
	})

	t.Run("keep", func(t *testing.T) {
		var doc benchDoc
		f.runJSON(&doc, "bench", "-jobs", "30", "-workers", "2", "-lane", "ffbench-kept", "-keep")
		if !doc.Kept || doc.Deleted != 0 || doc.Completed != 30 {
			t.Fatalf("bench -keep: %+v", doc)
		}
		if n := laneTotal("ffbench-kept"); n != 30 {
			t.Fatalf("bench -keep left %d executions, want 30", n)
		}
		// a lane holding executions is refused
		r := f.run(2, "bench", "-jobs", "5", "-lane", "ffbench-kept")
		if !strings.Contains(r.stderr, "holds 30 executions") {
			t.Fatalf("bench on a used lane: %s", r)
		}
		f.run(0, "delete", "-find", "-lane", "ffbench-kept", "-yes")
		if n := laneTotal("ffbench-kept"); n != 0 {
			t.Fatalf("after delete: %d", n)
		}
	})

	t.Run("refused", func(t *testing.T) {
		// the fixture's worker serves lane "work"
		r := f.run(2, "bench", "-jobs", "5", "-lane", "work")
		if !strings.Contains(r.stderr, "live workers") {
			t.Fatalf("bench on a served lane: %s", r)
		}
		f.run(0, "pause", "ffbench-paused")
		r = f.run(2, "bench", "-jobs", "5", "-lane", "ffbench-paused")
		if !strings.Contains(r.stderr, "paused") {
			t.Fatalf("bench on a paused lane: %s", r)
		}
		f.run(0, "resume", "ffbench-paused")
		for _, args := range [][]string{
			{"-jobs", "0"}, {"-workers", "0"}, {"-payload", "4"}, {"-batch", "0"}, {"-batch", "1001"},
			{"-submitters", "0"}, {"-lane", "bad lane!"}, {"extra"}, {"-nosuchflag"},
		} {
			r := f.run(2, append([]string{"bench"}, args...)...)
			if !strings.Contains(r.stderr, "usage") && !strings.Contains(r.stderr, "invalid") &&
				!strings.Contains(r.stderr, "not defined") {
				t.Fatalf("bench %v: %s", args, r)
			}
		}
		if n := laneTotal("ffbench"); n != 0 {
			t.Fatalf("a refused bench left %d executions", n)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		// ctrl-C once the submissions start: exit 1, the lane emptied
		cmd := f.command("bench", "-jobs", "1000000", "-workers", "2")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		if !sc.Scan() || !strings.Contains(sc.Text(), "bench: submitting 1000000 no-op jobs") {
			t.Fatalf("bench did not start: %q %v", sc.Text(), sc.Err())
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		var rest strings.Builder
		for sc.Scan() { // drain until the process closes stderr
			rest.WriteString(sc.Text() + "\n")
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(rest.String(), "interrupted") {
			t.Fatalf("bench after ctrl-C: %v\n%s", err, rest.String())
		}
		if n := laneTotal("ffbench"); n != 0 {
			t.Fatalf("an interrupted bench left %d executions", n)
		}
	})
}
