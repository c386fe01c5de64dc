package valkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

func TestSmoke(t *testing.T) {
	m := miniredis.RunT(t)
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	id := model.NewExecutionID(3, model.NewUUIDv4([16]byte{1, 2, 3}))
	r, err := s.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: id, Namespace: "ns", Lane: "l", Kind: "k", Payload: []byte("hi"), Tags: map[string]string{"a.b": "c"}, Now: now})
	t.Logf("%+v %v", r, err)
	d, err := s.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: id})
	t.Logf("%+v %v", d, err)
}
