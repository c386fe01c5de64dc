package main

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// OpCost is the server cost of one valkeystore operation, measured alone:
// n operations, one after another from 16 goroutines, on an otherwise idle
// server.
type OpCost struct {
	Op string `json:"op"`
	N  int    `json:"n"`
	// Path names the way through the claim path a row belongs to (S10:
	// "inline" or "grant"; empty elsewhere).
	Path string `json:"path,omitempty"`
	// CmdsPerOp counts every command (the script call and the commands it
	// ran).
	CmdsPerOp float64 `json:"server_cmds_per_op"`
	// ScriptUsec is the script's time per call; InnerUsec the part spent in
	// the commands it ran; LuaUsec the rest (interpreter, argument
	// binding, encoding).
	ScriptUsec float64  `json:"script_usec_per_op"`
	InnerUsec  float64  `json:"inner_cmd_usec_per_op"`
	LuaUsec    float64  `json:"lua_usec_per_op"`
	ServerCPU  float64  `json:"server_cpu_usec_per_op"`
	ClientCPU  float64  `json:"client_cpu_usec_per_op"`
	Wall       float64  `json:"wall_usec_per_op"`
	Top        []string `json:"top_commands"`
}

// opCosts measures ExecutionCreate (4 KiB payload), ExecutionClaimNext and
// ExecutionComplete separately on a fresh valkeystore.
func opCosts(ctx context.Context, addrs []string, n int) ([]OpCost, error) {
	probe := &serverProbe{addrs: addrs}
	if err := probe.flushAll(); err != nil {
		return nil, err
	}
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	store, err := valkeystore.New(client, nil)
	if err != nil {
		return nil, err
	}
	part := store.Partitions().SoloPartition(model.DefaultLane)
	payload := []byte(payload4K)
	claims := make([]*model.ClaimResult, n)
	// load the scripts so that no EVAL fallback is measured
	warm := model.NewExecutionID(part, benchUUID())
	if _, err := store.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: warm, Namespace: model.DefaultNamespace,
		Lane: "warm", Kind: "bench", Now: time.Now()}); err != nil {
		return nil, err
	}
	wr, err := store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{Partition: part, Lane: "warm", ScanLimit: 32,
		LeaseRequest: model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1", LeaseID: model.LeaseID(benchUUID()),
			AttemptID: model.AttemptID(benchUUID()), LeaseTTL: time.Minute}, Now: time.Now()})
	if err != nil || wr.Claimed == nil {
		return nil, fmt.Errorf("warm-up claim: %w", err)
	}
	if _, err := store.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: warm, Fence: wr.Claimed.Fence(), Now: time.Now()}); err != nil {
		return nil, err
	}
	ops := []struct {
		name string
		f    func(i int) error
	}{
		{"ExecutionCreate (4 KiB payload)", func(int) error {
			_, err := store.ExecutionCreate(ctx, &model.ExecutionCreateParams{ID: model.NewExecutionID(part, benchUUID()),
				Namespace: model.DefaultNamespace, Lane: model.DefaultLane, Kind: "bench", Payload: payload, Now: time.Now()})
			return err
		}},
		{"ExecutionClaimNext", func(i int) error {
			r, err := store.ExecutionClaimNext(ctx, &model.ExecutionClaimNextParams{Partition: part, Lane: model.DefaultLane,
				ScanLimit: 32, LeaseRequest: model.LeaseRequest{WorkerID: "w", WorkerInstanceID: "w-1",
					LeaseID: model.LeaseID(benchUUID()), AttemptID: model.AttemptID(benchUUID()), LeaseTTL: time.Minute},
				Now: time.Now()})
			if err != nil {
				return err
			}
			if r.Claimed == nil {
				return fmt.Errorf("claim %d: nothing claimed", i)
			}
			claims[i] = r.Claimed
			return nil
		}},
		{"ExecutionComplete", func(i int) error {
			c := claims[i]
			_, err := store.ExecutionComplete(ctx, &model.ExecutionCompleteParams{ID: c.ID, Fence: c.Fence(), Now: time.Now()})
			return err
		}},
	}
	var out []OpCost
	for _, op := range ops {
		w := openWindow(probe)
		if err := parallelDo(n, 16, op.f); err != nil {
			return out, fmt.Errorf("%s: %w", op.name, err)
		}
		st := w.close()
		fn := float64(n)
		oc := OpCost{Op: op.name, N: n, CmdsPerOp: float64(st.Cmds.total()) / fn,
			ScriptUsec: float64(st.Cmds.scriptUsec()) / fn, InnerUsec: float64(st.Cmds.nonScriptUsec()) / fn,
			ServerCPU: st.ServerCPU * 1e6 / fn, ClientCPU: float64(st.ClientCPU.Microseconds()) / fn,
			Wall: float64(st.Elapsed.Microseconds()) / fn, Top: st.Cmds.top(12, fn)}
		oc.LuaUsec = oc.ScriptUsec - oc.InnerUsec
		out = append(out, oc)
	}
	return out, nil
}
