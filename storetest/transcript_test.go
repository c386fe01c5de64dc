package storetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseTranscript checks that comments, blank lines and steps are
// read and written back unchanged, and that a command without ---- is
// refused.
func TestParseTranscript(t *testing.T) {
	dir := t.TempDir()
	src := "# a comment\n\ncreate e1\n----\nok\ne1: unchanged\n\n# between\nadvance-clock 1s\n----\nnow +1s\n"
	path := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	chunks, err := parseTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var cmds []string
	for _, c := range chunks {
		if c.cmd == "" {
			b.WriteString(c.text)
			continue
		}
		cmds = append(cmds, c.cmd)
		b.WriteString(c.cmd + "\n----\n" + c.want)
	}
	if got := b.String(); got != src {
		t.Errorf("round trip:\n%s\nwant:\n%s", got, src)
	}
	if strings.Join(cmds, "|") != "create e1|advance-clock 1s" {
		t.Errorf("commands %q", cmds)
	}
	if err := os.WriteFile(path, []byte("create e1\ncreate e2\n----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parseTranscript(path); err == nil {
		t.Error("a command without ---- parsed")
	}
}
