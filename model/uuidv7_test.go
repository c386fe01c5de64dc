package model

import (
	"bytes"
	"testing"
)

// Version-7 UUIDs sort by (ms, seq) as bytes and as text, whatever their
// random tail, and carry the version and variant bits.
func TestUUIDv7Order(t *testing.T) {
	t.Parallel()
	keys := []struct {
		ms  int64
		seq uint64
	}{{1, 0}, {1, 1}, {1, 4095}, {1, 4096}, {1, 1 << 30}, {1, MaxUUIDv7Seq}, {2, 0}, {1 << 40, 7}}
	var prev UUID
	for i, k := range keys {
		u := NewUUIDv7(k.ms, k.seq, [4]byte{byte(200 - i), 0xff, 0xff, 0xff})
		if u[6]>>4 != 7 || u[8]>>6 != 2 {
			t.Fatalf("%+v: version/variant bits of %s", k, u)
		}
		if got, err := ParseUUID(u.String()); err != nil || got != u {
			t.Fatalf("%s does not round-trip: %v", u, err)
		}
		if i > 0 && (bytes.Compare(prev[:], u[:]) >= 0 || prev.String() >= u.String()) {
			t.Fatalf("%s (key %+v) does not sort after %s", u, k, prev)
		}
		prev = u
	}
}
