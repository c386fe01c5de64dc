package model

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"time"
)

// Waitpoint tokens (issue 11). A token names one waitpoint of one
// execution and proves that this engine issued it, so a third party (an
// approval link in an email, a webhook) can deliver a signal to the
// waitpoint with nothing but the token. It is an HMAC-SHA256 over the
// waitpoint's identity under a key of a KeyRing; the key ring lives in the
// host's configuration, shared by every process, never in the store
// (docs/ARCHITECTURE.md, "Waitpoint tokens").
//
// Wire form: "ffw1." followed by the unpadded base64url encoding of
//
//	key id length (1 byte) | key id | partition (2 bytes, big endian) |
//	execution UUID (16) | waitpoint UUID (16) | created at, Unix ms
//	(8 bytes, big endian) | HMAC-SHA256 of everything before it, under
//	the domain "flowfabric waitpoint token v1" (32 bytes)

// tokenPrefix starts every token of this version.
const tokenPrefix = "ffw1."

// tokenDomain separates these MACs from any other use of the same key.
const tokenDomain = "flowfabric waitpoint token v1\x00"

// MaxSigningKeys is the most keys a KeyRing holds.
const MaxSigningKeys = 16

// MinSecretBytes is the shortest accepted signing secret.
const MinSecretBytes = 32

// MaxTokenBytes bounds a token's length: longer input is refused before
// it is decoded.
const MaxTokenBytes = 256

// SigningKey is one key of a KeyRing.
type SigningKey struct {
	// ID names the key inside the tokens it signs: 1–32 bytes of
	// [a-z0-9_-].
	ID string
	// Secret is the HMAC-SHA256 key, at least MinSecretBytes (32) random
	// bytes.
	Secret []byte
	// RetireAt ends the key's grace period: from then on tokens signed
	// with it are refused. Zero: it never retires. The first key of a
	// ring signs, so it cannot retire.
	RetireAt time.Time
}

// KeyRing signs tokens with its first key and verifies them with any of
// its keys that has not retired. Rotating is a new ring: the new key
// first, the previous one after it with a RetireAt that leaves the tokens
// already sent time to be used. A ring is only ever replaced whole, so a
// rotation back to an earlier key (A, then B, then A) is the ring [A, B]
// and never leaves a current key missing or a deleted key in use. A
// KeyRing is safe for concurrent use.
type KeyRing struct {
	keys []SigningKey
	byID map[string]int
}

// NewKeyRing checks keys (a validation error names the field, such as
// "Keys[1].Secret") and returns a ring that signs with keys[0]. It copies
// the secrets.
func NewKeyRing(keys ...SigningKey) (*KeyRing, error) {
	if len(keys) == 0 || len(keys) > MaxSigningKeys {
		return nil, OutOfRange("Keys", len(keys), "1.."+strconv.Itoa(MaxSigningKeys))
	}
	r := &KeyRing{byID: make(map[string]int, len(keys))}
	for i, k := range keys {
		field := "Keys[" + strconv.Itoa(i) + "]."
		if err := validateKeyID(k.ID); err != nil {
			return nil, prefixField(err, field)
		}
		if _, dup := r.byID[k.ID]; dup {
			return nil, &Error{Code: CodeInvalidInput, Field: field + "ID", Detail: "duplicate", Got: k.ID}
		}
		if len(k.Secret) < MinSecretBytes {
			return nil, &Error{Code: CodeInvalidInput, Field: field + "Secret", Detail: "too_short",
				Got: strconv.Itoa(len(k.Secret)) + " bytes", Want: "at least " + strconv.Itoa(MinSecretBytes) + " bytes"}
		}
		if i == 0 && !k.RetireAt.IsZero() {
			return nil, &Error{Code: CodeInvalidInput, Field: field + "RetireAt", Detail: "the signing key cannot retire"}
		}
		r.byID[k.ID] = i
		r.keys = append(r.keys, SigningKey{ID: k.ID, Secret: append([]byte(nil), k.Secret...), RetireAt: k.RetireAt})
	}
	return r, nil
}

func validateKeyID(id string) error {
	if id == "" || len(id) > 32 {
		return &Error{Code: CodeInvalidInput, Field: "ID", Detail: "length", Got: strconv.Itoa(len(id)), Want: "1..32 bytes"}
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return &Error{Code: CodeInvalidInput, Field: "ID", Detail: "bad_char", Got: id, Want: "[a-z0-9_-]"}
		}
	}
	return nil
}

// SigningKeyID is the id of the key that signs.
func (r *KeyRing) SigningKeyID() string { return r.keys[0].ID }

// WaitpointToken is what a token names.
type WaitpointToken struct {
	Execution ExecutionID
	Waitpoint WaitpointID
	// CreatedAt is the waitpoint's creation time, in whole milliseconds.
	CreatedAt time.Time
	// KeyID is the key that signed the token (set by Verify; Sign uses
	// the ring's signing key).
	KeyID string
}

// Sign returns the token of t under the ring's signing key.
func (r *KeyRing) Sign(t WaitpointToken) (string, error) {
	if t.Execution.IsZero() {
		return "", invalidField("Execution", "empty")
	}
	if t.Waitpoint == (WaitpointID{}) {
		return "", invalidField("Waitpoint", "empty")
	}
	if t.CreatedAt.IsZero() || t.CreatedAt.UnixMilli() <= 0 {
		return "", invalidField("CreatedAt", "missing")
	}
	k := r.keys[0]
	body := make([]byte, 0, 1+len(k.ID)+2+16+16+8+sha256.Size)
	body = append(body, byte(len(k.ID)))
	body = append(body, k.ID...)
	body = binary.BigEndian.AppendUint16(body, uint16(t.Execution.Partition())) //nolint:gosec // partitions are < 65536
	u := t.Execution.UUID()
	body = append(body, u[:]...)
	body = append(body, t.Waitpoint[:]...)
	body = binary.BigEndian.AppendUint64(body, uint64(t.CreatedAt.UnixMilli())) //nolint:gosec // checked positive above
	body = append(body, tokenMAC(k.Secret, body)...)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(body), nil
}

func tokenMAC(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(tokenDomain))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks token against the ring at now and returns what it names.
// Every refusal — malformed, truncated, tampered, forged, signed by an
// unknown or retired key — is the same ErrInvalidToken, with no detail a
// forger could learn from; the MAC is compared in constant time. Verify
// reads nothing but the token, so callers check it before any store state.
func (r *KeyRing) Verify(token string, now time.Time) (WaitpointToken, error) {
	bad := WaitpointToken{}
	if len(token) > MaxTokenBytes || !strings.HasPrefix(token, tokenPrefix) {
		return bad, ErrInvalidToken
	}
	body, err := base64.RawURLEncoding.Strict().DecodeString(token[len(tokenPrefix):])
	if err != nil || len(body) < 1 {
		return bad, ErrInvalidToken
	}
	n := int(body[0])
	if len(body) != 1+n+2+16+16+8+sha256.Size {
		return bad, ErrInvalidToken
	}
	i, ok := r.byID[string(body[1:1+n])]
	if !ok {
		return bad, ErrInvalidToken
	}
	k := r.keys[i]
	if !k.RetireAt.IsZero() && !now.Before(k.RetireAt) {
		return bad, ErrInvalidToken
	}
	signed, mac := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if !hmac.Equal(mac, tokenMAC(k.Secret, signed)) {
		return bad, ErrInvalidToken
	}
	p := signed[1+n:]
	var eu, wu UUID
	copy(eu[:], p[2:18])
	copy(wu[:], p[18:34])
	ms := binary.BigEndian.Uint64(p[34:42])
	if eu.IsZero() || wu.IsZero() || ms == 0 || ms > uint64(maxTimeMs) {
		return bad, ErrInvalidToken
	}
	return WaitpointToken{
		Execution: NewExecutionID(int(binary.BigEndian.Uint16(p[0:2])), eu),
		Waitpoint: WaitpointID(wu),
		CreatedAt: time.UnixMilli(int64(ms)).UTC(), //nolint:gosec // bounded above
		KeyID:     k.ID,
	}, nil
}

// maxTimeMs bounds a token's creation time (the year 9999).
const maxTimeMs = 253402300799999
