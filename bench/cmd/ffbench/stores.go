package main

import (
	"context"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"

	"github.com/flowfabric/flowfabric/memstore"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// openValkey empties the server at addrs and opens a valkeystore on it;
// closeFn closes the store and its client.
func openValkey(addrs []string) (vs *valkeystore.Store, closeFn func(), err error) {
	if err := (&serverProbe{addrs: addrs}).flushAll(); err != nil {
		return nil, nil, err
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return nil, nil, err
	}
	vs, err = valkeystore.New(client, nil)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return vs, func() { vs.Close(); client.Close() }, nil
}

// openStore is a fresh memstore when addrs is nil, else openValkey.
func openStore(addrs []string) (model.Store, func(), error) {
	if addrs == nil {
		return memstore.New(nil), func() {}, nil
	}
	return openValkey(addrs)
}

// startEngine starts an engine with the default config on openStore(addrs);
// stop stops the engine, then closes the store.
func startEngine(ctx context.Context, addrs []string) (engine *flowfabric.Engine, stop func(), err error) {
	store, closeStore, err := openStore(addrs)
	if err != nil {
		return nil, nil, err
	}
	engine = flowfabric.New(store, nil)
	if err := engine.Start(ctx); err != nil {
		closeStore()
		return nil, nil, err
	}
	return engine, func() { _ = engine.Stop(context.Background()); closeStore() }, nil
}
