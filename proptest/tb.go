package proptest

import (
	"context"
	"testing"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

// sequenceTB is the testing.TB handed to a NewStoreFunc: the enclosing test
// for what outlives a sequence (TempDir, Setenv, Name), the rapid sequence
// for failures, logs and cleanups. testing.TB cannot be implemented outside
// package testing except by embedding it.
type sequenceTB struct {
	testing.TB
	rt *rapid.T
	// feeds are the event feeds the sequence drew for its stores, which a
	// NewStoreFunc wrapped in WithFeeds builds them with (feed.go); built
	// counts those stores.
	feeds model.Feeds
	built int
}

func newSequenceTB(outer testing.TB, rt *rapid.T) *sequenceTB {
	return &sequenceTB{TB: outer, rt: rt}
}

func (s *sequenceTB) Cleanup(f func())               { s.rt.Cleanup(f) }
func (s *sequenceTB) Context() context.Context       { return s.rt.Context() }
func (s *sequenceTB) Error(args ...any)              { s.rt.Helper(); s.rt.Error(args...) }
func (s *sequenceTB) Errorf(format string, a ...any) { s.rt.Helper(); s.rt.Errorf(format, a...) }
func (s *sequenceTB) Fail()                          { s.rt.Fail() }
func (s *sequenceTB) FailNow()                       { s.rt.FailNow() }
func (s *sequenceTB) Failed() bool                   { return s.rt.Failed() }
func (s *sequenceTB) Fatal(args ...any)              { s.rt.Helper(); s.rt.Fatal(args...) }
func (s *sequenceTB) Fatalf(format string, a ...any) { s.rt.Helper(); s.rt.Fatalf(format, a...) }
func (s *sequenceTB) Helper()                        {}
func (s *sequenceTB) Log(args ...any)                { s.rt.Log(args...) }
func (s *sequenceTB) Logf(format string, a ...any)   { s.rt.Logf(format, a...) }
func (s *sequenceTB) Skip(args ...any)               { s.rt.Skip(args...) }
func (s *sequenceTB) SkipNow()                       { s.rt.SkipNow() }
func (s *sequenceTB) Skipf(format string, a ...any)  { s.rt.Skipf(format, a...) }

// contextOf returns t's context when it has one.
func contextOf(t rapid.TB) context.Context {
	if c, ok := t.(interface{ Context() context.Context }); ok {
		return c.Context()
	}
	return context.Background()
}
