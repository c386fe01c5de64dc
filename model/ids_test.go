package model

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// requireValidation fails t unless err is an *Error that matches
// ErrValidation and names field (any non-empty field when field is ""). It
// returns a copy of the error.
func requireValidation(t *testing.T, err error, field string) Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *Error", err, err)
	}
	if !errors.Is(err, ErrValidation) {
		t.Fatalf("error %v does not match ErrValidation", err)
	}
	if e.Field == "" || (field != "" && e.Field != field) {
		t.Fatalf("error %v names field %q, want %q", err, e.Field, field)
	}
	return *e
}

const sampleUUID = "0123abcd-4567-89ef-0123-456789abcdef"

func TestParseUUID(t *testing.T) {
	t.Parallel()
	u, err := ParseUUID(strings.ToUpper(sampleUUID))
	if err != nil {
		t.Fatal(err)
	}
	if got := u.String(); got != sampleUUID {
		t.Fatalf("String() = %q, want the lower-case %q", got, sampleUUID)
	}
	for _, s := range []string{
		"", "0123abcd", sampleUUID + "0", sampleUUID[:35], "00000000-0000-0000-0000-000000000000",
		"0123abcd-4567-89ef-0123-456789abcdeg", "0123abcd_4567-89ef-0123-456789abcdef",
		"0123abcd-4567-89ef-0123-456789abcde\u00e9"[:36], " 123abcd-4567-89ef-0123-456789abcdef",
	} {
		_, err := ParseUUID(s)
		requireValidation(t, err, "UUID")
	}
	if (UUID{}).String() != "" || !(UUID{}).IsZero() {
		t.Fatal("the zero UUID must print as empty and be zero")
	}
}

func TestNewUUIDv4(t *testing.T) {
	t.Parallel()
	u := NewUUIDv4([16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if got := u.String(); got != "ffffffff-ffff-4fff-bfff-ffffffffffff" {
		t.Fatalf("version/variant bits: %s", got)
	}
	z := NewUUIDv4([16]byte{})
	if z.IsZero() {
		t.Fatal("NewUUIDv4 of zero bytes must not be the zero UUID")
	}
	if _, err := ParseUUID(z.String()); err != nil {
		t.Fatalf("NewUUIDv4 output does not parse: %v", err)
	}
}

func TestExecutionID(t *testing.T) {
	t.Parallel()
	u, _ := ParseUUID(sampleUUID)
	id := NewExecutionID(7, u)
	if got, want := id.String(), "{fp:7}:"+sampleUUID; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if id.Partition() != 7 || id.UUID() != u || id.IsZero() {
		t.Fatalf("accessors: %d %v %v", id.Partition(), id.UUID(), id.IsZero())
	}
	back, err := ParseExecutionID(id.String())
	if err != nil || back != id {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if (ExecutionID{}).String() != "" {
		t.Fatal("the zero id must print as empty")
	}
	text, _ := id.MarshalText()
	var un ExecutionID
	if err := un.UnmarshalText(text); err != nil || un != id {
		t.Fatalf("text round trip: %v %v", un, err)
	}
	if err := un.UnmarshalText(nil); err != nil || !un.IsZero() {
		t.Fatalf("empty text must unmarshal to the zero id: %v %v", un, err)
	}
	if MustParseExecutionID(id.String()) != id {
		t.Fatal("MustParseExecutionID")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustParseExecutionID of garbage did not panic")
			}
		}()
		MustParseExecutionID("garbage")
	}()

	for _, tc := range []struct{ in, detail string }{
		{"", "malformed"},
		{"{fp:7}" + sampleUUID, "malformed"},
		{"fp:7}:" + sampleUUID, "malformed"},
		{"{fp:}:" + sampleUUID, "malformed"},
		{"{fp:07}:" + sampleUUID, "malformed"},
		{"{fp:+7}:" + sampleUUID, "malformed"},
		{"{fp:-0}:" + sampleUUID, "malformed"},
		{"{fp: 7}:" + sampleUUID, "malformed"},
		{"{fp:123456}:" + sampleUUID, "malformed"},
		{"{fp:16384}:" + sampleUUID, "partition_out_of_range"},
		{"{fp:99999}:" + sampleUUID, "partition_out_of_range"},
		{"{fp:7}:" + sampleUUID + "x", "malformed"},
		{"{fp:7}:00000000-0000-0000-0000-000000000000", "malformed"},
	} {
		_, err := ParseExecutionID(tc.in)
		e := requireValidation(t, err, "ID")
		if e.Detail != tc.detail {
			t.Errorf("ParseExecutionID(%q): detail %q, want %q", tc.in, e.Detail, tc.detail)
		}
	}
	if _, err := ParseExecutionID("{fp:16383}:" + sampleUUID); err != nil {
		t.Fatalf("the largest partition must parse: %v", err)
	}
}

func TestExecutionIDCompare(t *testing.T) {
	t.Parallel()
	a := MustParseExecutionID("{fp:1}:00000000-0000-4000-8000-000000000001")
	b := MustParseExecutionID("{fp:1}:00000000-0000-4000-8000-000000000002")
	c := MustParseExecutionID("{fp:10}:00000000-0000-4000-8000-000000000001")
	if a.Compare(b) >= 0 || b.Compare(a) <= 0 || a.Compare(a) != 0 {
		t.Fatal("ids of one partition must order by uuid")
	}
	if a.Compare(c) <= 0 { // '}' sorts after '0': "{fp:1}:" > "{fp:10}:" as text
		t.Fatal("ids must order by their text form")
	}
}

func TestUUIDShapedIDs(t *testing.T) {
	t.Parallel()
	for _, p := range uuidParsers {
		s, err := p.parse(sampleUUID)
		if err != nil || s != sampleUUID {
			t.Errorf("%s(%q) = %q, %v", p.field, sampleUUID, s, err)
		}
		_, err = p.parse("nope")
		requireValidation(t, err, p.field)
	}
}

var uuidParsers = []struct {
	field string
	parse func(string) (string, error)
}{
	{"attempt_id", func(s string) (string, error) { v, err := ParseAttemptID(s); return v.String(), err }},
	{"lease_id", func(s string) (string, error) { v, err := ParseLeaseID(s); return v.String(), err }},
	{"flow_id", func(s string) (string, error) { v, err := ParseFlowID(s); return v.String(), err }},
	{"waitpoint_id", func(s string) (string, error) { v, err := ParseWaitpointID(s); return v.String(), err }},
	{"budget_id", func(s string) (string, error) { v, err := ParseBudgetID(s); return v.String(), err }},
	{"quota_id", func(s string) (string, error) { v, err := ParseQuotaID(s); return v.String(), err }},
}

// names lists the name-shaped ids with an independent statement of their
// rules.
var names = []struct {
	field string
	re    *regexp.Regexp
	parse func(string) error
}{
	{"Lane", regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`), func(s string) error { _, err := ParseLaneID(s); return err }},
	{"WorkerID", regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`), func(s string) error { _, err := ParseWorkerID(s); return err }},
	{"WorkerInstanceID", regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`), func(s string) error { _, err := ParseWorkerInstanceID(s); return err }},
	{"Namespace", regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`), func(s string) error { _, err := ParseNamespace(s); return err }},
	{"Kind", regexp.MustCompile(`^[!-~]{1,128}$`), func(s string) error { _, err := ParseKind(s); return err }},
}

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		ok   map[string]bool
		desc string
	}{
		{"default", map[string]bool{"Lane": true, "WorkerID": true, "WorkerInstanceID": true, "Namespace": true, "Kind": true}, "plain"},
		{"Emails.v2-x_y", map[string]bool{"Lane": true, "WorkerID": true, "WorkerInstanceID": true, "Kind": true}, "upper case"},
		{"email.send:v1", map[string]bool{"Kind": true}, "colon"},
		{"", nil, "empty"},
		{"a b", nil, "space"},
		{"{fp:1}", map[string]bool{"Kind": true}, "braces"},
		{strings.Repeat("a", 65), map[string]bool{"WorkerID": true, "WorkerInstanceID": true, "Kind": true}, "65 bytes"},
		{strings.Repeat("a", 129), nil, "129 bytes"},
		{"é", nil, "non-ASCII"},
	} {
		for _, n := range names {
			err := n.parse(tc.in)
			if tc.ok[n.field] {
				if err != nil {
					t.Errorf("%s %s (%q): %v", n.field, tc.desc, tc.in, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s %s (%q) accepted", n.field, tc.desc, tc.in)
				continue
			}
			requireValidation(t, err, n.field)
		}
	}
	if DefaultLane.Validate() != nil || DefaultNamespace.Validate() != nil {
		t.Fatal("the defaults must be valid")
	}
}

// ---- fuzz targets ----

func FuzzParseExecutionID(f *testing.F) {
	for _, s := range []string{
		"{fp:0}:" + sampleUUID, "{fp:16383}:" + sampleUUID, "{fp:16384}:" + sampleUUID, "{fp:007}:" + sampleUUID,
		"{fp:+1}:" + sampleUUID, "{fp:1}:" + strings.ToUpper(sampleUUID), "{fp:1}", "", "{fp:1}:{fp:1}:" + sampleUUID,
		"{fp:1}:00000000-0000-0000-0000-000000000000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseExecutionID(s)
		if err != nil {
			requireValidation(t, err, "ID")
			return
		}
		// The only non-canonical form accepted is an upper-case uuid.
		i := strings.Index(s, "}:")
		if canon := s[:i+2] + strings.ToLower(s[i+2:]); id.String() != canon {
			t.Fatalf("ParseExecutionID(%q).String() = %q", s, id.String())
		}
		back, err := ParseExecutionID(id.String())
		if err != nil || back != id {
			t.Fatalf("round trip of %q: %v %v", s, back, err)
		}
		if id.Partition() >= MaxPartitions || id.IsZero() {
			t.Fatalf("ParseExecutionID(%q) = partition %d, zero %v", s, id.Partition(), id.IsZero())
		}
	})
}

func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{sampleUUID, strings.ToUpper(sampleUUID), "", "00000000-0000-0000-0000-000000000000",
		"0123abcd-4567-89ef-0123-456789abcdeg", "0123abcd4567-89ef-0123-456789abcdef0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUUID(s)
		for _, p := range uuidParsers {
			v, perr := p.parse(s)
			if (perr == nil) != (err == nil) {
				t.Fatalf("%s(%q) and ParseUUID disagree: %v vs %v", p.field, s, perr, err)
			}
			if perr != nil {
				requireValidation(t, perr, p.field)
			} else if v != u.String() {
				t.Fatalf("%s(%q) = %q, ParseUUID %q", p.field, s, v, u)
			}
		}
		if err != nil {
			requireValidation(t, err, "UUID")
			return
		}
		if u.IsZero() || u.String() != strings.ToLower(s) {
			t.Fatalf("ParseUUID(%q) = %q", s, u)
		}
		if back, err := ParseUUID(u.String()); err != nil || back != u {
			t.Fatalf("round trip of %q: %v %v", s, back, err)
		}
	})
}

func FuzzNames(f *testing.F) {
	for _, s := range []string{"default", "a", "A.b-c_d", "", " ", "a b", "é", "{x}", "ns:1", "\x7f",
		strings.Repeat("z", 64), strings.Repeat("z", 65), strings.Repeat("z", 128), strings.Repeat("z", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range names {
			err := n.parse(s)
			if want := n.re.MatchString(s); want != (err == nil) {
				t.Fatalf("%s %q: valid by the rule %v, parse error %v", n.field, s, want, err)
			}
			if err != nil {
				requireValidation(t, err, n.field)
			}
		}
	})
}
