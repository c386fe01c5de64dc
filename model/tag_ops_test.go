package model

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestValidateTagChange(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	var manyKeys []string
	for i := range MaxTags + 1 {
		k := "app.k" + strings.Repeat("x", i)
		many[k] = "v"
		manyKeys = append(manyKeys, k)
	}
	for _, c := range []struct {
		name   string
		set    map[string]string
		remove []string
		code   Code
		field  string
		detail string
	}{
		{"empty", nil, nil, "", "", ""},
		{"set and remove", map[string]string{"app.a": "1", "ops.b": ""}, []string{"app.c", "app.c"}, "", "", ""},
		{"bad set key", map[string]string{"nodot": "x"}, nil, CodeInvalidTagKey, "Set", "nodot"},
		// the first bad key in key order, whatever the map order
		{"two bad set keys", map[string]string{"zz": "x", "aa": "y"}, nil, CodeInvalidTagKey, "Set", "aa"},
		{"bad remove key", nil, []string{"app.ok", ".x"}, CodeInvalidTagKey, "Remove", ".x"},
		{"long value", map[string]string{"app.a": strings.Repeat("v", MaxTagValueBytes+1)}, nil, CodeInvalidInput, "Set", "value_too_long:app.a"},
		{"bad UTF-8", map[string]string{"app.a": "\xc3"}, nil, CodeInvalidInput, "Set", "value_invalid_utf8:app.a"},
		{"both", map[string]string{"app.a": "1"}, []string{"app.a"}, CodeInvalidInput, "Remove", "also_set:app.a"},
		{"too many set", many, nil, CodeInvalidInput, "Set", "too_many_tags"},
		{"too many removed", nil, manyKeys, CodeInvalidInput, "Remove", "too_many_tags"},
	} {
		err := ValidateTagChange(c.set, c.remove)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || e.Field != c.field || e.Detail != c.detail || !errors.Is(err, ErrValidation) {
			t.Errorf("%s: %#v, want %s on %s (%s)", c.name, err, c.code, c.field, c.detail)
		}
	}
}

func TestApplyTagChange(t *testing.T) {
	t.Parallel()
	tags := map[string]string{"app.a": "1", "app.b": "2"}
	orig := maps.Clone(tags)
	out, changed := ApplyTagChange(tags, map[string]string{"app.b": "3", "app.c": ""}, []string{"app.a", "app.x"})
	if !changed || !maps.Equal(out, map[string]string{"app.b": "3", "app.c": ""}) || !maps.Equal(tags, orig) {
		t.Fatalf("apply: %v %v (input now %v)", out, changed, tags)
	}
	out, changed = ApplyTagChange(tags, map[string]string{"app.a": "1"}, []string{"app.x"})
	if changed || !maps.Equal(out, tags) {
		t.Fatalf("a change that changes nothing: %v %v", out, changed)
	}
	out, changed = ApplyTagChange(nil, nil, nil)
	if changed || out == nil || len(out) != 0 {
		t.Fatalf("nothing to nothing: %v %v", out, changed)
	}
	if e := TooManyTags(); e.Code != CodeInvalidInput || e.Field != "Set" || e.Detail != "too_many_tags" || !e.IsValidation() {
		t.Fatalf("TooManyTags: %#v", e)
	}
}
