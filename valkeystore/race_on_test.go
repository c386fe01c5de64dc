//go:build race

package valkeystore

// raceEnabled is true under the race detector, which slows Lua in
// miniredis down a lot; long randomized runs are shortened then.
const raceEnabled = true
