package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzApply checks, for any two inputs, that Apply does not panic, fails
// only with one of its sentinel errors, and that a result is:
//   - valid JSON, within MaxDepth and MaxSize;
//   - canonical: decoding it (numbers as json.Number) and encoding it the
//     way Apply does gives the same bytes;
//   - deterministic: Apply of the same inputs gives the same bytes;
//   - idempotent: applying the same patch to the result again gives the
//     result (RFC 7396 merge patches are idempotent, and so is the
//     sentinel: it sets the same members to null each time);
//   - independent of whether the document is absent or null;
//   - its own fixpoint as a patch to nothing, when that is expected: a
//     result with no null object member (outside arrays) and no
//     NullSentinel string is unchanged by Apply(nil, result).
func FuzzApply(f *testing.F) {
	seeds := [][2]string{
		{`{"a":"b"}`, `{"a":"c"}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`},
		{`[1,2]`, `{"a":"b","c":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`},
		{`{"a":"foo"}`, `"bar"`},
		{`{"a":"foo"}`, `null`},
		{``, `{"a":"__ff_null__","b":["__ff_null__",{"c":null}]}`},
		{`{"a":1}`, `"__ff_null__"`},
		{`{"n":12345678901234567890}`, `{"f":1.000000000000000000001,"e":-0,"g":1E+400}`},
		{`{"b":1,"a":{"d":2,"c":3},"a":4}`, `{}`},
		{`{"s":"<&>\u2028é"}`, `{"t":"\u005f_ff_null__"}`},
		{`{"a":[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]}`, `{"b":{"c":{"d":{}}}}`},
		{`{"a":`, `{}`},
		{`{}`, `1 2`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		docIn, patchIn := bytes.Clone(doc), bytes.Clone(patch)
		got, err := Apply(doc, patch)
		if !bytes.Equal(doc, docIn) || !bytes.Equal(patch, patchIn) {
			t.Fatalf("Apply modified its inputs")
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrTooDeep) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Apply(%q, %q): error %v is none of the sentinels", doc, patch, err)
			}
			return
		}
		if !json.Valid(got) {
			t.Fatalf("Apply(%q, %q) = %q: not valid JSON", doc, patch, got)
		}
		if len(got) > MaxSize {
			t.Fatalf("result of %d bytes, more than MaxSize", len(got))
		}
		if d, ok := depthWithin(got, MaxDepth); !ok {
			t.Fatalf("Apply(%q, %q) = %q: deeper than MaxDepth (%d)", doc, patch, got, d)
		}

		dec := json.NewDecoder(bytes.NewReader(got))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding the result %q: %v", got, err)
		}
		re, err := encode(v)
		if err != nil || !bytes.Equal(re, got) {
			t.Fatalf("result %q is not canonical: re-encoded %q (%v)", got, re, err)
		}

		again, err := Apply(doc, patch)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("Apply(%q, %q) not deterministic: %q then %q (%v)", doc, patch, got, again, err)
		}

		twice, err := Apply(got, patch)
		if err != nil || !bytes.Equal(twice, got) {
			t.Fatalf("not idempotent: Apply(%q, %q) = %q, applied again %q (%v)", doc, patch, got, twice, err)
		}

		if len(doc) == 0 {
			viaNull, err := Apply([]byte("null"), patch)
			if err != nil || !bytes.Equal(viaNull, got) {
				t.Fatalf("patch %q: no document gives %q, null gives %q (%v)", patch, got, viaNull, err)
			}
		}

		if selfPatching(v, false) {
			fix, err := Apply(nil, got)
			if err != nil || !bytes.Equal(fix, got) {
				t.Fatalf("Apply(nil, %q) = %q (%v), want it unchanged", got, fix, err)
			}
		}
	})
}

// selfPatching reports whether v, used as a merge patch on no document,
// gives v back: it has no NullSentinel string, and no null member in an
// object that is not inside an array (those would be deleted; an array is
// copied as it is, nulls included).
func selfPatching(v any, inArray bool) bool {
	switch x := v.(type) {
	case string:
		return x != NullSentinel
	case []any:
		for _, e := range x {
			if !selfPatching(e, true) {
				return false
			}
		}
	case map[string]any:
		for _, e := range x {
			if (e == nil && !inArray) || !selfPatching(e, inArray) {
				return false
			}
		}
	}
	return true
}
