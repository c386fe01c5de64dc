package flowfabric

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/flowfabric/flowfabric/model"
)

// A store's refusal of a fenced call says what happened to the lease, at
// the level it deserves: an operator's act at Info, a worker that lost its
// lease by being late (a zombie) at Warn.
func TestLossOfError(t *testing.T) {
	notActive := func(lp model.LifecyclePhase, to model.TerminalOutcome) error {
		return &model.Error{Code: model.CodeExecutionNotActive, State: &model.NotActiveState{LifecyclePhase: lp, TerminalOutcome: to, LeaseEpoch: 1}}
	}
	cases := []struct {
		err   error
		what  string
		level slog.Level
		is    error
	}{
		{notActive(model.PhaseTerminal, model.OutcomeCancelled), "execution cancelled", slog.LevelInfo, ErrExecutionCancelled},
		{notActive(model.PhaseTerminal, model.OutcomeExpired), "execution timed out", slog.LevelDebug, context.DeadlineExceeded},
		{notActive(model.PhaseTerminal, model.OutcomeSuccess), "execution ended elsewhere (success)", slog.LevelInfo, ErrNotActive},
		{notActive(model.PhaseRunnable, model.OutcomeNone), "execution taken over (now runnable)", slog.LevelWarn, ErrNotActive},
		{model.ErrLeaseRevoked, "lease revoked", slog.LevelInfo, ErrLeaseRevoked},
		{model.ErrLeaseExpired, "lease expired before it was renewed", slog.LevelWarn, ErrLeaseExpired},
		{model.ErrStaleLease, "lease replaced by a newer one", slog.LevelWarn, ErrStaleLease},
	}
	for _, c := range cases {
		loss, ok := lossOfError(c.err)
		if !ok || loss.what != c.what || loss.level != c.level {
			t.Errorf("%v: %+v %v, want %q at %v", c.err, loss, ok, c.what, c.level)
			continue
		}
		if !errors.Is(loss, ErrLeaseLost) || !errors.Is(loss, c.is) {
			t.Errorf("%v: cause %v does not match ErrLeaseLost and %v", c.err, loss, c.is)
		}
	}
	for _, err := range []error{errors.New("connection reset"), model.ErrNotFound} {
		if _, ok := lossOfError(err); ok {
			t.Errorf("%v taken for a lost lease", err)
		}
	}
	for _, k := range []model.LeaseNoticeKind{model.LeaseNoticeCancelled, model.LeaseNoticeRevoked, model.LeaseNoticeExpired,
		model.LeaseNoticeOverridden, model.LeaseNoticeTimedOut, "future_kind"} {
		if loss := lossOfNotice(k); !errors.Is(loss, ErrLeaseLost) {
			t.Errorf("notice %s: cause %v does not match ErrLeaseLost", k, loss)
		}
	}
}
