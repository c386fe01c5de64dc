package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on ingress values. Every store enforces them before writing.
const (
	MinPriority = 0
	MaxPriority = 9000

	MaxPayloadBytes        = 1 << 20 // payload of one execution
	MaxResultBytes         = 1 << 20 // result of one execution
	MaxReasonBytes         = 1024    // reasons, progress messages, details
	MaxIdempotencyKeyBytes = 256
	MaxTags                = 64
	MaxTagKeyBytes         = 128
	MaxTagValueBytes       = 4096
	MaxMetadataEntries     = 64
	MaxMetadataKeyBytes    = 256
	MaxMetadataBytes       = 32 << 10 // keys and values of one execution's metadata together
	MaxCapabilityTokens    = 256
	MaxCapabilityBytes     = 4096
	MaxRetries             = 1000
	MaxLeaseTTL            = 24 * time.Hour
	MaxGrantTTL            = 60 * time.Second
	MaxPolicyDelay         = 30 * 24 * time.Hour
	MaxIdempotencyTTL      = 30 * 24 * time.Hour
	MaxPageSize            = 1000

	DefaultIdempotencyTTL = 24 * time.Hour
	DefaultMaxReclaims    = 1000
	DefaultMaxReplays     = 10
	DefaultLeaseHistory   = 1000 // entries kept per execution
)

// ClampPriority clamps p to [MinPriority, MaxPriority].
func ClampPriority(p int) int {
	return min(max(p, MinPriority), MaxPriority)
}

// EligibleScore orders the eligible index: higher priority first, then FIFO
// by the original creation time. The value stays below 2^53, so a Valkey
// sorted-set score (a double) holds it exactly.
func EligibleScore(priority int, createdAtMs int64) int64 {
	return -int64(ClampPriority(priority))*1_000_000_000_000 + createdAtMs
}

// BackoffKind selects how retry delays grow.
type BackoffKind uint8

// Backoff kinds. The zero value is exponential.
const (
	BackoffExponential BackoffKind = iota
	BackoffFixed
)

func (k BackoffKind) String() string {
	if k == BackoffFixed {
		return "fixed"
	}
	return "exponential"
}

// RetryPolicy decides whether a failed attempt is retried and after how long.
// The zero value never retries. Delays are whole milliseconds; no jitter is
// added, so retry times are reproducible.
type RetryPolicy struct {
	// MaxRetries is how many retries follow the first attempt (0–1000).
	MaxRetries int `json:"max_retries,omitempty"`
	// Backoff is exponential (the zero value) or fixed.
	Backoff BackoffKind `json:"-"`
	// Delay is the fixed delay (default 1s).
	Delay time.Duration `json:"-"`
	// InitialDelay is the first exponential delay (default 1s).
	InitialDelay time.Duration `json:"-"`
	// Multiplier grows the exponential delay (default 2, range 1–100).
	Multiplier float64 `json:"multiplier,omitempty"`
	// MaxDelay caps the exponential delay (default 60s).
	MaxDelay time.Duration `json:"-"`
}

// Policy defaults.
const (
	DefaultRetryDelay      = time.Second
	DefaultInitialDelay    = time.Second
	DefaultMultiplier      = 2.0
	DefaultMaxBackoffDelay = 60 * time.Second
)

// WithDefaults fills zero fields with the defaults.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Delay == 0 {
		p.Delay = DefaultRetryDelay
	}
	if p.InitialDelay == 0 {
		p.InitialDelay = DefaultInitialDelay
	}
	if p.Multiplier == 0 {
		p.Multiplier = DefaultMultiplier
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = DefaultMaxBackoffDelay
	}
	return p
}

// Validate checks the policy and names the first bad field.
func (p RetryPolicy) Validate() error {
	bad := func(field, reason string, got any, want string) error {
		return &Error{Code: CodeInvalidPolicy, Field: "RetryPolicy." + field, Detail: reason, Got: fmt.Sprint(got), Want: want}
	}
	if p.MaxRetries < 0 || p.MaxRetries > MaxRetries {
		return bad("MaxRetries", "out_of_range", p.MaxRetries, "0.."+strconv.Itoa(MaxRetries))
	}
	if p.Backoff > BackoffFixed {
		return bad("Backoff", "unknown", int(p.Backoff), "BackoffExponential or BackoffFixed")
	}
	d := p.WithDefaults()
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Delay", p.Delay}, {"InitialDelay", p.InitialDelay}, {"MaxDelay", p.MaxDelay}} {
		if f.v < 0 || f.v > MaxPolicyDelay {
			return bad(f.name, "out_of_range", f.v, "0.."+MaxPolicyDelay.String()+" (0 means the default)")
		}
		if f.v%time.Millisecond != 0 {
			return bad(f.name, "not_whole_milliseconds", f.v, "a whole number of milliseconds")
		}
	}
	if p.Multiplier != p.Multiplier || p.Multiplier < 0 || (p.Multiplier != 0 && p.Multiplier < 1) || p.Multiplier > 100 {
		return bad("Multiplier", "out_of_range", p.Multiplier, "1..100 (0 means the default)")
	}
	if d.MaxDelay < d.InitialDelay {
		return bad("MaxDelay", "below_initial_delay", d.MaxDelay, "at least InitialDelay ("+d.InitialDelay.String()+")")
	}
	return nil
}

// BackoffMs returns the delay in milliseconds before retry number
// retryCount+1, where retryCount retries have already happened. The
// exponential form is min(initial·multiplier^retryCount, max), computed by
// repeated float64 multiplication so that the Lua store computes the same
// value bit for bit.
func (p RetryPolicy) BackoffMs(retryCount int) int64 {
	d := p.WithDefaults()
	if d.Backoff == BackoffFixed {
		return d.Delay.Milliseconds()
	}
	delay := float64(d.InitialDelay.Milliseconds())
	maxMs := float64(d.MaxDelay.Milliseconds())
	for i := 0; i < retryCount && delay < maxMs; i++ {
		delay *= d.Multiplier
	}
	if delay > maxMs {
		delay = maxMs
	}
	return int64(delay)
}

// retryPolicyJSON is the wire form of RetryPolicy.
type retryPolicyJSON struct {
	MaxRetries     *int     `json:"max_retries"`
	Backoff        *string  `json:"backoff"`
	DelayMs        *int64   `json:"delay_ms"`
	InitialDelayMs *int64   `json:"initial_delay_ms"`
	Multiplier     *float64 `json:"multiplier"`
	MaxDelayMs     *int64   `json:"max_delay_ms"`
}

// retryPolicyGoNames maps the JSON keys to the Go fields errors name.
var retryPolicyGoNames = map[string]string{
	"max_retries": "MaxRetries", "backoff": "Backoff", "delay_ms": "Delay",
	"initial_delay_ms": "InitialDelay", "multiplier": "Multiplier", "max_delay_ms": "MaxDelay",
}

// ParseRetryPolicyJSON parses the JSON form
//
//	{"max_retries":3,"backoff":"exponential","initial_delay_ms":1000,"multiplier":2,"max_delay_ms":60000}
//	{"max_retries":3,"backoff":"fixed","delay_ms":500}
//
// Unknown fields, wrong types and out-of-range values are validation errors
// naming the field.
func ParseRetryPolicyJSON(b []byte) (RetryPolicy, error) {
	var w retryPolicyJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		field := "RetryPolicy"
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			field += "." + cmp.Or(retryPolicyGoNames[te.Field], te.Field)
		} else if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field += "." + strings.Trim(f, `"`)
		}
		return RetryPolicy{}, &Error{Code: CodeInvalidPolicy, Field: field, Detail: "malformed"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return RetryPolicy{}, &Error{Code: CodeInvalidPolicy, Field: "RetryPolicy", Detail: "trailing_data"}
	}
	var p RetryPolicy
	ms := func(field string, v *int64) (time.Duration, error) {
		if v == nil {
			return 0, nil
		}
		if *v < 0 || *v > MaxPolicyDelay.Milliseconds() {
			return 0, &Error{Code: CodeInvalidPolicy, Field: "RetryPolicy." + field, Detail: "out_of_range",
				Got: strconv.FormatInt(*v, 10) + "ms", Want: "0.." + strconv.FormatInt(MaxPolicyDelay.Milliseconds(), 10) + "ms"}
		}
		return time.Duration(*v) * time.Millisecond, nil
	}
	if w.MaxRetries != nil {
		p.MaxRetries = *w.MaxRetries
	}
	if w.Backoff != nil {
		switch *w.Backoff {
		case "exponential":
			p.Backoff = BackoffExponential
		case "fixed":
			p.Backoff = BackoffFixed
		default:
			return RetryPolicy{}, &Error{Code: CodeInvalidPolicy, Field: "RetryPolicy.Backoff", Detail: "unknown"}
		}
	}
	var err error
	if p.Delay, err = ms("Delay", w.DelayMs); err != nil {
		return RetryPolicy{}, err
	}
	if p.InitialDelay, err = ms("InitialDelay", w.InitialDelayMs); err != nil {
		return RetryPolicy{}, err
	}
	if p.MaxDelay, err = ms("MaxDelay", w.MaxDelayMs); err != nil {
		return RetryPolicy{}, err
	}
	if w.Multiplier != nil {
		p.Multiplier = *w.Multiplier
	}
	if err := p.Validate(); err != nil {
		return RetryPolicy{}, err
	}
	return p, nil
}

// MarshalJSON writes the wire form ParseRetryPolicyJSON reads.
func (p RetryPolicy) MarshalJSON() ([]byte, error) {
	kind := p.Backoff.String()
	w := retryPolicyJSON{MaxRetries: &p.MaxRetries, Backoff: &kind}
	if p.Backoff == BackoffFixed {
		v := p.Delay.Milliseconds()
		w.DelayMs = &v
	} else {
		a, b, m := p.InitialDelay.Milliseconds(), p.MaxDelay.Milliseconds(), p.Multiplier
		w.InitialDelayMs, w.MaxDelayMs, w.Multiplier = &a, &b, &m
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the wire form.
func (p *RetryPolicy) UnmarshalJSON(b []byte) error {
	v, err := ParseRetryPolicyJSON(b)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Capabilities is a sorted, de-duplicated set of capability tokens. Build it
// with ParseCapabilities or ParseCapabilityCSV; stores normalise whatever
// they receive again.
type Capabilities []string

// CSV returns the comma-joined form.
func (c Capabilities) CSV() string { return strings.Join(c, ",") }

// ParseCapabilities validates tokens and returns them sorted and
// de-duplicated. Rules: no empty token, no ',', no whitespace or control
// character (valid UTF-8 otherwise), at most 256 distinct tokens, and the
// joined CSV at most 4096 bytes. field names the input in errors
// ("capabilities", "required_capabilities").
func ParseCapabilities(field string, tokens []string) (Capabilities, error) {
	bad := func(reason string) error {
		return &Error{Code: CodeInvalidCapabilities, Field: field, Detail: reason}
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	for _, t := range tokens {
		if len(t) > MaxCapabilityBytes {
			return nil, bad("too_many_bytes")
		}
	}
	for _, t := range tokens {
		switch {
		case t == "":
			return nil, bad("empty_token")
		case strings.IndexByte(t, ',') >= 0:
			return nil, bad("comma_in_token")
		case !utf8.ValidString(t):
			return nil, bad("invalid_utf8")
		}
		for _, r := range t {
			if unicode.IsControl(r) || unicode.IsSpace(r) {
				return nil, bad("control_or_whitespace")
			}
		}
	}
	out := make(Capabilities, len(tokens))
	copy(out, tokens)
	slices.Sort(out)
	n := 0
	for i, t := range out {
		if i == 0 || t != out[n-1] {
			out[n] = t
			n++
		}
	}
	out = out[:n]
	if len(out) > MaxCapabilityTokens {
		return nil, bad("too_many_tokens")
	}
	total := len(out) - 1
	for _, t := range out {
		total += len(t)
	}
	if total > MaxCapabilityBytes {
		return nil, bad("too_many_bytes")
	}
	return out, nil
}

// ParseCapabilityCSV parses a comma-separated list with the rules of
// ParseCapabilities; the empty string is the empty set.
func ParseCapabilityCSV(field, csv string) (Capabilities, error) {
	if csv == "" {
		return nil, nil
	}
	if len(csv) > MaxCapabilityBytes {
		return nil, &Error{Code: CodeInvalidCapabilities, Field: field, Detail: "too_many_bytes"}
	}
	return ParseCapabilities(field, strings.Split(csv, ","))
}

// Missing returns the tokens of required that have does not hold, sorted.
// Both sets must be normalised.
func (required Capabilities) Missing(have Capabilities) Capabilities {
	var out Capabilities
	j := 0
	for _, r := range required {
		for j < len(have) && have[j] < r {
			j++
		}
		if j < len(have) && have[j] == r {
			continue
		}
		out = append(out, r)
	}
	return out
}

// SubsetOf reports whether every token of c is in have.
func (c Capabilities) SubsetOf(have Capabilities) bool { return len(c.Missing(have)) == 0 }

// ValidateTags checks tag keys against the namespaced rule
// ^[a-z][a-z0-9_]*\.[^.] (a caller prefix, a dot, then a name; the rest is
// printable ASCII without spaces) and the size limits.
func ValidateTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return &Error{Code: CodeInvalidInput, Field: "Tags", Detail: "too_many_tags"}
	}
	// Keys in sorted order, so that the error (which names the key) does not
	// depend on map iteration order.
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := tags[k]
		if err := ValidateTagKey(k); err != nil {
			return err
		}
		if len(v) > MaxTagValueBytes {
			return &Error{Code: CodeInvalidInput, Field: "Tags", Detail: "value_too_long:" + k}
		}
		if !utf8.ValidString(v) {
			return &Error{Code: CodeInvalidInput, Field: "Tags", Detail: "value_invalid_utf8:" + k}
		}
	}
	return nil
}

// ValidateMetadata checks execution metadata (headers): at most
// MaxMetadataEntries entries; each key 1..MaxMetadataKeyBytes bytes of
// printable ASCII without spaces (as an HTTP header name, so that a W3C
// "traceparent" or a "baggage" header carries over unchanged); each value
// valid UTF-8; keys and values together at most MaxMetadataBytes.
// Errors name the field "Metadata" and, in the detail, the key.
func ValidateMetadata(md map[string]string) error {
	if len(md) > MaxMetadataEntries {
		return &Error{Code: CodeInvalidInput, Field: "Metadata", Detail: "too_many_entries",
			Got: strconv.Itoa(len(md)), Want: "at most " + strconv.Itoa(MaxMetadataEntries)}
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the error names a key: the same one whatever the map order
	total := 0
	for _, k := range keys {
		v := md[k]
		if !validMetadataKey(k) {
			d := k
			if len(d) > 64 || !utf8.ValidString(d) {
				d = "<invalid>"
			}
			return &Error{Code: CodeInvalidInput, Field: "Metadata", Detail: "invalid_key:" + d,
				Want: "1.." + strconv.Itoa(MaxMetadataKeyBytes) + " bytes of printable ASCII without spaces"}
		}
		if !utf8.ValidString(v) {
			return &Error{Code: CodeInvalidInput, Field: "Metadata", Detail: "value_invalid_utf8:" + k}
		}
		total += len(k) + len(v)
	}
	if total > MaxMetadataBytes {
		return &Error{Code: CodeInvalidInput, Field: "Metadata", Detail: "too_large",
			Got: strconv.Itoa(total) + " bytes", Want: "at most " + strconv.Itoa(MaxMetadataBytes) + " bytes"}
	}
	return nil
}

// validMetadataKey: 1..MaxMetadataKeyBytes bytes of printable ASCII, no space.
func validMetadataKey(k string) bool {
	if len(k) == 0 || len(k) > MaxMetadataKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}

// tagKeyWant says what a valid tag key looks like.
var tagKeyWant = `"<namespace>.<name>", e.g. "app.user_id": a namespace of [a-z][a-z0-9_]*, a dot, ` +
	`then a name of printable ASCII without spaces that does not start with '.'; 3..` + strconv.Itoa(MaxTagKeyBytes) + ` bytes`

// ValidateTagKey checks one tag key: "<namespace>.<name>" where the
// namespace is a lowercase letter followed by [a-z0-9_]*, and the name is
// printable ASCII without spaces (e.g. "app.user_id").
func ValidateTagKey(k string) error {
	bad := func() error {
		d, got := k, strconv.Quote(k)
		if len(d) > 64 || !utf8.ValidString(d) {
			d, got = "<invalid>", ""
		}
		return &Error{Code: CodeInvalidTagKey, Field: "Tags", Detail: d, Got: got, Want: tagKeyWant}
	}
	if len(k) > MaxTagKeyBytes || len(k) < 3 || k[0] < 'a' || k[0] > 'z' {
		return bad()
	}
	i := 1
	for i < len(k) && (k[i] >= 'a' && k[i] <= 'z' || k[i] >= '0' && k[i] <= '9' || k[i] == '_') {
		i++
	}
	if i >= len(k)-1 || k[i] != '.' || k[i+1] == '.' {
		return bad()
	}
	for j := i + 1; j < len(k); j++ {
		if k[j] <= ' ' || k[j] >= 0x7f {
			return bad()
		}
	}
	return nil
}

// ValidateText checks a free-text input (a reason, a message): valid UTF-8
// and at most MaxReasonBytes.
func ValidateText(field, s string) error {
	if len(s) > MaxReasonBytes {
		return invalidField(field, "too_long")
	}
	if !utf8.ValidString(s) {
		return invalidField(field, "invalid_utf8")
	}
	return nil
}

// ValidateIdempotencyKey checks an idempotency key: 1–256 bytes of valid
// UTF-8 without control characters. The empty key means "none".
func ValidateIdempotencyKey(k string) error {
	if k == "" {
		return nil
	}
	if len(k) > MaxIdempotencyKeyBytes {
		return invalidField("IdempotencyKey", "too_long")
	}
	if !utf8.ValidString(k) {
		return invalidField("IdempotencyKey", "invalid_utf8")
	}
	for _, r := range k {
		if unicode.IsControl(r) {
			return invalidField("IdempotencyKey", "control_character")
		}
	}
	return nil
}

// FailureCategory classifies a failure. Unknown categories are treated as
// transient: an unrecognised category must never burn the remaining retries.
type FailureCategory string

// Failure categories.
const (
	FailureTransient  FailureCategory = "transient"
	FailurePermanent  FailureCategory = "permanent"
	FailureInfraCrash FailureCategory = "infra_crash"
	FailureTimeout    FailureCategory = "timeout"
	FailureCancelled  FailureCategory = "cancelled"
)

// Categories the worker runtime reports.
const (
	// FailurePanic: the handler panicked (retried).
	FailurePanic FailureCategory = "panic"
	// FailurePayloadInvalid: the payload could not be decoded (not retried:
	// it never will decode).
	FailurePayloadInvalid FailureCategory = "payload_invalid"
	// FailureUnknownKind: the worker has no handler for the kind (retried,
	// so that a worker that has one can run it).
	FailureUnknownKind FailureCategory = "unknown_kind"
	// FailureInvalidOutcome: the handler's outcome cannot be recorded (a
	// result over MaxResultBytes, Fail with a malformed category, an
	// outcome the store refuses as invalid). Not retried: a retry would
	// produce the same outcome.
	FailureInvalidOutcome FailureCategory = "invalid_outcome"
)

// Retryable reports whether a failure of this category may be retried:
// everything except permanent, cancelled, payload_invalid and
// invalid_outcome.
func (c FailureCategory) Retryable() bool {
	return c != FailurePermanent && c != FailureCancelled && c != FailurePayloadInvalid && c != FailureInvalidOutcome
}

// ValidateFailureCategory checks the category's form: 0–64 bytes of
// [a-z0-9_]. Unknown well-formed categories are accepted and retried.
func ValidateFailureCategory(c FailureCategory) error {
	if len(c) > 64 {
		return invalidField("FailureCategory", "too_long")
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '_') {
			return invalidField("FailureCategory", "bad_character")
		}
	}
	return nil
}
