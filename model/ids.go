package model

import (
	"encoding/hex"
	"strconv"
	"strings"
)

// UUID is a 16-byte identifier in canonical 8-4-4-4-12 lower-case hex form
// when printed. The zero UUID is treated as absent.
type UUID [16]byte

// ParseUUID parses the canonical 36-character form. Upper-case hex digits are
// accepted and normalised to lower case. Malformed input (and the zero UUID)
// yields a validation error for field "uuid".
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, invalidField("UUID", "malformed")
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := fromHex(s[i])
		lo, ok2 := fromHex(s[i+1])
		if !ok1 || !ok2 {
			return UUID{}, invalidField("UUID", "malformed")
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	if u.IsZero() {
		return UUID{}, invalidField("UUID", "malformed")
	}
	return u, nil
}

func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// NewUUIDv4 turns 16 random bytes into a version-4 UUID. The caller supplies
// the randomness so that model never reads an entropy source on its own.
func NewUUIDv4(random [16]byte) UUID {
	random[6] = random[6]&0x0f | 0x40
	random[8] = random[8]&0x3f | 0x80
	if UUID(random).IsZero() {
		random[15] = 1
	}
	return UUID(random)
}

// NewUUIDv7 builds a version-7 UUID (RFC 9562): the Unix millisecond ms
// in the first 48 bits, then the 42 bits of seq (12 in rand_a, 30 at the
// top of rand_b), then 32 random bits. UUIDs built with increasing (ms,
// seq) sort in that order as bytes and as text, which is how the stores
// break ties between executions of equal priority and creation time: the
// engine counts seq up within a millisecond, so executions one process
// submits run in submission order however close together.
func NewUUIDv7(ms int64, seq uint64, random [4]byte) UUID {
	var u UUID
	for i := range 6 {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	u[6] = 0x70 | byte(seq>>38)&0x0f
	u[7] = byte(seq >> 30)
	u[8] = 0x80 | byte(seq>>24)&0x3f
	u[9] = byte(seq >> 16)
	u[10] = byte(seq >> 8)
	u[11] = byte(seq)
	copy(u[12:], random[:])
	if u.IsZero() {
		u[15] = 1
	}
	return u
}

// MaxUUIDv7Seq is the largest seq NewUUIDv7 keeps.
const MaxUUIDv7Seq = 1<<42 - 1

// IsZero reports whether u is the zero UUID.
func (u UUID) IsZero() bool { return u == UUID{} }

// String returns the canonical lower-case form, or "" for the zero UUID.
func (u UUID) String() string {
	if u.IsZero() {
		return ""
	}
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// ExecutionID identifies one execution. Its text form is "{fp:N}:<uuid>",
// where N is the execution's partition: the partition travels with the id,
// so every store and every process computes the same keys for it.
type ExecutionID struct {
	uuid UUID
	part uint16
}

// NewExecutionID builds an id in the given partition.
func NewExecutionID(partition int, u UUID) ExecutionID {
	return ExecutionID{uuid: u, part: uint16(partition)}
}

// ParseExecutionID parses "{fp:N}:<uuid>". It checks the form only; a store
// also checks N against its partition count.
func ParseExecutionID(s string) (ExecutionID, error) {
	rest, ok := strings.CutPrefix(s, "{fp:")
	if !ok {
		return ExecutionID{}, invalidField("ID", "malformed")
	}
	num, u, ok := strings.Cut(rest, "}:")
	if !ok || num == "" || len(num) > 5 || (len(num) > 1 && num[0] == '0') ||
		strings.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return ExecutionID{}, invalidField("ID", "malformed")
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n >= MaxPartitions {
		return ExecutionID{}, invalidField("ID", "partition_out_of_range")
	}
	id, err := ParseUUID(u)
	if err != nil {
		return ExecutionID{}, invalidField("ID", "malformed")
	}
	return ExecutionID{uuid: id, part: uint16(n)}, nil
}

// MustParseExecutionID is ParseExecutionID for tests and constants; it panics
// on malformed input.
func MustParseExecutionID(s string) ExecutionID {
	id, err := ParseExecutionID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// Partition is the execution partition the id lives in.
func (id ExecutionID) Partition() int { return int(id.part) }

// UUID is the id's random part.
func (id ExecutionID) UUID() UUID { return id.uuid }

// IsZero reports whether id is unset.
func (id ExecutionID) IsZero() bool { return id.uuid.IsZero() }

// String returns "{fp:N}:<uuid>", or "" for the zero id.
func (id ExecutionID) String() string {
	if id.IsZero() {
		return ""
	}
	return PartitionTag(id.Partition()) + ":" + id.uuid.String()
}

// Compare orders ids by their text form, the order listings use.
func (id ExecutionID) Compare(o ExecutionID) int { return strings.Compare(id.String(), o.String()) }

// MarshalText implements encoding.TextMarshaler.
func (id ExecutionID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ExecutionID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ExecutionID{}
		return nil
	}
	v, err := ParseExecutionID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// uuidID is the shared implementation of the UUID-shaped ids.
type uuidID = UUID

// AttemptID identifies one attempt of an execution.
type AttemptID uuidID

// LeaseID identifies one lease.
type LeaseID uuidID

// FlowID identifies a flow.
type FlowID uuidID

// WaitpointID identifies a waitpoint.
type WaitpointID uuidID

// SuspensionID identifies one suspension of an execution.
type SuspensionID uuidID

// SignalID identifies one delivered signal.
type SignalID uuidID

// BudgetID identifies a budget.
type BudgetID uuidID

// QuotaID identifies a quota policy.
type QuotaID uuidID

func (id AttemptID) String() string    { return UUID(id).String() }
func (id LeaseID) String() string      { return UUID(id).String() }
func (id FlowID) String() string       { return UUID(id).String() }
func (id WaitpointID) String() string  { return UUID(id).String() }
func (id BudgetID) String() string     { return UUID(id).String() }
func (id SuspensionID) String() string { return UUID(id).String() }
func (id SignalID) String() string     { return UUID(id).String() }

// IsZero reports whether the id is unset.
func (id WaitpointID) IsZero() bool { return UUID(id).IsZero() }

// IsZero reports whether the id is unset.
func (id SuspensionID) IsZero() bool { return UUID(id).IsZero() }

// IsZero reports whether the id is unset.
func (id SignalID) IsZero() bool { return UUID(id).IsZero() }

// MarshalText implements encoding.TextMarshaler.
func (id WaitpointID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// MarshalText implements encoding.TextMarshaler.
func (id SuspensionID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// MarshalText implements encoding.TextMarshaler.
func (id SignalID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
func (id QuotaID) String() string                { return UUID(id).String() }

// IsZero reports whether the id is unset.
func (id AttemptID) IsZero() bool { return UUID(id).IsZero() }

// IsZero reports whether the id is unset.
func (id LeaseID) IsZero() bool { return UUID(id).IsZero() }

// IsZero reports whether the id is unset.
func (id FlowID) IsZero() bool { return UUID(id).IsZero() }

// MarshalText implements encoding.TextMarshaler.
func (id AttemptID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// MarshalText implements encoding.TextMarshaler.
func (id LeaseID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

func parseUUIDField(field, s string) (UUID, error) {
	u, err := ParseUUID(s)
	if err != nil {
		return UUID{}, invalidField(field, "malformed")
	}
	return u, nil
}

// ParseAttemptID parses a canonical UUID.
func ParseAttemptID(s string) (AttemptID, error) {
	u, err := parseUUIDField("attempt_id", s)
	return AttemptID(u), err
}

// ParseLeaseID parses a canonical UUID.
func ParseLeaseID(s string) (LeaseID, error) {
	u, err := parseUUIDField("lease_id", s)
	return LeaseID(u), err
}

// ParseFlowID parses a canonical UUID.
func ParseFlowID(s string) (FlowID, error) {
	u, err := parseUUIDField("flow_id", s)
	return FlowID(u), err
}

// ParseWaitpointID parses a canonical UUID.
func ParseWaitpointID(s string) (WaitpointID, error) {
	u, err := parseUUIDField("waitpoint_id", s)
	return WaitpointID(u), err
}

// ParseSuspensionID parses a canonical UUID.
func ParseSuspensionID(s string) (SuspensionID, error) {
	u, err := parseUUIDField("suspension_id", s)
	return SuspensionID(u), err
}

// ParseSignalID parses a canonical UUID.
func ParseSignalID(s string) (SignalID, error) {
	u, err := parseUUIDField("signal_id", s)
	return SignalID(u), err
}

// ParseBudgetID parses a canonical UUID.
func ParseBudgetID(s string) (BudgetID, error) {
	u, err := parseUUIDField("budget_id", s)
	return BudgetID(u), err
}

// ParseQuotaID parses a canonical UUID.
func ParseQuotaID(s string) (QuotaID, error) {
	u, err := parseUUIDField("quota_id", s)
	return QuotaID(u), err
}

// Name-shaped ids. They appear inside store keys, so their alphabet is
// restricted: no hash-tag braces, no separators, no whitespace.
type (
	// LaneID names a lane (a queue). 1–64 bytes of [A-Za-z0-9_.-].
	LaneID string
	// WorkerID names a worker (a logical consumer). 1–128 bytes of [A-Za-z0-9_.-].
	WorkerID string
	// WorkerInstanceID names one running worker process. 1–128 bytes of [A-Za-z0-9_.-].
	WorkerInstanceID string
	// Namespace scopes idempotency keys and the worker registry. 1–64 bytes of [a-z0-9_.-].
	Namespace string
	// Kind names what an execution does; workers route payloads by it.
	// 1–128 bytes of printable ASCII without spaces.
	Kind string
)

// DefaultLane is the lane used when none is given.
const DefaultLane LaneID = "default"

// DefaultNamespace is the namespace used when none is given.
const DefaultNamespace Namespace = "default"

// ValidateName checks a name of 1–maxLen bytes of letters, digits, '_',
// '.' or '-' (the lane alphabet), naming field in the error.
func ValidateName(field, s string, maxLen int) error { return validName(field, s, maxLen, false) }

func validName(field, s string, maxLen int, lowerOnly bool) error {
	bad := func(reason string) error {
		want := "1.." + strconv.Itoa(maxLen) + " bytes of letters, digits, '_', '.' or '-'"
		if lowerOnly {
			want = "1.." + strconv.Itoa(maxLen) + " bytes of lowercase letters, digits, '_', '.' or '-'"
		}
		return &Error{Code: CodeInvalidInput, Field: field, Detail: reason, Got: showValue(s), Want: want}
	}
	if s == "" {
		return bad("empty")
	}
	if len(s) > maxLen {
		return bad("too_long")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		case c >= 'A' && c <= 'Z' && !lowerOnly:
		default:
			return bad("bad_character")
		}
	}
	return nil
}

// Validate checks the lane alphabet and length.
func (l LaneID) Validate() error { return validName("Lane", string(l), 64, false) }

// Validate checks the worker id alphabet and length.
func (w WorkerID) Validate() error { return validName("WorkerID", string(w), 128, false) }

// Validate checks the worker instance id alphabet and length.
func (w WorkerInstanceID) Validate() error {
	return validName("WorkerInstanceID", string(w), 128, false)
}

// Validate checks the namespace alphabet and length.
func (n Namespace) Validate() error { return validName("Namespace", string(n), 64, true) }

// Validate checks that the kind is 1–128 bytes of printable ASCII without spaces.
func (k Kind) Validate() error {
	if k == "" {
		return invalidField("Kind", "empty")
	}
	if len(k) > 128 {
		return invalidField("Kind", "too_long")
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] >= 0x7f {
			return invalidField("Kind", "bad_character")
		}
	}
	return nil
}

// ParseLaneID validates s as a lane id.
func ParseLaneID(s string) (LaneID, error) { l := LaneID(s); return l, l.Validate() }

// ParseWorkerID validates s as a worker id.
func ParseWorkerID(s string) (WorkerID, error) { w := WorkerID(s); return w, w.Validate() }

// ParseWorkerInstanceID validates s as a worker instance id.
func ParseWorkerInstanceID(s string) (WorkerInstanceID, error) {
	w := WorkerInstanceID(s)
	return w, w.Validate()
}

// ParseNamespace validates s as a namespace.
func ParseNamespace(s string) (Namespace, error) { n := Namespace(s); return n, n.Validate() }

// ParseKind validates s as an execution kind.
func ParseKind(s string) (Kind, error) { k := Kind(s); return k, k.Validate() }
