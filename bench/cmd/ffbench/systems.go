package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// benchArgs is the job every system runs: the same JSON on every system
// ({"seq":N,"data":"xxxx…"}), decoded before the handler (flowfabric and
// River decode typed args; the Asynq and raw handlers decode themselves).
type benchArgs struct {
	Seq  int64  `json:"seq"`
	Data string `json:"data,omitempty"`
}

// Kind implements flowfabric.Args and river.JobArgs.
func (benchArgs) Kind() string { return "bench" }

// system is one job system under test. A run is open → submit… →
// startWorkers → … → stopWorkers → close.
type system interface {
	Name() string
	// Describe says how the system is set up, for the report.
	Describe() string
	// probe returns the server(s) whose INFO to read, or nil.
	probe() *serverProbe
	// open prepares an empty queue and the client side.
	open(ctx context.Context) error
	submit(ctx context.Context, a benchArgs) error
	// startWorkers starts slots concurrent handlers; onStart is called at
	// the start of every handler with the job's seq.
	startWorkers(ctx context.Context, slots int, onStart func(seq int64)) error
	// completions counts jobs whose completion the system has recorded.
	completions() *counter
	stopWorkers(ctx context.Context) error
	close()
}

// batchSubmitter is implemented by systems with a batch insert.
type batchSubmitter interface {
	submitBatch(ctx context.Context, as []benchArgs) error
}

// settler is implemented by systems whose completion counter runs ahead of
// the durable record (Asynq: the handler returned, the task is not yet
// acknowledged); settle waits until the server holds no pending or active
// job and returns when it saw that.
type settler interface {
	settle(ctx context.Context) (time.Time, error)
}

// roundTripper is implemented by systems that count their store calls.
type roundTripper interface {
	storeCalls() map[string]int64
}

// payload4K is the 4 KiB data string of S1 jobs.
var payload4K = func() string {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}()

// encode frames a job for the systems that carry opaque bytes (raw,
// Asynq, flowfabric): an 8-byte big-endian sequence number, then the data.
// River, whose API takes JSON arguments, encodes benchArgs as JSON itself.
func encode(a benchArgs) []byte {
	b := make([]byte, 8+len(a.Data))
	binary.BigEndian.PutUint64(b, uint64(a.Seq))
	copy(b[8:], a.Data)
	return b
}

// decode reads the sequence number of a framed job.
func decode(b []byte) (benchArgs, error) {
	if len(b) < 8 {
		return benchArgs{}, fmt.Errorf("bench: job of %d bytes has no sequence number", len(b))
	}
	return benchArgs{Seq: int64(binary.BigEndian.Uint64(b))}, nil
}

// submitParallel submits seqs [from, to) with conc goroutines.
func submitParallel(ctx context.Context, s system, from, to int64, conc int, data string, mark func(int64, time.Time)) error {
	return parallelDo(int(to-from), conc, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		seq := from + int64(i)
		if mark != nil {
			mark(seq, time.Now())
		}
		if err := s.submit(ctx, benchArgs{Seq: seq, Data: data}); err != nil {
			return fmt.Errorf("%s: submit %d: %w", s.Name(), seq, err)
		}
		return nil
	})
}

// submitBatches inserts [0, n) in batches of size batch, conc batches in
// flight. Systems without a batch insert get each batch as parallel single
// submits (16 at a time).
func submitBatches(ctx context.Context, s system, n, batch, conc int) error {
	bs, ok := s.(batchSubmitter)
	return parallelDo((n+batch-1)/batch, conc, func(b int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		from := b * batch
		to := min(from+batch, n)
		if !ok {
			return submitParallel(ctx, s, int64(from), int64(to), 16, "", nil)
		}
		as := make([]benchArgs, 0, to-from)
		for i := from; i < to; i++ {
			as = append(as, benchArgs{Seq: int64(i)})
		}
		return bs.submitBatch(ctx, as)
	})
}

var errTimeout = errors.New("timed out")

// waitFor waits for ch, ctx or the timeout.
func waitFor(ctx context.Context, ch <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errTimeout
	}
}
