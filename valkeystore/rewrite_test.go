package valkeystore

import (
	"fmt"
	"strings"
	"testing"
)

func TestRewriteNames(t *testing.T) {
	hot, cold := recordSlots["lane"], recordSlots["failure_reason"]
	if hot.cold || !cold.cold {
		t.Fatal("lane must be hot and failure_reason cold for this test")
	}
	lane, failure := hot.expr(), cold.expr()
	for _, tc := range []struct{ in, want string }{
		{in: "e.lane", want: lane},
		{in: "e.failure_reason = x", want: failure + " = x"},
		{in: "a, e.lane = 1, e.failure_reason", want: "a, " + lane + " = 1, " + failure},
		{in: "'x'..e.lane..K_core", want: "'x'.." + lane + "..K_core"},
		{in: "e.k.base .. e.c[1]", want: "e.k.base .. e.c[1]"},
		{in: "f(e, t.e.lane, e, x:e.lane)", want: "f(e, t.e.lane, e, x:e.lane)"},
		{in: "-- e.lane K.x\n'e.lane' \"A.now\" [[K.core]] --[==[e.lane]==] 1e14",
			want: "-- e.lane K.x\n'e.lane' \"A.now\" [[K.core]] --[==[e.lane]==] 1e14"},
		{in: "'it''s' .. 'a\\'e.lane'", want: "'it''s' .. 'a\\'e.lane'"},
		{in: "e.lane\n.. e.lane", want: lane + "\n.. " + lane},
	} {
		got, err := recordNames(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("recordNames(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if strings.Count(got, "\n") != strings.Count(tc.in, "\n") {
			t.Errorf("recordNames(%q) moved lines", tc.in)
		}
	}
	if _, err := recordNames("x\ne.no_such_field"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an unknown record field: err = %v, want one naming line 2", err)
	}
	if got := recordFieldsIn("e.lane = e.k.base .. e.lane .. 'e.id' .. e.failure_reason"); fmt.Sprint(got) != "[lane failure_reason]" {
		t.Errorf("recordFieldsIn = %v", got)
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
