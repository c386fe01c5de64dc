package model

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	tokenNow  = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	secretA   = bytes.Repeat([]byte("a"), 32)
	secretB   = bytes.Repeat([]byte("b"), 40)
	sampleTok = WaitpointToken{
		Execution: NewExecutionID(7, UUID{1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16}),
		Waitpoint: WaitpointID{9, 9, 9, 9, 9, 9, 0x49, 9, 0x89, 9, 9, 9, 9, 9, 9, 9},
		CreatedAt: tokenNow.Add(-time.Minute),
	}
)

func mustRing(t *testing.T, keys ...SigningKey) *KeyRing {
	t.Helper()
	r, err := NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustSign(t *testing.T, r *KeyRing, w WaitpointToken) string {
	t.Helper()
	s, err := r.Sign(w)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokenRoundTrip(t *testing.T) {
	r := mustRing(t, SigningKey{ID: "k1", Secret: secretA})
	tok := mustSign(t, r, sampleTok)
	if !strings.HasPrefix(tok, "ffw1.") || len(tok) > MaxTokenBytes {
		t.Fatalf("token %q", tok)
	}
	got, err := r.Verify(tok, tokenNow)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleTok
	want.KeyID = "k1"
	if got != want {
		t.Fatalf("verified %+v, want %+v", got, want)
	}
	// the ring copied the secret: changing the caller's slice changes nothing
	s := append([]byte(nil), secretA...)
	r2 := mustRing(t, SigningKey{ID: "k1", Secret: s})
	s[0] = 'z'
	if _, err := r2.Verify(tok, tokenNow); err != nil {
		t.Fatalf("after the caller changed its secret slice: %v", err)
	}
}

// TestTokenRefusals: every way a token can be wrong is the same
// ErrInvalidToken.
func TestTokenRefusals(t *testing.T) {
	r := mustRing(t, SigningKey{ID: "k1", Secret: secretA})
	tok := mustSign(t, r, sampleTok)
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, "ffw1."))
	enc := func(b []byte) string { return "ffw1." + base64.RawURLEncoding.EncodeToString(b) }
	cases := map[string]string{
		"empty":      "",
		"prefix":     "ffw2." + strings.TrimPrefix(tok, "ffw1."),
		"not base64": "ffw1.!!!",
		"padded":     tok + "=",
		"truncated":  tok[:len(tok)-3],
		"too long":   tok + strings.Repeat("A", MaxTokenBytes),
		"extended":   enc(append(append([]byte(nil), raw...), 0)),
		"only id":    enc(raw[:3]),
		"forged": func() string {
			other := mustRing(t, SigningKey{ID: "k1", Secret: secretB})
			return mustSign(t, other, sampleTok)
		}(),
		"unknown key": func() string {
			other := mustRing(t, SigningKey{ID: "k2", Secret: secretA})
			return mustSign(t, other, sampleTok)
		}(),
	}
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		cases["tampered byte "+string(rune('A'+i%26))+strings.Repeat("'", i/26)] = enc(b)
	}
	for name, tok := range cases {
		if _, err := r.Verify(tok, tokenNow); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: %v, want ErrInvalidToken", name, err)
		} else if e := err.(*Error); e.Detail != "" || e.Field != "" { //nolint:errorlint // the sentinel itself
			t.Errorf("%s: the refusal says more than invalid: %+v", name, e)
		}
	}
}

// TestTokenRotation: a ring signs with its first key and verifies with the
// others until they retire; rotating back to an earlier key is a ring like
// any other (FlowFabric's A→B→A rotation could leave the current key
// deleted).
func TestTokenRotation(t *testing.T) {
	a := SigningKey{ID: "a", Secret: secretA}
	b := SigningKey{ID: "b", Secret: secretB}
	ringA := mustRing(t, a)
	tokA := mustSign(t, ringA, sampleTok)

	// A → B: B signs, A is accepted for a day
	retire := tokenNow.Add(24 * time.Hour)
	ringB := mustRing(t, b, SigningKey{ID: a.ID, Secret: a.Secret, RetireAt: retire})
	tokB := mustSign(t, ringB, sampleTok)
	if tokA == tokB {
		t.Fatal("a new signing key made the same token")
	}
	for _, tok := range []string{tokA, tokB} {
		if _, err := ringB.Verify(tok, tokenNow); err != nil {
			t.Fatalf("during A's grace: %v", err)
		}
	}
	if _, err := ringB.Verify(tokA, retire); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("A after it retired: %v", err)
	}
	if _, err := ringB.Verify(tokB, retire.Add(time.Hour)); err != nil {
		t.Fatalf("B after A retired: %v", err)
	}

	// B → A: A signs again and B is in its grace period
	ringA2 := mustRing(t, a, SigningKey{ID: b.ID, Secret: b.Secret, RetireAt: retire})
	if got := mustSign(t, ringA2, sampleTok); got != tokA {
		t.Fatal("the same key and waitpoint gave another token")
	}
	for _, tok := range []string{tokA, tokB} {
		if _, err := ringA2.Verify(tok, tokenNow); err != nil {
			t.Fatalf("after rotating back: %v", err)
		}
	}
	if ringA2.SigningKeyID() != "a" {
		t.Fatalf("signing key %q", ringA2.SigningKeyID())
	}
}

func TestKeyRingValidation(t *testing.T) {
	long := SigningKey{ID: "ok", Secret: secretA}
	cases := []struct {
		keys  []SigningKey
		field string
	}{
		{nil, "Keys"},
		{[]SigningKey{{ID: "", Secret: secretA}}, "Keys[0].ID"},
		{[]SigningKey{{ID: "Upper", Secret: secretA}}, "Keys[0].ID"},
		{[]SigningKey{{ID: strings.Repeat("k", 33), Secret: secretA}}, "Keys[0].ID"},
		{[]SigningKey{{ID: "k", Secret: secretA[:31]}}, "Keys[0].Secret"},
		{[]SigningKey{{ID: "k", Secret: secretA, RetireAt: tokenNow}}, "Keys[0].RetireAt"},
		{[]SigningKey{long, {ID: "ok", Secret: secretB}}, "Keys[1].ID"},
		{make([]SigningKey, MaxSigningKeys+1), "Keys"},
	}
	for _, c := range cases {
		_, err := NewKeyRing(c.keys...)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrValidation) || e.Field != c.field {
			t.Errorf("%+v: %v, want a validation error naming %s", c.keys, err, c.field)
		}
	}
	r := mustRing(t, long)
	for _, w := range []WaitpointToken{
		{Waitpoint: sampleTok.Waitpoint, CreatedAt: tokenNow},
		{Execution: sampleTok.Execution, CreatedAt: tokenNow},
		{Execution: sampleTok.Execution, Waitpoint: sampleTok.Waitpoint},
	} {
		if _, err := r.Sign(w); !errors.Is(err, ErrValidation) {
			t.Errorf("Sign(%+v): %v", w, err)
		}
	}
}

// FuzzVerifyToken: any input verifies or is ErrInvalidToken, never a
// panic; what verifies signs back to the same token.
func FuzzVerifyToken(f *testing.F) {
	r, err := NewKeyRing(SigningKey{ID: "k1", Secret: secretA})
	if err != nil {
		f.Fatal(err)
	}
	tok, _ := r.Sign(sampleTok)
	f.Add(tok)
	f.Add("ffw1.")
	f.Add("ffw1.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		w, err := r.Verify(s, tokenNow)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		again, err := r.Sign(w)
		if err != nil || again != s {
			t.Fatalf("%q verified as %+v, which signs to %q (%v)", s, w, again, err)
		}
	})
}
