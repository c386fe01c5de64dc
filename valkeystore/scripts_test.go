package valkeystore

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// TestScriptFiles checks that every lua/*.lua file is a declared script and
// every declared script has its file, and that every script reads its
// declared names and nothing else through the prelude.
func TestScriptFiles(t *testing.T) {
	declared := make(map[string]*script)
	for _, s := range allScripts {
		if declared[s.name] != nil {
			t.Errorf("%s declared twice", s.name)
		}
		declared[s.name] = s
	}
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]bool)
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		seen[name] = true
		s := declared[name]
		if s == nil {
			t.Errorf("%s has no Go declaration", f)
			continue
		}
		keys, args, err := parseHeader(mustRead(f))
		// the automatic arguments its helpers read come after the header's
		if err != nil || !slices.Equal(keys, s.keys) || !slices.Equal(append(args, s.added...), s.args) {
			t.Errorf("%s: script has keys %v and args %v, its header %v %v (%v)", f, s.keys, s.args, keys, args, err)
		}
		for _, a := range s.added {
			if !slices.Contains(autoArgs, a) {
				t.Errorf("%s: added argument %s is not automatic", f, a)
			}
		}
		// the prelude binds K_<key> to KEYS[<its place in the header>]
		for i, k := range s.keys {
			if strings.Contains(s.src, "K_"+k+",") || strings.Contains(s.src, "K_"+k+" =") {
				if !strings.Contains(strings.SplitN(s.src, "\n", 3)[0]+strings.SplitN(s.src, "\n", 3)[1],
					fmt.Sprintf("KEYS[%d]", i+1)) {
					t.Errorf("%s: the prelude does not read %s from KEYS[%d]", f, k, i+1)
				}
			}
		}
	}
	for name := range declared {
		if !seen[name] {
			t.Errorf("%s is declared but lua/%s.lua does not exist", name, name)
		}
	}
	libFiles, err := fs.Glob(luaFiles, "lua/lib/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, topic := range libTopics {
		want = append(want, "lua/lib/"+topic+".lua")
	}
	slices.Sort(want)
	if !slices.Equal(libFiles, want) {
		t.Errorf("lua/lib holds %v, libTopics lists %v", libFiles, want)
	}
}

// TestHeaderParser checks the parser on edge cases.
func TestHeaderParser(t *testing.T) {
	keys, args, err := parseHeader("-- x: doc\n-- KEYS: a b\n--   ARGV:   c\n\nlocal x = 1\n-- KEYS: late\n")
	if err != nil || !slices.Equal(keys, []string{"a", "b"}) || !slices.Equal(args, []string{"c"}) {
		t.Fatalf("parse = %v %v %v", keys, args, err)
	}
	keys, args, err = parseHeader("-- KEYS: a\n-- ARGV:\n")
	if err != nil || len(keys) != 1 || len(args) != 0 {
		t.Fatalf("empty ARGV: %v %v %v", keys, args, err)
	}
	for _, bad := range []string{
		"-- KEYS: a\n",                        // no ARGV line
		"-- KEYS: a\n-- KEYS: b\n-- ARGV:\n",  // two KEYS lines
		"-- KEYS:\n-- ARGV: x\n",              // no keys
		"-- KEYS: a a\n-- ARGV:\n",            // a key twice
		"-- KEYS: a\n-- ARGV: x end\n",        // a keyword
		"-- KEYS: a-b\n-- ARGV:\n",            // not an identifier
		"local x = 1\n-- KEYS: a\n-- ARGV:\n", // after the code
	} {
		if _, _, err := parseHeader(bad); err == nil {
			t.Errorf("parseHeader(%q) accepted", bad)
		}
	}
}

// TestAssembleChecks checks that a script reading a name its header does
// not declare, or reading KEYS/ARGV or K/A directly, is not built.
func TestAssembleChecks(t *testing.T) {
	const head = "-- KEYS: core lanes\n-- ARGV: now id\n"
	for _, tc := range []struct{ body, want string }{
		{"return K_tags", "x.lua:4: K_tags: the header declares no key tags"},
		{"local x = 1\nreturn A_limit", "x.lua:5: A_limit: the header declares no argument limit"},
		{"return KEYS[1]", "x.lua:4: KEYS: keys and arguments are read as"},
		{"return K.core", "x.lua:4: K: keys and arguments are read as"},
		// a helper using a key the script does not declare (release_lease
		// uses K_lease_expiry)
		{"release_lease(the_exec(), 1, 'x', 'y')", "lua/lib/index.lua:"},
		{"return e.no_such_field", "x.lua: line 4: e.no_such_field is not a record field"},
	} {
		_, err := assemble("x", "x.lua", head+"\n"+tc.body+"\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.body, err, tc.want)
		}
	}
	s, err := assemble("x", "x.lua", head+"\nreturn { K_lanes, A_id, 'K_core', A_id } -- A_now\n")
	if err != nil {
		t.Fatal(err)
	}
	// only the names used are bound, from their places in the header
	if want := "local K_lanes = KEYS[2]\nlocal A_id = ARGV[2]\n"; !strings.HasPrefix(s.src, want) {
		t.Errorf("prelude:\n%s\nwant:\n%s", s.src, want)
	}
}

// TestScriptSourcesCompile runs every script's source, and the whole
// library, through the server's compiler (miniredis) via SCRIPT LOAD.
func TestScriptSourcesCompile(t *testing.T) {
	c := miniredisClient(t)
	if err := c.Do(bg, c.B().ScriptLoad().Script(library.all()).Build()).Error(); err != nil {
		t.Errorf("library: %v", err)
	}
	for _, s := range allScripts {
		if err := c.Do(bg, c.B().ScriptLoad().Script(s.src).Build()).Error(); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// TestLibrarySplit checks that cutting the generated definitions and the
// topic files into definitions loses nothing but each file's leading
// comment, that each definition knows its file and line, and that every
// script includes the definition of each library name it uses.
func TestLibrarySplit(t *testing.T) {
	files := map[string]string{generatedFile: generatedLua()}
	for _, topic := range libTopics {
		f := "lua/lib/" + topic + ".lua"
		files[f] = mustRead(f)
	}
	byFile := make(map[string]string)
	for _, d := range library.defs {
		src := files[d.file]
		lines := strings.SplitAfter(src, "\n")
		n := strings.Count(d.text, "\n")
		orig := strings.Join(lines[d.line-1:d.line-1+n], "")
		if rw, err := recordNames(orig); err != nil || rw != d.text {
			t.Errorf("%s:%d: %s is not its source's text: %v", d.file, d.line, d.name, err)
		}
		byFile[d.file] += orig
	}
	for f, src := range files {
		head, ok := strings.CutSuffix(src, byFile[f])
		if !ok {
			t.Errorf("%s: its definitions are not the tail of the file", f)
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(head), "\n") {
			if line != "" && !strings.HasPrefix(line, "--") {
				t.Errorf("%s: code before the first definition: %q", f, line)
			}
		}
	}
	for _, s := range allScripts {
		defined := make(map[string]bool)
		for _, line := range strings.Split(s.src, "\n") {
			if m := defRE.FindStringSubmatch(line); m != nil {
				defined[m[1]] = true
			}
		}
		luaNameRefs(s.src, func(n string, line int) {
			if _, lib := library.byName[n]; lib && !defined[n] {
				t.Errorf("%s:%d uses %s without its definition", s.name, line, n)
			}
		})
	}
}

// picked returns the names of the library definitions s includes.
func picked(s *script) []string {
	var out []string
	for _, line := range strings.Split(s.src, "\n") {
		if m := defRE.FindStringSubmatch(line); m != nil {
			if _, lib := library.byName[m[1]]; lib {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// TestHelperPicking pins which helpers a few scripts include: the ones they
// use, directly or through other helpers, in library order; a helper's
// name in a string, a comment or after "." pulls in nothing.
func TestHelperPicking(t *testing.T) {
	for _, tc := range []struct {
		s    *script
		want string
	}{
		// 'claim' (the grant kind) is a string: claim, set_state,
		// add_history... stay out
		{scriptClaimGrantIssue, "REC_VERSION REC_NUM_FMT REC_COLD_FMT rec_blank rec_blank_cold rec_upgrade public_state S N " +
			"ks_cache ks lane_key exec_keys load_exec rec_cold counts_key count_field count_by count_add count_held lane_relist stream_fence save_exec now_ms fail the_exec grant_live split_csv " +
			"missing_caps"},
		{scriptWorkerList, "N now_ms enc ok hash_to_table worker_key worker_load worker_alive"},
		{scriptExecutionPayload, "fail"},
		// BLOCKED_NAMES is generated (index_lua.go), so it comes first
		{scriptExecutionIndexes, "REC_VERSION rec_blank rec_blank_cold rec_upgrade BLOCKED_NAMES public_state ks_cache ks lane_key " +
			"exec_keys load_exec the_exec"},
	} {
		if got := strings.Join(picked(tc.s), " "); got != tc.want {
			t.Errorf("%s picks\n %s\nwant\n %s", tc.s.name, got, tc.want)
		}
	}
	src := "-- KEYS: core\n-- ARGV:\n" + `
-- claim(e) in a comment, and --[[ terminate(e) ]] in a long one
local t = { 'claim', "fail", [[block(e)]], [==[unblock]==] }
t.ok = t.enc
return t:vector()
`
	s, err := assemble("x", "x.lua", src)
	if err != nil {
		t.Fatal(err)
	}
	if got := picked(s); len(got) != 0 {
		t.Errorf("strings, comments and fields picked %v", got)
	}
	s, err = assemble("x", "x.lua", "-- KEYS: core\n-- ARGV:\nreturn ok({ 'fail' })\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(picked(s), " "); got != "enc ok" {
		t.Errorf("ok picks %s, want enc ok", got)
	}
}

// TestTokenizer checks the tokenizer on Lua's lexical corners.
func TestTokenizer(t *testing.T) {
	src := "a..b...c.d:e 'x\\'y' \"q\" --[=[ c\n]=] [[s\n]] 1.5e+3 0x1F x>=y ~= --z\nf"
	var names []string
	luaNameRefs(src, func(n string, _ int) { names = append(names, n) })
	if want := []string{"a", "b", "c", "x", "y", "f"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	var b strings.Builder
	lines := 0
	for _, tok := range luaTokens(src) {
		b.WriteString(tok.text)
		if tok.text == "f" {
			lines = tok.line
		}
	}
	if b.String() != src || lines != 4 {
		t.Errorf("tokens rebuild %q (f on line %d), want the source and line 4", b.String(), lines)
	}
}

// TestSourceError checks the translation of a server error's positions to
// source positions, with a record field's name for "field '?'".
func TestSourceError(t *testing.T) {
	s := scriptExecutionComplete
	line := func(file, text string) (int, int) { // the source line of text, and its assembled line
		src := strings.Split(mustRead(file), "\n")
		i := slices.IndexFunc(src, func(l string) bool { return strings.Contains(l, text) })
		if i < 0 {
			t.Fatalf("%s lacks %q", file, text)
		}
		j := slices.Index(s.lines, srcLine{file, i + 1})
		if j < 0 {
			t.Fatalf("%s:%d is not in %s", file, i+1, s.name)
		}
		return i + 1, j + 1
	}
	src, at := line("lua/lib/state.lua", "e.last_transition_at = now")
	base := errors.New("boom")
	for _, tc := range []struct{ in, want string }{
		{fmt.Sprintf("ERR user_script:%d: attempt to perform arithmetic on field '?' (a nil value) script: abc, on @user_script:%d.", at, at),
			fmt.Sprintf("ERR lua/lib/state.lua:%d: attempt to perform arithmetic on field 'e.last_transition_at' (a nil value) script: abc, on @lua/lib/state.lua:%d.", src, src)},
		{fmt.Sprintf("Error compiling script (new function): :%d: cannot perform add operation between nil and number stack traceback:  :%d: in main chunk", at, at),
			fmt.Sprintf("Error compiling script (new function): lua/lib/state.lua:%d: cannot perform add operation between nil and number stack traceback:  lua/lib/state.lua:%d: in main chunk", src, src)},
		{"ERR at 10:30: 99999:1 x", "ERR at 10:30: 99999:1 x"},
		{"ERR unknown command", "ERR unknown command"},
	} {
		err := s.sourceError(fmt.Errorf("%s%w", tc.in, base))
		if got := strings.TrimSuffix(err.Error(), "boom"); got != tc.want {
			t.Errorf("sourceError(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
		if !errors.Is(err, base) {
			t.Errorf("%q lost the server's error", tc.in)
		}
	}
	// a line naming several fields names them all
	src, at = line("lua/lib/state.lua", "e.lifecycle_phase, e.ownership_state, e.eligibility_state = lp, os, es")
	got := s.sourceError(fmt.Errorf("ERR user_script:%d: attempt to index field '?' (a nil value)", at)).Error()
	if want := fmt.Sprintf("ERR lua/lib/state.lua:%d: attempt to index field 'e.lifecycle_phase' or 'e.ownership_state' or 'e.eligibility_state' (a nil value)", src); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// the script's own lines and the prelude
	src, at = line("lua/execution_complete.lua", "local f = fence_arg()")
	got = s.sourceError(fmt.Errorf("ERR user_script:%d: x", at)).Error()
	if want := fmt.Sprintf("ERR lua/execution_complete.lua:%d: x", src); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := s.sourceError(errors.New("ERR user_script:1: x")).Error(); got != "ERR <prelude>:1: x" {
		t.Errorf("prelude line: %s", got)
	}
}

// TestRuntimeErrorNamesSource breaks a stored record (its numbers cut to
// the layout version) so that claiming it fails in a library helper: the
// error names the helper's source file and line, and on Redis and Valkey
// (whose message says "field '?'") the record field.
func TestRuntimeErrorNamesSource(t *testing.T) {
	lines := strings.Split(mustRead("lua/lib/claim.lua"), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "e.epoch = e.epoch + 1") }) + 1
	if at == 0 {
		t.Fatal("lua/lib/claim.lua lacks the line this test breaks")
	}
	want := fmt.Sprintf("lua/lib/claim.lua:%d:", at)
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		s := newStoreWith(t, c, nil)
		var sq seq
		id := sq.exec(1)
		if _, err := s.ExecutionCreate(bg, createP(id, t0)); err != nil {
			t.Fatal(err)
		}
		core := s.keys.execKeys(id)["core"]
		if err := c.Do(bg, c.B().Hset().Key(core).FieldValue().FieldValue("n", fmt.Sprintf("[%d]", recordVersion)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		_, err := s.ExecutionGrantAndClaim(bg, &model.ExecutionGrantAndClaimParams{ID: id, LeaseRequest: sq.req("wi1", time.Minute), Now: t0})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want one naming %s", err, want)
		}
		if strings.Contains(err.Error(), "user_script") || strings.Contains(err.Error(), "field '?'") {
			t.Errorf("err = %v, still names the assembled script", err)
		}
		if b.name != "miniredis" && !strings.Contains(err.Error(), "field 'e.epoch'") {
			t.Errorf("err = %v, want it to name field 'e.epoch'", err)
		}
		t.Log(err)
	})
}

// TestEndingScriptsSettleFlows: terminate lists what it ended and
// flow_settle resolves the flow edges of those members, so every script
// that can end an execution must call flow_settle after saving it (a
// script that forgot would leave a flow's downstreams waiting). The
// scripts that only reach terminate through the flow kit's skips
// (add member, stage) end nothing.
func TestEndingScriptsSettleFlows(t *testing.T) {
	// endsExecutions: some part of the script other than the definitions
	// of terminate and cancel_exec and the flow kit (whose skips and
	// sibling cancels flow_settle drains) calls one of them.
	endsExecutions := func(src string) bool {
		for _, def := range strings.Split(src, "\nlocal ") {
			if strings.HasPrefix(def, "function terminate(") || strings.HasPrefix(def, "function cancel_exec(") ||
				strings.HasPrefix(def, "function flow_kit(") {
				continue
			}
			if strings.Contains(def, "terminate(") || strings.Contains(def, "cancel_exec(") {
				return true
			}
		}
		return false
	}
	n := 0
	for _, sc := range allScripts {
		if !endsExecutions(sc.src) {
			continue
		}
		n++
		body := mustRead("lua/" + sc.name + ".lua")
		if sc.name == "flow_cancel" {
			continue // what it cancels resolves nothing, by contract (model.FlowCancelParams)
		}
		if !strings.Contains(body, "flow_settle(now)") {
			t.Errorf("lua/%s.lua can end an execution (it includes terminate) but never calls flow_settle(now)", sc.name)
		}
	}
	if n < 6 {
		t.Fatalf("only %d scripts include terminate; the check looks at the wrong text", n)
	}
}

// TestAutomaticArguments: a script whose helpers read an automatic
// argument (autoArgs) takes it after its header's without declaring it,
// once, or where its header declares it; its own text must declare it to
// read it; run fills it in from the store unless the call site passes it,
// and still refuses an argument that is neither declared nor automatic.
func TestAutomaticArguments(t *testing.T) {
	// the scripts that end attempts or write the lease history read feeds
	// through terminate and add_history; reads and creates do not
	for _, sc := range []*script{scriptExecutionComplete, scriptExecutionClaimNext, scriptLeaseRenew, scriptExecutionFail} {
		if !slices.Equal(sc.added, []string{"feeds"}) || sc.args[len(sc.args)-1] != "feeds" {
			t.Errorf("%s: args %v (added %v), want feeds last", sc.name, sc.args, sc.added)
		}
		if want := fmt.Sprintf("A_feeds = ARGV[%d]", len(sc.args)); !strings.Contains(strings.SplitN(sc.src, "\n", 3)[1], "A_feeds") ||
			!strings.Contains(prelude("A_", "ARGV", sc.args, map[string]bool{"feeds": true}), want) {
			t.Errorf("%s: the prelude does not bind A_feeds to ARGV[%d]:\n%s", sc.name, len(sc.args), strings.SplitN(sc.src, "\n", 3)[1])
		}
	}
	for _, sc := range []*script{scriptExecutionCreate, scriptExecutionDescribe, scriptFeedRead, scriptStreamRead} {
		if len(sc.added) != 0 || slices.Contains(sc.args, "feeds") {
			t.Errorf("%s: args %v (added %v), want no feeds", sc.name, sc.args, sc.added)
		}
	}

	// a helper reading it adds it once, after the header's arguments
	s, err := assemble("x", "x.lua", "-- KEYS: core\n-- ARGV: now id\n\nfeed_lease(the_exec(), 1, 'x', '')\nfeed_completion(the_exec(), 1, 'success')\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.args, []string{"now", "id", "feeds"}) || !slices.Equal(s.added, []string{"feeds"}) {
		t.Errorf("args %v added %v, want [now id feeds] [feeds]", s.args, s.added)
	}
	if !strings.Contains(s.src, "local A_feeds = ARGV[3]\n") {
		t.Errorf("prelude does not bind A_feeds to ARGV[3]:\n%s", strings.SplitN(s.src, "\n", 3)[1])
	}
	// a header declaring it keeps it in place, added nothing
	s, err = assemble("x", "x.lua", "-- KEYS: core\n-- ARGV: feeds now\n\nfeed_lease(the_exec(), 1, 'x', '')\nreturn A_feeds\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.args, []string{"feeds", "now"}) || len(s.added) != 0 || !strings.Contains(s.src, "local A_feeds = ARGV[1]\n") {
		t.Errorf("declared: args %v added %v\n%s", s.args, s.added, s.src)
	}
	// the script's own text reads it only if the header declares it, even
	// when its helpers read it
	for _, body := range []string{"return A_feeds", "feed_lease(the_exec(), 1, 'x', '')\nreturn A_feeds"} {
		_, err := assemble("x", "x.lua", "-- KEYS: core\n-- ARGV: now\n\n"+body+"\n")
		if err == nil || !strings.Contains(err.Error(), "the header declares no argument feeds") {
			t.Errorf("%q: err = %v, want the header declares no argument feeds", body, err)
		}
	}

	// run: filled in from the store's option, or as passed
	c := miniredisClient(t)
	echo := func(header string) *script {
		s, err := assemble("echo", "echo.lua", "-- KEYS: lanes\n-- ARGV: "+header+"\n\nreturn { 'feeds', A_feeds }\n")
		if err != nil {
			t.Fatal(err)
		}
		s.lua = valkey.NewLuaScript(s.src)
		return s
	}
	keys := map[string]string{"lanes": "x:idx:{fp:0}:lanes"}
	for _, tc := range []struct {
		feeds model.Feeds
		want  string
	}{
		{model.Feeds{}, ""},
		{model.Feeds{Len: 7}, ""},
		{model.Feeds{Completions: true}, "c,-,10000"},
		{model.Feeds{Leases: true, Len: 5}, "-,l,5"},
		{model.Feeds{Completions: true, Leases: true, Len: model.MaxFeedLen}, "c,l,1000000"},
	} {
		st := newStoreWith(t, c, &Options{Feeds: tc.feeds})
		for _, sc := range []*script{echo("now feeds"), echo("feeds")} {
			a := args{}
			if len(sc.args) == 2 {
				a["now"] = 1
			}
			if r, err := st.run(bg, sc, keys, a); err != nil {
				t.Error(err)
			} else if got := r.str("feeds"); got != tc.want {
				t.Errorf("%+v: %v: feeds %q, want %q", tc.feeds, sc.args, got, tc.want)
			}
			a["feeds"] = "passed"
			if r, err := st.run(bg, sc, keys, a); err != nil {
				t.Error(err)
			} else if got := r.str("feeds"); got != "passed" {
				t.Errorf("%+v: passed feeds reads %q", tc.feeds, got)
			}
		}
	}
	st := newStoreWith(t, c, nil)
	for _, a := range []args{{"now": 1, "feed": "x"}, {"feeds": "x", "other": 1}, {}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("run with %v did not panic", a)
				}
			}()
			_, _ = st.run(bg, echo("now feeds"), keys, a)
		}()
	}
}

// TestFeedsOption: Options.Feeds is validated by New and reported by
// FeedEnabled.
func TestFeedsOption(t *testing.T) {
	c := miniredisClient(t)
	for _, n := range []int{-1, model.MaxFeedLen + 1} {
		_, err := New(c, &Options{Feeds: model.Feeds{Completions: true, Len: n}})
		var me *model.Error
		if !errors.As(err, &me) || me.Code != model.CodeInvalidInput || me.Field != "Options.Feeds.Len" {
			t.Errorf("Len %d: err = %v, want invalid Options.Feeds.Len", n, err)
		}
	}
	s := newStoreWith(t, c, &Options{Feeds: model.Feeds{Leases: true}})
	if s.FeedEnabled(model.FeedCompletions) || !s.FeedEnabled(model.FeedLeases) || s.FeedEnabled("other") {
		t.Error("FeedEnabled does not report the option")
	}
}
