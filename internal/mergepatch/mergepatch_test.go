package mergepatch

import (
	"errors"
	"strings"
	"testing"
)

type applyCase struct {
	name        string
	doc, patch  string
	want        string
	nilDocument bool // pass doc as nil rather than []byte(doc)
}

func runCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc []byte
			if !c.nilDocument {
				doc = []byte(c.doc)
			}
			got, err := Apply(doc, []byte(c.patch))
			if err != nil {
				t.Fatalf("Apply(%s, %s): %v", c.doc, c.patch, err)
			}
			if string(got) != c.want {
				t.Fatalf("Apply(%s, %s)\n got %s\nwant %s", c.doc, c.patch, got, c.want)
			}
		})
	}
}

// TestRFC7396AppendixA has one case per example of RFC 7396 Appendix A, with
// the expected result in canonical form.
func TestRFC7396AppendixA(t *testing.T) {
	runCases(t, []applyCase{
		{name: "A1 replace member", doc: `{"a":"b"}`, patch: `{"a":"c"}`, want: `{"a":"c"}`},
		{name: "A2 add member", doc: `{"a":"b"}`, patch: `{"b":"c"}`, want: `{"a":"b","b":"c"}`},
		{name: "A3 delete member", doc: `{"a":"b"}`, patch: `{"a":null}`, want: `{}`},
		{name: "A4 delete one of two", doc: `{"a":"b","b":"c"}`, patch: `{"a":null}`, want: `{"b":"c"}`},
		{name: "A5 array replaced by string", doc: `{"a":["b"]}`, patch: `{"a":"c"}`, want: `{"a":"c"}`},
		{name: "A6 string replaced by array", doc: `{"a":"c"}`, patch: `{"a":["b"]}`, want: `{"a":["b"]}`},
		{name: "A7 nested merge", doc: `{"a":{"b":"c"}}`, patch: `{"a":{"b":"d","c":null}}`, want: `{"a":{"b":"d"}}`},
		{name: "A8 array of objects replaced", doc: `{"a":[{"b":"c"}]}`, patch: `{"a":[1]}`, want: `{"a":[1]}`},
		{name: "A9 array replaced", doc: `["a","b"]`, patch: `["c","d"]`, want: `["c","d"]`},
		{name: "A10 object replaced by array", doc: `{"a":"b"}`, patch: `["c"]`, want: `["c"]`},
		{name: "A11 null patch", doc: `{"a":"foo"}`, patch: `null`, want: `null`},
		{name: "A12 string patch", doc: `{"a":"foo"}`, patch: `"bar"`, want: `"bar"`},
		{name: "A13 null member in target kept", doc: `{"e":null}`, patch: `{"a":1}`, want: `{"a":1,"e":null}`},
		{name: "A14 object patch on array", doc: `[1,2]`, patch: `{"a":"b","c":null}`, want: `{"a":"b"}`},
		{name: "A15 nulls dropped in new member", doc: `{}`, patch: `{"a":{"bb":{"ccc":null}}}`, want: `{"a":{"bb":{}}}`},
	})
}

// TestRFC7396Section3 is the example of RFC 7396 section 3, formatted as
// there.
func TestRFC7396Section3(t *testing.T) {
	doc := `{
     "title": "Goodbye!",
     "author" : {
       "givenName" : "John",
       "familyName" : "Doe"
     },
     "tags":[ "example", "sample" ],
     "content": "This will be unchanged"
   }`
	patch := `{
     "title": "Hello!",
     "phoneNumber": "+01-123-456-7890",
     "author": {
       "familyName": null
     },
     "tags": [ "example" ]
   }`
	runCases(t, []applyCase{{
		name: "section 3", doc: doc, patch: patch,
		want: `{"author":{"givenName":"John"},"content":"This will be unchanged","phoneNumber":"+01-123-456-7890","tags":["example"],"title":"Hello!"}`,
	}})
}

func TestNullSentinel(t *testing.T) {
	runCases(t, []applyCase{
		{name: "sets existing member to null", doc: `{"a":1,"b":2}`, patch: `{"a":"__ff_null__"}`, want: `{"a":null,"b":2}`},
		{name: "sets absent member to null", doc: `{"b":2}`, patch: `{"a":"__ff_null__"}`, want: `{"a":null,"b":2}`},
		{name: "nested in existing object", doc: `{"a":{"x":1}}`, patch: `{"a":{"b":"__ff_null__"}}`, want: `{"a":{"b":null,"x":1}}`},
		{name: "nested in object merged into absent member", doc: `{}`, patch: `{"a":{"b":"__ff_null__","c":null,"d":{"e":"__ff_null__"}}}`, want: `{"a":{"b":null,"d":{"e":null}}}`},
		{name: "object merged into a non-object member", doc: `{"a":[1]}`, patch: `{"a":{"b":"__ff_null__"}}`, want: `{"a":{"b":null}}`},
		{name: "inside arrays", doc: `{}`, patch: `{"a":["__ff_null__",1,null,["__ff_null__"],{"b":"__ff_null__","c":null}]}`, want: `{"a":[null,1,null,[null],{"b":null,"c":null}]}`},
		{name: "top level", doc: `{"a":1}`, patch: `"__ff_null__"`, want: `null`},
		{name: "top level on no document", nilDocument: true, patch: `"__ff_null__"`, want: `null`},
		{name: "top-level array", doc: `{"a":1}`, patch: `["__ff_null__"]`, want: `[null]`},
		{name: "written with escapes", doc: `{}`, patch: `{"a":"\u005f_ff_null__"}`, want: `{"a":null}`},
		{name: "a plain null still deletes", doc: `{"a":null,"b":1}`, patch: `{"a":null}`, want: `{"b":1}`},
		{name: "not in the document", doc: `{"a":"__ff_null__"}`, patch: `{"b":1}`, want: `{"a":"__ff_null__","b":1}`},
		{name: "not as a key", doc: `{}`, patch: `{"__ff_null__":1}`, want: `{"__ff_null__":1}`},
		{name: "only the exact string", doc: `{}`, patch: `{"a":"__ff_null__ ","b":"__FF_NULL__","c":"__ff_null_"}`, want: `{"a":"__ff_null__ ","b":"__FF_NULL__","c":"__ff_null_"}`},
	})
}

func TestNumbersKeptExactly(t *testing.T) {
	runCases(t, []applyCase{
		{name: "from the patch", doc: `{}`, patch: `{"n":12345678901234567890,"f":1.000000000000000000001}`, want: `{"f":1.000000000000000000001,"n":12345678901234567890}`},
		{name: "from the document", doc: `{"n":12345678901234567890,"f":1.000000000000000000001}`, patch: `{"x":1}`, want: `{"f":1.000000000000000000001,"n":12345678901234567890,"x":1}`},
		{name: "inside arrays", doc: `[1]`, patch: `[12345678901234567890,1.000000000000000000001]`, want: `[12345678901234567890,1.000000000000000000001]`},
		{name: "not normalised", doc: `{"a":1.0,"b":1e2,"c":-0,"d":1E+400,"e":0.10}`, patch: `{"f":-1.5e-7}`, want: `{"a":1.0,"b":1e2,"c":-0,"d":1E+400,"e":0.10,"f":-1.5e-7}`},
		{name: "top level", nilDocument: true, patch: `12345678901234567890`, want: `12345678901234567890`},
	})
}

func TestStringsKept(t *testing.T) {
	runCases(t, []applyCase{
		{name: "html characters not escaped", doc: `{}`, patch: `{"s":"<a href=\"x\">&amp;</a>"}`, want: `{"s":"<a href=\"x\">&amp;</a>"}`},
		{name: "unicode kept", doc: `{"u":"日本語 ✓ é"}`, patch: `{"v":"Ωμέγα 🚀"}`, want: `{"u":"日本語 ✓ é","v":"Ωμέγα 🚀"}`},
		{name: "escapes decoded", doc: `{}`, patch: `{"s":"\u00e9\u003c\/"}`, want: `{"s":"é</"}`},
		{name: "control characters escaped", doc: `{}`, patch: `{"s":"a\tb\nc\u0001"}`, want: `{"s":"a\tb\nc\u0001"}`},
		{name: "line separators escaped", doc: `{}`, patch: "{\"s\":\"\u2028\u2029\"}", want: `{"s":"\u2028\u2029"}`},
		{name: "unicode keys sorted by bytes", doc: `{}`, patch: `{"é":1,"z":2,"Z":3,"a":4}`, want: `{"Z":3,"a":4,"z":2,"é":1}`},
	})
}

func TestCanonicalKeyOrder(t *testing.T) {
	runCases(t, []applyCase{
		{name: "empty patch sorts and compacts", doc: "{ \"b\" : 1,\n\t\"a\" : { \"d\" : [ 2 , {\"y\":1,\"x\":2} ] , \"c\" : 3 } }", patch: `{}`, want: `{"a":{"c":3,"d":[2,{"x":2,"y":1}]},"b":1}`},
		{name: "patch keys sorted too", doc: `{"m":1}`, patch: `{"z":1,"a":{"q":1,"b":2}}`, want: `{"a":{"b":2,"q":1},"m":1,"z":1}`},
		{name: "whitespace around the inputs", doc: " \n{\"a\":1}\r\n", patch: "\t{\"b\":2} ", want: `{"a":1,"b":2}`},
	})
	// Two spellings of the same document give the same bytes.
	a, errA := Apply([]byte(`{"b":[1, 2],"a":{"y":true,"x":null}}`), []byte(`{"c":"s"}`))
	b, errB := Apply([]byte(`{"a":{"x":null,"y":true},"b":[1,2]}`), []byte(` { "c" : "s" } `))
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Fatalf("same values, different bytes: %s (%v) vs %s (%v)", a, errA, b, errB)
	}
}

func TestDuplicateKeysLastWins(t *testing.T) {
	runCases(t, []applyCase{
		{name: "in the patch", doc: `{}`, patch: `{"a":1,"a":2}`, want: `{"a":2}`},
		{name: "in the document", doc: `{"a":1,"a":2}`, patch: `{}`, want: `{"a":2}`},
		{name: "null last deletes", doc: `{"a":0}`, patch: `{"a":1,"a":null}`, want: `{}`},
		{name: "null first does not", doc: `{"a":0}`, patch: `{"a":null,"a":1}`, want: `{"a":1}`},
	})
}

func TestEmptyDocument(t *testing.T) {
	for _, doc := range [][]byte{nil, {}, []byte("null")} {
		runCases(t, []applyCase{
			{name: "object patch applies to {}", doc: string(doc), nilDocument: doc == nil, patch: `{"a":{"b":1,"c":null},"d":null}`, want: `{"a":{"b":1}}`},
			{name: "empty object patch", doc: string(doc), nilDocument: doc == nil, patch: `{}`, want: `{}`},
			{name: "array patch", doc: string(doc), nilDocument: doc == nil, patch: `[1,null]`, want: `[1,null]`},
			{name: "scalar patch", doc: string(doc), nilDocument: doc == nil, patch: `true`, want: `true`},
			{name: "null patch", doc: string(doc), nilDocument: doc == nil, patch: `null`, want: `null`},
		})
	}
}

// nest wraps inner in n levels of containers, alternating objects and
// arrays, starting with an object.
func nest(n int, inner string) string {
	var open, close strings.Builder
	for i := range n {
		if i%2 == 0 {
			open.WriteString(`{"k":`)
		} else {
			open.WriteString(`[`)
		}
	}
	for i := n - 1; i >= 0; i-- {
		if i%2 == 0 {
			close.WriteString(`}`)
		} else {
			close.WriteString(`]`)
		}
	}
	return open.String() + inner + close.String()
}

func TestDepthLimit(t *testing.T) {
	for _, c := range []struct {
		name, doc, patch string
		wantDepthErr     string // "" when accepted, else the input named
	}{
		{name: "patch of depth 16", doc: `{}`, patch: nest(16, `1`)},
		{name: "patch of depth 16 ending in an empty container", doc: `{}`, patch: nest(15, `[]`)},
		{name: "patch of depth 17", doc: `{}`, patch: nest(17, `1`), wantDepthErr: "patch"},
		{name: "patch of depth 17 ending in an empty container", doc: `{}`, patch: nest(16, `{}`), wantDepthErr: "patch"},
		{name: "patch of depth 17 with nulls only", doc: `{}`, patch: strings.Repeat(`{"a":`, 16) + `{"b":null}` + strings.Repeat(`}`, 16), wantDepthErr: "patch"},
		{name: "document of depth 16", doc: nest(16, `1`), patch: `{"x":1}`},
		{name: "document of depth 17", doc: nest(17, `1`), patch: `{"x":1}`, wantDepthErr: "document"},
		{name: "document of depth 17 refused even if replaced", doc: nest(17, `1`), patch: `1`, wantDepthErr: "document"},
		{name: "merge reaching depth 16", doc: strings.Repeat(`{"a":`, 14) + `{"c":1}` + strings.Repeat(`}`, 14), patch: strings.Repeat(`{"a":`, 14) + `{"b":[]}` + strings.Repeat(`}`, 14)},
		{name: "brackets inside strings do not count", doc: `{"s":"[[[[[[[[[[[[[[[[[[[[{{{{{{{{{{{{{{{{{{{"}`, patch: `{"t":"\"[[[[[[[[[[[[[[[[[[[[[[[[\\"}`},
		{name: "hostile depth", doc: `{}`, patch: strings.Repeat(`[`, 1<<20) + strings.Repeat(`]`, 1<<20), wantDepthErr: "patch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Apply([]byte(c.doc), []byte(c.patch))
			if c.wantDepthErr == "" {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if d, ok := depthWithin(got, MaxDepth); !ok {
					t.Fatalf("result deeper than MaxDepth (%d): %s", d, got)
				}
				return
			}
			if !errors.Is(err, ErrTooDeep) {
				t.Fatalf("Apply: err = %v, want ErrTooDeep", err)
			}
			if !strings.Contains(err.Error(), "the "+c.wantDepthErr+" nests") {
				t.Fatalf("error %q does not name the %s", err, c.wantDepthErr)
			}
		})
	}
	// The result of the 16-deep merge is exactly 16 deep.
	got, err := Apply([]byte(`{}`), []byte(nest(16, `1`)))
	if err != nil || string(got) != nest(16, `1`) {
		t.Fatalf("Apply = %s, %v; want %s", got, err, nest(16, `1`))
	}
}

func TestDepthWithin(t *testing.T) {
	for _, c := range []struct {
		json  string
		depth int
	}{
		{`1`, 0}, {`"[{"`, 0}, {`null`, 0},
		{`{}`, 1}, {`[]`, 1}, {`{"a":1}`, 1}, {`[1,"]"]`, 1},
		{`{"a":{}}`, 2}, {`[[1]]`, 2}, {`[[],[]]`, 2}, {`{"a":[1],"b":2}`, 2},
		{`{"a":[{"b":1}]}`, 3}, {`[{"x":"\\"},[[]]]`, 3},
	} {
		if _, ok := depthWithin([]byte(c.json), c.depth); !ok {
			t.Errorf("depthWithin(%s, %d) refused", c.json, c.depth)
		}
		if c.depth > 0 {
			if d, ok := depthWithin([]byte(c.json), c.depth-1); ok || d != c.depth {
				t.Errorf("depthWithin(%s, %d) = %d, %v; want %d, false", c.json, c.depth-1, d, ok, c.depth)
			}
		}
	}
}

func TestSizeLimit(t *testing.T) {
	// A string result is its length plus two quotes.
	exact := `"` + strings.Repeat("x", MaxSize-2) + `"`
	got, err := Apply(nil, []byte(exact))
	if err != nil || len(got) != MaxSize {
		t.Fatalf("result of exactly MaxSize bytes: len %d, err %v", len(got), err)
	}
	over := `"` + strings.Repeat("x", MaxSize-1) + `"`
	if _, err := Apply(nil, []byte(over)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("result of MaxSize+1 bytes: err = %v, want ErrTooLarge", err)
	}

	// The limit is on the result: a document at the limit, patched to
	// grow by one byte, is refused, and patched to shrink is accepted.
	doc := `{"a":"` + strings.Repeat("y", MaxSize-len(`{"a":""}`)) + `"}`
	if got, err := Apply([]byte(doc), []byte(`{}`)); err != nil || len(got) != MaxSize {
		t.Fatalf("document of MaxSize bytes: len %d, err %v", len(got), err)
	}
	if _, err := Apply([]byte(doc), []byte(`{"b":1}`)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("growing past MaxSize: err = %v, want ErrTooLarge", err)
	}
	bigDoc := `{"a":"` + strings.Repeat("y", 2*MaxSize) + `"}`
	if got, err := Apply([]byte(bigDoc), []byte(`{"a":null}`)); err != nil || string(got) != `{}` {
		t.Fatalf("shrinking a large document: %s, %v", got, err)
	}
	// The canonical form is what is measured: escapes count as written out.
	esc := `"` + strings.Repeat(`\u0001`, MaxSize/6) + `"`
	if _, err := Apply(nil, []byte(esc)); err != nil {
		t.Fatalf("escaped string within MaxSize: %v", err)
	}
	esc = `"` + strings.Repeat(`\u0001`, MaxSize/6+1) + `"`
	if _, err := Apply(nil, []byte(esc)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("escaped string over MaxSize: err = %v, want ErrTooLarge", err)
	}
}

func TestInvalidJSON(t *testing.T) {
	invalid := []string{
		``, ` `, `{`, `{"a":}`, `{"a":1,}`, `[1,]`, `{} {}`, `1 2`, `{"a":1}x`, `01`, `NaN`,
		`'a'`, `{a:1}`, `"unterminated`, `{"a":1}}`, `[1]]`, `tru`, `nul`, "\"\x01\"",
	}
	for _, bad := range invalid {
		t.Run("patch "+bad, func(t *testing.T) {
			_, err := Apply([]byte(`{"a":1}`), []byte(bad))
			if !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("err = %v, want ErrInvalidJSON", err)
			}
			if !strings.Contains(err.Error(), "in the patch:") || strings.Contains(err.Error(), "document") {
				t.Fatalf("error %q should name the patch only", err)
			}
		})
		if bad == `` {
			continue // an empty document is no document
		}
		t.Run("document "+bad, func(t *testing.T) {
			_, err := Apply([]byte(bad), []byte(`{"a":1}`))
			if !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("err = %v, want ErrInvalidJSON", err)
			}
			if !strings.Contains(err.Error(), "in the document:") || strings.Contains(err.Error(), "the patch") {
				t.Fatalf("error %q should name the document only", err)
			}
		})
	}
	sentinels := []error{ErrInvalidJSON, ErrTooDeep, ErrTooLarge}
	for i, err := range sentinels {
		for j, other := range sentinels {
			if i != j && errors.Is(err, other) {
				t.Fatalf("%v is %v", err, other)
			}
		}
	}
}

func TestInputsNotModified(t *testing.T) {
	doc := []byte(`{"b":1, "a":[1,2]}`)
	patch := []byte(`{"a":["__ff_null__"], "c":{"d":null}}`)
	docCopy, patchCopy := string(doc), string(patch)
	got, err := Apply(doc, patch)
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != docCopy || string(patch) != patchCopy {
		t.Fatalf("inputs modified: %s, %s", doc, patch)
	}
	if want := `{"a":[null],"b":1,"c":{}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestIdempotentExamples(t *testing.T) {
	for _, c := range [][2]string{
		{`{"a":"b"}`, `{"a":{"x":null,"y":"__ff_null__"}}`},
		{`[1,2]`, `{"a":"b","c":null}`},
		{`{"e":null}`, `{"e":{"f":1},"g":["__ff_null__"]}`},
		{`{"a":{"b":{"c":1}}}`, `{"a":{"b":null,"d":"__ff_null__"}}`},
	} {
		once, err := Apply([]byte(c[0]), []byte(c[1]))
		if err != nil {
			t.Fatal(err)
		}
		twice, err := Apply(once, []byte(c[1]))
		if err != nil || string(twice) != string(once) {
			t.Fatalf("Apply(%s, %s) = %s, applied again %s (%v)", c[0], c[1], once, twice, err)
		}
	}
}
