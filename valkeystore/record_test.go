package valkeystore

import (
	"testing"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// TestRecordExtremes drives an execution whose numbers are beyond what
// cjson prints exactly (times near the year 9999, the longest durations,
// the highest priority) and whose texts hold what JSON escapes and what
// the lease history uses as its separator, through every transition that
// writes hot and cold fields, comparing everything with memstore.
func TestRecordExtremes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		p := newPair(t, b, model.PartitionConfig{FlowPartitions: 2})
		var sq seq
		weird := "a|b\x00c\"d\\e/f\ng\t€ \u2028 <&> \x7f"
		late := endOfTime.Add(-24 * time.Hour)
		tick := func(n int) time.Time { return late.Add(time.Duration(n) * time.Second) }

		a := sq.exec(1)
		c := createP(a, tick(0))
		c.Priority = model.MaxPriority
		c.Deadline = endOfTime
		c.AttemptTimeout = model.MaxPolicyDelay
		c.RetryPolicy = model.RetryPolicy{MaxRetries: 5, Multiplier: 1.5, InitialDelay: time.Second, MaxDelay: model.MaxPolicyDelay}
		c.MaxReclaims, c.MaxReplays = 1_000_000, 1_000_000
		c.Tags = map[string]string{"app.k": weird}
		c.Payload = []byte(weird)
		c.RequiredCapabilities = model.Capabilities{"é|x", "q\"z"}
		create(p, c)
		caps := []string{"é|x", "q\"z"}

		r := grantAndClaim(p, a, sq.req("wi-1", model.MaxLeaseTTL), tick(1), caps...)
		ok(p, "progress", func(s model.Store) (*model.ExecutionUpdateProgressResult, error) {
			return s.ExecutionUpdateProgress(bg, &model.ExecutionUpdateProgressParams{ID: a, Fence: r.Fence(),
				Percent: 100, Message: weird, Now: tick(2)})
		})
		ok(p, "fail", func(s model.Store) (*model.ExecutionFailResult, error) {
			return s.ExecutionFail(bg, &model.ExecutionFailParams{ID: a, Fence: r.Fence(), Reason: weird, Now: tick(3)})
		})
		ok(p, "promote", func(s model.Store) (*model.ExecutionPromoteDelayedResult, error) {
			return s.ExecutionPromoteDelayed(bg, &model.ExecutionPromoteDelayedParams{ID: a, Lane: lane, Now: tick(10)})
		})
		r = grantAndClaim(p, a, sq.req("wi-2", model.MaxLeaseTTL), tick(11), caps...)
		ok(p, "revoke", func(s model.Store) (*model.LeaseRevokeResult, error) {
			return s.LeaseRevoke(bg, &model.LeaseRevokeParams{ID: a, Reason: weird, Now: tick(12)})
		})
		ok(p, "recover", func(s model.Store) (*model.ExecutionRecoverResult, error) {
			return s.ExecutionRecover(bg, &model.ExecutionRecoverParams{ID: a, Now: tick(13)})
		})
		r = grantAndClaim(p, a, sq.req("wi-1", model.MaxLeaseTTL), tick(14), caps...)
		ok(p, "delay", func(s model.Store) (*model.ExecutionDelayResult, error) {
			return s.ExecutionDelay(bg, &model.ExecutionDelayParams{ID: a, Fence: r.Fence(), DelayUntil: endOfTime, Now: tick(15)})
		})
		ok(p, "cancel", func(s model.Store) (*model.ExecutionCancelResult, error) {
			return s.ExecutionCancel(bg, &model.ExecutionCancelParams{ID: a, Source: model.SourceOperator,
				Reason: weird, Now: tick(16)})
		})
		ok(p, "replay", func(s model.Store) (*model.ExecutionReplayResult, error) {
			return s.ExecutionReplay(bg, &model.ExecutionReplayParams{ID: a, Reason: weird, RequestedBy: weird, Now: tick(17)})
		})
		r = grantAndClaim(p, a, sq.req("wi-3", model.MaxLeaseTTL), tick(18), caps...)
		ok(p, "complete", func(s model.Store) (*model.ExecutionCompleteResult, error) {
			return s.ExecutionComplete(bg, &model.ExecutionCompleteParams{ID: a, Fence: r.Fence(), Result: []byte(weird), Now: tick(19)})
		})
	})
}
