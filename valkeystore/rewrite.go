package valkeystore

import (
	"fmt"
	"slices"
	"strings"
)

// Names rewritten when a script is built, so that no table is built to
// bind them and no record is converted field by field:
//
//	e.<field>  the field's place in a decoded record (record.go): e[1][i],
//	           e[2][i], or rec_cold(e)[1|2][i]
//	K.<key>    KEYS[i], i the key's position in the script's declaration
//	A.<arg>    ARGV[i]
//
// The record names are rewritten in every library definition and script
// body first (recordNames), so that picking the definitions a script needs
// sees rec_cold; the script's names are rewritten in the assembled script
// (scriptNames). A K.<name> or A.<name> the script does not declare becomes
// an expression that raises an error when it is evaluated, as a use of an
// undeclared name did when K and A were tables. e.k and e.c (the record's
// keys and cold fields) are kept. Strings and comments are copied
// unchanged. Both fail on e.<name> that is no field, and scriptNames on K
// or A used other than as K.<name> or A.<name>: programming errors, found
// when the store is built.

// recordNames rewrites e.<field>.
func recordNames(src string) (string, error) { return rewrite(src, nil) }

// scriptNames rewrites K.<key> and A.<arg> of s.
func scriptNames(src string, s *script) (string, error) { return rewrite(src, s) }

// rewrite rewrites e.<field> when s is nil, K.<key> and A.<arg> otherwise.
func rewrite(src string, s *script) (string, error) {
	var out strings.Builder
	out.Grow(len(src) + len(src)/8)
	n := len(src)
	member := false // the previous token was a single "." (a field access)
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == '-' && i+1 < n && src[i+1] == '-':
			j := i + 2
			if level, ok := longBracket(src, j); ok {
				j = longEnd(src, j, level)
			} else {
				for j < n && src[j] != '\n' {
					j++
				}
			}
			out.WriteString(src[i:j])
			i = j
		case c == '\'' || c == '"':
			j := i + 1
			for j < n && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, n)
			out.WriteString(src[i:j])
			i = j
			member = false
		case c == '[':
			j := i + 1
			if level, ok := longBracket(src, i); ok {
				j = longEnd(src, i, level)
			}
			out.WriteString(src[i:j])
			i = j
			member = false
		case c == '.':
			j := i + 1
			for j < n && src[j] == '.' {
				j++
			}
			out.WriteString(src[i:j])
			member = j == i+1
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < n && (isIdent(src[j]) || src[j] == '.' ||
				((src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			out.WriteString(src[i:j])
			i = j
			member = false
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdent(src[j]) {
				j++
			}
			name := src[i:j]
			root := !member && ((s == nil && name == "e") || (s != nil && (name == "K" || name == "A")))
			member = false
			if !root {
				out.WriteString(name)
				i = j
				continue
			}
			field, end := "", j
			if j+1 < n && src[j] == '.' && isIdentStart(src[j+1]) {
				end = j + 1
				for end < n && isIdent(src[end]) {
					end++
				}
				field = src[j+1 : end]
			}
			repl, err := rewriteName(s, name, field)
			if err != nil {
				return "", err
			}
			out.WriteString(repl)
			i = end
		default:
			out.WriteByte(c)
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				member = false
			}
			i++
		}
	}
	return out.String(), nil
}

// rewriteName replaces root.field (field empty: root alone).
func rewriteName(s *script, root, field string) (string, error) {
	switch root {
	case "e":
		if field == "" || field == "k" || field == "c" {
			return "e" + dotted(field), nil
		}
		if slot, ok := recordSlots[field]; ok {
			return slot.expr(), nil
		}
		return "", fmt.Errorf("valkeystore: e.%s is not a record field", field)
	default:
		if field == "" {
			return "", fmt.Errorf("valkeystore: %s: %s used other than as %s.<name>", s.name, root, root)
		}
		list, array, what := s.keys, "KEYS", "key"
		if root == "A" {
			list, array, what = s.args, "ARGV", "arg"
		}
		if i := slices.Index(list, field); i >= 0 {
			return fmt.Sprintf("%s[%d]", array, i+1), nil
		}
		return fmt.Sprintf("error('valkeystore: %s: undeclared %s %s')", s.name, what, field), nil
	}
}

func dotted(field string) string {
	if field == "" {
		return ""
	}
	return "." + field
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
