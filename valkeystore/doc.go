// Package valkeystore is the model.Store on Valkey or Redis (≥ 7.0),
// standalone or cluster, through github.com/valkey-io/valkey-go. It is the
// same machine as memstore: for the same operations and Now values it returns
// the same results and errors and leaves the same observable state; the
// tests of this package check that differentially, on miniredis, on a real
// server and on a real cluster.
//
// Each Store method validates its params with the model's Validate (nothing
// is sent for bad input), then runs one Lua script (EVALSHA, falling back to
// EVAL) whose keys all carry one hash tag: the execution's partition
// "{fp:N}", or "{w:<ns>}" for the worker registry. keys.go documents the key
// schema. Scripts live in lua/, one per method, with lua/lib.lua's helpers
// (only those a script uses) put in front at load time; each script's header
// declares its KEYS and ARGV, scripts.go declares the same names once, and
// a test checks that they agree. Scripts take the time as an argument and
// never call TIME; expiry of grants, idempotency keys and worker
// registrations is decided against it, and server TTLs only collect
// garbage.
//
// Scripts return flat name/value arrays; one decoder (reply.go) reads
// fields by name with a sticky error, and maps a script's error to the
// *model.Error memstore returns. Client and server failures come back
// wrapped as "valkeystore: <script>: ...".
//
// The store implements model.WorkNotifier with pub/sub on P:work:<lane>;
// notify.go describes the trade-offs.
//
// Reads run as read-only scripts (EVALSHA_RO), which the client may retry
// after a connection failure; a write that fails on the connection may or
// may not have run and is the caller's to retry. With miniredis, create the
// client with DisableCache (miniredis has no client tracking).
package valkeystore
