package flowfabric

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// UniqueOpts make a submission unique (SubmitOpts.Unique), in the spirit
// of River's UniqueOpts: a submission that matches an earlier one in every
// dimension set here, while that one's uniqueness lasts, returns it
// (SubmitResult.Duplicate) instead of creating another.
//
// Uniqueness is always within one namespace, lane and kind: the engine
// derives an idempotency key from the kind, the lane and the dimensions
// set, and an idempotency key lives in its lane's partition, so two lanes
// can never share one (a ByLane option would always be on). The zero
// value (&UniqueOpts{}) makes one execution per kind and lane at a time
// for IdempotencyTTL (default 24h).
//
// How long uniqueness lasts: SubmitOpts.IdempotencyTTL when set; else,
// with ByPeriod, until the period ends; else DefaultIdempotencyTTL.
type UniqueOpts struct {
	// ByArgs makes only submissions with the same args duplicates. Args
	// are compared as JSON with the key order and spacing ignored (a
	// payload that is not JSON is compared byte for byte).
	ByArgs bool
	// ByPeriod makes at most one execution per period: the periods are
	// the multiples of ByPeriod since the Unix epoch (1h: each clock
	// hour, UTC), and a submission belongs to the period of the engine's
	// clock when it is made. 1s..30 days, a whole number of milliseconds.
	ByPeriod time.Duration
	// ByState, when set, lets the earlier execution block a new one only
	// while it is in one of these states: with PublicWaiting,
	// PublicDelayed, PublicActive (and, say, PublicRateLimited,
	// PublicSuspended), "not while one is waiting or running"; once it
	// has completed, the next submission creates a new execution that
	// takes over the uniqueness. Nil: the earlier execution blocks
	// whatever its state, until the uniqueness ends.
	ByState []PublicState
}

// uniqueKey applies o.Unique to o: the derived idempotency key and TTL,
// and the states in which the key's execution blocks (for
// ExecutionCreateParams.IdempotencyStates).
func uniqueKey(kind Kind, lane LaneID, payload []byte, o SubmitOpts, now time.Time) (SubmitOpts, model.PublicStateSet, error) {
	u := o.Unique
	var states model.PublicStateSet
	for _, st := range u.ByState {
		switch {
		case st.String() == "":
			return o, 0, &model.Error{Code: model.CodeInvalidInput, Field: "Unique.ByState", Detail: "unknown_state",
				Got: strconv.Itoa(int(st)), Want: "public states (PublicWaiting..PublicSkipped)"}
		case states.Has(st):
			return o, 0, &model.Error{Code: model.CodeInvalidInput, Field: "Unique.ByState", Detail: "duplicate_state", Got: st.String()}
		}
		states |= model.PublicStates(st)
	}
	if o.IdempotencyKey != "" {
		switch {
		case u.ByArgs:
			return o, 0, model.InvalidField("Unique.ByArgs", "set_with_idempotency_key")
		case u.ByPeriod != 0:
			return o, 0, model.InvalidField("Unique.ByPeriod", "set_with_idempotency_key")
		}
		return o, states, nil
	}
	if u.ByPeriod != 0 && (u.ByPeriod < time.Second || u.ByPeriod > model.MaxIdempotencyTTL || u.ByPeriod%time.Millisecond != 0) {
		return o, 0, model.OutOfRange("Unique.ByPeriod", u.ByPeriod, "0 (none) or 1s..720h, a whole number of milliseconds")
	}
	h := sha256.New()
	h.Write([]byte("lane=" + string(lane) + "\x00args="))
	if u.ByArgs {
		sum := sha256.Sum256(canonicalJSON(payload))
		h.Write([]byte(hex.EncodeToString(sum[:])))
	} else {
		h.Write([]byte("*"))
	}
	h.Write([]byte("\x00period="))
	if u.ByPeriod != 0 {
		step := u.ByPeriod.Milliseconds()
		start := now.UnixMilli() / step * step
		h.Write([]byte(strconv.FormatInt(step, 10) + "@" + strconv.FormatInt(start, 10)))
		if o.IdempotencyTTL == 0 {
			o.IdempotencyTTL = max(time.UnixMilli(start+step).Sub(now), time.Second)
		}
	} else {
		h.Write([]byte("*"))
	}
	o.IdempotencyKey = "unique:" + string(kind) + ":" + hex.EncodeToString(h.Sum(nil))
	return o, states, nil
}

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// spacing, numbers kept as written; anything else is returned as is.
func canonicalJSON(b []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}
