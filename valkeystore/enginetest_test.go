package valkeystore

import (
	"testing"

	"github.com/flowfabric/flowfabric/internal/enginetest"
)

// The engine scenarios of internal/enginetest, on every backend.

func TestEngineHintDuringScan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { enginetest.HintDuringScan(t, newStore(t, b, nil)) })
}

func TestEngineTimersWakeWhenDue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { enginetest.TimersWakeWhenDue(t, newStore(t, b, nil)) })
}

func TestEngineClaimedDuringStopIsHandedBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { enginetest.ClaimedDuringStopIsHandedBack(t, newStore(t, b, nil)) })
}

func TestEngineRefusedOutcomeFailsAtOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { enginetest.RefusedOutcomeFailsAtOnce(t, newStore(t, b, nil)) })
}

func TestEngineAwaitChildren(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { enginetest.AwaitChildren(t, newStore(t, b, nil)) })
}
