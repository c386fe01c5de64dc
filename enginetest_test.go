package flowfabric_test

import (
	"testing"

	"github.com/flowfabric/flowfabric/internal/enginetest"
	"github.com/flowfabric/flowfabric/memstore"
)

// The engine scenarios of internal/enginetest, on memstore (valkeystore
// runs them on its backends).

func TestEngineHintDuringScan(t *testing.T) { enginetest.HintDuringScan(t, memstore.New(nil)) }

func TestEngineTimersWakeWhenDue(t *testing.T) { enginetest.TimersWakeWhenDue(t, memstore.New(nil)) }

func TestEngineClaimedDuringStopIsHandedBack(t *testing.T) {
	enginetest.ClaimedDuringStopIsHandedBack(t, memstore.New(nil))
}

func TestEngineRefusedOutcomeFailsAtOnce(t *testing.T) {
	enginetest.RefusedOutcomeFailsAtOnce(t, memstore.New(nil))
}

func TestEngineAwaitChildren(t *testing.T) { enginetest.AwaitChildren(t, memstore.New(nil)) }
