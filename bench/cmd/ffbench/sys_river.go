package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverSystem is River on the bench's own PostgreSQL (riverpgxv5, schema
// migrated with rivermigrate), tuned as River's own `river bench` is
// (FetchCooldown 2 ms, FetchPollInterval 20 ms).
type riverSystem struct {
	url     string
	durable bool

	pool     *pgxpool.Pool
	inserter *river.Client[pgx.Tx]
	client   *river.Client[pgx.Tx]
	comp     *counter
	subStop  func()
	subDone  chan struct{}
	migrated bool
}

func newRiver(url string, durable bool) *riverSystem { return &riverSystem{url: url, durable: durable} }

func (s *riverSystem) Name() string { return "river" }

func (s *riverSystem) Describe() string {
	d := "fsync=off, synchronous_commit=off (like the Redis servers: persistence off)"
	if s.durable {
		d = "durable defaults (fsync on)"
	}
	return "riverqueue/river (riverpgxv5, pgxpool) on a throwaway PostgreSQL, " + d +
		"; Insert per job / InsertMany per batch; Queues{default: MaxWorkers N}, FetchCooldown 2ms, FetchPollInterval 20ms (river bench's settings); completion = EventKindJobCompleted"
}

func (s *riverSystem) probe() *serverProbe { return nil }

type riverWorker struct {
	river.WorkerDefaults[benchArgs]
	onStart func(int64)
}

func (w *riverWorker) Work(_ context.Context, j *river.Job[benchArgs]) error {
	w.onStart(j.Args.Seq)
	return nil
}

func (s *riverSystem) open(ctx context.Context) error {
	s.comp = newCounter()
	if s.pool == nil {
		cfg, err := pgxpool.ParseConfig(s.url)
		if err != nil {
			return err
		}
		cfg.MaxConns = 40
		s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
	}
	if !s.migrated {
		m, err := rivermigrate.New(riverpgxv5.New(s.pool), nil)
		if err != nil {
			return err
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("river: migrate: %w", err)
		}
		s.migrated = true
	}
	// a clean table each run, as `river bench` does
	if _, err := s.pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "VACUUM FULL river_job"); err != nil {
		return err
	}
	c, err := river.NewClient(riverpgxv5.New(s.pool), &river.Config{Logger: quietSlog()})
	if err != nil {
		return err
	}
	s.inserter = c
	return nil
}

func quietSlog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (s *riverSystem) submit(ctx context.Context, a benchArgs) error {
	_, err := s.inserter.Insert(ctx, a, nil)
	return err
}

func (s *riverSystem) submitBatch(ctx context.Context, as []benchArgs) error {
	ps := make([]river.InsertManyParams, len(as))
	for i, a := range as {
		ps[i] = river.InsertManyParams{Args: a}
	}
	_, err := s.inserter.InsertMany(ctx, ps)
	return err
}

func (s *riverSystem) startWorkers(ctx context.Context, slots int, onStart func(int64)) error {
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{onStart: onStart})
	c, err := river.NewClient(riverpgxv5.New(s.pool), &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            quietSlog(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: slots}},
		Workers:           workers,
	})
	if err != nil {
		return err
	}
	s.client = c
	events, stop := c.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: 200_000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	s.subStop, s.subDone = stop, make(chan struct{})
	go func() {
		defer close(s.subDone)
		for ev := range events {
			if ev == nil {
				return
			}
			s.comp.add(1)
		}
	}()
	return c.Start(ctx)
}

func (s *riverSystem) completions() *counter { return s.comp }

func (s *riverSystem) stopWorkers(ctx context.Context) error {
	if s.client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := s.client.Stop(ctx)
	s.subStop()
	select {
	case <-s.subDone:
	case <-time.After(5 * time.Second):
		err = errors.Join(err, errors.New("river: subscription did not close"))
	}
	s.client = nil
	return err
}

func (s *riverSystem) close() {
	_ = s.stopWorkers(context.Background())
	s.inserter = nil
}

// shutdown closes the pool (end of the bench).
func (s *riverSystem) shutdown() {
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
}
