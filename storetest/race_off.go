//go:build !race

package storetest

// raceEnabled reports a build with the race detector, under which the
// largest cases are skipped (they run in every build without it).
const raceEnabled = false
