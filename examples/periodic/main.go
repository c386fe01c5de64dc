// Command periodic runs a periodic job in two engines that share a store,
// as two processes would, and a unique job. The schedule ticks every
// second; each tick is submitted once between the two engines, with no
// leader, because each tick carries an idempotency key of its own. A
// refresh that is unique by args and by state is a duplicate while the
// first one waits or runs, and runs again once the first completed.
//
//	go run ./examples/periodic                          # in-memory store
//	go run ./examples/periodic -valkey 127.0.0.1:6379   # Valkey/Redis
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// Heartbeat is what the periodic job submits on every tick.
type Heartbeat struct {
	Service string `json:"service"`
}

// Kind implements flowfabric.Args.
func (Heartbeat) Kind() string { return "heartbeat" }

// Refresh refreshes one account's cache; it is submitted as a unique job.
type Refresh struct {
	Account string `json:"account"`
}

// Kind implements flowfabric.Args.
func (Refresh) Kind() string { return "refresh" }

// ticks is how many ticks the example waits for.
const ticks = 3

func main() {
	addrs := flag.String("valkey", "", "comma-separated Valkey/Redis address(es); empty: the in-memory store")
	flag.Parse()
	store, closeStore, err := openStore(*addrs)
	if err != nil {
		log.Fatal(err)
	}
	defer closeStore()
	if err := run(store, func(s string) { fmt.Println(s) }); err != nil {
		log.Fatal(err)
	}
}

// openStore returns memstore, or valkeystore on the given server(s) under
// a prefix of its own.
func openStore(addrs string) (flowfabric.Store, func(), error) {
	if addrs == "" {
		return memstore.New(nil), func() {}, nil
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: strings.Split(addrs, ",")})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addrs, err)
	}
	store, err := valkeystore.New(client, &valkeystore.Options{Prefix: fmt.Sprintf("periodic%d", time.Now().UnixNano())})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return store, func() { store.Close(); client.Close() }, nil
}

func run(store flowfabric.Store, report func(string)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Two engines on one store stand for two processes (on Valkey each
	// process would have its own client on the same server). Both add the
	// same job.
	job := flowfabric.PeriodicJob{Name: "heartbeat", Every: time.Second, Args: Heartbeat{Service: "api"}}
	var engines []*flowfabric.Engine
	for range 2 {
		e := flowfabric.New(store, nil)
		if err := e.AddPeriodic(job); err != nil {
			return err
		}
		if err := e.Start(ctx); err != nil {
			return err
		}
		defer e.Stop(context.Background()) //nolint:errcheck // best effort at exit
		engines = append(engines, e)
	}

	// One worker, in the first process: heartbeats complete at once,
	// refreshes wait until the program lets them go.
	var beats atomic.Int32
	release := make(chan struct{})
	w := flowfabric.NewWorker(engines[0], &flowfabric.WorkerConfig{MaxConcurrent: 4})
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Heartbeat]) error {
		beats.Add(1)
		return nil
	}))
	flowfabric.AddHandler(w, flowfabric.WorkFunc(func(ctx context.Context, t *flowfabric.Task[Refresh]) error {
		select {
		case <-release:
			return t.SetResult([]byte("refreshed " + t.Args.Account))
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(context.Background()) //nolint:errcheck // best effort at exit

	report(fmt.Sprintf("periodic job %q: every second, added in %d processes", job.Name, len(engines)))
	if err := until(ctx, func() bool { return beats.Load() >= ticks && sameLast(engines) }); err != nil {
		return fmt.Errorf("waiting for %d ticks: %w", ticks, err)
	}
	for _, e := range engines {
		e.RemovePeriodic(job.Name)
	}
	// Each heartbeat was created at its tick (within milliseconds): the
	// ticks they name must be distinct and without a gap.
	created, err := createdOfKind(ctx, engines[0], Heartbeat{}.Kind())
	if err != nil {
		return err
	}
	seen := map[time.Time]bool{}
	for _, c := range created {
		seen[c.Round(time.Second)] = true
	}
	once := len(seen) == len(created) && len(created) >= ticks &&
		int(created[len(created)-1].Round(time.Second).Sub(created[0].Round(time.Second))/time.Second)+1 == len(created)
	report(fmt.Sprintf("at least %d ticks, each submitted once between the processes: %v", ticks, once))

	// A refresh per account, never two waiting or running at once.
	unique := &flowfabric.SubmitOpts{Unique: &flowfabric.UniqueOpts{ByArgs: true,
		ByState: []flowfabric.PublicState{flowfabric.PublicWaiting, flowfabric.PublicActive}}}
	acme, err := engines[0].Submit(ctx, Refresh{Account: "acme"}, unique)
	if err != nil {
		return err
	}
	again, err := engines[1].Submit(ctx, Refresh{Account: "acme"}, unique)
	if err != nil {
		return err
	}
	report(fmt.Sprintf("refresh acme again while the first waits or runs: duplicate %v, same execution %v",
		again.Duplicate, again.ID == acme.ID))
	bolt, err := engines[1].Submit(ctx, Refresh{Account: "bolt"}, unique)
	if err != nil {
		return err
	}
	report(fmt.Sprintf("refresh bolt: duplicate %v", bolt.Duplicate))
	close(release)
	for _, id := range []flowfabric.ExecutionID{acme.ID, bolt.ID} {
		snap, err := engines[0].Wait(ctx, id, 20*time.Millisecond)
		if err != nil {
			return err
		}
		if snap.PublicState != flowfabric.PublicCompleted {
			return fmt.Errorf("refresh %s: %s", id, snap.PublicState)
		}
	}
	after, err := engines[1].Submit(ctx, Refresh{Account: "acme"}, unique)
	if err != nil {
		return err
	}
	report(fmt.Sprintf("refresh acme after the first completed: a new execution %v", !after.Duplicate && after.ID != acme.ID))
	snap, err := engines[0].Wait(ctx, after.ID, 20*time.Millisecond)
	if err != nil {
		return err
	}
	report("the new refresh: " + snap.PublicState.String())
	return nil
}

// sameLast reports whether every engine has handled the same newest tick.
func sameLast(engines []*flowfabric.Engine) bool {
	last := engines[0].Periodics()[0].Last
	for _, e := range engines[1:] {
		if !e.Periodics()[0].Last.Equal(last) {
			return false
		}
	}
	return !last.IsZero()
}

// until polls cond every 10ms until it holds or ctx ends.
func until(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// createdOfKind returns the creation times of the executions of kind on
// the default lane, in submission order.
func createdOfKind(ctx context.Context, e *flowfabric.Engine, kind string) ([]time.Time, error) {
	part := e.Store().Partitions().SoloPartition(flowfabric.DefaultLane)
	page, err := e.List(ctx, &flowfabric.ListOpts{Partition: part, Limit: 1000})
	if err != nil {
		return nil, err
	}
	if !page.Next.IsZero() {
		return nil, errors.New("more than a page of executions")
	}
	var out []time.Time
	for _, id := range page.IDs {
		snap, err := e.Describe(ctx, id)
		if err != nil {
			return nil, err
		}
		if string(snap.Kind) == kind {
			out = append(out, snap.CreatedAt)
		}
	}
	return out, nil
}
