package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestClampPriority(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{
		math.MinInt: 0, -1: 0, 0: 0, 1: 1, 8999: 8999, 9000: 9000, 9001: 9000, math.MaxInt: 9000,
	} {
		if got := ClampPriority(in); got != want {
			t.Errorf("ClampPriority(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestEligibleScore(t *testing.T) {
	t.Parallel()
	const maxTs = 253402300799999 // the largest stored time (year 9999)
	// Higher priority first, for creation times less than 10^12 ms (31
	// years) apart: one priority step is worth 10^12 ms (the spec's
	// −priority·10^12 + created_at).
	const t2025, span = 1735689600000, 1_000_000_000_000 - 1
	if !(EligibleScore(9000, t2025+span) < EligibleScore(8999, t2025)) {
		t.Fatal("priority 9000 must sort before 8999")
	}
	if !(EligibleScore(1, t2025+span) < EligibleScore(0, t2025)) {
		t.Fatal("priority 1 must sort before 0")
	}
	// FIFO within a priority.
	if !(EligibleScore(5, 100) < EligibleScore(5, 101)) {
		t.Fatal("earlier creation must sort first")
	}
	// Clamped like the stored priority.
	if EligibleScore(-3, 7) != EligibleScore(0, 7) || EligibleScore(99999, 7) != EligibleScore(9000, 7) {
		t.Fatal("scores must use the clamped priority")
	}
	if got := EligibleScore(2, 1234); got != -2_000_000_000_000+1234 {
		t.Fatalf("EligibleScore(2, 1234) = %d", got)
	}
	// Exact as a double: every score of a valid priority and time.
	for _, p := range []int{0, 1, 4500, 9000, math.MaxInt} {
		for _, ts := range []int64{0, 1, 1735689600000, maxTs} {
			s := EligibleScore(p, ts)
			if s <= -(1<<53) || s >= 1<<53 || int64(float64(s)) != s {
				t.Errorf("EligibleScore(%d, %d) = %d is not exact as a float64", p, ts, s)
			}
		}
	}
}

func TestBackoffMs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    RetryPolicy
		want []int64 // for retry counts 0, 1, 2, ...
	}{
		{"defaults: exponential 1s×2 capped at 60s", RetryPolicy{},
			[]int64{1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000}},
		{"initial 100ms ×1.5, truncated", RetryPolicy{InitialDelay: 100 * time.Millisecond, Multiplier: 1.5},
			[]int64{100, 150, 225, 337, 506, 759}},
		{"cap below the next step", RetryPolicy{InitialDelay: time.Second, Multiplier: 3, MaxDelay: 5 * time.Second},
			[]int64{1000, 3000, 5000, 5000}},
		{"multiplier 1 is constant", RetryPolicy{InitialDelay: 250 * time.Millisecond, Multiplier: 1},
			[]int64{250, 250, 250}},
		{"fixed default 1s", RetryPolicy{Backoff: BackoffFixed}, []int64{1000, 1000, 1000}},
		{"fixed 250ms ignores the exponential fields", RetryPolicy{Backoff: BackoffFixed, Delay: 250 * time.Millisecond,
			InitialDelay: time.Hour, Multiplier: 100}, []int64{250, 250, 250}},
		{"initial above the cap is capped", RetryPolicy{InitialDelay: 2 * time.Minute, MaxDelay: time.Minute},
			[]int64{60000, 60000}},
	} {
		for n, want := range tc.want {
			if got := tc.p.BackoffMs(n); got != want {
				t.Errorf("%s: BackoffMs(%d) = %d, want %d", tc.name, n, got, want)
			}
		}
	}
	// A huge retry count stays capped (and the loop stops at the cap).
	if got := (RetryPolicy{}).BackoffMs(math.MaxInt32); got != 60000 {
		t.Fatalf("BackoffMs(huge) = %d", got)
	}
	if got := (RetryPolicy{Multiplier: 100, MaxDelay: MaxPolicyDelay}).BackoffMs(1000); got != MaxPolicyDelay.Milliseconds() {
		t.Fatalf("BackoffMs with the largest cap = %d", got)
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p             RetryPolicy
		field, detail string
	}{
		{RetryPolicy{MaxRetries: -1}, "RetryPolicy.MaxRetries", "out_of_range"},
		{RetryPolicy{MaxRetries: MaxRetries + 1}, "RetryPolicy.MaxRetries", "out_of_range"},
		{RetryPolicy{Backoff: 2}, "RetryPolicy.Backoff", "unknown"},
		{RetryPolicy{Delay: -time.Millisecond}, "RetryPolicy.Delay", "out_of_range"},
		{RetryPolicy{Delay: 1500 * time.Microsecond}, "RetryPolicy.Delay", "not_whole_milliseconds"},
		{RetryPolicy{InitialDelay: MaxPolicyDelay + time.Millisecond}, "RetryPolicy.InitialDelay", "out_of_range"},
		{RetryPolicy{MaxDelay: time.Nanosecond}, "RetryPolicy.MaxDelay", "not_whole_milliseconds"},
		{RetryPolicy{Multiplier: 0.5}, "RetryPolicy.Multiplier", "out_of_range"},
		{RetryPolicy{Multiplier: 100.5}, "RetryPolicy.Multiplier", "out_of_range"},
		{RetryPolicy{Multiplier: -1}, "RetryPolicy.Multiplier", "out_of_range"},
		{RetryPolicy{Multiplier: math.NaN()}, "RetryPolicy.Multiplier", "out_of_range"},
		{RetryPolicy{InitialDelay: 2 * time.Second, MaxDelay: time.Second}, "RetryPolicy.MaxDelay", "below_initial_delay"},
		{RetryPolicy{InitialDelay: 2 * time.Minute}, "RetryPolicy.MaxDelay", "below_initial_delay"},
	} {
		err := tc.p.Validate()
		e := requireValidation(t, err, tc.field)
		if e.Code != CodeInvalidPolicy || e.Detail != tc.detail {
			t.Errorf("%+v: %v, want %s %s", tc.p, err, CodeInvalidPolicy, tc.detail)
		}
	}
	for _, p := range []RetryPolicy{
		{}, {MaxRetries: MaxRetries}, {Multiplier: 1}, {Multiplier: 100},
		{Backoff: BackoffFixed, Delay: MaxPolicyDelay},
		{InitialDelay: time.Second, MaxDelay: time.Second},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

func TestParseRetryPolicyJSON(t *testing.T) {
	t.Parallel()
	p, err := ParseRetryPolicyJSON([]byte(`{"max_retries":3,"backoff":"exponential","initial_delay_ms":1000,"multiplier":2,"max_delay_ms":60000}`))
	if err != nil || p != (RetryPolicy{MaxRetries: 3, InitialDelay: time.Second, Multiplier: 2, MaxDelay: time.Minute}) {
		t.Fatalf("exponential example: %+v %v", p, err)
	}
	p, err = ParseRetryPolicyJSON([]byte(`{"max_retries":3,"backoff":"fixed","delay_ms":500}`))
	if err != nil || p != (RetryPolicy{MaxRetries: 3, Backoff: BackoffFixed, Delay: 500 * time.Millisecond}) {
		t.Fatalf("fixed example: %+v %v", p, err)
	}
	if p, err := ParseRetryPolicyJSON([]byte(`{}`)); err != nil || p != (RetryPolicy{}) {
		t.Fatalf("empty object: %+v %v", p, err)
	}
	for _, tc := range []struct{ in, field, detail string }{
		{`{"max_retries":3,"jitter":true}`, "RetryPolicy.jitter", "malformed"},
		{`{"max_retries":"3"}`, "RetryPolicy.MaxRetries", "malformed"},
		{`{"max_retries":1.5}`, "RetryPolicy.MaxRetries", "malformed"},
		{`{"delay_ms":-1}`, "RetryPolicy.Delay", "out_of_range"},
		{`{"initial_delay_ms":2592000001}`, "RetryPolicy.InitialDelay", "out_of_range"},
		{`{"max_delay_ms":true}`, "RetryPolicy.MaxDelay", "malformed"},
		{`{"max_retries":1001}`, "RetryPolicy.MaxRetries", "out_of_range"},
		{`{"backoff":"linear"}`, "RetryPolicy.Backoff", "unknown"},
		{`{"multiplier":0.5}`, "RetryPolicy.Multiplier", "out_of_range"},
		{`{"initial_delay_ms":5000,"max_delay_ms":1000}`, "RetryPolicy.MaxDelay", "below_initial_delay"},
		{`{"max_retries":1} {}`, "RetryPolicy", "trailing_data"},
		{`{"max_retries":1`, "RetryPolicy", "malformed"},
		{`[1]`, "RetryPolicy", "malformed"},
		{``, "RetryPolicy", "malformed"},
	} {
		_, err := ParseRetryPolicyJSON([]byte(tc.in))
		e := requireValidation(t, err, tc.field)
		if e.Code != CodeInvalidPolicy || e.Detail != tc.detail {
			t.Errorf("%s: %v, want %s %s %s", tc.in, err, CodeInvalidPolicy, tc.field, tc.detail)
		}
	}
}

func TestRetryPolicyJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(RetryPolicy{MaxRetries: 2, Backoff: BackoffFixed, Delay: 250 * time.Millisecond})
	if err != nil || string(b) != `{"max_retries":2,"backoff":"fixed","delay_ms":250,"initial_delay_ms":null,"multiplier":null,"max_delay_ms":null}` {
		t.Fatalf("fixed: %s %v", b, err)
	}
	b, err = json.Marshal(RetryPolicy{MaxRetries: 1})
	if err != nil || string(b) != `{"max_retries":1,"backoff":"exponential","delay_ms":null,"initial_delay_ms":0,"multiplier":0,"max_delay_ms":0}` {
		t.Fatalf("exponential: %s %v", b, err)
	}
	var holder struct{ P RetryPolicy }
	if err := json.Unmarshal([]byte(`{"P":{"max_retries":4,"backoff":"fixed"}}`), &holder); err != nil ||
		holder.P != (RetryPolicy{MaxRetries: 4, Backoff: BackoffFixed}) {
		t.Fatalf("UnmarshalJSON: %+v %v", holder.P, err)
	}
	err = json.Unmarshal([]byte(`{"P":{"max_retries":-4}}`), &holder)
	requireValidation(t, err, "RetryPolicy.MaxRetries")
}

// relevant clears the fields the policy's backoff kind does not use, which
// MarshalJSON does not write.
func relevant(p RetryPolicy) RetryPolicy {
	if p.Backoff == BackoffFixed {
		p.InitialDelay, p.Multiplier, p.MaxDelay = 0, 0, 0
	} else {
		p.Delay = 0
	}
	return p
}

func FuzzParseRetryPolicyJSON(f *testing.F) {
	for _, s := range []string{
		`{"max_retries":3,"backoff":"exponential","initial_delay_ms":1000,"multiplier":2,"max_delay_ms":60000}`,
		`{"max_retries":3,"backoff":"fixed","delay_ms":500}`, `{}`, `null`, `[]`, `{"MAX_RETRIES":1}`,
		`{"multiplier":1e2}`, `{"multiplier":1e400}`, `{"delay_ms":2592000000}`, `{"max_retries":1}x`,
		`{"backoff":"fixed","initial_delay_ms":120000}`, `{"max_retries":1,"max_retries":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseRetryPolicyJSON(b)
		if err != nil {
			e := requireValidation(t, err, "")
			if e.Code != CodeInvalidPolicy || !strings.HasPrefix(e.Field, "RetryPolicy") {
				t.Fatalf("%q: %v", b, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid policy %+v: %v", b, p, err)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRetryPolicyJSON(out)
		if err != nil {
			t.Fatalf("%q -> %+v -> %s does not parse: %v", b, p, out, err)
		}
		if back != relevant(p) {
			t.Fatalf("%q -> %+v -> %s -> %+v", b, p, out, back)
		}
		for n := range 12 {
			if back.BackoffMs(n) != p.BackoffMs(n) {
				t.Fatalf("round trip changed BackoffMs(%d): %d vs %d", n, back.BackoffMs(n), p.BackoffMs(n))
			}
		}
	})
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	c, err := ParseCapabilities("Capabilities", []string{"x86", "gpu", "x86", "é-ok", "gpu"})
	if err != nil || !slices.Equal(c, Capabilities{"gpu", "x86", "é-ok"}) {
		t.Fatalf("sort and dedupe: %q %v", c, err)
	}
	if c.CSV() != "gpu,x86,é-ok" {
		t.Fatalf("CSV() = %q", c.CSV())
	}
	if c, err := ParseCapabilities("Capabilities", nil); err != nil || c != nil {
		t.Fatalf("empty: %q %v", c, err)
	}
	many := make([]string, MaxCapabilityTokens)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	if _, err := ParseCapabilities("Capabilities", many); err != nil {
		t.Fatalf("%d distinct tokens: %v", len(many), err)
	}
	if _, err := ParseCapabilities("Capabilities", append(slices.Clone(many), many...)); err != nil {
		t.Fatalf("duplicates count once: %v", err)
	}
	// 4096 bytes joined: 8 tokens of 511 bytes and 7 commas = 4095; one more byte is 4096.
	exact := make([]string, 8)
	for i := range exact {
		exact[i] = strings.Repeat(string(rune('a'+i)), 511)
	}
	exact[0] += "z"
	if _, err := ParseCapabilities("Capabilities", exact); err != nil {
		t.Fatalf("exactly %d bytes: %v", MaxCapabilityBytes, err)
	}
	for _, tc := range []struct {
		tokens []string
		detail string
	}{
		{[]string{"a", ""}, "empty_token"},
		{[]string{"a,b"}, "comma_in_token"},
		{[]string{"a\xff"}, "invalid_utf8"},
		{[]string{"a b"}, "control_or_whitespace"},
		{[]string{"a\tb"}, "control_or_whitespace"},
		{[]string{"a\x7f"}, "control_or_whitespace"},
		{[]string{"a\u0085"}, "control_or_whitespace"},
		{[]string{"a\u00a0"}, "control_or_whitespace"},
		{[]string{"a\u2028"}, "control_or_whitespace"},
		{append(slices.Clone(many), "zz"), "too_many_tokens"},
		{append(slices.Clone(exact), "q"), "too_many_bytes"},
		{[]string{strings.Repeat("a", MaxCapabilityBytes+1)}, "too_many_bytes"},
	} {
		_, err := ParseCapabilities("RequiredCapabilities", tc.tokens)
		e := requireValidation(t, err, "RequiredCapabilities")
		if e.Code != CodeInvalidCapabilities || e.Detail != tc.detail {
			t.Errorf("%.40q: %v, want %s", tc.tokens, err, tc.detail)
		}
	}
	if c, err := ParseCapabilityCSV("Capabilities", ""); err != nil || c != nil {
		t.Fatalf("empty CSV: %q %v", c, err)
	}
	if c, err := ParseCapabilityCSV("Capabilities", "b,a,b"); err != nil || !slices.Equal(c, Capabilities{"a", "b"}) {
		t.Fatalf("CSV: %q %v", c, err)
	}
	_, err = ParseCapabilityCSV("Capabilities", "a,,b")
	if e := requireValidation(t, err, "Capabilities"); e.Detail != "empty_token" {
		t.Fatalf("a,,b: %v", err)
	}
	_, err = ParseCapabilityCSV("Capabilities", strings.Repeat("a,", 2049))
	if e := requireValidation(t, err, "Capabilities"); e.Detail != "too_many_bytes" {
		t.Fatalf("long CSV: %v", err)
	}
}

func TestCapabilitiesMissing(t *testing.T) {
	t.Parallel()
	req := Capabilities{"gpu", "linux", "x86"}
	for _, tc := range []struct {
		have    Capabilities
		missing Capabilities
	}{
		{nil, Capabilities{"gpu", "linux", "x86"}},
		{Capabilities{"gpu", "linux", "x86"}, nil},
		{Capabilities{"arm", "gpu", "linux", "x86", "zz"}, nil},
		{Capabilities{"arm", "linux"}, Capabilities{"gpu", "x86"}},
		{Capabilities{"x86"}, Capabilities{"gpu", "linux"}},
	} {
		got := req.Missing(tc.have)
		if !slices.Equal(got, tc.missing) || req.SubsetOf(tc.have) != (len(tc.missing) == 0) {
			t.Errorf("Missing(%q) = %q, want %q", tc.have, got, tc.missing)
		}
	}
	if !Capabilities(nil).SubsetOf(nil) {
		t.Fatal("the empty set is a subset of everything")
	}
}

// capRules is an independent statement of the token rules.
func capTokenOK(tok string) bool {
	if tok == "" || strings.Contains(tok, ",") || !utf8.ValidString(tok) {
		return false
	}
	for _, r := range tok {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func FuzzParseCapabilityCSV(f *testing.F) {
	for _, s := range []string{"", "gpu", "gpu,x86", "x86,gpu,gpu", "a,,b", ",", "a b", "a\tb", "é", "\xff", "a,\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, csv string) {
		c, err := ParseCapabilityCSV("Capabilities", csv)
		valid := csv == ""
		if csv != "" && len(csv) <= MaxCapabilityBytes {
			valid = true
			for _, tok := range strings.Split(csv, ",") {
				valid = valid && capTokenOK(tok)
			}
		}
		if valid != (err == nil) {
			t.Fatalf("%q: valid by the rules %v, error %v", csv, valid, err)
		}
		if err != nil {
			if e := requireValidation(t, err, "Capabilities"); e.Code != CodeInvalidCapabilities {
				t.Fatalf("%q: %v", csv, err)
			}
			return
		}
		if !slices.IsSorted(c) || len(slices.Compact(slices.Clone(c))) != len(c) {
			t.Fatalf("%q -> %q: not sorted and distinct", csv, c)
		}
		back, err := ParseCapabilityCSV("Capabilities", c.CSV())
		if err != nil || !slices.Equal(back, c) {
			t.Fatalf("round trip of %q: %q %v", csv, back, err)
		}
		if !c.SubsetOf(c) || len(c.Missing(nil)) != len(c) {
			t.Fatalf("%q: Missing/SubsetOf", c)
		}
	})
}

func FuzzParseCapabilities(f *testing.F) {
	f.Add("gpu\nx86\ngpu")
	f.Add("a,b\nc")
	f.Add("\n")
	f.Fuzz(func(t *testing.T, list string) {
		tokens := strings.Split(list, "\n")
		c, err := ParseCapabilities("Capabilities", tokens)
		if err != nil {
			if e := requireValidation(t, err, "Capabilities"); e.Code != CodeInvalidCapabilities {
				t.Fatalf("%q: %v", tokens, err)
			}
			for _, tok := range tokens {
				if !capTokenOK(tok) || len(tok) > MaxCapabilityBytes {
					return
				}
			}
			if len(strings.Join(tokens, ",")) <= MaxCapabilityBytes && len(tokens) <= MaxCapabilityTokens {
				t.Fatalf("%q rejected: %v", tokens, err)
			}
			return
		}
		want := slices.Compact(slices.Sorted(slices.Values(tokens)))
		if !slices.Equal(c, want) {
			t.Fatalf("%q -> %q, want %q", tokens, c, want)
		}
		again, err := ParseCapabilities("Capabilities", c)
		if err != nil || !slices.Equal(again, c) {
			t.Fatalf("not idempotent: %q %v", again, err)
		}
	})
}

var tagKeyRule = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[!-\-/-~][!-~]*$`)

func TestValidateTags(t *testing.T) {
	t.Parallel()
	if err := ValidateTags(map[string]string{"app.k": "v", "ops.team.name": "x", "a1_.b": ""}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "ab", "a.", ".ab", "A.b", "1a.b", "a..b", "a-b.c", "a.b c", "a.é", "ab", strings.Repeat("a", 126) + ".bc"} {
		err := ValidateTagKey(k)
		e := requireValidation(t, err, "Tags")
		if e.Code != CodeInvalidTagKey {
			t.Errorf("%q: %v", k, err)
		}
		if !strings.Contains(err.Error(), `want "<namespace>.<name>", e.g. "app.user_id"`) {
			t.Errorf("%q: %v does not say what a valid key looks like", k, err)
		}
	}
	if err := ValidateTagKey(strings.Repeat("a", 126) + ".b"); err != nil {
		t.Fatalf("128-byte key: %v", err)
	}
	big := map[string]string{}
	for i := range MaxTags + 1 {
		big["app.k"+strings.Repeat("x", i)] = ""
	}
	if e := requireValidation(t, ValidateTags(big), "Tags"); e.Detail != "too_many_tags" {
		t.Fatalf("too many: %v", e)
	}
	for v, detail := range map[string]string{strings.Repeat("v", MaxTagValueBytes+1): "value_too_long:app.k", "\xff": "value_invalid_utf8:app.k"} {
		if e := requireValidation(t, ValidateTags(map[string]string{"app.k": v}), "Tags"); e.Detail != detail {
			t.Errorf("value: %v, want %s", e, detail)
		}
	}
}

// The error names the smallest bad key, whatever the map's iteration order
// (stores must reject the same input with the same error).
func TestValidateTagsDeterministic(t *testing.T) {
	t.Parallel()
	tags := map[string]string{"Bad": "", "alsoBad": "", "zz": "", "app.ok": "", "Z": "", "_x": "", "9.a": "", "a..": ""}
	for range 50 {
		err := ValidateTags(tags)
		if e := requireValidation(t, err, "Tags"); e.Detail != "9.a" {
			t.Fatalf("ValidateTags names %q, want the smallest bad key", e.Detail)
		}
	}
}

func FuzzValidateTags(f *testing.F) {
	for _, k := range []string{"app.k", "a.b", "ab", "A.b", "a..b", "a.b.c", "a.é", "a_1.x y"} {
		f.Add(k, "v")
	}
	f.Add("app.k", "\xff")
	f.Fuzz(func(t *testing.T, k, v string) {
		keyOK := len(k) <= MaxTagKeyBytes && tagKeyRule.MatchString(k)
		if err := ValidateTagKey(k); keyOK != (err == nil) {
			t.Fatalf("key %q: valid by the rule %v, error %v", k, keyOK, err)
		} else if err != nil {
			requireValidation(t, err, "Tags")
		}
		ok := keyOK && len(v) <= MaxTagValueBytes && utf8.ValidString(v)
		err := ValidateTags(map[string]string{k: v})
		if ok != (err == nil) {
			t.Fatalf("tag %q=%q: valid %v, error %v", k, v, ok, err)
		}
		if err != nil {
			requireValidation(t, err, "Tags")
		}
	})
}

func TestValidateText(t *testing.T) {
	t.Parallel()
	for s, detail := range map[string]string{
		"": "", "ok": "", "ünïcødé\n\t": "", strings.Repeat("x", MaxReasonBytes): "",
		strings.Repeat("x", MaxReasonBytes+1): "too_long", "\xff": "invalid_utf8",
	} {
		err := ValidateText("Reason", s)
		if detail == "" {
			if err != nil {
				t.Errorf("%.20q: %v", s, err)
			}
			continue
		}
		if e := requireValidation(t, err, "Reason"); e.Detail != detail {
			t.Errorf("%.20q: %v, want %s", s, err, detail)
		}
	}
}

func FuzzValidateText(f *testing.F) {
	f.Add("reason")
	f.Add("\xff")
	f.Add(strings.Repeat("x", MaxReasonBytes+1))
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateText("Message", s)
		if ok := len(s) <= MaxReasonBytes && utf8.ValidString(s); ok != (err == nil) {
			t.Fatalf("%q: valid %v, error %v", s, ok, err)
		}
		if err != nil {
			requireValidation(t, err, "Message")
		}
	})
}

func TestValidateIdempotencyKey(t *testing.T) {
	t.Parallel()
	for k, detail := range map[string]string{
		"": "", "order-42": "", "ключ 1": "", strings.Repeat("k", 256): "",
		strings.Repeat("k", 257): "too_long", "a\xffb": "invalid_utf8", "a\nb": "control_character", "a\u0085": "control_character",
	} {
		err := ValidateIdempotencyKey(k)
		if detail == "" {
			if err != nil {
				t.Errorf("%q: %v", k, err)
			}
			continue
		}
		if e := requireValidation(t, err, "IdempotencyKey"); e.Detail != detail {
			t.Errorf("%q: %v, want %s", k, err, detail)
		}
	}
}

func FuzzValidateIdempotencyKey(f *testing.F) {
	for _, k := range []string{"", "k", "a b", "a\x00", "\xff", "é", strings.Repeat("k", 257)} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		ok := len(k) <= MaxIdempotencyKeyBytes && utf8.ValidString(k) &&
			strings.IndexFunc(k, unicode.IsControl) < 0
		err := ValidateIdempotencyKey(k)
		if ok != (err == nil) {
			t.Fatalf("%q: valid %v, error %v", k, ok, err)
		}
		if err != nil {
			requireValidation(t, err, "IdempotencyKey")
		}
	})
}

func TestFailureCategory(t *testing.T) {
	t.Parallel()
	for c, retry := range map[FailureCategory]bool{
		FailureTransient: true, FailurePermanent: false, FailureInfraCrash: true,
		FailureTimeout: true, FailureCancelled: false, FailurePanic: true,
		FailurePayloadInvalid: false, FailureUnknownKind: true, "": true, "brand_new": true,
	} {
		if c.Retryable() != retry {
			t.Errorf("%q.Retryable() = %v", c, !retry)
		}
		if err := ValidateFailureCategory(c); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	for c, detail := range map[FailureCategory]string{"Bad": "bad_character", "a-b": "bad_character", FailureCategory(strings.Repeat("a", 65)): "too_long"} {
		if e := requireValidation(t, ValidateFailureCategory(c), "FailureCategory"); e.Detail != detail {
			t.Errorf("%q: %v", c, e)
		}
	}
}

func FuzzValidateFailureCategory(f *testing.F) {
	f.Add("transient")
	f.Add("Bad-Cat")
	f.Fuzz(func(t *testing.T, s string) {
		ok := len(s) <= 64 && regexp.MustCompile(`^[a-z0-9_]*$`).MatchString(s)
		err := ValidateFailureCategory(FailureCategory(s))
		if ok != (err == nil) {
			t.Fatalf("%q: valid %v, error %v", s, ok, err)
		}
		if err != nil {
			requireValidation(t, err, "FailureCategory")
		}
	})
}

// Every failure of ParseRetryPolicyJSON is a *Error even for bytes that
// are not JSON at all.
func TestParseRetryPolicyJSONGarbage(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{nil, []byte("\x00"), bytes.Repeat([]byte("{"), 10000), []byte(`"fixed"`)} {
		_, err := ParseRetryPolicyJSON(b)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%.20q: %v", b, err)
		}
	}
}
