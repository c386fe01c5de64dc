package storetest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
)

var rewrite = flag.Bool("rewrite", false,
	"storetest: rewrite the expected output of the transcripts (testdata/transcripts/*.txt) with what the store printed")

// rewriteMu serialises rewrites: several stores of one test binary may run
// the same file at once (their output is the same when they agree).
var rewriteMu sync.Mutex

// TranscriptDir is where the transcripts live, relative to a store
// package's directory (memstore, valkeystore).
const TranscriptDir = "../storetest/testdata/transcripts"

// RunTranscripts runs every transcript (*.txt) in dir on a fresh store from
// newStore each, as a parallel subtest named after the file, and fails
// where a step's output differs from the file. With -rewrite it writes
// the output back into the file instead. The file format and the commands
// are described in testdata/transcripts/README.md.
//
// After every step the per-execution invariants of lua-semantics §6
// (internal/invariant) are checked on every execution the transcript
// named.
func RunTranscripts(t *testing.T, newStore NewStoreFunc, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts in %s", dir)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, newStore(t), file)
		})
	}
}

// chunk is a part of a transcript file: verbatim text (comments, blank
// lines) or one step (command, "----", output).
type chunk struct {
	text string // verbatim text; empty for a step
	line int    // line of the command
	cmd  string
	want string
}

func parseTranscript(path string) ([]chunk, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []chunk
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	n := 0
	var cur *chunk
	inOutput := false
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && (strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#")):
			out = append(out, chunk{text: line + "\n"})
		case cur == nil:
			cur = &chunk{line: n, cmd: line}
		case !inOutput && line == "----":
			inOutput = true
		case !inOutput:
			return nil, fmt.Errorf("%s:%d: a step is one command line followed by ----", path, n)
		case strings.TrimSpace(line) == "":
			out = append(out, *cur, chunk{text: line + "\n"})
			cur, inOutput = nil, false
		default:
			cur.want += line + "\n"
		}
	}
	if cur != nil {
		if !inOutput {
			return nil, fmt.Errorf("%s:%d: command without ----", path, cur.line)
		}
		out = append(out, *cur)
	}
	return out, sc.Err()
}

func runTranscript(t *testing.T, s model.Store, path string) {
	chunks, err := parseTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newTranscriptRun(t, s)
	var b strings.Builder
	for i := range chunks {
		c := &chunks[i]
		if c.cmd == "" {
			b.WriteString(c.text)
			continue
		}
		got := r.step(c.cmd)
		for _, name := range r.order {
			x := r.execs[name]
			if x.snap == nil {
				continue
			}
			for _, msg := range invariant.Violations(x.inv) {
				t.Errorf("%s:%d: %s: invariant: %s: %s", path, c.line, c.cmd, name, r.names.Replace(msg))
			}
		}
		if !*rewrite && got != c.want {
			t.Errorf("%s:%d: %s: output differs (-want +got):\n%s", path, c.line, c.cmd, cmp.Diff(c.want, got))
		}
		b.WriteString(c.cmd + "\n----\n" + got)
	}
	if *rewrite {
		rewriteMu.Lock()
		defer rewriteMu.Unlock()
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// transcriptRun is one transcript's store, clock and names.
type transcriptRun struct {
	t    *testing.T
	s    fullStore
	ctx  context.Context
	cfg  model.PartitionConfig
	part int // the partition every execution of the transcript lives in
	now  time.Time
	// execs are the executions the transcript named, in order.
	execs map[string]*tExec
	order []string
	ids   map[model.ExecutionID]string
	// names replaces ids in printed text with the transcript's names.
	names    *strings.Replacer
	nameList []string
	leases   int
	attempts int
	flows    map[string]model.FlowID // transcript_flow.go
	// created is the creation time of each waitpoint the transcript
	// created (transcript_suspend.go), what a signal's token signs.
	created map[model.WaitpointID]time.Time
}

type tExec struct {
	id     model.ExecutionID
	fences []model.Fence // the leases the transcript acquired, in order
	lane   model.LaneID
	snap   *model.ExecutionSnapshot
	inv    *invariant.Exec
	shown  string // the block printed last
}

func newTranscriptRun(t *testing.T, s model.Store) *transcriptRun {
	cfg := s.Partitions().WithDefaults()
	return &transcriptRun{
		t: t, s: complete(t, s), ctx: context.Background(), cfg: cfg,
		part:  cfg.SoloPartition(laneA),
		now:   base,
		execs: map[string]*tExec{},
		ids:   map[model.ExecutionID]string{},
		names: strings.NewReplacer(),
	}
}

// uuidOf is the UUID a transcript's name stands for.
func uuidOf(kind, name string) model.UUID {
	sum := sha256.Sum256([]byte("transcript " + kind + " " + name))
	var b [16]byte
	copy(b[:], sum[:16])
	return model.NewUUIDv4(b)
}

func (r *transcriptRun) addName(id, name string) {
	r.nameList = append(r.nameList, id, name)
	r.names = strings.NewReplacer(r.nameList...)
}

func (r *transcriptRun) exec(name string) *tExec {
	if x := r.execs[name]; x != nil {
		return x
	}
	u := uuidOf("execution", name)
	x := &tExec{id: model.NewExecutionID(r.part, u), lane: laneA}
	r.execs[name] = x
	r.order = append(r.order, name)
	r.ids[x.id] = name
	// The execution id first: its partition differs between stores'
	// partition counts, the name does not.
	r.addName(x.id.String(), name)
	r.addName(u.String(), name)
	return x
}

func (r *transcriptRun) newLease() model.LeaseID {
	r.leases++
	name := "l" + strconv.Itoa(r.leases)
	u := uuidOf("lease", name)
	r.addName(u.String(), name)
	return model.LeaseID(u)
}

func (r *transcriptRun) newAttempt() model.AttemptID {
	r.attempts++
	name := "a" + strconv.Itoa(r.attempts)
	u := uuidOf("attempt", name)
	r.addName(u.String(), name)
	return model.AttemptID(u)
}

// args are a command's words: positional ones and key=value ones.
type args struct {
	pos  []string
	kv   map[string]string
	used map[string]bool
	err  error
}

func parseArgs(words []string) *args {
	a := &args{kv: map[string]string{}, used: map[string]bool{}}
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok {
			a.kv[k] = v
		} else {
			a.pos = append(a.pos, w)
		}
	}
	return a
}

func (a *args) str(k, def string) string {
	a.used[k] = true
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a *args) has(k string) bool {
	a.used[k] = true
	_, ok := a.kv[k]
	return ok
}

func (a *args) int(k string, def int) int {
	v := a.str(k, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %w", k, err)
	}
	return n
}

func (a *args) dur(k string, def time.Duration) time.Duration {
	v := a.str(k, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %w", k, err)
	}
	return d
}

func (a *args) list(k string) []string {
	v := a.str(k, "")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// unused reports key=value words no command read (a typo in a transcript).
func (a *args) unused() error {
	if a.err != nil {
		return a.err
	}
	var bad []string
	for k := range a.kv {
		if !a.used[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("unknown argument(s) %s", strings.Join(bad, ", "))
	}
	return nil
}

// step runs one command and returns its output: the command's own line,
// then every named execution's state (or "unchanged").
func (r *transcriptRun) step(cmd string) string {
	words := strings.Fields(cmd)
	a := parseArgs(words[1:])
	res, err := r.do(words[0], a)
	if uerr := a.unused(); uerr != nil {
		r.t.Fatalf("%s: %v", cmd, uerr)
	}
	var b strings.Builder
	switch {
	case err != nil:
		b.WriteString("error: " + r.fmtErr(err) + "\n")
	case res != "":
		b.WriteString(res + "\n")
	default:
		b.WriteString("ok\n")
	}
	for _, name := range r.order {
		block := r.observe(name)
		x := r.execs[name]
		if block == x.shown {
			b.WriteString(name + ": unchanged\n")
			continue
		}
		x.shown = block
		b.WriteString(block)
	}
	return r.names.Replace(b.String())
}

func (r *transcriptRun) fmtErr(err error) string {
	var me *model.Error
	if !errors.As(err, &me) {
		return "untyped: " + err.Error()
	}
	s := me.Error()
	if st := me.State; st != nil {
		s += fmt.Sprintf(" [state %v/%v epoch=%d attempt=%v]", st.LifecyclePhase, st.TerminalOutcome, st.LeaseEpoch, st.AttemptID)
	}
	return s
}

func (r *transcriptRun) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(base)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func (r *transcriptRun) one(a *args) (*tExec, error) {
	if len(a.pos) != 1 {
		return nil, fmt.Errorf("want one execution name, got %q", a.pos)
	}
	return r.exec(a.pos[0]), nil
}

func (r *transcriptRun) fence(x *tExec, a *args) (model.Source, model.Fence) {
	if a.str("by", "worker") == "operator" {
		return model.SourceOperator, model.Fence{}
	}
	var f model.Fence
	if n := len(x.fences); n > 0 {
		f = x.fences[n-1]
	}
	if a.has("fence") {
		n := a.int("fence", 0)
		if n < 1 || n > len(x.fences) {
			a.err = fmt.Errorf("fence=%d: %d leases acquired", n, len(x.fences))
			return model.SourceWorker, f
		}
		f = x.fences[n-1]
	}
	if a.has("epoch") {
		f.LeaseEpoch = uint64(a.int("epoch", 0))
	}
	return model.SourceWorker, f
}

func (r *transcriptRun) leaseReq(a *args) model.LeaseRequest {
	w := a.str("worker", "w1")
	return model.LeaseRequest{
		WorkerID: model.WorkerID(w), WorkerInstanceID: model.WorkerInstanceID(w),
		LeaseID: r.newLease(), AttemptID: r.newAttempt(), LeaseTTL: a.dur("ttl", leaseTTL),
	}
}

func (r *transcriptRun) claimed(c *model.ClaimResult) {
	if c == nil {
		return
	}
	if name, ok := r.ids[c.ID]; ok {
		x := r.execs[name]
		x.fences = append(x.fences, c.Fence())
	}
}

// do runs one command; the result is printed by fmtValue.
func (r *transcriptRun) do(cmd string, a *args) (string, error) {
	ctx, now := r.ctx, r.now
	res := func(v any, err error) (string, error) {
		if err != nil {
			return "", err
		}
		return r.fmtValue(reflect.ValueOf(v)), nil
	}
	if out, ok, err := r.doFlow(cmd, a); ok {
		return out, err
	}
	if out, ok, err := r.doSuspend(cmd, a); ok {
		return out, err
	}
	if out, ok, err := r.doLane(cmd, a); ok {
		return out, err
	}
	switch cmd {
	case "advance-clock":
		if len(a.pos) != 1 {
			return "", fmt.Errorf("advance-clock takes one duration")
		}
		d, err := time.ParseDuration(a.pos[0])
		if err != nil {
			return "", err
		}
		r.now = r.now.Add(d)
		return "now " + r.rel(r.now), nil
	case "scan":
		if len(a.pos) != 1 {
			return "", fmt.Errorf("scan takes one index: delayed, lease_expiry, attempt_timeout, execution_deadline")
		}
		var kind model.IndexKind
		for k := model.IndexKind(1); k.String() != "" && k < 16; k++ {
			if k.String() == a.pos[0] {
				kind = k
			}
		}
		if kind == 0 {
			return "", fmt.Errorf("scan: unknown index %q", a.pos[0])
		}
		out, err := res(r.s.IndexScanDue(ctx, &model.IndexScanDueParams{
			Partition: r.part, Index: kind, Now: now, Limit: a.int("limit", 100),
		}))
		if err == nil && out == "" {
			out = "nothing due, none later"
		}
		return out, err
	case "claim-next":
		req := r.leaseReq(a)
		out, err := r.s.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{
			Partition: r.part, Lane: model.LaneID(a.str("lane", string(laneA))),
			Capabilities: a.list("caps"), LiveCapabilities: a.list("live"),
			ScanLimit: a.int("scan-limit", 10), LeaseRequest: req, Now: now,
		})
		if err == nil {
			r.claimed(out.Claimed)
		}
		return res(out, err)
	}

	x, err := r.one(a)
	if err != nil {
		return "", err
	}
	id := x.id
	switch cmd {
	case "create":
		p := &model.ExecutionCreateParams{
			ID: id, Namespace: model.Namespace(a.str("ns", string(nsA))),
			Lane: model.LaneID(a.str("lane", string(laneA))), Kind: model.Kind(a.str("kind", string(kindA))),
			Payload: []byte(a.str("payload", "payload")), Priority: a.int("priority", 0),
			RequiredCapabilities: a.list("caps"),
			MaxReclaims:          a.int("max-reclaims", 0), MaxReplays: a.int("max-replays", 0),
			AttemptTimeout: a.dur("timeout", 0), IdempotencyKey: a.str("key", ""), Now: now,
		}
		x.lane = p.Lane
		if a.has("delay") {
			p.DelayUntil = now.Add(a.dur("delay", 0))
		}
		if a.has("deadline") {
			p.Deadline = now.Add(a.dur("deadline", 0))
		}
		p.RetryPolicy.MaxRetries = a.int("retries", 0)
		switch b := a.str("backoff", ""); {
		case b == "":
		case strings.HasPrefix(b, "fixed:"):
			p.RetryPolicy.Backoff = model.BackoffFixed
			p.RetryPolicy.Delay, err = time.ParseDuration(strings.TrimPrefix(b, "fixed:"))
		case strings.HasPrefix(b, "exponential:"):
			p.RetryPolicy.InitialDelay, err = time.ParseDuration(strings.TrimPrefix(b, "exponential:"))
		default:
			err = fmt.Errorf("backoff %q: want fixed:<d> or exponential:<d>", b)
		}
		if err != nil {
			return "", err
		}
		if a.has("max-delay") {
			p.RetryPolicy.MaxDelay = a.dur("max-delay", 0)
		}
		return res(r.s.ExecutionCreate(ctx, p))
	case "claim":
		req := r.leaseReq(a)
		caps := a.list("caps")
		if _, err := r.s.ClaimGrantIssue(ctx, &model.ClaimGrantIssueParams{
			ID: id, WorkerID: req.WorkerID, WorkerInstanceID: req.WorkerInstanceID,
			Capabilities: caps, GrantTTL: grantTTL, Now: now,
		}); err != nil {
			return "", err
		}
		out, err := r.s.ExecutionClaim(ctx, &model.ExecutionClaimParams{ID: id, Capabilities: caps, LeaseRequest: req, Now: now})
		if err == nil {
			r.claimed(out)
		}
		return res(out, err)
	case "complete":
		src, f := r.fence(x, a)
		return res(r.s.ExecutionComplete(ctx, &model.ExecutionCompleteParams{
			ID: id, Source: src, Fence: f, Result: []byte(a.str("result", "")), Now: now,
		}))
	case "fail":
		src, f := r.fence(x, a)
		return res(r.s.ExecutionFail(ctx, &model.ExecutionFailParams{
			ID: id, Source: src, Fence: f, Reason: a.str("reason", "boom"),
			Category: model.FailureCategory(a.str("category", string(model.FailureTransient))), Now: now,
		}))
	case "cancel":
		src, f := r.fence(x, a)
		return res(r.s.ExecutionCancel(ctx, &model.ExecutionCancelParams{
			ID: id, Source: src, Fence: f, Reason: a.str("reason", "stop"), Now: now,
		}))
	case "delay":
		src, f := r.fence(x, a)
		p := &model.ExecutionDelayParams{ID: id, Source: src, Fence: f, Now: now}
		if a.has("for") {
			p.DelayUntil = now.Add(a.dur("for", 0))
		}
		return res(r.s.ExecutionDelay(ctx, p))
	case "renew":
		_, f := r.fence(x, a)
		return res(r.s.LeaseRenew(ctx, &model.LeaseRenewParams{ID: id, Fence: f, LeaseTTL: a.dur("ttl", leaseTTL), Now: now}))
	case "revoke":
		return res(r.s.LeaseRevoke(ctx, &model.LeaseRevokeParams{ID: id, Reason: a.str("reason", "operator"), Now: now}))
	case "expire-lease":
		return res(r.s.LeaseMarkExpired(ctx, &model.LeaseMarkExpiredParams{ID: id, Now: now}))
	case "recover":
		return res(r.s.ExecutionRecover(ctx, &model.ExecutionRecoverParams{ID: id, Now: now}))
	case "expire":
		reason := model.ExpireAttemptTimeout
		if a.str("reason", "attempt_timeout") == "execution_deadline" {
			reason = model.ExpireExecutionDeadline
		}
		return res(r.s.ExecutionExpire(ctx, &model.ExecutionExpireParams{ID: id, Reason: reason, Now: now}))
	case "promote":
		return res(r.s.ExecutionPromoteDelayed(ctx, &model.ExecutionPromoteDelayedParams{ID: id, Lane: x.lane, Now: now}))
	case "replay":
		return res(r.s.ExecutionReplay(ctx, &model.ExecutionReplayParams{
			ID: id, Reason: a.str("reason", "again"), RequestedBy: a.str("by", "operator"), Now: now,
		}))
	case "change-priority":
		return res(r.s.ExecutionChangePriority(ctx, &model.ExecutionChangePriorityParams{ID: id, Priority: a.int("priority", 0), Now: now}))
	case "describe":
		// Nothing to do: every step prints what changed; describe prints
		// the execution in full.
		x.shown = ""
		return "", nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

// fmtValue prints a result: struct fields that are set, as Name=value;
// times relative to the transcript's start; ids by their names.
func (r *transcriptRun) fmtValue(v reflect.Value) string {
	if !v.IsValid() {
		return "-"
	}
	switch x := v.Interface().(type) {
	case time.Time:
		return r.rel(x)
	case time.Duration:
		return x.String()
	case []byte:
		return strconv.Quote(string(x))
	case model.ExecutionID:
		if name, ok := r.ids[x]; ok {
			return name
		}
		return x.String()
	case *model.ClaimResult:
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("{%s lease=%v epoch=%d worker=%s attempt=#%d %v %v resumed=%v retries=%d/%d expires=%s timeout=%s}",
			r.fmtValue(reflect.ValueOf(x.ID)), x.Lease.ID, x.Lease.Epoch, x.Lease.WorkerInstanceID,
			x.AttemptIndex, x.AttemptID, x.AttemptType, x.Resumed, x.RetryCount, x.MaxRetries,
			r.rel(x.Lease.ExpiresAt), r.rel(x.TimeoutAt))
	case fmt.Stringer:
		if v.Kind() != reflect.Pointer && v.Kind() != reflect.Struct {
			return x.String()
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "-"
		}
		return r.fmtValue(v.Elem())
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = r.fmtValue(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.Struct:
		var parts []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || v.Field(i).IsZero() {
				continue
			}
			parts = append(parts, f.Name+"="+r.fmtValue(v.Field(i)))
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(v.Interface())
}

// observe reads everything the transcript prints of one execution and
// returns it as a block of lines.
func (r *transcriptRun) observe(name string) string {
	x := r.execs[name]
	ctx, id := r.ctx, x.id
	snap, err := r.s.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	if err != nil {
		x.snap, x.inv = nil, nil
		return name + ": " + r.fmtErr(err) + "\n"
	}
	must := func(err error) {
		if err != nil {
			r.t.Fatalf("%s: %v", name, err)
		}
	}
	idx, err := r.s.ExecutionIndexes(ctx, &model.ExecutionIndexesParams{ID: id})
	must(err)
	atts, err := r.s.AttemptList(ctx, &model.AttemptListParams{ID: id})
	must(err)
	hist, err := r.s.LeaseHistory(ctx, &model.LeaseHistoryParams{ID: id, Limit: model.MaxPageSize})
	must(err)
	result, err := r.s.ExecutionResult(ctx, &model.ExecutionResultParams{ID: id})
	hasResult := err == nil
	if err != nil && !errors.Is(err, model.ErrResultNotFound) {
		must(err)
	}
	x.snap = snap
	x.inv = &invariant.Exec{ID: id, Snapshot: snap, Indexes: idx.Indexes, Attempts: atts.Attempts, History: hist.Events, HasResult: &hasResult}

	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, "  "+format+"\n", args...) }
	b.WriteString(name + ":\n")
	v := snap.State
	detail := ""
	if v.BlockingDetail != "" {
		detail = " (" + v.BlockingDetail + ")"
	}
	line("state: %v %v %v %v%s %v %v", v.LifecyclePhase, v.OwnershipState, v.EligibilityState,
		v.BlockingReason, detail, v.TerminalOutcome, v.AttemptState)
	line("public: %v", snap.PublicState)
	line("counts: attempts=%d retries=%d reclaims=%d replays=%d epoch=%d priority=%d",
		snap.TotalAttempts, snap.RetryCount, snap.ReclaimCount, snap.ReplayCount, snap.LeaseEpoch, snap.Priority)
	line("times: transition=%s mutation=%s", r.rel(snap.LastTransitionAt), r.rel(snap.LastMutationAt))
	if !snap.DelayUntil.IsZero() {
		line("delay_until: %s", r.rel(snap.DelayUntil))
	}
	if !snap.TerminalAt.IsZero() {
		line("terminal_at: %s", r.rel(snap.TerminalAt))
	}
	if p := snap.Pending; p != nil {
		line("pending: %v after #%d reason=%q", p.Type, p.PreviousIndex, p.Reason)
	}
	if snap.FailureReason != "" || snap.FailureCategory != "" {
		line("failure: %s %q", snap.FailureCategory, snap.FailureReason)
	}
	if snap.CancellationReason != "" {
		line("cancelled: by %s %q", snap.CancelledBy, snap.CancellationReason)
	}
	if hasResult {
		line("result: %q", result.Result)
	}
	if c := snap.CurrentAttempt; c != nil {
		line("current attempt: #%d %v", c.Index, c.ID)
	} else {
		line("current attempt: -")
	}
	if l := snap.CurrentLease; l != nil {
		line("lease: %v epoch=%d worker=%s acquired=%s expires=%s renew_by=%s",
			l.ID, l.Epoch, l.WorkerInstanceID, r.rel(l.AcquiredAt), r.rel(l.ExpiresAt), r.rel(l.RenewBy))
	} else {
		line("lease: -")
	}
	if !snap.LeaseExpiredAt.IsZero() {
		line("lease_expired_at: %s", r.rel(snap.LeaseExpiredAt))
	}
	if !snap.LeaseRevokedAt.IsZero() {
		line("lease_revoked_at: %s reason=%q", r.rel(snap.LeaseRevokedAt), snap.RevokeReason)
	}
	if g := snap.Grant; g != nil {
		line("grant: %v worker=%s expires=%s", g.Kind, g.WorkerInstanceID, r.rel(g.ExpiresAt))
	}
	if !snap.Flow.IsZero() {
		line("flow: %v", snap.Flow)
	}
	line("indexes: %s", strings.Join(idx.Indexes, " "))
	r.observeSuspend(x, line)
	if len(atts.Attempts) > 0 {
		line("attempts:")
	}
	for _, at := range atts.Attempts {
		s := fmt.Sprintf("#%d %v %v %v epoch=%d lease=%v worker=%s started=%s",
			at.Index, at.ID, at.Type, at.Status, at.LeaseEpoch, at.LeaseID, at.WorkerInstanceID, r.rel(at.StartedAt))
		if !at.EndedAt.IsZero() {
			s += " ended=" + r.rel(at.EndedAt)
		}
		if at.FailureCategory != "" || at.FailureReason != "" {
			s += fmt.Sprintf(" failure=%s %q", at.FailureCategory, at.FailureReason)
		}
		line("  %s", s)
	}
	if len(hist.Events) > 0 {
		line("history:")
	}
	for _, ev := range hist.Events {
		s := fmt.Sprintf("%d %v %v epoch=%d #%d worker=%s at=%s", ev.Seq, ev.Kind, ev.LeaseID, ev.LeaseEpoch,
			ev.AttemptIndex, ev.WorkerInstanceID, r.rel(ev.At))
		if ev.Reason != "" {
			s += " reason=" + ev.Reason
		}
		line("  %s", s)
	}
	return b.String()
}
