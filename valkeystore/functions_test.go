package valkeystore

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// TestFunctionLibrary loads the library on the real backends (Lua's limits
// of 200 locals per function and 60 upvalues per closure are checked when
// the server compiles it) and finds one function per script, read-only
// scripts flagged no-writes.
func TestFunctionLibrary(t *testing.T) {
	lib := functions()
	if !strings.HasPrefix(lib.src, "#!lua name="+lib.name+"\n") {
		t.Fatalf("the library starts %q", lib.src[:40])
	}
	if got := strings.Count(lib.src, "\n"); got != len(lib.lines) {
		t.Fatalf("the library has %d lines, its line map %d", got, len(lib.lines))
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.name == "miniredis" {
			t.Skip("miniredis has no FUNCTION")
		}
		c := b.client(t)
		s := newStoreWith(t, c, &Options{ScriptCalls: ScriptCallsFunctions})
		if err := s.loadFunctions(bg); err != nil {
			t.Fatal(err)
		}
		for addr, n := range c.Nodes() {
			libs, err := n.Do(bg, n.B().FunctionList().Libraryname(lib.name).Build()).ToArray()
			if err != nil || len(libs) != 1 {
				t.Fatalf("%s: function list: %v, %d libraries", addr, err, len(libs))
			}
			m, err := libs[0].AsMap()
			if err != nil {
				t.Fatal(err)
			}
			fv := m["functions"]
			fns, err := fv.ToArray()
			if err != nil {
				t.Fatal(err)
			}
			flags := make(map[string]string, len(fns))
			for _, f := range fns {
				fm, err := f.AsMap()
				if err != nil {
					t.Fatal(err)
				}
				nv, fv := fm["name"], fm["flags"]
				name, _ := nv.ToString()
				fl, _ := fv.AsStrSlice()
				flags[name] = strings.Join(fl, ",")
			}
			if len(flags) != len(allScripts) {
				t.Errorf("%s: %d functions, %d scripts", addr, len(flags), len(allScripts))
			}
			for _, sc := range allScripts {
				want := ""
				if sc.readOnly {
					want = "no-writes"
				}
				if got, ok := flags[lib.fn[sc]]; !ok || got != want {
					t.Errorf("%s: %s: function %q present %v, flags %q, want %q", addr, sc.name, lib.fn[sc], ok, got, want)
				}
			}
		}
	})
}

// TestFunctionsReload: a server that lost the library (FUNCTION FLUSH, a
// restart without persistence, a new cluster node) gets it again on the
// next call, which then runs; the call is not failed.
func TestFunctionsReload(t *testing.T) {
	// servers of its own: a flush of a shared one would reload the
	// library under other tests' calls
	for _, kind := range []string{"standalone", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var c valkey.Client
			if kind == "standalone" {
				c = newClient(t, redisserver.Start(t, nil).Addr())
			} else {
				c = newClient(t, redisserver.StartCluster(t, 3).Addrs()...)
			}
			functionsReload(t, c)
		})
	}
}

func functionsReload(t *testing.T, c valkey.Client) {
	s := newStoreWith(t, c, nil)
	var sq seq
	ids := []model.ExecutionID{sq.exec(0), sq.exec(1), sq.exec(2)}
	if _, err := s.ExecutionCreate(bg, createP(ids[0], t0)); err != nil {
		t.Fatal(err)
	}
	if got := s.scripts.use.Load(); got != useFunctions {
		t.Fatalf("the store runs scripts by %d, want functions (%d)", got, useFunctions)
	}
	flush := func() {
		for addr, n := range c.Nodes() {
			if err := n.Do(bg, n.B().FunctionFlush().Build()).Error(); err != nil && !strings.HasPrefix(err.Error(), "READONLY") {
				t.Fatalf("%s: function flush: %v", addr, err)
			}
		}
	}
	flush()
	if _, err := s.ExecutionCreate(bg, createP(ids[1], t0)); err != nil {
		t.Fatalf("a create after the flush: %v", err)
	}
	// a pipelined batch (runEach: one call per partition) reloads too
	flush()
	st, err := s.LaneState(bg, &model.LaneStateParams{Lane: "l1"})
	if err != nil || st.Paused {
		t.Fatalf("lane state after the flush: %v, %+v", err, st)
	}
	if _, err := s.ExecutionCreate(bg, createP(ids[2], t0)); err != nil {
		t.Fatalf("a create after the batch: %v", err)
	}

	// calls that find it missing at once load it once between them (a
	// load blocks a server for about 40 ms)
	flush()
	loads := func() (n int64) {
		for _, node := range c.Nodes() {
			n += commandCounts(t, node)["function|load"]
		}
		return n
	}
	before := loads()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	more := make([]model.ExecutionID, 16)
	for i := range more {
		more[i] = sq.exec(4 + i)
	}
	for _, id := range more {
		wg.Go(func() {
			_, err := s.ExecutionCreate(bg, createP(id, t0))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent create after the flush: %v", err)
		}
	}
	// one load per node that lacked it (a cluster's three masters)
	if got, masters := loads()-before, int64(len(c.Nodes())); got > masters {
		t.Errorf("%d FUNCTION LOADs after the flush, want at most one per node (%d)", got, masters)
	}
}

// TestScriptCallsOption: the modes on each backend, and a bad value named.
func TestScriptCallsOption(t *testing.T) {
	_, err := New(miniredisClient(t), &Options{ScriptCalls: "fcall"})
	var me *model.Error
	if !errors.As(err, &me) || me.Field != "Options.ScriptCalls" || !errors.Is(err, model.ErrInvalidInput) {
		t.Fatalf("New with ScriptCalls \"fcall\": %v, want a validation error naming Options.ScriptCalls", err)
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		for _, tc := range []struct {
			calls ScriptCalls
			use   int32 // 0: the call fails
		}{
			{ScriptCallsAuto, useFunctions},
			{ScriptCallsEval, useEval},
			{ScriptCallsFunctions, useFunctions},
		} {
			if b.name == "miniredis" && tc.calls != ScriptCallsEval {
				tc.use = map[ScriptCalls]int32{ScriptCallsAuto: useEval, ScriptCallsFunctions: 0}[tc.calls]
			}
			s := newStoreWith(t, c, &Options{ScriptCalls: tc.calls})
			var sq seq
			_, err := s.ExecutionCreate(bg, createP(sq.exec(0), t0.Add(time.Second)))
			if tc.use == 0 {
				if !errors.Is(err, ErrFunctionsUnsupported) {
					t.Errorf("%q: create: %v, want ErrFunctionsUnsupported", tc.calls, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%q: create: %v", tc.calls, err)
			}
			if got := s.scripts.use.Load(); got != tc.use {
				t.Errorf("%q: runs scripts by %d, want %d", tc.calls, got, tc.use)
			}
		}
	})
}

// TestFunctionsDeniedByACL: a client whose ACL user may not run FUNCTION
// runs EVALSHA in auto mode; a store that demands functions fails its
// calls with ErrFunctionsUnsupported. A library an administrator loaded
// is used by a user who may list and call functions but not load them.
func TestFunctionsDeniedByACL(t *testing.T) {
	srv := redisserver.Start(t, nil)
	admin := newClient(t, srv.Addr())
	for _, cmd := range [][]string{
		{"ACL", "SETUSER", "nofn", "on", ">pw", "~*", "&*", "+@all", "-function"},
		{"ACL", "SETUSER", "noload", "on", ">pw", "~*", "&*", "+@all", "-function|load", "-function|delete", "-function|flush"},
	} {
		if err := admin.Do(bg, admin.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	user := func(name string) valkey.Client {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{srv.Addr()}, Username: name, Password: "pw", DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	var sq seq
	nofn := user("nofn")
	s := newStoreWith(t, nofn, nil)
	if _, err := s.ExecutionCreate(bg, createP(sq.exec(0), t0)); err != nil {
		t.Fatalf("auto, FUNCTION denied: %v", err)
	}
	if got := s.scripts.use.Load(); got != useEval {
		t.Errorf("auto, FUNCTION denied: runs scripts by %d, want EVALSHA (%d)", got, useEval)
	}
	s = newStoreWith(t, nofn, &Options{ScriptCalls: ScriptCallsFunctions})
	if _, err := s.ExecutionCreate(bg, createP(sq.exec(1), t0)); !errors.Is(err, ErrFunctionsUnsupported) {
		t.Errorf("functions, FUNCTION denied: %v, want ErrFunctionsUnsupported", err)
	}

	// the library is not there yet: a user who may not load it runs EVALSHA
	noload := user("noload")
	s = newStoreWith(t, noload, nil)
	if _, err := s.ExecutionCreate(bg, createP(sq.exec(2), t0)); err != nil || s.scripts.use.Load() != useEval {
		t.Fatalf("auto, no library, FUNCTION LOAD denied: %v, runs scripts by %d", err, s.scripts.use.Load())
	}
	// an administrator loads it; the same user's next store uses it
	if err := newStoreWith(t, admin, nil).loadFunctions(bg); err != nil {
		t.Fatal(err)
	}
	s = newStoreWith(t, noload, nil)
	if _, err := s.ExecutionCreate(bg, createP(sq.exec(3), t0)); err != nil || s.scripts.use.Load() != useFunctions {
		t.Fatalf("auto, library loaded, FUNCTION LOAD denied: %v, runs scripts by %d", err, s.scripts.use.Load())
	}
}
