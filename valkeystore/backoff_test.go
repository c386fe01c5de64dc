package valkeystore

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// TestBackoffBitForBit runs lua/lib/policy.lua's backoff_ms on the server (Lua doubles)
// for many policies and retry counts and compares it with
// model.RetryPolicy.BackoffMs.
func TestBackoffBitForBit(t *testing.T) {
	policies := []model.RetryPolicy{
		{},
		{Backoff: model.BackoffFixed},
		{Backoff: model.BackoffFixed, Delay: 7 * time.Millisecond},
		{Multiplier: 1},
		{Multiplier: 1.1, InitialDelay: time.Millisecond, MaxDelay: model.MaxPolicyDelay},
		{Multiplier: 1.0000001, InitialDelay: 3 * time.Millisecond, MaxDelay: model.MaxPolicyDelay},
		{Multiplier: 1.7, InitialDelay: 333 * time.Millisecond},
		{Multiplier: 3.3, InitialDelay: 17 * time.Millisecond, MaxDelay: 29 * 24 * time.Hour},
		{Multiplier: 99.99, InitialDelay: 1 * time.Millisecond, MaxDelay: model.MaxPolicyDelay},
		{Multiplier: 100, InitialDelay: 2 * time.Millisecond, MaxDelay: model.MaxPolicyDelay},
		{Multiplier: 1 + 1.0/3, InitialDelay: 1000 * time.Millisecond, MaxDelay: 12345 * time.Millisecond},
		{Multiplier: 2.718281828459045, InitialDelay: 1 * time.Millisecond, MaxDelay: model.MaxPolicyDelay},
	}
	const counts = 80
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		for _, p := range policies {
			body := fmt.Sprintf(`local e = blank_exec({})
				e.retry_backoff, e.retry_delay_ms, e.retry_initial_ms = %q, %d, %d
				e.retry_multiplier, e.retry_max_delay_ms = %q, %d
				local out = {}
				for i = 0, %d do out[#out + 1] = S(backoff_ms(e, i)) end
				return out`,
				p.Backoff.String(), p.Delay.Milliseconds(), p.InitialDelay.Milliseconds(),
				strconv.FormatFloat(p.Multiplier, 'g', -1, 64), p.MaxDelay.Milliseconds(), counts-1)
			m := evalMessage(t, c, body)
			got, err := m.AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			var bad []string
			for i, g := range got {
				if want := strconv.FormatInt(p.BackoffMs(i), 10); g != want {
					bad = append(bad, fmt.Sprintf("retry %d: lua %s, go %s", i, g, want))
				}
			}
			if len(bad) > 0 {
				t.Errorf("policy %+v:\n%s", p, strings.Join(bad, "\n"))
			}
		}
	})
}
