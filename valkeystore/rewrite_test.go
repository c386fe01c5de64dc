package valkeystore

import (
	"fmt"
	"strings"
	"testing"
)

func TestRewriteNames(t *testing.T) {
	s := &script{name: "x", keys: []string{"core", "lanes"}, args: []string{"now", "id"}}
	hot, cold := recordSlots["lane"], recordSlots["failure_reason"]
	if hot.cold || !cold.cold {
		t.Fatal("lane must be hot and failure_reason cold for this test")
	}
	lane, failure := hot.expr(), cold.expr()
	for _, tc := range []struct{ in, rec, want string }{
		{in: "e.lane", rec: lane, want: lane},
		{in: "e.failure_reason = x", rec: failure + " = x", want: failure + " = x"},
		{in: "a, e.lane = 1, e.failure_reason", rec: "a, " + lane + " = 1, " + failure},
		{in: "'x'..e.lane..K.core", rec: "'x'.." + lane + "..K.core", want: "'x'.." + lane + "..KEYS[1]"},
		{in: "e.k.base .. e.c[1]", rec: "e.k.base .. e.c[1]"},
		{in: "f(e, t.e.lane, e)", rec: "f(e, t.e.lane, e)"},
		{in: "-- e.lane K.x\n'e.lane' \"A.now\" [[K.core]] --[==[e.lane]==] 1e14",
			rec: "-- e.lane K.x\n'e.lane' \"A.now\" [[K.core]] --[==[e.lane]==] 1e14"},
		{in: "'it''s' .. 'a\\'e.lane'", rec: "'it''s' .. 'a\\'e.lane'"},
		{in: "A.now + A.id", rec: "A.now + A.id", want: "ARGV[1] + ARGV[2]"},
		{in: "K.lanes, K.tags", rec: "K.lanes, K.tags",
			want: "KEYS[2], error('valkeystore: x: undeclared key tags')"},
	} {
		rec, err := recordNames(tc.in)
		if err != nil || rec != tc.rec {
			t.Errorf("recordNames(%q) = %q, %v; want %q", tc.in, rec, err, tc.rec)
			continue
		}
		want := tc.want
		if want == "" {
			want = tc.rec
		}
		if got, err := scriptNames(rec, s); err != nil || got != want {
			t.Errorf("scriptNames(%q) = %q, %v; want %q", rec, got, err, want)
		}
	}
	if _, err := recordNames("e.no_such_field"); err == nil {
		t.Error("an unknown record field was accepted")
	}
	for _, bad := range []string{"local k = K", "f(A)", "K[1]"} {
		if _, err := scriptNames(bad, s); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestRecordLayout checks that every field has one place and that the
// generated helpers list them in that place.
func TestRecordLayout(t *testing.T) {
	seen := make(map[string]bool)
	for _, f := range recordFields {
		sl := recordSlots[f.name]
		key := fmt.Sprint(sl.cold, sl.array, sl.index)
		if seen[key] {
			t.Errorf("%s shares %s", f.name, key)
		}
		seen[key] = true
		if (f.kind == fnum) != (sl.array == 1) {
			t.Errorf("%s: kind %d in array %d", f.name, f.kind, sl.array)
		}
	}
	gen := recordLua()
	for _, f := range recordFields {
		if !strings.Contains(gen, "'"+f.name+"'") {
			t.Errorf("rec_names lacks %s", f.name)
		}
	}
}
