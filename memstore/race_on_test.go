//go:build race

package memstore_test

// raceEnabled is true under the race detector, which slows the store down
// several times; the memory test fills fewer executions then.
const raceEnabled = true
