package flowfabric

import "github.com/flowfabric/flowfabric/scan"

// ScannerPass is one pass of a background scanner, as Config.OnScannerPass
// is told about it: the scanner's name ("lease_expiry", "delayed_promoter",
// "sweeper", "periodic", ...), what the pass did (Result.Acted transitions
// over Result.Partitions partitions), how long it took on the engine's
// clock, and its error, if any.
type ScannerPass = scan.Pass

// onPass is the scanner runners' pass hook: it wakes flowfabrictest's
// waiters when a pass changed something, then calls Config.OnScannerPass.
func (e *Engine) onPass(p scan.Pass) {
	if p.Result.Acted > 0 {
		e.activity()
	}
	if e.cfg.OnScannerPass != nil {
		e.cfg.OnScannerPass(p)
	}
}
