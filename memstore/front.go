package memstore

// The common front of every operation: validate the parameters, take the
// lock, load the execution (Lua's front topic: the_exec). unlock, which
// delivers the lease notices, is in lease_notify.go.

import (
	"context"

	"github.com/flowfabric/flowfabric/model"
)

// lock takes the store's lock unless ctx is done.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	return nil
}

// withLock runs f under the store's lock once the parameters validated.
func withLock[R any](s *Store, ctx context.Context, invalid error, f func() (R, error)) (R, error) {
	var zero R
	if invalid != nil {
		return zero, invalid
	}
	if err := s.lock(ctx); err != nil {
		return zero, err
	}
	defer s.unlock()
	return f()
}

// withExec is withLock for operations on one existing execution.
func withExec[R any](s *Store, ctx context.Context, invalid error, id model.ExecutionID, f func(e *execution) (R, error)) (R, error) {
	return withLock(s, ctx, invalid, func() (R, error) {
		e, err := s.loadExec(id)
		if err != nil {
			var zero R
			return zero, err
		}
		return f(e)
	})
}
