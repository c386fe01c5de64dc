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
// schema. Scripts live in lua/, one per method, with the library's helpers
// (only those a script uses) put in front at load time; each script's header
// declares its KEYS and ARGV, scripts.go declares the same names once, and
// a test checks that they agree. Scripts take the time as an argument and
// never call TIME; expiry of grants, idempotency keys and worker
// registrations is decided against it, and server TTLs only collect
// garbage.
//
// The server's cost per call is mostly Lua, not commands, so the scripts
// are built to do little per call (BenchmarkServerCost measures each
// operation): K.<key>, A.<arg> and e.<field> are rewritten to array indexes
// when a script is built (rewrite.go), so no table binds them; the
// execution record is stored as JSON arrays that one cjson call decodes and
// a script uses as they are, with the fields the common path never touches
// kept apart and read only where used (record.go); indexes that only
// ExecutionIndexes reads are derived from the record; replies are flat
// arrays built directly. Every string entering Lua is hashed byte by byte
// (a Redis hardening), so a payload costs about 1 µs per KiB each time it
// passes through a script (at create and at claim).
//
// The record is versioned: its first hot number is recordVersion, and
// load_exec, through which every script reads a record, passes a record
// of another version to rec_upgrade, generated from pastLayouts and
// recordUpgrades: a past layout is read into the current one (appended
// fields take their blank values; other changes need a decoder, or the
// package does not initialise), and an unknown version (a newer build's)
// is refused with model.ErrCorrupt (the Lua error is mapped in
// transportError). See recordVersion for the upgrade rule.
//
// Scripts return flat name/value arrays (numbers as integer replies); one
// decoder (reply.go) reads fields by name with a sticky error, and maps a
// script's error to the *model.Error memstore returns. Client and server
// failures come back wrapped as "valkeystore: <script>: ...".
//
// The store implements model.WorkNotifier with pub/sub on P:work:<lane>
// (notify.go describes the trade-offs) and model.LeaseNotifier with pub/sub
// on P:lease:<instance> (lease_notify.go).
//
// Reads run as read-only scripts (EVALSHA_RO), which the client may retry
// after a connection failure; a write that fails on the connection may or
// may not have run and is the caller's to retry. With miniredis, create the
// client with DisableCache (miniredis has no client tracking).
package valkeystore
