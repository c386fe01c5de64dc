// Package valkeystore is the model.Store on Valkey or Redis (≥ 7.0),
// standalone or cluster, through github.com/valkey-io/valkey-go. It is the
// same machine as memstore: for the same operations and Now values it returns
// the same results and errors and leaves the same observable state; the
// tests of this package check that differentially, on miniredis, on a real
// server and on a real cluster.
//
// Each Store method validates its params with the model's Validate (nothing
// is sent for bad input), then runs one Lua script whose keys all carry one
// hash tag: the execution's partition
// "{fp:N}", "{w:<ns>}" for the worker registry, a budget's partition
// "{b:M}" or a quota policy's "{q:K}" (model.AdmissionStore). keys.go
// documents the key schema. Scripts live in lua/, one per method, with a library of helpers
// in lua/lib/<topic>.lua (lua/README.md has the rules for writing them).
// Scripts take the time as an argument and never call TIME; expiry of
// grants, idempotency keys and worker registrations is decided against it,
// and server TTLs only collect garbage.
//
// How a script is assembled (scripts.go, once, at package init, from the
// embedded files; a script that cannot be assembled panics):
//
//   - header: the script's "-- KEYS:" and "-- ARGV:" lines are the only
//     declaration of its keys and arguments, in order. Go reads them; call
//     sites pass keys and arguments by name and run orders them (a
//     declared name not passed, or an argument not declared, panics).
//     The automatic arguments (autoArgs: feeds, the store's
//     Options.Feeds) are the exception: a script whose helpers read one
//     takes it after its header's without declaring it, and run fills it
//     in from the store when the call site does not pass it.
//   - prelude: one line binds the declared keys the assembled script uses
//     to locals, "local K_core, K_lanes = KEYS[1], KEYS[2]", and one the
//     arguments (A_<arg>). A K_ or A_ name the header does not declare, or
//     a direct KEYS, ARGV, K or A, fails the assembly.
//   - helpers: then the library definitions the script names (names as
//     the Lua tokenizer in rewrite.go sees them: not in strings or
//     comments, not after "." or ":"), with every definition they use, in
//     library order: the generated ones (record.go, index_lua.go), then
//     the files of libTopics in order. A definition uses only those above
//     it.
//   - record fields: in the helpers and the script, e.<field> becomes the
//     field's array slot (record.go), keeping every line in place.
//   - line map: each line of the result maps to its source file and line;
//     sourceError rewrites the positions in a server's error
//     ("user_script:<n>", "user_function:<n>") to "lua/<file>.lua:<line>"
//     and names the record field where the server says "field '?'".
//
// How a script runs (Options.ScriptCalls, functions.go): on a server with
// FUNCTION (Redis ≥ 7, Valkey) every script is a function of one library,
// ff_<hash of its text> (about 1.1 MB of Lua, 3.3 MB of server memory,
// loaded in about 40 ms), which the store loads on each node at its first
// call and again on any node that answers "Function not found" (a flush, a
// restart without persistence, a new cluster node); the call is then
// retried once. A function's helpers are defined when the library loads,
// not on every call, and the call binds what they read (functionChunk).
// Elsewhere (miniredis, Redis < 7, an ACL that denies the client FUNCTION
// while the library is missing) the store runs EVALSHA, falling back to
// EVAL when the server lacks the script; ScriptCallsEval forces it. Both run the same
// Lua, and the conformance suite and the differential run both. A
// deployment of another version loads its own library beside this one;
// FUNCTION DELETE removes an old one no process runs.
//
// The server's cost per call is mostly Lua, not commands, so the scripts
// are built to do little per call (BenchmarkServerCost measures each
// operation): a script carries only the helpers it uses; record fields are
// array slots, so no table binds them; the execution record is stored as
// JSON arrays that one cjson call decodes and a script uses as they are,
// with the fields the common path never touches kept apart and read only
// where used (record.go); indexes that only ExecutionIndexes reads are
// derived from the record; replies are flat arrays built directly. Every
// string entering Lua is hashed byte by byte (a Redis hardening), so a
// payload costs about 1 µs per KiB each time it passes through a script
// (at create and at claim).
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
// (notify.go describes the trade-offs), model.LeaseNotifier with pub/sub
// on P:lease:<instance> (lease_notify.go), model.StreamNotifier with
// pub/sub on P:stream:<partition tag> (stream_ops.go) and
// model.FeedNotifier with pub/sub on P:feed:<feed> (feed_ops.go). The
// event feeds (model.FeedStore) are opt-in (Options.Feeds): a store
// without them runs no feed command.
//
// Reads run as read-only scripts (FCALL_RO of a no-writes function, or
// EVALSHA_RO), which the client may retry
// after a connection failure; a write that fails on the connection may or
// may not have run and is the caller's to retry. With miniredis, create the
// client with DisableCache (miniredis has no client tracking).
package valkeystore
