package memstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notTopics are memstore's files with no Lua counterpart besides the
// operation files (*_ops.go); see doc.go.
var notTopics = map[string]bool{
	"doc.go": true, "store.go": true, "zset.go": true, "notify.go": true, "lease_notify.go": true,
}

var luaHelper = regexp.MustCompile(`(?m)^local function ([A-Za-z_][A-Za-z0-9_]*)`)

// helperKey is how a helper's name is compared across the languages:
// case-insensitive, underscores aside.
func helperKey(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}

// TestTopicsMirrorLua checks the rule of doc.go against
// valkeystore/lua/lib: every topic file of one side has its counterpart on
// the other, doc.go lists it, and a Go function named as a Lua helper (Go
// case, underscores aside) lives in the file of the helper's topic.
func TestTopicsMirrorLua(t *testing.T) {
	lib := filepath.Join("..", "valkeystore", "lua", "lib")
	luaFiles, err := filepath.Glob(filepath.Join(lib, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if len(luaFiles) == 0 {
		t.Skip("no valkeystore/lua/lib/*.lua")
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	topicOf := map[string]string{} // helperKey → topic
	for _, f := range luaFiles {
		topic := strings.TrimSuffix(filepath.Base(f), ".lua")
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range luaHelper.FindAllStringSubmatch(string(src), -1) {
			topicOf[helperKey(m[1])] = topic
		}
		if _, err := os.Stat(topic + ".go"); err != nil {
			t.Errorf("lua/lib/%s.lua has no memstore/%s.go", topic, topic)
		}
	}

	goFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range goFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if !strings.HasSuffix(f, "_ops.go") && !notTopics[f] {
			topic := strings.TrimSuffix(f, ".go")
			if _, err := os.Stat(filepath.Join(lib, topic+".lua")); err != nil {
				t.Errorf("memstore/%s has no lua/lib/%s.lua (a file without a Lua counterpart goes in notTopics and doc.go)", f, topic)
			}
			if !strings.Contains(string(doc), "\t"+f+" ") {
				t.Errorf("doc.go does not list %s", f)
			}
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if topic, ok := topicOf[helperKey(fd.Name.Name)]; ok && f != topic+".go" {
				t.Errorf("%s (in %s) is named as a helper of lua/lib/%s.lua: it belongs in %s.go", fd.Name.Name, f, topic, topic)
			}
		}
	}
}
