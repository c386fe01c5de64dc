package main

import (
	"github.com/valkey-io/valkey-go"

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
