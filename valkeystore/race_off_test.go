//go:build !race

package valkeystore

const raceEnabled = false
