package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/valkey-io/valkey-go"
)

// asynqSystem is Asynq on the standalone server (its own go-redis client).
type asynqSystem struct {
	addr          string
	checkInterval time.Duration
	client        *asynq.Client
	admin         valkey.Client
	srv           *asynq.Server
	comp          *counter
}

func newAsynq(addr string, checkInterval time.Duration) *asynqSystem {
	return &asynqSystem{addr: addr, checkInterval: checkInterval}
}

func (s *asynqSystem) Name() string { return "asynq" }

func (s *asynqSystem) Describe() string {
	return fmt.Sprintf("hibiken/asynq on the standalone server: Enqueue per job (no batch API), Server{Concurrency: N, TaskCheckInterval: %v}, handler decodes the JSON payload; completion = handler returned, then the harness waits until the pending and active lists are empty", s.checkInterval)
}

func (s *asynqSystem) probe() *serverProbe { return &serverProbe{addrs: []string{s.addr}} }

func (s *asynqSystem) opt() asynq.RedisClientOpt {
	return asynq.RedisClientOpt{Addr: s.addr, PoolSize: 64}
}

func (s *asynqSystem) open(context.Context) error {
	s.comp = newCounter()
	if err := s.probe().flushAll(); err != nil {
		return err
	}
	s.client = asynq.NewClient(s.opt())
	admin, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.addr}, DisableCache: true})
	if err != nil {
		return err
	}
	s.admin = admin
	return nil
}

func (s *asynqSystem) submit(ctx context.Context, a benchArgs) error {
	_, err := s.client.EnqueueContext(ctx, asynq.NewTask("bench", encode(a)))
	return err
}

func (s *asynqSystem) startWorkers(_ context.Context, slots int, onStart func(int64)) error {
	s.srv = asynq.NewServer(s.opt(), asynq.Config{
		Concurrency:       slots,
		Queues:            map[string]int{"default": 1},
		TaskCheckInterval: s.checkInterval,
		ShutdownTimeout:   10 * time.Second,
		Logger:            quietLogger{},
		LogLevel:          asynq.FatalLevel,
	})
	return s.srv.Start(asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		a, err := decode(t.Payload())
		if err != nil {
			return err
		}
		onStart(a.Seq)
		s.comp.add(1)
		return nil
	}))
}

func (s *asynqSystem) completions() *counter { return s.comp }

// settle waits until asynq's pending and active lists are empty (every
// handled task has been acknowledged and removed).
func (s *asynqSystem) settle(ctx context.Context) (time.Time, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err1 := s.admin.Do(ctx, s.admin.B().Llen().Key("asynq:{default}:pending").Build()).AsInt64()
		a, err2 := s.admin.Do(ctx, s.admin.B().Llen().Key("asynq:{default}:active").Build()).AsInt64()
		if err1 == nil && err2 == nil && p == 0 && a == 0 {
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Now(), fmt.Errorf("asynq: not settled (pending %d, active %d)", p, a)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (s *asynqSystem) stopWorkers(context.Context) error {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv = nil
	}
	return nil
}

func (s *asynqSystem) close() {
	_ = s.stopWorkers(context.Background())
	if s.client != nil {
		_ = s.client.Close()
		s.client = nil
	}
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
}

type quietLogger struct{}

func (quietLogger) Debug(...any) {}
func (quietLogger) Info(...any)  {}
func (quietLogger) Warn(...any)  {}
func (quietLogger) Error(...any) {}
func (quietLogger) Fatal(...any) {}
