package model

import (
	"errors"
	"testing"
)

func TestPublicStateSet(t *testing.T) {
	s := PublicStates(PublicActive, PublicWaiting, PublicActive)
	if !s.Has(PublicWaiting) || !s.Has(PublicActive) || s.Has(PublicCompleted) || s.Has(0) || s.Has(200) {
		t.Fatalf("membership of %v wrong", s)
	}
	if got := s.String(); got != "waiting,active" {
		t.Fatalf("String = %q", got)
	}
	if got := IdempotencyStatesText(s); got != ",waiting,active," {
		t.Fatalf("text = %q", got)
	}
	if got := IdempotencyStatesText(0); got != "" {
		t.Fatalf("empty text = %q", got)
	}
	// every public state is valid, and only they
	for st := PublicState(0); st < 20; st++ {
		p := &ExecutionCreateParams{IdempotencyKey: "k", IdempotencyStates: PublicStates(st)}
		err := validateIdempotencyStates(p.IdempotencyStates, p.IdempotencyKey)
		if valid := st.String() != ""; valid != (err == nil) {
			t.Errorf("state %d (%q): %v", st, st, err)
		}
		if err != nil && !errors.Is(err, ErrValidation) {
			t.Errorf("state %d: not a validation error: %v", st, err)
		}
	}
	if got := PublicStates(PublicSkipped, 13).String(); got != "skipped,13" {
		t.Fatalf("unknown bits shown as %q", got)
	}
}
