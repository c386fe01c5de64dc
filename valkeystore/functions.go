package valkeystore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// ScriptCalls says how a Store runs its scripts (Options.ScriptCalls).
type ScriptCalls string

const (
	// ScriptCallsAuto runs them as functions (FCALL) where the server has
	// FUNCTION (Redis ≥ 7, Valkey) and lets the client load a library, and
	// with EVALSHA elsewhere (miniredis, an ACL without FUNCTION).
	ScriptCallsAuto ScriptCalls = ""
	// ScriptCallsFunctions runs them as functions and fails a call when a
	// server cannot load the library.
	ScriptCallsFunctions ScriptCalls = "functions"
	// ScriptCallsEval runs them with EVALSHA (EVAL when the server lacks
	// the script).
	ScriptCallsEval ScriptCalls = "eval"
)

func (m ScriptCalls) valid() bool {
	return m == ScriptCallsAuto || m == ScriptCallsFunctions || m == ScriptCallsEval
}

// The function library holds every script as one function, so that a call
// runs only the script's own statements: with EVALSHA every call also
// defines the script's helpers again (dozens of closures per call on the
// hot path). Each script is a block of the library's main chunk:
//
//	do
//	local K_core, A_now, A_id          -- the prelude's names
//	local h1, h2, ks_cache             -- every helper definition's names
//	local begin
//	do
//	local redis, cjson, string, ...    -- the globals the scripts use
//	function h1(e) ... end             -- "local function h1" as in the EVALSHA script
//	...
//	begin = function(KEYS, ARGV, redis_, ...) <bind the prelude's names, the globals, per-call state> end
//	end
//	redis.register_function{function_name = '<name>', callback = function(KEYS, ARGV)
//	local redis, cjson, string, ... = redis, cjson, string, ... begin(KEYS, ARGV, redis, cjson, string, ...)
//	<the script's statements>
//	end[, flags = {'no-writes'}]}
//	end
//
// The helpers are defined once, when the library loads; a call binds what
// they read (the prelude's names, and the globals, which a function reaches
// through a metatable where an EVAL script reads them directly: a local is
// faster, and cjson cannot be read while the library loads) and starts the
// per-call state again (a definition that is not a function nor a literal:
// a cache, a list). The callback reads the globals as its own locals, and
// the inner block keeps the helpers' aliases out of its upvalues, which Lua
// caps at 60; the blocks keep each script's locals under Lua's 200.
// TestFunctionLibrary loads the library on a real server. Its name (and so
// every function's) is a hash of its text: processes of different versions
// sharing a server each load their own library and never run another
// version's code.
type functionLibrary struct {
	name  string
	src   string
	lines []srcLine // lines[i] is where line i+1 of src comes from
	fn    map[*script]string
}

// functionGlobals are the globals the scripts read, bound to locals by each
// call (functionLibrary).
var functionGlobals = []string{"redis", "cjson", "math", "string", "table", "error", "ipairs", "next", "pairs",
	"tonumber", "tostring", "type", "unpack"}

// functions returns the library of every declared script.
var functions = sync.OnceValue(func() *functionLibrary {
	var body strings.Builder
	var lines []srcLine
	names := make(map[*script]string, len(allScripts))
	// the names are "<library>_<script>"; the library's name is not known
	// before its text is, so the text holds a placeholder
	const placeholder = "\x00lib\x00"
	for _, s := range allScripts {
		names[s] = s.name
		chunk, cl := s.functionChunk(placeholder + "_" + s.name)
		body.WriteString(chunk)
		lines = append(lines, cl...)
	}
	sum := sha256.Sum256([]byte(body.String()))
	name := "ff_" + hex.EncodeToString(sum[:8])
	for s := range names {
		names[s] = name + "_" + s.name
	}
	src := "#!lua name=" + name + "\n" + strings.ReplaceAll(body.String(), placeholder, name)
	return &functionLibrary{name: name, src: src, lines: append([]srcLine{{"<library>", 1}}, lines...), fn: names}
})

// functionChunk returns s as a block of the function library (see
// functionLibrary) registering function fname, and its line map.
func (s *script) functionChunk(fname string) (string, []srcLine) {
	src := strings.Split(strings.TrimSuffix(s.src, "\n"), "\n")
	var b strings.Builder
	var lines []srcLine
	gen := srcLine{"<library>", 0}
	add := func(text string, at srcLine) {
		b.WriteString(text)
		b.WriteByte('\n')
		lines = append(lines, at)
	}
	add("do", gen)
	var binds []string
	i := 0
	for ; i < len(src) && s.lines[i].file == "<prelude>"; i++ {
		names, vals, ok := strings.Cut(strings.TrimPrefix(src[i], "local "), " = ")
		if !ok {
			panic("valkeystore: " + s.name + ": prelude line " + src[i])
		}
		add("local "+names, s.lines[i])
		binds = append(binds, names+" = "+vals)
	}
	helpers := i
	for i < len(src) && s.lines[i].file != "lua/"+s.name+".lua" {
		i++
	}
	if i == len(src) {
		panic("valkeystore: " + s.name + ": no statements of its own")
	}
	// the definitions' names, declared before the inner block
	var defs, state []string
	for j := helpers; j < i; j++ {
		def, ok := strings.CutPrefix(src[j], "local ")
		if !ok {
			continue
		}
		if fn, ok := strings.CutPrefix(def, "function "); ok {
			name, _, _ := strings.Cut(fn, "(")
			defs = append(defs, strings.TrimSpace(name))
			continue
		}
		if strings.Count(def, "{") != strings.Count(def, "}") || strings.Count(def, "(") != strings.Count(def, ")") {
			panic("valkeystore: " + s.name + ": a definition that is not a function must fit on one line: " + src[j])
		}
		name, val, hasVal := strings.Cut(def, " = ")
		for n := range strings.SplitSeq(name, ",") {
			defs = append(defs, strings.TrimSpace(n))
		}
		if !constantDef(def) {
			// per-call state (a cache, a list): each call starts it again
			if !hasVal {
				val = "nil"
			}
			state = append(state, name+" = "+val)
		}
	}
	if len(defs) > 0 {
		add("local "+strings.Join(defs, ", "), gen)
	}
	add("local begin", gen)
	add("do", gen)
	globals := strings.Join(functionGlobals, ", ")
	add("local "+globals, gen)
	for j := helpers; j < i; j++ {
		line := src[j]
		if def, ok := strings.CutPrefix(line, "local "); ok {
			if _, hasVal := strings.CutPrefix(def, "function "); hasVal || strings.Contains(def, " = ") {
				line = def
			} else {
				line = def + " = nil"
			}
		}
		add(line, s.lines[j])
	}
	params := make([]string, len(functionGlobals))
	for j, g := range functionGlobals {
		params[j] = g + "_"
	}
	add(fmt.Sprintf("begin = function(KEYS, ARGV, %s) %s = %s %s end", strings.Join(params, ", "), globals,
		strings.Join(params, ", "), strings.Join(append(binds, state...), " ")), gen)
	add("end", gen)
	add(fmt.Sprintf("redis.register_function{function_name = '%s', callback = function(KEYS, ARGV) local %s = %s begin(KEYS, ARGV, %s)",
		fname, globals, globals, globals), gen)
	for ; i < len(src); i++ {
		add(src[i], s.lines[i])
	}
	if s.readOnly {
		add("end, flags = {'no-writes'}}", gen)
	} else {
		add("end}", gen)
	}
	add("end", gen)
	return b.String(), lines
}

// constantDef reports whether a top-level definition ("NAME = value",
// without "local") binds a number or a string literal: the library keeps
// those; every other one (a cache, a list, a kit's helper) is per call, and
// the call runs it again (functionChunk).
func constantDef(def string) bool {
	_, val, ok := strings.Cut(def, " = ")
	if !ok || val == "" {
		return false
	}
	c := val[0]
	return c == '\'' || c == '"' || c == '-' || c >= '0' && c <= '9'
}

// scriptRunner is how a Store runs scripts, decided on first use.
type scriptRunner struct {
	mode ScriptCalls
	// mu is held while deciding and while reloading the library, so
	// calls that all found it missing load it once, not once each (a load
	// blocks the server for about 40 ms)
	mu sync.Mutex
	// use is useFunctions once the library is loaded on every node,
	// useEval when the store runs EVALSHA, 0 before the first call.
	use atomic.Int32
}

const (
	useFunctions = 1
	useEval      = 2
)

// ErrFunctionsUnsupported is the error of every call of a store with
// ScriptCallsFunctions on a server without FUNCTION (miniredis, Redis < 7)
// or whose ACL denies the client FUNCTION LIST or FUNCTION LOAD.
var ErrFunctionsUnsupported = errors.New("valkeystore: the server has no FUNCTION command")

// runner returns how s runs scripts (useFunctions or useEval), loading
// the library on the first call in mode auto or functions.
func (s *Store) runner(ctx context.Context) (int32, error) {
	r := &s.scripts
	if u := r.use.Load(); u != 0 {
		return u, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.use.Load(); u != 0 {
		return u, nil
	}
	if r.mode == ScriptCallsEval {
		r.use.Store(useEval)
		return useEval, nil
	}
	err := s.loadFunctions(ctx)
	switch {
	case err == nil:
		r.use.Store(useFunctions)
	case errors.Is(err, ErrFunctionsUnsupported) && r.mode == ScriptCallsAuto:
		r.use.Store(useEval)
	default:
		return 0, err
	}
	return r.use.Load(), nil
}

// loadFunctions loads the library on every node of the client that lacks
// it (replicas get it from their primary).
func (s *Store) loadFunctions(ctx context.Context) error {
	lib := functions()
	for addr, c := range s.client.Nodes() {
		has, err := c.Do(ctx, c.B().FunctionList().Libraryname(lib.name).Build()).ToArray()
		if err != nil {
			if isUnknownCommand(err) {
				return ErrFunctionsUnsupported
			}
			return fmt.Errorf("valkeystore: function list on %s: %w", addr, err)
		}
		if len(has) > 0 {
			continue
		}
		err = c.Do(ctx, c.B().FunctionLoad().FunctionCode(lib.src).Build()).Error()
		var ve *valkey.ValkeyError
		switch {
		case err == nil:
		case errors.As(err, &ve) && (strings.Contains(ve.Error(), "already exists") || strings.HasPrefix(ve.Error(), "READONLY")):
			// another process loaded it meanwhile; or a replica, which
			// its primary's copy reaches
		case isUnknownCommand(err):
			return ErrFunctionsUnsupported
		default:
			return fmt.Errorf("valkeystore: function load on %s: %w", addr, lib.sourceError(err))
		}
	}
	return nil
}

// reloadFunctions loads the library again after a call found it missing;
// calls that wait for another's reload find it present (loadFunctions
// lists it first) and load nothing.
func (s *Store) reloadFunctions(ctx context.Context) error {
	s.scripts.mu.Lock()
	defer s.scripts.mu.Unlock()
	return s.loadFunctions(ctx)
}

// isUnknownCommand reports an error saying the server will not run FUNCTION
// for this client: it has no such command (miniredis, Redis < 7), or the
// client's ACL user may not run it (NOPERM), where EVALSHA may still be
// allowed.
func isUnknownCommand(err error) bool {
	var ve *valkey.ValkeyError
	if !errors.As(err, &ve) {
		return false
	}
	msg := ve.Error()
	return strings.Contains(strings.ToLower(msg), "unknown command") || strings.HasPrefix(msg, "NOPERM")
}

// isFunctionNotFound reports the error of an FCALL whose function the node
// lacks (a new node, a restart without persistence, FUNCTION FLUSH).
func isFunctionNotFound(err error) bool {
	var ve *valkey.ValkeyError
	return errors.As(err, &ve) && strings.Contains(ve.Error(), "Function not found")
}

// fcall is sc's FCALL (FCALL_RO when sc is read-only).
func (s *Store) fcall(sc *script, keys, args []string) valkey.Completed {
	name := functions().fn[sc]
	if sc.readOnly {
		return s.client.B().FcallRo().Function(name).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return s.client.B().Fcall().Function(name).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// exec runs sc once.
func (s *Store) exec(ctx context.Context, sc *script, keys, args []string) valkey.ValkeyResult {
	use, err := s.runner(ctx)
	if err != nil {
		return valkey.NewErrorResult(err)
	}
	if use == useEval {
		return sc.lua.Exec(ctx, s.client, keys, args)
	}
	res := s.client.Do(ctx, s.fcall(sc, keys, args))
	if isFunctionNotFound(res.Error()) {
		if err := s.reloadFunctions(ctx); err != nil {
			return valkey.NewErrorResult(err)
		}
		res = s.client.Do(ctx, s.fcall(sc, keys, args))
	}
	return res
}

// execMulti runs sc once per element of multi, pipelined.
func (s *Store) execMulti(ctx context.Context, sc *script, multi []valkey.LuaExec) []valkey.ValkeyResult {
	use, err := s.runner(ctx)
	if err != nil {
		out := make([]valkey.ValkeyResult, len(multi))
		for i := range out {
			out[i] = valkey.NewErrorResult(err)
		}
		return out
	}
	if use == useEval {
		return sc.lua.ExecMulti(ctx, s.client, multi...)
	}
	cmds := make(valkey.Commands, len(multi))
	for i, m := range multi {
		cmds[i] = s.fcall(sc, m.Keys, m.Args)
	}
	out := s.client.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range out {
		if isFunctionNotFound(r.Error()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		if err := s.reloadFunctions(ctx); err != nil {
			for _, i := range again {
				out[i] = valkey.NewErrorResult(err)
			}
			return out
		}
		retry := make(valkey.Commands, len(again))
		for j, i := range again {
			retry[j] = s.fcall(sc, multi[i].Keys, multi[i].Args)
		}
		for j, r := range s.client.DoMulti(ctx, retry...) {
			out[again[j]] = r
		}
	}
	return out
}

// sourceError is script.sourceError for the library's positions.
func (l *functionLibrary) sourceError(err error) error {
	return mapPositions(err, l.lines)
}

// sourceError translates the positions in err, an error of running sc, to
// source positions.
func (s *Store) sourceError(sc *script, err error) error {
	if s.scripts.use.Load() == useFunctions {
		return functions().sourceError(err)
	}
	return sc.sourceError(err)
}

// invalidScriptCalls is the validation error of a bad Options.ScriptCalls.
func invalidScriptCalls(m ScriptCalls) error {
	return &model.Error{Code: model.CodeInvalidInput, Field: "Options.ScriptCalls", Detail: "unknown_mode",
		Got: string(m), Want: `"" (auto), "functions" or "eval"`}
}
