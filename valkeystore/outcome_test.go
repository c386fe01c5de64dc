package valkeystore

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// luaSources reads every embedded Lua file by base name.
func luaSources(t *testing.T) map[string]string {
	t.Helper()
	srcs := make(map[string]string)
	err := fs.WalkDir(luaFiles, "lua", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".lua") {
			return err
		}
		b, err := luaFiles.ReadFile(p)
		srcs[strings.TrimSuffix(path.Base(p), ".lua")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}

// luaFunction returns the text of the top-level Lua function name, from
// whichever file defines it.
func luaFunction(t *testing.T, srcs map[string]string, name string) string {
	t.Helper()
	head := "local function " + name + "("
	for _, src := range srcs {
		if i := strings.Index(src, head); i >= 0 {
			body := src[i:]
			if j := strings.Index(body, "\nend\n"); j >= 0 {
				body = body[:j]
			}
			return body
		}
	}
	t.Fatalf("no Lua file defines %s", name)
	return ""
}

// Every outcome string a script can return decodes to a model outcome,
// and every model outcome is one a script returns: the decoding in the
// *_ops.go files (enum with model.Parse*Outcome) and the Lua agree. A
// string the table misses would make the call fail with ErrCorrupt.
func TestLuaOutcomesMap(t *testing.T) {
	t.Parallel()
	srcs := luaSources(t)
	literal := func(re, src string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(src, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	// In the scripts, an outcome is the value of the reply's "status"
	// field ('status', 'x'), or goes through a local helper or variable
	// named status (status('x'), status = 'x').
	const statusRE = `(?:'status',\s*|\bstatus\(|\bstatus = )'([a-z_]+)'`
	cases := []struct {
		script string
		found  []string // the outcomes the Lua returns
		names  []string // the model's wire names, in value order
	}{
		{"execution_expire", literal(statusRE, srcs["execution_expire"]), wireNames[model.ExpireOutcome]()},
		// fail_or_retry returns the outcome ExecutionFail replies with.
		{"execution_fail", literal(`return '([a-z_]+)',`, luaFunction(t, srcs, "fail_or_retry")), wireNames[model.FailOutcome]()},
		{"lease_mark_expired", literal(statusRE, srcs["lease_mark_expired"]), wireNames[model.MarkExpiredOutcome]()},
		{"lease_revoke", literal(statusRE, srcs["lease_revoke"]), wireNames[model.RevokeOutcome]()},
		{"execution_reclaim", literal(statusRE, srcs["execution_reclaim"]), wireNames[model.ReclaimOutcome]()},
		{"execution_recover", literal(statusRE, srcs["execution_recover"]), wireNames[model.RecoverOutcome]()},
		{"execution_promote_delayed", literal(statusRE, srcs["execution_promote_delayed"]), wireNames[model.PromoteOutcome]()},
		{"worker_register", literal(statusRE, srcs["worker_register"]), wireNames[model.WorkerRegisterOutcome]()},
	}
	for _, c := range cases {
		for _, s := range c.found {
			if !slices.Contains(c.names, s) {
				t.Errorf("%s returns %q, which decodes to no model outcome (model has %q)", c.script, s, c.names)
			}
		}
		for _, s := range c.names {
			if !slices.Contains(c.found, s) {
				t.Errorf("%s: model outcome %q is returned by no Lua (found %q)", c.script, s, c.found)
			}
		}
	}
}

// wireNames lists the names of an outcome type's values 1, 2, ... (up to
// the first without a name).
func wireNames[T interface {
	~uint8
	String() string
}]() []string {
	var names []string
	for v := T(1); v.String() != ""; v++ {
		names = append(names, v.String())
	}
	return names
}
