// Package mergepatch applies an RFC 7396 JSON Merge Patch to an attempt
// summary document and returns the result in one canonical byte form.
//
// It exists because the engine applies a summary patch frame itself, in
// Go, and hands the resulting bytes to both of its stores: the merge is
// done once, engine-side, so the two stores hold byte-identical documents
// instead of each merging (and formatting) on its own. For that the output
// must depend only on the JSON values of the inputs: it is compact, object
// keys are sorted by bytes, numbers are kept as written and there is no
// trailing newline, so Apply of the same inputs always gives the same bytes.
//
// The merge is written here rather than imported. github.com/evanphx/json-patch's
// MergePatch was considered and rejected, from reading its source (v5): its
// output is not canonical (object keys stay in the order they were written
// or added, and values the patch does not touch are copied as written), it
// refuses a patch that is a JSON scalar or null where RFC 7396 replaces the
// document with it (its own tests expect an error for RFC 7396 Appendix A's
// null and "bar" patches), and it has neither the "__ff_null__" convention
// nor depth and size limits. Numbers are not the reason: its MergePatch
// keeps values as raw JSON rather than decoding them through float64 (its
// CreateMergePatch does use float64).
//
// Semantics (RFC 7396 section 2, plus FlowFabric's null sentinel):
//
//   - A patch that is an object is merged member by member, recursively: a
//     member whose patch value is null deletes that member from the
//     target; any other member value is merged into the target's member by
//     these same rules (so an object value for a member that is absent or
//     not an object is merged into {}, which drops its own null members).
//   - An object patch applied to a target that is not an object (an array,
//     a scalar, null, or no document at all) is applied to {} instead.
//   - A patch that is not an object (an array, string, number, boolean or
//     null) replaces the target whole: the whole document at the top level
//     (a top-level null patch gives the document null), the member's value
//     for a member value other than null. Arrays are never merged
//     element-wise, and nulls inside them are kept.
//   - The sentinel: a patch value that is a string whose decoded value is
//     exactly [NullSentinel] becomes JSON null in the result, wherever it
//     is in the patch: as a member value it sets the member to null (where
//     a plain null would delete it), inside an array (or an object inside
//     an array) it becomes a null element (member), and a patch that is
//     exactly that string makes the whole document null. The sentinel is
//     recognised only in the patch and only as a value: the same string in
//     the document, or as an object key, is kept as it is.
//
// Object members with duplicate keys (in either input) are decoded the way
// encoding/json decodes them: the last one wins, so {"a":1,"a":null} in a
// patch deletes "a".
package mergepatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

const (
	// MaxDepth is the deepest container nesting that Apply accepts, in the
	// document, in the patch and so in the result. The depth of a JSON value
	// counts nested containers: a scalar (string, number, boolean, null) has
	// depth 0, an object or array has depth 1 plus the largest depth of its
	// members or elements (so {} and [] have depth 1, {"a":{}} and [[1]]
	// depth 2, {"a":[{"b":1}]} depth 3). Depth MaxDepth is accepted, deeper
	// is refused with ErrTooDeep.
	MaxDepth = 16

	// MaxSize is the longest result, in bytes of its canonical encoding,
	// that Apply returns; a longer one is refused with ErrTooLarge.
	MaxSize = 256 << 10

	// NullSentinel is the patch string value that sets a member to JSON null
	// instead of deleting it (see the package documentation).
	NullSentinel = "__ff_null__"
)

var (
	// ErrInvalidJSON reports that the document or the patch is not exactly
	// one valid JSON value (surrounding whitespace is allowed, anything else
	// after the value is not). The wrapping error names which input it was,
	// "document" or "patch", and the syntax error.
	ErrInvalidJSON = errors.New("mergepatch: invalid JSON")

	// ErrTooDeep reports an input nested deeper than MaxDepth. The wrapping
	// error names which input it was, "document" or "patch".
	ErrTooDeep = errors.New("mergepatch: nested too deep")

	// ErrTooLarge reports a result longer than MaxSize bytes.
	ErrTooLarge = errors.New("mergepatch: result too large")
)

// Apply returns the document after applying patch to doc (RFC 7396, with the
// NullSentinel convention; see the package documentation).
//
// doc may be empty (nil or len 0): there is no document yet, which is
// treated as absent, exactly like a document that is null (so an object
// patch applies to {}, and any other patch is the result). Any other doc,
// and the patch, must each be exactly one valid JSON value, or Apply returns
// an error wrapping ErrInvalidJSON; an empty patch is invalid.
//
// Depth is checked on each input before its syntax, by counting the
// brackets outside string literals: an input nested deeper than MaxDepth
// (see MaxDepth for the definition) is refused with an error wrapping
// ErrTooDeep before anything is decoded, so a hostile input cannot make
// decoding recurse deeply. A document deeper than MaxDepth is refused even
// if the patch would have replaced its deep part (Apply never returns one).
// Since a merge never nests deeper than the deeper of its two inputs, and a
// patch nested deeper than MaxDepth would always give a result at least as
// deep, this is the same as refusing a result deeper than MaxDepth.
//
// The result is canonical: compact (no insignificant whitespace, no
// trailing newline), object keys sorted by their bytes, numbers exactly as
// their literals were written (never converted through float64, so
// 12345678901234567890 and 1.000000000000000000001 survive, and 1.0, 1e2
// and -0 are not normalised), strings with the same decoded value (the
// escapes are encoding/json's with HTML escaping off: < > & are written as
// they are, non-ASCII text is written as UTF-8, control characters and
// U+2028 and U+2029 are escaped, and invalid UTF-8 becomes U+FFFD). A
// result longer than MaxSize bytes is refused with ErrTooLarge.
//
// Apply does not modify doc or patch, and the returned slice is new.
func Apply(doc, patch []byte) ([]byte, error) {
	var target any // nil: no document, or a null one
	if len(doc) > 0 {
		v, err := decode("document", doc)
		if err != nil {
			return nil, err
		}
		target = v
	}
	p, err := decode("patch", patch)
	if err != nil {
		return nil, err
	}
	out, err := encode(merge(target, p))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, more than MaxSize (%d)", ErrTooLarge, len(out), MaxSize)
	}
	return out, nil
}

// decode checks b's depth, then that it is exactly one JSON value, and
// decodes it with numbers as json.Number. which names the input in errors.
func decode(which string, b []byte) (any, error) {
	if d, ok := depthWithin(b, MaxDepth); !ok {
		return nil, fmt.Errorf("%w: the %s nests deeper than MaxDepth (%d): at least %d levels", ErrTooDeep, which, MaxDepth, d)
	}
	if !json.Valid(b) {
		// Unmarshal checks the whole input before it decodes anything, so
		// this only fetches the syntax error's text.
		err := json.Unmarshal(b, new(json.RawMessage))
		if err == nil { // unreachable: Valid and Unmarshal agree
			err = errors.New("not a single JSON value")
		}
		return nil, fmt.Errorf("%w in the %s: %w", ErrInvalidJSON, which, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil { // unreachable after Valid
		return nil, fmt.Errorf("%w in the %s: %w", ErrInvalidJSON, which, err)
	}
	return v, nil
}

// depthWithin reports whether the container nesting of b, counted as the
// open brackets ({ or [) outside string literals that are not yet closed,
// stays within limit; when it does not, d is limit+1. For valid JSON this
// is exactly the depth defined at MaxDepth.
func depthWithin(b []byte, limit int) (d int, ok bool) {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limit {
				return depth, false
			}
		case '}', ']':
			depth--
		}
	}
	return 0, true
}

// merge is RFC 7396's MergePatch(Target, Patch) on decoded values, with the
// sentinel. It may modify target (which Apply owns) and returns the result.
func merge(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return resolve(patch)
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = make(map[string]any, len(p))
	}
	for k, pv := range p {
		if pv == nil {
			delete(t, k)
			continue
		}
		// An absent member is nil here, which merge treats like any other
		// non-object target: an object patch value is merged into {}.
		t[k] = merge(t[k], pv)
	}
	return t
}

// resolve returns a non-object patch value as it goes into the result: the
// value itself, with every NullSentinel string (including inside arrays,
// and inside objects inside arrays) replaced by null. Nulls inside an
// array are kept: an array replaces its target verbatim.
func resolve(v any) any {
	switch x := v.(type) {
	case string:
		if x == NullSentinel {
			return nil
		}
	case []any:
		for i, e := range x {
			x[i] = resolve(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = resolve(e)
		}
	}
	return v
}

// encode writes v compactly with sorted keys (encoding/json's order for
// map[string]any), HTML escaping off and no trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // unreachable for decoded values
		return nil, fmt.Errorf("mergepatch: encoding the result: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
