package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/valkey-io/valkey-go"
)

// rawSystem is the floor: the same server and client as valkeystore, with
// submit = RPUSH, claim = BLMPOP (one job), complete = INCR. No leases, no
// retries, no state.
type rawSystem struct {
	addrs  []string
	client valkey.Client
	comp   *counter
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

const (
	rawQueue = "raw:{q}:jobs"
	rawDone  = "raw:{q}:done"
)

func newRaw(addrs []string) *rawSystem { return &rawSystem{addrs: addrs} }

func (s *rawSystem) Name() string { return "raw" }

func (s *rawSystem) Describe() string {
	return "valkey-go on the standalone server: RPUSH / BLMPOP LEFT COUNT 1 (blocking pool, one connection per consumer) / INCR; N consumer goroutines"
}

func (s *rawSystem) probe() *serverProbe { return &serverProbe{addrs: s.addrs} }

func (s *rawSystem) open(context.Context) error {
	s.comp = newCounter()
	if err := s.probe().flushAll(); err != nil {
		return err
	}
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: s.addrs, DisableCache: true})
	if err != nil {
		return err
	}
	s.client = c
	return nil
}

func (s *rawSystem) submit(ctx context.Context, a benchArgs) error {
	return s.client.Do(ctx, s.client.B().Rpush().Key(rawQueue).Element(string(encode(a))).Build()).Error()
}

func (s *rawSystem) submitBatch(ctx context.Context, as []benchArgs) error {
	el := make([]string, len(as))
	for i, a := range as {
		el[i] = string(encode(a))
	}
	return s.client.Do(ctx, s.client.B().Rpush().Key(rawQueue).Element(el...).Build()).Error()
}

func (s *rawSystem) startWorkers(ctx context.Context, slots int, onStart func(int64)) error {
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for range slots {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.consume(ctx, onStart)
		}()
	}
	return nil
}

func (s *rawSystem) consume(ctx context.Context, onStart func(int64)) {
	pop := s.client.B().Blmpop().Timeout(0.2).Numkeys(1).Key(rawQueue).Left().Count(1).Build().Pin()
	incr := s.client.B().Incr().Key(rawDone).Build().Pin()
	for ctx.Err() == nil {
		arr, err := s.client.Do(ctx, pop).ToArray()
		if valkey.IsValkeyNil(err) {
			continue // timed out empty
		}
		if err != nil {
			if ctx.Err() == nil {
				fmt.Println("raw: BLMPOP:", err)
			}
			continue
		}
		if len(arr) != 2 {
			continue
		}
		els, err := arr[1].AsStrSlice()
		if err != nil {
			continue
		}
		for _, e := range els {
			a, err := decode([]byte(e))
			if err != nil {
				continue
			}
			onStart(a.Seq)
			if err := s.client.Do(ctx, incr).Error(); err == nil {
				s.comp.add(1)
			}
		}
	}
}

func (s *rawSystem) completions() *counter { return s.comp }

func (s *rawSystem) stopWorkers(context.Context) error {
	if s.cancel != nil {
		s.cancel()
		s.wg.Wait()
		s.cancel = nil
	}
	return nil
}

func (s *rawSystem) close() {
	_ = s.stopWorkers(context.Background())
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}
