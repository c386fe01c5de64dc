package model

import (
	"testing"
)

type outcomeEnum interface {
	~uint8
	String() string
}

// checkOutcomes checks that want lists every value of one outcome type, in
// order, with its wire name (the string valkeystore's Lua returns), and
// that the names parse back.
func checkOutcomes[T outcomeEnum](t *testing.T, kind string, parse func(string) (T, bool), want map[T]string) {
	t.Helper()
	for v := T(1); int(v) <= len(want); v++ {
		wire, ok := want[v]
		if !ok {
			t.Errorf("%s %d: not in the table", kind, v)
			continue
		}
		if got := v.String(); got != wire {
			t.Errorf("%s %d prints %q, want %q", kind, v, got, wire)
		}
		if back, ok := parse(wire); !ok || back != v {
			t.Errorf("%s: %q parses to %d %v", kind, wire, back, ok)
		}
	}
	if T(0).String() != "" {
		t.Errorf("%s: 0 has a name", kind)
	}
	if extra := T(len(want) + 1); extra.String() != "" {
		t.Errorf("%s %d (%q): not in the table", kind, extra, extra.String())
	}
	if _, ok := parse("nonsense"); ok {
		t.Errorf("%s parses nonsense", kind)
	}
}

// The wire names of the operation outcomes must not change: valkeystore
// decodes them from its scripts' replies.
func TestOutcomeNames(t *testing.T) {
	t.Parallel()
	checkOutcomes(t, "expire", ParseExpireOutcome, map[ExpireOutcome]string{
		ExpireExpired: "expired", ExpireRetryScheduled: "retry_scheduled",
		ExpireNotFoundCleaned: "not_found_cleaned", ExpireAlreadyTerminal: "already_terminal",
		ExpireNotActiveCleaned: "not_active_cleaned", ExpireNotYetDue: "not_yet_due",
	})
	checkOutcomes(t, "fail", ParseFailOutcome, map[FailOutcome]string{
		FailRetryScheduled: "retry_scheduled", FailTerminal: "terminal_failed",
	})
	checkOutcomes(t, "mark expired", ParseMarkExpiredOutcome, map[MarkExpiredOutcome]string{
		MarkExpiredMarked: "marked_expired", MarkExpiredNotFoundCleaned: "not_found_cleaned",
		MarkExpiredNotActiveCleaned: "not_active_cleaned", MarkExpiredUnownedCleaned: "unowned_cleaned",
		MarkExpiredAlreadyExpired: "already_expired", MarkExpiredAlreadyRevoked: "already_revoked",
		MarkExpiredNotYetExpired: "not_yet_expired",
	})
	checkOutcomes(t, "revoke", ParseRevokeOutcome, map[RevokeOutcome]string{
		RevokeRevoked: "revoked", RevokeAlreadyRevoked: "already_revoked", RevokeAlreadyExpired: "already_expired",
	})
	checkOutcomes(t, "reclaim", ParseReclaimOutcome, map[ReclaimOutcome]string{
		ReclaimClaimed: "claimed", ReclaimCapExceeded: "reclaim_cap_exceeded",
	})
	checkOutcomes(t, "recover", ParseRecoverOutcome, map[RecoverOutcome]string{
		RecoverRequeued: "requeued", RecoverCapExceeded: "reclaim_cap_exceeded",
	})
	checkOutcomes(t, "promote", ParsePromoteOutcome, map[PromoteOutcome]string{
		PromotePromoted: "promoted", PromoteNotFoundCleaned: "not_found_cleaned",
		PromoteNotRunnableCleaned: "not_runnable_cleaned", PromoteNotDelayedCleaned: "not_delayed_cleaned",
		PromoteNotYetDue: "not_yet_due",
	})
	checkOutcomes(t, "worker register", ParseWorkerRegisterOutcome, map[WorkerRegisterOutcome]string{
		WorkerRegistered: "registered", WorkerRefreshed: "refreshed",
	})
}
