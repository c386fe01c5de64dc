package valkeystore

import (
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// libFile holds the helpers concatenated in front of every script.
const libFile = "lua/lib.lua"

// script is one Lua script: its file, and the names of its KEYS and ARGV in
// order. The names are declared here once; the script's header declares them
// too, and a test checks that the two agree. Call sites pass keys and
// arguments by name; run orders them.
type script struct {
	name string
	keys []string
	args []string
	// readOnly scripts run with EVALSHA_RO/EVAL_RO: the server refuses
	// writes in them and the client may retry them after a connection
	// failure.
	readOnly bool
	lua      *valkey.Lua
}

// allScripts lists every script, for the header test and for preloading.
var allScripts []*script

// declare registers a script; keys and args are space-separated names.
func declare(name, keys, args string) *script {
	s := &script{name: name, keys: strings.Fields(keys), args: strings.Fields(args)}
	s.lua = valkey.NewLuaScript(s.source())
	allScripts = append(allScripts, s)
	return s
}

// declareRead registers a read-only script.
func declareRead(name, keys, args string) *script {
	s := &script{name: name, keys: strings.Fields(keys), args: strings.Fields(args), readOnly: true}
	s.lua = valkey.NewLuaScriptReadOnly(s.source())
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

// source is the text sent to the server: the library definitions the
// script needs, then the script, with K.<key>, A.<arg> and e.<field>
// rewritten (rewrite.go). A name it cannot rewrite panics: the store is
// not built.
func (s *script) source() string {
	body, err := recordNames(mustRead("lua/" + s.name + ".lua"))
	if err != nil {
		panic(fmt.Sprintf("valkeystore: %s: %v", s.name, err))
	}
	src, err := scriptNames(library.pick(body)+"\n-- ---- "+s.name+".lua ----\n"+body, s)
	if err != nil {
		panic(err)
	}
	return src
}

// lib is the library (generated definitions, then lib.lua's) cut into its
// top-level definitions.
type lib struct {
	defs []libDef
}

type libDef struct {
	name string
	text string
	deps []string // names of earlier definitions it mentions
}

var (
	defRE   = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	identRx = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// library is the generated definitions (record.go), then lib.lua's.
var library = parseLib(generatedLua(), mustRead(libFile))

// generatedLua is the part of the library made from Go declarations.
func generatedLua() string {
	return fmt.Sprintf("local LEASE_HISTORY = %d\n", model.DefaultLeaseHistory) + recordLua()
}

// parseLib cuts each source at every line that starts with "local "; a
// definition may use those of earlier sources.
func parseLib(srcs ...string) *lib {
	l := &lib{}
	known := make(map[string]bool)
	for _, src := range srcs {
		l.parse(src, known)
	}
	return l
}

func (l *lib) parse(src string, known map[string]bool) {
	var cur *libDef
	flush := func() {
		if cur == nil {
			return
		}
		text, err := recordNames(cur.text)
		if err != nil {
			panic(fmt.Sprintf("valkeystore: library %s: %v", cur.name, err))
		}
		cur.text = text
		for _, id := range identRx.FindAllString(stripComments(cur.text), -1) {
			if known[id] && id != cur.name && !slices.Contains(cur.deps, id) {
				cur.deps = append(cur.deps, id)
			}
		}
		known[cur.name] = true
		l.defs = append(l.defs, *cur)
	}
	for _, line := range strings.SplitAfter(src, "\n") {
		if m := defRE.FindStringSubmatch(line); m != nil {
			flush()
			cur = &libDef{name: m[1]}
		}
		if cur != nil {
			cur.text += line
		}
	}
	flush()
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

// pick returns, in library order, the definitions body uses directly or
// through other definitions.
func (l *lib) pick(body string) string {
	byName := make(map[string]*libDef, len(l.defs))
	for i := range l.defs {
		byName[l.defs[i].name] = &l.defs[i]
	}
	need := make(map[string]bool)
	var visit func(name string)
	visit = func(name string) {
		d := byName[name]
		if d == nil || need[name] {
			return
		}
		need[name] = true
		for _, dep := range d.deps {
			visit(dep)
		}
	}
	for _, id := range identRx.FindAllString(stripComments(body), -1) {
		visit(id)
	}
	var b strings.Builder
	for _, d := range l.defs {
		if need[d.name] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}

// all returns the whole library, for tests.
func (l *lib) all() string {
	var b strings.Builder
	for _, d := range l.defs {
		b.WriteString(d.text)
	}
	return b.String()
}

// The scripts, one per Store method.
var (
	scriptAttemptList = declareRead("attempt_list", "core", "")

	scriptClaimGrantIssue = declare("claim_grant_issue", "core lanes",
		"now id worker_id worker_instance_id capabilities grant_ttl")

	scriptExecutionBlock = declare("execution_block", "core lanes", "now id reason detail")

	scriptExecutionCancel = declare("execution_cancel",
		"core history lanes lease_expiry attempt_timeout deadline",
		"now id source lease_id epoch attempt_id reason")

	scriptExecutionChangePriority = declare("execution_change_priority", "core lanes", "now id priority")

	scriptExecutionClaim = declare("execution_claim",
		"core payload tags history lanes lease_expiry attempt_timeout",
		"now id capabilities worker_id worker_instance_id lease_id attempt_id lease_ttl")

	scriptExecutionClaimNext = declare("execution_claim_next",
		"lanes lease_expiry attempt_timeout",
		"now lane namespace capabilities live_capabilities scan_limit worker_id worker_instance_id lease_id attempt_id lease_ttl")

	scriptExecutionComplete = declare("execution_complete",
		"core result history lanes lease_expiry attempt_timeout deadline",
		"now id source lease_id epoch attempt_id result has_next next_lane next_namespace next_capabilities "+
			"next_live_capabilities next_scan_limit next_worker_id next_worker_instance_id next_lease_id "+
			"next_attempt_id next_lease_ttl")

	scriptExecutionCreate = declare("execution_create",
		"core payload tags idem lanes all deadline",
		"now id namespace lane kind payload priority tags required_caps retry_max retry_backoff "+
			"retry_delay_ms retry_initial_ms retry_multiplier retry_max_delay_ms max_reclaims max_replays "+
			"attempt_timeout deadline delay_until idem_key idem_ttl gc_slack")

	scriptExecutionDelay = declare("execution_delay",
		"core history lanes lease_expiry attempt_timeout",
		"now id source lease_id epoch attempt_id delay_until")

	scriptExecutionDescribe = declareRead("execution_describe", "core tags", "")

	scriptExecutionExpire = declare("execution_expire",
		"core history lanes lease_expiry attempt_timeout deadline", "now id reason")

	scriptExecutionFail = declare("execution_fail",
		"core history lanes lease_expiry attempt_timeout deadline",
		"now id source lease_id epoch attempt_id reason category retryable")

	scriptExecutionGrantAndClaim = declare("execution_grant_and_claim",
		"core payload tags history lanes lease_expiry attempt_timeout",
		"now id capabilities worker_id worker_instance_id lease_id attempt_id lease_ttl")

	scriptExecutionIndexes = declareRead("execution_indexes",
		"core lanes all lease_expiry attempt_timeout deadline", "id")

	scriptExecutionList = declareRead("execution_list", "all", "after limit")

	scriptExecutionPayload = declareRead("execution_payload", "core payload", "")

	scriptExecutionPromoteDelayed = declare("execution_promote_delayed", "core lanes", "now id lane")

	scriptExecutionReclaim = declare("execution_reclaim",
		"core payload tags history lanes lease_expiry attempt_timeout deadline",
		"now id capabilities worker_id worker_instance_id lease_id attempt_id lease_ttl")

	scriptExecutionRecover = declare("execution_recover",
		"core history lanes lease_expiry attempt_timeout deadline", "now id")

	scriptExecutionReplay = declare("execution_replay", "core result history lanes deadline",
		"now id reason requested_by")

	scriptExecutionResult = declareRead("execution_result", "core result", "")

	scriptExecutionUnblock = declare("execution_unblock", "core lanes", "now id expected_reason")

	scriptExecutionUpdateProgress = declare("execution_update_progress", "core",
		"now id lease_id epoch attempt_id percent message")

	scriptIndexScanDue = declareRead("index_scan_due", "lanes lease_expiry attempt_timeout deadline",
		"now index after_due after_id limit")

	scriptPartitionDue = declareRead("partition_due", "lanes all lease_expiry attempt_timeout deadline", "")

	scriptLeaseHistory = declareRead("lease_history", "core history", "after limit")

	scriptLeaseMarkExpired = declare("lease_mark_expired", "core history lanes lease_expiry", "now id")

	scriptLeaseRenew = declare("lease_renew", "core lease_expiry", "now id lease_id epoch attempt_id lease_ttl")

	scriptLeaseRevoke = declare("lease_revoke", "core history lanes lease_expiry",
		"now id expected_lease_id reason")

	scriptReclaimGrantIssue = declare("reclaim_grant_issue", "core",
		"now id worker_id worker_instance_id capabilities grant_ttl")

	scriptRouteUnblock = declare("route_unblock", "lanes", "now namespace live all limit")

	scriptWorkerDeregister = declare("worker_deregister", "worker workers", "now worker_instance_id session_id")

	scriptWorkerExpire = declare("worker_expire", "workers", "now limit")

	scriptWorkerHeartbeat = declare("worker_heartbeat", "worker", "now worker_instance_id session_id ttl gc_slack")

	scriptWorkerList = declareRead("worker_list", "workers", "now")

	scriptWorkerRegister = declare("worker_register", "worker workers",
		"now worker_id worker_instance_id session_id lanes capabilities ttl gc_slack")
)
