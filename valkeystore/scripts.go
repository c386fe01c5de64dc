package valkeystore

import (
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

//go:embed lua/*.lua lua/lib/*.lua
var luaFiles embed.FS

// libTopics are the library's files, lua/lib/<topic>.lua, in definition
// order: a definition may use the definitions above it, in its file or in
// an earlier one.
var libTopics = []string{"keys", "record", "front", "state", "fence", "stream", "feed", "attempt", "wait", "admission", "budget",
	"quota", "index", "policy", "claim", "recovery", "worker", "create", "flow", "suspend", "retention"}

// autoArgs are the arguments the store supplies itself (Store.autoArg):
// a script whose library helpers read one (A_<name>) takes it after its
// header's arguments when the header does not declare it, and Store.run
// fills it in whenever the call site does not pass it, so the scripts
// that reach those helpers need no header line and their call sites no
// argument. A script's own text reads one only if its header declares it.
//
//   - feeds: Options.Feeds for the feed helpers (lua/lib/feed.lua), which
//     the scripts that end attempts and write the lease history reach.
var autoArgs = []string{"feeds"}

// generatedFile names the definitions made from Go declarations (record.go,
// index_lua.go) in the line map.
const generatedFile = "<generated from record.go, index_lua.go>"

// script is one Lua script, lua/<name>.lua, assembled (see doc.go). Its
// header declares the names of its KEYS and ARGV in order; call sites pass
// keys and arguments by those names, and run orders them.
type script struct {
	name string
	keys []string
	// args are the header's arguments, then the automatic ones (autoArgs)
	// its helpers read that the header does not declare (added).
	args  []string
	added []string
	// readOnly scripts run with EVALSHA_RO/EVAL_RO: the server refuses
	// writes in them and the client may retry them after a connection
	// failure.
	readOnly bool
	src      string    // the assembled text sent to the server
	lines    []srcLine // lines[i] is where line i+1 of src comes from
	lua      *valkey.Lua
}

// srcLine is a line of a source file.
type srcLine struct {
	file string
	line int
}

// allScripts lists every script, for the header test and for preloading.
var allScripts []*script

// declare registers a script. Its keys and arguments are read from the
// header of lua/<name>.lua; a script that cannot be assembled panics: the
// store is not built.
func declare(name string) *script {
	s := mustAssemble(name)
	s.lua = valkey.NewLuaScript(s.src)
	allScripts = append(allScripts, s)
	return s
}

// declareRead registers a read-only script.
func declareRead(name string) *script {
	s := mustAssemble(name)
	s.readOnly = true
	s.lua = valkey.NewLuaScriptReadOnly(s.src)
	allScripts = append(allScripts, s)
	return s
}

func mustRead(name string) string {
	b, err := luaFiles.ReadFile(name)
	if err != nil {
		panic("valkeystore: " + err.Error())
	}
	return string(b)
}

func mustAssemble(name string) *script {
	file := "lua/" + name + ".lua"
	s, err := assemble(name, file, mustRead(file))
	if err != nil {
		panic(fmt.Sprintf("valkeystore: %s: %v", file, err))
	}
	return s
}

// assemble builds the script name from its source: a prelude binding the
// header's names that the script uses, the library definitions it uses
// (directly or not) in library order, then the source, each with e.<field>
// rewritten (rewrite.go), and the line map of the result.
func assemble(name, file, src string) (*script, error) {
	s := &script{name: name}
	var err error
	if s.keys, s.args, err = parseHeader(src); err != nil {
		return nil, err
	}
	if err := s.build(file, src); err != nil {
		return nil, err
	}
	return s, nil
}

// build assembles src, the source of s read from file, into s.src and
// s.lines.
func (s *script) build(file, src string) error {
	body, err := recordNames(src)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var refs []string
	luaNameRefs(body, func(name string, _ int) { refs = append(refs, name) })
	defs := library.pick(refs)

	// the header's names the assembled script uses
	usedK, usedA := make(map[string]bool), make(map[string]bool)
	check := func(text, file string, line0 int, helper bool) error {
		var bad error
		luaNameRefs(text, func(n string, line int) {
			at := fmt.Sprintf("%s:%d", file, line0+line-1)
			switch {
			case bad != nil:
			case n == "K" || n == "A" || n == "KEYS" || n == "ARGV":
				bad = fmt.Errorf("%s: %s: keys and arguments are read as K_<key> and A_<arg>", at, n)
			case strings.HasPrefix(n, "K_"):
				if !slices.Contains(s.keys, n[2:]) {
					bad = fmt.Errorf("%s: %s: the header declares no key %s", at, n, n[2:])
				}
				usedK[n[2:]] = true
			case strings.HasPrefix(n, "A_"):
				a := n[2:]
				switch {
				case helper && slices.Contains(autoArgs, a) && !slices.Contains(s.args, a):
					// a helper's automatic argument: the script takes it
					// after its header's
					s.args = append(s.args, a)
					s.added = append(s.added, a)
				case !slices.Contains(s.args, a) || !helper && slices.Contains(s.added, a):
					bad = fmt.Errorf("%s: %s: the header declares no argument %s", at, n, a)
				}
				usedA[a] = true
			}
		})
		return bad
	}
	for _, d := range defs {
		if err := check(d.text, d.file, d.line, true); err != nil {
			return err
		}
	}
	if err := check(body, file, 1, false); err != nil {
		return err
	}

	var b strings.Builder
	add := func(text, file string, line0 int) {
		b.WriteString(text)
		for i := range strings.Count(text, "\n") {
			s.lines = append(s.lines, srcLine{file, line0 + i})
		}
	}
	add(prelude("K_", "KEYS", s.keys, usedK)+prelude("A_", "ARGV", s.args, usedA), "<prelude>", 1)
	for _, d := range defs {
		add(d.text, d.file, d.line)
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	add(body, file, 1)
	s.src = b.String()
	return nil
}

// prelude binds the used names of list to locals:
// "local K_core, K_lanes = KEYS[1], KEYS[2]\n".
func prelude(prefix, array string, list []string, used map[string]bool) string {
	var names, vals []string
	for i, n := range list {
		if used[n] {
			names = append(names, prefix+n)
			vals = append(vals, fmt.Sprintf("%s[%d]", array, i+1))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "local " + strings.Join(names, ", ") + " = " + strings.Join(vals, ", ") + "\n"
}

var headerNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

var luaKeywords = []string{"and", "break", "do", "else", "elseif", "end", "false", "for", "function",
	"if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"}

// parseHeader reads the "-- KEYS:" and "-- ARGV:" lines of the comment
// block a script starts with; each must be there once, and name distinct
// Lua identifiers. A script declares at least one key: a cluster routes it
// by its keys.
func parseHeader(src string) (keys, args []string, err error) {
	nKeys, nArgs := 0, 0
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "--") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			break // the header ends at the first line of code
		}
		body := strings.TrimSpace(strings.TrimPrefix(line, "--"))
		if rest, ok := strings.CutPrefix(body, "KEYS:"); ok {
			nKeys++
			keys = strings.Fields(rest)
		}
		if rest, ok := strings.CutPrefix(body, "ARGV:"); ok {
			nArgs++
			args = strings.Fields(rest)
		}
	}
	if nKeys != 1 || nArgs != 1 {
		return nil, nil, fmt.Errorf("the header has %d KEYS and %d ARGV lines, want 1 each", nKeys, nArgs)
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("the header declares no keys: a cluster could not route the script")
	}
	seen := make(map[string]bool)
	for _, n := range append(slices.Clone(keys), args...) {
		if !headerNameRE.MatchString(n) || slices.Contains(luaKeywords, n) {
			return nil, nil, fmt.Errorf("the header's %q is not a Lua identifier", n)
		}
	}
	for _, l := range [][]string{keys, args} {
		clear(seen)
		for _, n := range l {
			if seen[n] {
				return nil, nil, fmt.Errorf("the header declares %s twice", n)
			}
			seen[n] = true
		}
	}
	return keys, args, nil
}

// lib is the library (generated definitions, then the topic files') cut
// into its top-level definitions.
type lib struct {
	defs   []libDef
	byName map[string]int
}

type libDef struct {
	name string
	file string
	line int    // the first line of text in file
	text string // with e.<field> rewritten
	deps []int  // indexes of the earlier definitions it uses
}

var defRE = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)

// library is the generated definitions (record.go), then the topic files'.
var library = func() *lib {
	files := [][2]string{{generatedFile, generatedLua()}}
	for _, t := range libTopics {
		f := "lua/lib/" + t + ".lua"
		files = append(files, [2]string{f, mustRead(f)})
	}
	l, err := parseLib(files)
	if err != nil {
		panic("valkeystore: library: " + err.Error())
	}
	return l
}()

// generatedLua is the part of the library made from Go declarations: the
// record layout and the lane-index names (model.IndexFor).
func generatedLua() string {
	return fmt.Sprintf("local LEASE_HISTORY = %d\n", model.DefaultLeaseHistory) +
		fmt.Sprintf("local MAX_OPEN_WAITPOINTS = %d\n", model.MaxOpenWaitpoints) +
		fmt.Sprintf("local MAX_WAITPOINT_TTL = %d\n", model.MaxWaitpointTTL.Milliseconds()) +
		fmt.Sprintf("local SIGNAL_FEED_LEN = %d\n", model.SignalFeedLen) +
		fmt.Sprintf("local MAX_BUDGET_AMOUNT = %d\n", model.MaxBudgetAmount) +
		fmt.Sprintf("local BEST_EFFORT_MIN_LEN = %d\n", model.BestEffortMinLen) +
		fmt.Sprintf("local BEST_EFFORT_MAX_LEN = %d\n", model.BestEffortMaxLen) +
		fmt.Sprintf("local NOTICE_FRAME_MAX = %d\n", model.MaxNoticeFrameBytes) +
		recordLua() + indexLua() + publicStateLua()
}

// parseLib cuts each file (name, text) at every line that starts with
// "local ": a definition runs from there to the next one, and text before
// a file's first definition (its comment) is left out. A definition may
// use only those above it.
func parseLib(files [][2]string) (*lib, error) {
	l := &lib{byName: make(map[string]int)}
	for _, f := range files {
		var cur *libDef
		flush := func() {
			if cur != nil {
				l.defs = append(l.defs, *cur)
			}
		}
		for i, line := range strings.SplitAfter(f[1], "\n") {
			if m := defRE.FindStringSubmatch(line); m != nil {
				flush()
				cur = &libDef{name: m[1], file: f[0], line: i + 1}
				if _, dup := l.byName[m[1]]; dup {
					return nil, fmt.Errorf("%s:%d: %s is defined twice", f[0], i+1, m[1])
				}
				l.byName[m[1]] = len(l.defs)
			}
			if cur != nil {
				cur.text += line
			}
		}
		flush()
	}
	for i := range l.defs {
		d := &l.defs[i]
		text, err := recordNames(d.text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", d.file, d.line, d.name, err)
		}
		d.text = text
		var bad error
		luaNameRefs(d.text, func(n string, line int) {
			j, ok := l.byName[n]
			switch {
			case !ok || j == i || slices.Contains(d.deps, j):
			case j > i && bad == nil:
				bad = fmt.Errorf("%s:%d: %s uses %s, defined below it", d.file, d.line+line-1, d.name, n)
			default:
				d.deps = append(d.deps, j)
			}
		})
		if bad != nil {
			return nil, bad
		}
	}
	return l, nil
}

// pick returns, in library order, the definitions the names refs use
// directly or through other definitions.
func (l *lib) pick(refs []string) []*libDef {
	need := make([]bool, len(l.defs))
	var visit func(i int)
	visit = func(i int) {
		if need[i] {
			return
		}
		need[i] = true
		for _, j := range l.defs[i].deps {
			visit(j)
		}
	}
	for _, n := range refs {
		if i, ok := l.byName[n]; ok {
			visit(i)
		}
	}
	var out []*libDef
	for i := range l.defs {
		if need[i] {
			out = append(out, &l.defs[i])
		}
	}
	return out
}

// all returns the whole library, for tests.
func (l *lib) all() string {
	var b strings.Builder
	for _, d := range l.defs {
		b.WriteString(d.text)
	}
	return b.String()
}

// posRE finds a position in the assembled script in a server's error:
// "user_script:<line>" (Redis, Valkey; "user_function:<line>" in a
// function library) or ":<line>" (miniredis), at the
// start of the message or after a space or "@".
var posRE = regexp.MustCompile(`(^|[\s@])(?:user_script|user_function)?:(\d+)\b`)

// sourceError translates the positions in an error of the server running s
// to source positions ("lua/lib/claim.lua:<line>"), and names the record
// fields of the line where the message says "field '?'" (a record field is
// an array slot once assembled). Other errors are returned as they are.
func (s *script) sourceError(err error) error {
	return mapPositions(err, s.lines)
}

// mapPositions is sourceError with the line map of the text that ran.
func mapPositions(err error, lines []srcLine) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	first := srcLine{}
	out := posRE.ReplaceAllStringFunc(msg, func(m string) string {
		sub := posRE.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if n < 1 || n > len(lines) {
			return m
		}
		l := lines[n-1]
		if first.file == "" {
			first = l
		}
		return fmt.Sprintf("%s%s:%d", sub[1], l.file, l.line)
	})
	if out == msg {
		return err
	}
	if strings.Contains(out, "field '?'") {
		if fields := recordFieldsIn(sourceLine(first)); len(fields) > 0 {
			name := "'e." + strings.Join(fields, "' or 'e.") + "'"
			out = strings.Replace(out, "field '?'", "field "+name, 1)
		}
	}
	return &sourceErr{msg: out, err: err}
}

// sourceLine returns the text of a source line ("" for generated text).
func sourceLine(l srcLine) string {
	b, err := luaFiles.ReadFile(l.file)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	if l.line < 1 || l.line > len(lines) {
		return ""
	}
	return lines[l.line-1]
}

// sourceErr is a server's error with source positions.
type sourceErr struct {
	msg string
	err error
}

func (e *sourceErr) Error() string { return e.msg }
func (e *sourceErr) Unwrap() error { return e.err }

// The scripts, one per Store method.
var (
	scriptAttemptList = declareRead("attempt_list")

	scriptClaimGrantIssue = declare("claim_grant_issue")

	scriptExecutionBlock = declare("execution_block")

	scriptExecutionCancel = declare("execution_cancel")

	scriptExecutionChangePriority = declare("execution_change_priority")

	scriptExecutionClaim = declare("execution_claim")

	scriptExecutionClaimNext = declare("execution_claim_next")

	scriptExecutionComplete = declare("execution_complete")

	scriptExecutionCreate = declare("execution_create")

	scriptExecutionDelay = declare("execution_delay")

	scriptExecutionDelete = declare("execution_delete")
	scriptFlowDelete      = declare("flow_delete")

	scriptExecutionDescribe = declareRead("execution_describe")

	scriptExecutionExpire = declare("execution_expire")

	scriptExecutionFail = declare("execution_fail")

	scriptExecutionGrantAndClaim = declare("execution_grant_and_claim")

	scriptExecutionIndexes = declareRead("execution_indexes")

	scriptExecutionList = declareRead("execution_list")

	scriptExecutionPayload = declareRead("execution_payload")

	scriptExecutionPromoteDelayed = declare("execution_promote_delayed")

	scriptExecutionReclaim = declare("execution_reclaim")

	scriptExecutionRecover = declare("execution_recover")

	scriptExecutionReplay = declare("execution_replay")

	scriptExecutionResult = declareRead("execution_result")

	scriptExecutionTagsSet = declare("execution_tags_set")

	scriptExecutionUnblock = declare("execution_unblock")

	scriptExecutionUpdateProgress = declare("execution_update_progress")

	scriptIndexScanDue = declareRead("index_scan_due")

	scriptPartitionDue = declareRead("partition_due")

	scriptLeaseHistory = declareRead("lease_history")

	scriptLeaseMarkExpired = declare("lease_mark_expired")

	scriptLeaseRenew = declare("lease_renew")

	scriptLeaseRevoke = declare("lease_revoke")

	scriptReclaimGrantIssue = declare("reclaim_grant_issue")

	scriptRouteUnblock = declare("route_unblock")

	scriptWorkerDeregister = declare("worker_deregister")

	scriptWorkerExpire = declare("worker_expire")

	scriptWorkerHeartbeat = declare("worker_heartbeat")

	scriptWorkerList = declareRead("worker_list")

	scriptWorkerRegister = declare("worker_register")

	scriptFlowCreate             = declare("flow_create")
	scriptFlowAddMember          = declare("flow_add_member")
	scriptFlowEdgeStage          = declare("flow_edge_stage")
	scriptFlowEdgeGroupSet       = declare("flow_edge_group_set")
	scriptFlowSeal               = declare("flow_seal")
	scriptFlowCancel             = declare("flow_cancel")
	scriptExecutionAwaitChildren = declare("execution_await_children")
	scriptFlowDescribe           = declareRead("flow_describe")
	scriptFlowList               = declareRead("flow_list")
	scriptFlowMemberList         = declareRead("flow_member_list")
	scriptFlowEdgeDescribe       = declareRead("flow_edge_describe")
	scriptFlowEdgeGroupDescribe  = declareRead("flow_edge_group_describe")
	scriptFlowEdgeList           = declareRead("flow_edge_list")
	scriptFlowTagsSet            = declare("flow_tags_set")

	scriptWaitpointCreate    = declare("waitpoint_create")
	scriptExecutionSuspend   = declare("execution_suspend")
	scriptSignalDeliver      = declare("signal_deliver")
	scriptExecutionResume    = declare("execution_resume")
	scriptSuspensionExpire   = declare("suspension_expire")
	scriptWaitpointExpire    = declare("waitpoint_expire")
	scriptSuspensionDescribe = declareRead("suspension_describe")
	scriptWaitpointList      = declareRead("waitpoint_list")
	scriptSuspendedList      = declareRead("suspended_list")
	scriptSignalFeed         = declareRead("signal_feed")

	scriptBudgetCreate    = declare("budget_create")
	scriptBudgetReport    = declare("budget_report")
	scriptBudgetRelease   = declare("budget_release")
	scriptBudgetReset     = declare("budget_reset")
	scriptBudgetResetDue  = declare("budget_reset_due")
	scriptBudgetReconcile = declare("budget_reconcile")
	scriptBudgetStatus    = declareRead("budget_status")

	scriptQuotaCreate    = declare("quota_create")
	scriptQuotaAdmit     = declare("quota_admit")
	scriptQuotaRelease   = declare("quota_release")
	scriptQuotaStatus    = declareRead("quota_status")
	scriptQuotaReconcile = declare("quota_reconcile")

	scriptAdmissionBlocked    = declareRead("admission_blocked")
	scriptAdmissionUnblock    = declare("admission_unblock")
	scriptQuotaReleasePending = declareRead("quota_release_pending")
	scriptQuotaReleaseAck     = declare("quota_release_ack")

	scriptFeedRead = declareRead("feed_read")

	scriptLanePause  = declare("lane_pause")
	scriptLaneResume = declare("lane_resume")
	scriptLaneState  = declareRead("lane_state")

	scriptStreamAppend  = declare("stream_append")
	scriptStreamRead    = declareRead("stream_read")
	scriptStreamSummary = declareRead("stream_summary")
)
