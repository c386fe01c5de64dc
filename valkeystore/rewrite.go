package valkeystore

import (
	"fmt"
	"slices"
	"strings"
)

// A Lua 5.1 tokenizer, enough to tell names from strings, comments and
// numbers, and the one rewrite made when a script is assembled:
//
//	e.<field>  the field's place in a decoded record (record.go): e[1][i],
//	           e[2][i], or rec_cold(e)[1|2][i]
//
// so that no record is converted field by field. e.k and e.c (the record's
// keys and cold fields) are kept; e.<name> that is no field is an error,
// found when the store is built. Strings and comments are copied
// unchanged, and the rewrite keeps every line where it was, so a line of
// the assembled script still maps to its source line (scripts.go).

type tokKind uint8

const (
	tokSpace tokKind = iota
	tokComment
	tokString
	tokNumber
	tokName
	tokPunct
)

type token struct {
	kind tokKind
	text string
	line int // 1-based line of the token's first byte
}

// luaTokens cuts src into tokens; their texts concatenate to src.
func luaTokens(src string) []token {
	var out []token
	n, line := len(src), 1
	for i := 0; i < n; {
		c := src[i]
		j := i + 1
		kind := tokPunct
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			kind = tokSpace
			for j < n && strings.IndexByte(" \t\n\r\v\f", src[j]) >= 0 {
				j++
			}
		case c == '-' && j < n && src[j] == '-':
			kind = tokComment
			j = i + 2
			if level, ok := longBracket(src, j); ok {
				j = longEnd(src, j, level)
			} else {
				for j < n && src[j] != '\n' {
					j++
				}
			}
		case c == '\'' || c == '"':
			kind = tokString
			for j < n && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, n)
		case c == '[':
			if level, ok := longBracket(src, i); ok {
				kind = tokString
				j = longEnd(src, i, level)
			}
		case c >= '0' && c <= '9' || c == '.' && j < n && src[j] >= '0' && src[j] <= '9':
			kind = tokNumber
			for j < n && (isIdent(src[j]) || src[j] == '.' ||
				((src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E') &&
					!strings.HasPrefix(src[i:], "0x") && !strings.HasPrefix(src[i:], "0X"))) {
				j++
			}
		case isIdentStart(c):
			kind = tokName
			for j < n && isIdent(src[j]) {
				j++
			}
		case c == '.':
			for j < n && j < i+3 && src[j] == '.' {
				j++
			}
		case strings.IndexByte("=~<>", c) >= 0 && j < n && src[j] == '=':
			j++
		}
		out = append(out, token{kind: kind, text: src[i:j], line: line})
		line += strings.Count(src[i:j], "\n")
		i = j
	}
	return out
}

// luaNameRefs calls f for every name in src that is not a field or method
// name (after "." or ":"): the names a chunk may take from an enclosing
// scope. Names in strings and comments are not names.
func luaNameRefs(src string, f func(name string, line int)) {
	prev := ""
	for _, t := range luaTokens(src) {
		switch t.kind {
		case tokSpace, tokComment:
			continue
		case tokName:
			if prev != "." && prev != ":" {
				f(t.text, t.line)
			}
		}
		prev = t.text
	}
}

// recordNames rewrites e.<field> to the field's place in the record.
func recordNames(src string) (string, error) {
	toks := luaTokens(src)
	var out strings.Builder
	out.Grow(len(src) + len(src)/8)
	prev := ""
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if field, ok := recordRef(toks, i, prev); ok {
			slot, ok := recordSlots[field]
			if !ok {
				return "", fmt.Errorf("line %d: e.%s is not a record field", t.line, field)
			}
			out.WriteString(slot.expr())
			i += 2
			prev = field
			continue
		}
		out.WriteString(t.text)
		if t.kind != tokSpace && t.kind != tokComment {
			prev = t.text
		}
	}
	return out.String(), nil
}

// recordRef reports whether toks[i:] is e.<field> (not e.k or e.c), prev
// being the text of the token before.
func recordRef(toks []token, i int, prev string) (string, bool) {
	if toks[i].kind != tokName || toks[i].text != "e" || prev == "." || prev == ":" ||
		i+2 >= len(toks) || toks[i+1].text != "." || toks[i+2].kind != tokName {
		return "", false
	}
	f := toks[i+2].text
	return f, f != "k" && f != "c"
}

// recordFieldsIn returns the record fields (e.<field>) src names, in order,
// without repeats.
func recordFieldsIn(src string) []string {
	toks := luaTokens(src)
	var out []string
	prev := ""
	for i, t := range toks {
		if t.kind == tokSpace || t.kind == tokComment {
			continue
		}
		if f, ok := recordRef(toks, i, prev); ok && !slices.Contains(out, f) {
			if _, field := recordSlots[f]; field {
				out = append(out, f)
			}
		}
		prev = t.text
	}
	return out
}

// longBracket reports whether src[i:] opens a long bracket "[", "=" * level,
// "[".
func longBracket(src string, i int) (int, bool) {
	if i >= len(src) || src[i] != '[' {
		return 0, false
	}
	j := i + 1
	for j < len(src) && src[j] == '=' {
		j++
	}
	if j < len(src) && src[j] == '[' {
		return j - i - 1, true
	}
	return 0, false
}

// longEnd returns the index just past the long bracket opened at i.
func longEnd(src string, i, level int) int {
	closer := "]" + strings.Repeat("=", level) + "]"
	k := strings.Index(src[i+level+2:], closer)
	if k < 0 {
		return len(src)
	}
	return i + level + 2 + k + len(closer)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
