package main

import "testing"

// TestQuickstart keeps the README's main example running.
func TestQuickstart(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
