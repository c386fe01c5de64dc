package model

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Resume conditions (issue 11): what a suspended execution waits for.
// A condition is a small tree evaluated over the signals delivered to the
// suspension, so it is stored once (its canonical JSON, EncodeCondition)
// and evaluated by the same rules in both stores (Satisfied here; the Lua
// evaluator mirrors it and the differential test compares them).

// ConditionKind names a node of a resume condition.
type ConditionKind uint8

// Condition kinds.
const (
	// CondSignal: one signal on Waitpoint (zero: the suspension's own)
	// whose name is Name ("": any name).
	CondSignal ConditionKind = iota + 1 // "signal"
	// CondAllOf: every condition of Of.
	CondAllOf // "all_of"
	// CondCount: at least N signals matching Name on Waitpoints (none:
	// the suspension's own), counted distinct by Distinct.
	CondCount // "count"
	// CondOperator: no signal resumes; only an operator does (the root
	// only).
	CondOperator // "operator_only"
	// CondTimeout: no signal resumes; only the suspension's timeout does
	// (the root only).
	CondTimeout // "timeout_only"
)

var conditionKindNames = enumNames{"signal", "all_of", "count", "operator_only", "timeout_only"}

func (v ConditionKind) String() string { return conditionKindNames.name(uint8(v)) }

// ParseConditionKind parses a wire name.
func ParseConditionKind(s string) (ConditionKind, bool) {
	v, ok := conditionKindNames.parse(s)
	return ConditionKind(v), ok
}

// CountDistinct says what a Count condition counts.
type CountDistinct uint8

// What a count counts: distinct waitpoints (the default), distinct
// signals, or distinct sources (two approvals from one person count once).
const (
	DistinctWaitpoints CountDistinct = iota + 1 // "waitpoints"
	DistinctSignals                             // "signals"
	DistinctSources                             // "sources"
)

var countDistinctNames = enumNames{"waitpoints", "signals", "sources"}

func (v CountDistinct) String() string { return countDistinctNames.name(uint8(v)) }

// ParseCountDistinct parses a wire name.
func ParseCountDistinct(s string) (CountDistinct, bool) {
	v, ok := countDistinctNames.parse(s)
	return CountDistinct(v), ok
}

// Limits of a resume condition.
const (
	// MaxConditionDepth is the deepest a condition nests (the root is
	// depth 1).
	MaxConditionDepth = 4
	// MaxConditionChildren bounds an AllOf's conditions and a Count's
	// waitpoints.
	MaxConditionChildren = 16
	// MaxConditionCount bounds a Count's N.
	MaxConditionCount = 1000
	// MaxConditionBytes bounds a condition's JSON.
	MaxConditionBytes = 16 << 10
)

// ResumeCondition is one node of a resume condition; see ConditionKind
// for what each kind reads.
type ResumeCondition struct {
	Kind       ConditionKind
	Name       string
	Waitpoint  WaitpointID
	Of         []ResumeCondition
	N          int
	Distinct   CountDistinct
	Waitpoints []WaitpointID
}

// SignalFor is a condition that one signal named name resumes ("": any
// signal), on the suspension's own waitpoint.
func SignalFor(name string) ResumeCondition { return ResumeCondition{Kind: CondSignal, Name: name} }

// Validate checks the condition: known kinds, the fields each kind reads
// and no other, OperatorOnly and TimeoutOnly only at the root, depth at
// most MaxConditionDepth. Field names the offending node by its path
// ("Condition.Of[1].N").
func (c *ResumeCondition) Validate(field string) error {
	return c.validate(field, 1)
}

func (c *ResumeCondition) validate(field string, depth int) error {
	if depth > MaxConditionDepth {
		return &Error{Code: CodeInvalidInput, Field: field, Detail: "too_deep", Want: "at most " + strconv.Itoa(MaxConditionDepth) + " levels"}
	}
	if c.Name != "" {
		if err := ValidateText(field+".Name", c.Name); err != nil {
			return err
		}
	}
	noSignalFields := c.Name == "" && c.Waitpoint == (WaitpointID{}) && len(c.Waitpoints) == 0
	switch c.Kind {
	case CondSignal:
		if len(c.Of) > 0 || c.N != 0 || c.Distinct != 0 || len(c.Waitpoints) > 0 {
			return invalidField(field, "signal_takes_name_and_waitpoint_only")
		}
	case CondAllOf:
		if !noSignalFields || c.N != 0 || c.Distinct != 0 {
			return invalidField(field, "all_of_takes_of_only")
		}
		if len(c.Of) == 0 || len(c.Of) > MaxConditionChildren {
			return OutOfRange(field+".Of", len(c.Of), "1.."+strconv.Itoa(MaxConditionChildren))
		}
		for i := range c.Of {
			if err := c.Of[i].validate(field+".Of["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	case CondCount:
		if len(c.Of) > 0 || c.Waitpoint != (WaitpointID{}) {
			return invalidField(field, "count_takes_name_n_distinct_waitpoints")
		}
		if c.N < 1 || c.N > MaxConditionCount {
			return OutOfRange(field+".N", c.N, "1.."+strconv.Itoa(MaxConditionCount))
		}
		if c.Distinct < DistinctWaitpoints || c.Distinct > DistinctSources {
			return &Error{Code: CodeInvalidInput, Field: field + ".Distinct", Detail: "unknown", Got: strconv.Itoa(int(c.Distinct)),
				Want: "DistinctWaitpoints, DistinctSignals or DistinctSources"}
		}
		if len(c.Waitpoints) > MaxConditionChildren {
			return OutOfRange(field+".Waitpoints", len(c.Waitpoints), "0.."+strconv.Itoa(MaxConditionChildren))
		}
		seen := map[WaitpointID]bool{}
		for i, w := range c.Waitpoints {
			if w == (WaitpointID{}) {
				return invalidField(field+".Waitpoints["+strconv.Itoa(i)+"]", "empty")
			}
			if seen[w] {
				return invalidField(field+".Waitpoints["+strconv.Itoa(i)+"]", "duplicate")
			}
			seen[w] = true
		}
		if c.Distinct == DistinctWaitpoints && c.N > max(1, len(c.Waitpoints)) {
			return &Error{Code: CodeInvalidInput, Field: field + ".N", Detail: "more_than_its_waitpoints",
				Got: strconv.Itoa(c.N), Want: "at most " + strconv.Itoa(max(1, len(c.Waitpoints)))}
		}
	case CondOperator, CondTimeout:
		if depth != 1 {
			return invalidField(field, "root_only")
		}
		if !noSignalFields || len(c.Of) > 0 || c.N != 0 || c.Distinct != 0 {
			return invalidField(field, "takes_no_fields")
		}
	default:
		return &Error{Code: CodeInvalidInput, Field: field + ".Kind", Detail: "unknown", Got: strconv.Itoa(int(c.Kind))}
	}
	return nil
}

// DeliveredSignal is what a condition reads of one signal delivered to a
// suspension.
type DeliveredSignal struct {
	ID        string
	Waitpoint WaitpointID
	Name      string
	// Source identifies who sent it (for DistinctSources): a type and an
	// identity, "approver:alice".
	Source string
}

// Satisfied evaluates a valid condition over the signals delivered so far;
// own is the suspension's own waitpoint (what a zero Waitpoint means).
// OperatorOnly and TimeoutOnly are never satisfied by signals.
func (c *ResumeCondition) Satisfied(own WaitpointID, sigs []DeliveredSignal) bool {
	switch c.Kind {
	case CondSignal:
		for i := range sigs {
			if c.accepts(own, &sigs[i]) {
				return true
			}
		}
		return false
	case CondAllOf:
		for i := range c.Of {
			if !c.Of[i].Satisfied(own, sigs) {
				return false
			}
		}
		return true
	case CondCount:
		seen := map[string]bool{}
		for i := range sigs {
			s := &sigs[i]
			if !c.accepts(own, s) {
				continue
			}
			switch c.Distinct {
			case DistinctWaitpoints:
				seen[s.Waitpoint.String()] = true
			case DistinctSignals:
				seen[s.ID] = true
			case DistinctSources:
				seen[s.Source] = true
			}
		}
		return len(seen) >= c.N
	}
	return false
}

// Accepts reports whether any leaf of the condition reads signal s: a
// signal no leaf accepts is recorded and ignored.
func (c *ResumeCondition) Accepts(own WaitpointID, s DeliveredSignal) bool {
	if c.Kind == CondAllOf {
		for i := range c.Of {
			if c.Of[i].Accepts(own, s) {
				return true
			}
		}
		return false
	}
	return c.accepts(own, &s)
}

// accepts is the leaf test: the signal's waitpoint and name match.
func (c *ResumeCondition) accepts(own WaitpointID, s *DeliveredSignal) bool {
	if c.Name != "" && c.Name != s.Name {
		return false
	}
	switch c.Kind {
	case CondSignal:
		w := c.Waitpoint
		if w == (WaitpointID{}) {
			w = own
		}
		return s.Waitpoint == w
	case CondCount:
		if len(c.Waitpoints) == 0 {
			return s.Waitpoint == own
		}
		for _, w := range c.Waitpoints {
			if s.Waitpoint == w {
				return true
			}
		}
	}
	return false
}

// conditionJSON is the canonical stored form.
type conditionJSON struct {
	Kind       string          `json:"k"`
	Name       string          `json:"name,omitempty"`
	Waitpoint  string          `json:"wp,omitempty"`
	Of         []conditionJSON `json:"of,omitempty"`
	N          int             `json:"n,omitempty"`
	Distinct   string          `json:"distinct,omitempty"`
	Waitpoints []string        `json:"wps,omitempty"`
}

func (c *ResumeCondition) toJSON() conditionJSON {
	j := conditionJSON{Kind: c.Kind.String(), Name: c.Name, N: c.N}
	if c.Waitpoint != (WaitpointID{}) {
		j.Waitpoint = c.Waitpoint.String()
	}
	if c.Distinct != 0 {
		j.Distinct = c.Distinct.String()
	}
	for i := range c.Of {
		j.Of = append(j.Of, c.Of[i].toJSON())
	}
	for _, w := range c.Waitpoints {
		j.Waitpoints = append(j.Waitpoints, w.String())
	}
	return j
}

// EncodeCondition returns the canonical JSON of a valid condition (the
// same condition always encodes to the same bytes).
func EncodeCondition(c ResumeCondition) ([]byte, error) {
	if err := c.Validate("Condition"); err != nil {
		return nil, err
	}
	return json.Marshal(c.toJSON())
}

// ParseCondition parses and validates a stored or submitted condition; a
// malformed one is a validation error naming field "Condition".
func ParseCondition(b []byte) (ResumeCondition, error) {
	if len(b) > MaxConditionBytes {
		return ResumeCondition{}, &Error{Code: CodeInvalidInput, Field: "Condition", Detail: "too_large",
			Got: strconv.Itoa(len(b)), Want: "at most " + strconv.Itoa(MaxConditionBytes) + " bytes"}
	}
	var j conditionJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return ResumeCondition{}, &Error{Code: CodeInvalidInput, Field: "Condition", Detail: "malformed"}
	}
	if d.More() {
		return ResumeCondition{}, &Error{Code: CodeInvalidInput, Field: "Condition", Detail: "trailing_data"}
	}
	c, err := j.fromJSON("Condition", 1)
	if err != nil {
		return ResumeCondition{}, err
	}
	if err := c.Validate("Condition"); err != nil {
		return ResumeCondition{}, err
	}
	return c, nil
}

func (j *conditionJSON) fromJSON(field string, depth int) (ResumeCondition, error) {
	if depth > MaxConditionDepth {
		return ResumeCondition{}, &Error{Code: CodeInvalidInput, Field: field, Detail: "too_deep"}
	}
	k, ok := ParseConditionKind(j.Kind)
	if !ok {
		return ResumeCondition{}, &Error{Code: CodeInvalidInput, Field: field + ".Kind", Detail: "unknown", Got: j.Kind}
	}
	c := ResumeCondition{Kind: k, Name: j.Name, N: j.N}
	if j.Waitpoint != "" {
		w, err := ParseWaitpointID(j.Waitpoint)
		if err != nil {
			return ResumeCondition{}, invalidField(field+".Waitpoint", "malformed")
		}
		c.Waitpoint = w
	}
	if j.Distinct != "" {
		d, ok := ParseCountDistinct(j.Distinct)
		if !ok {
			return ResumeCondition{}, &Error{Code: CodeInvalidInput, Field: field + ".Distinct", Detail: "unknown", Got: j.Distinct}
		}
		c.Distinct = d
	}
	if len(j.Of) > MaxConditionChildren || len(j.Waitpoints) > MaxConditionChildren {
		return ResumeCondition{}, invalidField(field, "too_many_children")
	}
	for i := range j.Of {
		sub, err := j.Of[i].fromJSON(field+".Of["+strconv.Itoa(i)+"]", depth+1)
		if err != nil {
			return ResumeCondition{}, err
		}
		c.Of = append(c.Of, sub)
	}
	for i, s := range j.Waitpoints {
		w, err := ParseWaitpointID(s)
		if err != nil {
			return ResumeCondition{}, invalidField(field+".Waitpoints["+strconv.Itoa(i)+"]", "malformed")
		}
		c.Waitpoints = append(c.Waitpoints, w)
	}
	return c, nil
}
