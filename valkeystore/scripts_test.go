package valkeystore

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// scriptHeader is what a script's header declares.
type scriptHeader struct {
	keys, args []string
	nKeys      int // number of "-- KEYS:" lines
	nArgs      int
}

func parseHeader(src string) scriptHeader {
	var h scriptHeader
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "--") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			break // the header ends at the first line of code
		}
		body := strings.TrimSpace(strings.TrimPrefix(line, "--"))
		if rest, ok := strings.CutPrefix(body, "KEYS:"); ok {
			h.nKeys++
			h.keys = strings.Fields(rest)
		}
		if rest, ok := strings.CutPrefix(body, "ARGV:"); ok {
			h.nArgs++
			h.args = strings.Fields(rest)
		}
	}
	return h
}

var luaKeywords = []string{"and", "break", "do", "else", "elseif", "end", "false", "for", "function",
	"if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// TestScriptHeaders checks that every script's header declares its KEYS and
// ARGV once, with the names and order of the Go declaration, that every
// .lua file is declared, and that the script body uses only declared names.
func TestScriptHeaders(t *testing.T) {
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
	useRE := regexp.MustCompile(`\b([KA])\.([A-Za-z_][A-Za-z0-9_]*)`)
	for _, f := range files {
		if f == libFile {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		seen[name] = true
		s := declared[name]
		if s == nil {
			t.Errorf("%s has no Go declaration", f)
			continue
		}
		src := mustRead(f)
		h := parseHeader(src)
		if h.nKeys != 1 || h.nArgs != 1 {
			t.Errorf("%s: header has %d KEYS and %d ARGV lines, want 1 each", f, h.nKeys, h.nArgs)
			continue
		}
		if !slices.Equal(h.keys, s.keys) {
			t.Errorf("%s: header KEYS %v, Go declares %v", f, h.keys, s.keys)
		}
		if !slices.Equal(h.args, s.args) {
			t.Errorf("%s: header ARGV %v, Go declares %v", f, h.args, s.args)
		}
		for _, n := range append(slices.Clone(s.keys), s.args...) {
			if !identRE.MatchString(n) || slices.Contains(luaKeywords, n) {
				t.Errorf("%s: %q is not a Lua identifier", f, n)
			}
		}
		if len(s.keys) == 0 {
			t.Errorf("%s declares no keys: a cluster could not route it", f)
		}
		for _, m := range useRE.FindAllStringSubmatch(src, -1) {
			list := s.keys
			if m[1] == "A" {
				list = s.args
			}
			if !slices.Contains(list, m[2]) {
				t.Errorf("%s uses %s.%s, which it does not declare", f, m[1], m[2])
			}
		}
	}
	for name := range declared {
		if !seen[name] {
			t.Errorf("%s is declared but lua/%s.lua does not exist", name, name)
		}
	}
}

// TestHeaderParser checks the parser on edge cases.
func TestHeaderParser(t *testing.T) {
	h := parseHeader("-- x: doc\n-- KEYS: a b\n--   ARGV:   c\n\nlocal x = 1\n-- KEYS: late\n")
	if !slices.Equal(h.keys, []string{"a", "b"}) || !slices.Equal(h.args, []string{"c"}) || h.nKeys != 1 || h.nArgs != 1 {
		t.Fatalf("parse = %+v", h)
	}
	h = parseHeader("-- KEYS: a\n-- ARGV:\n")
	if len(h.args) != 0 || h.nArgs != 1 {
		t.Fatalf("empty ARGV: %+v", h)
	}
}

// TestScriptSourcesCompile runs every script's source, and the whole
// library, through the server's compiler (miniredis) via SCRIPT LOAD.
func TestScriptSourcesCompile(t *testing.T) {
	c := miniredisClient(t)
	all, err := scriptNames(library.all(), &script{name: "library"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Do(bg, c.B().ScriptLoad().Script(all).Build()).Error(); err != nil {
		t.Errorf("library: %v", err)
	}
	for _, s := range allScripts {
		if err := c.Do(bg, c.B().ScriptLoad().Script(s.source()).Build()).Error(); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// TestLibrarySplit checks that cutting the generated definitions and lib.lua
// into definitions loses nothing but lib.lua's leading comment, and that
// picking follows dependencies.
func TestLibrarySplit(t *testing.T) {
	gen, src := generatedLua(), mustRead(libFile)
	if library.all() != parseLib(gen).all()+parseLib(src).all() {
		t.Fatal("the library is not the generated definitions, then lib.lua's")
	}
	// definitions hold their source's text with the record names rewritten
	for _, in := range []string{gen, src} {
		rw, err := recordNames(in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(rw, parseLib(in).all()) {
			t.Fatal("library definitions are not the tail of their source")
		}
	}
	rwSrc, _ := recordNames(src)
	head := strings.TrimSuffix(rwSrc, parseLib(src).all())
	for _, line := range strings.Split(strings.TrimSpace(head), "\n") {
		if !strings.HasPrefix(line, "--") {
			t.Fatalf("code before the first definition: %q", line)
		}
	}
	got := library.pick("return ok({})")
	for _, want := range []string{"local function ok(", "local function enc("} {
		if !strings.Contains(got, want) {
			t.Errorf("pick(ok) lacks %q", want)
		}
	}
	if strings.Contains(got, "local function claim(") {
		t.Error("pick(ok) includes claim")
	}
	// every script's source mentions no library name it did not include
	for _, s := range allScripts {
		src := s.source()
		for _, d := range library.defs {
			if !strings.Contains(src, "local "+d.name) && !strings.Contains(src, "local function "+d.name) &&
				regexp.MustCompile(`\b`+d.name+`\(`).MatchString(stripComments(src)) {
				t.Errorf("%s calls %s without its definition", s.name, d.name)
			}
		}
	}
}
