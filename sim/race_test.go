//go:build race

package sim_test

// raceDetector: the race detector makes a run about five times slower, so
// TestSeeds runs fewer seeds by default under it.
const raceDetector = true
