package model

import (
	"errors"
	"strings"
	"testing"
)

var (
	wpOwn = WaitpointID{1, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1}
	wpA   = WaitpointID{2, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 2}
	wpB   = WaitpointID{3, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 3}
)

func sig(id string, wp WaitpointID, name, source string) DeliveredSignal {
	return DeliveredSignal{ID: id, Waitpoint: wp, Name: name, Source: source}
}

// TestConditionSatisfied: each kind over the signals delivered so far,
// including engine.md's scenario of two distinct approvers.
func TestConditionSatisfied(t *testing.T) {
	twoApprovers := ResumeCondition{Kind: CondCount, Name: "approve", N: 2, Distinct: DistinctSources}
	composite := ResumeCondition{Kind: CondAllOf, Of: []ResumeCondition{
		{Kind: CondSignal, Name: "build_ok", Waitpoint: wpA},
		{Kind: CondCount, N: 2, Distinct: DistinctWaitpoints, Waitpoints: []WaitpointID{wpA, wpB}},
	}}
	cases := []struct {
		name string
		c    ResumeCondition
		sigs []DeliveredSignal
		want bool
	}{
		{"named signal, none", SignalFor("go"), nil, false},
		{"named signal, other name", SignalFor("go"), []DeliveredSignal{sig("1", wpOwn, "stop", "")}, false},
		{"named signal, other waitpoint", SignalFor("go"), []DeliveredSignal{sig("1", wpA, "go", "")}, false},
		{"named signal", SignalFor("go"), []DeliveredSignal{sig("1", wpOwn, "go", "")}, true},
		{"any signal", SignalFor(""), []DeliveredSignal{sig("1", wpOwn, "whatever", "")}, true},
		{"one approver twice", twoApprovers, []DeliveredSignal{sig("1", wpOwn, "approve", "u:alice"), sig("2", wpOwn, "approve", "u:alice")}, false},
		{"two approvers", twoApprovers, []DeliveredSignal{sig("1", wpOwn, "approve", "u:alice"), sig("2", wpOwn, "approve", "u:bob")}, true},
		{"a rejection does not count", twoApprovers, []DeliveredSignal{sig("1", wpOwn, "approve", "u:alice"), sig("2", wpOwn, "reject", "u:bob")}, false},
		{"signals count", ResumeCondition{Kind: CondCount, N: 2, Distinct: DistinctSignals},
			[]DeliveredSignal{sig("1", wpOwn, "a", "x"), sig("2", wpOwn, "b", "x")}, true},
		{"composite, half", composite, []DeliveredSignal{sig("1", wpA, "build_ok", "")}, false},
		{"composite", composite, []DeliveredSignal{sig("1", wpA, "build_ok", ""), sig("2", wpB, "x", "")}, true},
		{"operator only", ResumeCondition{Kind: CondOperator}, []DeliveredSignal{sig("1", wpOwn, "go", "")}, false},
		{"timeout only", ResumeCondition{Kind: CondTimeout}, []DeliveredSignal{sig("1", wpOwn, "go", "")}, false},
	}
	for _, c := range cases {
		if err := c.c.Validate("Condition"); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := c.c.Satisfied(wpOwn, c.sigs); got != c.want {
			t.Errorf("%s: satisfied %v, want %v", c.name, got, c.want)
		}
	}
	if !composite.Accepts(wpOwn, sig("9", wpB, "x", "")) || composite.Accepts(wpOwn, sig("9", wpOwn, "x", "")) {
		t.Error("Accepts: a signal on a listed waitpoint is read, one on the own waitpoint is not")
	}
}

func TestConditionValidation(t *testing.T) {
	deep := SignalFor("x")
	for range MaxConditionDepth {
		deep = ResumeCondition{Kind: CondAllOf, Of: []ResumeCondition{deep}}
	}
	cases := []struct {
		c     ResumeCondition
		field string
	}{
		{ResumeCondition{}, "Condition.Kind"},
		{ResumeCondition{Kind: CondAllOf}, "Condition.Of"},
		{deep, "Condition.Of[0].Of[0].Of[0].Of[0]"},
		{ResumeCondition{Kind: CondAllOf, Of: []ResumeCondition{{Kind: CondOperator}}}, "Condition.Of[0]"},
		{ResumeCondition{Kind: CondCount, N: 0, Distinct: DistinctSignals}, "Condition.N"},
		{ResumeCondition{Kind: CondCount, N: 1}, "Condition.Distinct"},
		{ResumeCondition{Kind: CondCount, N: 2, Distinct: DistinctWaitpoints}, "Condition.N"},
		{ResumeCondition{Kind: CondCount, N: 1, Distinct: DistinctWaitpoints, Waitpoints: []WaitpointID{wpA, wpA}}, "Condition.Waitpoints[1]"},
		{ResumeCondition{Kind: CondSignal, N: 3}, "Condition"},
		{ResumeCondition{Kind: CondTimeout, Name: "x"}, "Condition"},
		{SignalFor(strings.Repeat("x", 10000)), "Condition.Name"},
	}
	for _, c := range cases {
		err := c.c.Validate("Condition")
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrValidation) || e.Field != c.field {
			t.Errorf("%+v: %v, want a validation error naming %s", c.c, err, c.field)
		}
		if _, err := EncodeCondition(c.c); err == nil {
			t.Errorf("%+v encoded", c.c)
		}
	}
}

func TestConditionEncoding(t *testing.T) {
	c := ResumeCondition{Kind: CondAllOf, Of: []ResumeCondition{
		{Kind: CondSignal, Name: "go", Waitpoint: wpA},
		{Kind: CondCount, Name: "approve", N: 2, Distinct: DistinctSources, Waitpoints: []WaitpointID{wpA, wpB}},
	}}
	b, err := EncodeCondition(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCondition(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := EncodeCondition(back)
	if string(again) != string(b) {
		t.Fatalf("round trip:\n%s\n%s", b, again)
	}
	for _, bad := range []string{``, `{`, `{"k":"signal"} {}`, `{"k":"nope"}`, `{"k":"signal","x":1}`, `{"k":"signal","wp":"zz"}`,
		`{"k":"count","n":1,"distinct":"people"}`, `[]`, strings.Repeat(`{"k":"all_of","of":[`, 5) + `{"k":"signal"}` + strings.Repeat(`]}`, 5)} {
		if _, err := ParseCondition([]byte(bad)); !errors.Is(err, ErrValidation) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// FuzzParseCondition: any input parses to a valid condition or is a
// validation error, never a panic; what parses encodes to a fixed point.
func FuzzParseCondition(f *testing.F) {
	f.Add([]byte(`{"k":"signal","name":"go"}`))
	f.Add([]byte(`{"k":"all_of","of":[{"k":"count","n":2,"distinct":"sources","name":"approve"},{"k":"signal"}]}`))
	f.Add([]byte(`{"k":"timeout_only"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCondition(b)
		if err != nil {
			if !errors.Is(err, ErrValidation) {
				t.Fatalf("%q: %v", b, err)
			}
			return
		}
		enc, err := EncodeCondition(c)
		if err != nil {
			t.Fatalf("%q parsed but does not encode: %v", b, err)
		}
		c2, err := ParseCondition(enc)
		if err != nil {
			t.Fatalf("%q: its encoding %q does not parse: %v", b, enc, err)
		}
		enc2, _ := EncodeCondition(c2)
		if string(enc2) != string(enc) {
			t.Fatalf("not a fixed point: %q then %q", enc, enc2)
		}
		_ = c.Satisfied(wpOwn, []DeliveredSignal{sig("1", wpOwn, "go", "s"), sig("2", wpA, "approve", "t")})
	})
}
