// Package httpapi is a JSON HTTP surface over a *flowfabric.Engine: an
// http.Handler the host mounts where it likes (there is no server of ours
// to run), following FlowFabric's REST surface (engine.md §5).
//
//	engine := flowfabric.New(store, nil)
//	mux := http.NewServeMux()
//	mux.Handle("/flowfabric/", http.StripPrefix("/flowfabric", httpapi.New(engine, &httpapi.Options{Token: secret})))
//
// # Routes
//
//	GET  /healthz                                 {"ok":true} once the store answers (503 if not), never authenticated
//	POST /v1/executions                           submit (201, or 200 with "duplicate":true)
//	GET  /v1/executions?partition=&after=&limit=  one page of a partition's ids
//	GET  /v1/executions/search?namespace=&lane=&kind=&state=a,b&tag=k=v&cursor=&limit=&max_examined=
//	                                              executions across every partition (Engine.Find)
//	GET  /v1/executions/{id}                      the execution (a stable JSON view)
//	DELETE /v1/executions/{id}                    delete a terminal execution now (409 while live or a flow member)
//	GET  /v1/executions/{id}/state                {"id","state"}
//	GET  /v1/executions/{id}/payload              raw payload bytes
//	GET  /v1/executions/{id}/result               raw result bytes (404 until there is one)
//	GET  /v1/executions/{id}/attempts             every attempt, oldest first
//	GET  /v1/executions/{id}/lease-history?after=&limit=
//	GET  /v1/executions/{id}/attempts/{n}/stream?after=&limit=&exclude_best_effort=
//	                                              one page of attempt n's frames (limit ≤ 1000, default 100)
//	GET  /v1/executions/{id}/attempts/{n}/stream/tail?after=&limit=&wait_ms=
//	                                              waits up to wait_ms (≤ 30 000) for frames after the cursor
//	                                              (429 past Options.MaxTails open tails)
//	GET  /v1/executions/{id}/attempts/{n}/summary the attempt's summary document and its version
//	POST /v1/executions/{id}/cancel               {"reason"}
//	POST /v1/executions/{id}/replay               {"reason","requested_by"}
//	POST /v1/executions/{id}/revoke-lease         {"reason"}
//	POST /v1/executions/{id}/reclaim              (no body needed)
//	POST /v1/executions/{id}/retry-now            (no body needed) a delayed or retry-waiting one runs now
//	PUT  /v1/executions/{id}/priority             {"priority"}
//	GET  /v1/executions/{id}/tags                 {"id","tags"}
//	PATCH /v1/executions/{id}/tags                {"set":{k:v},"remove":[k]} in any state; answers {"id","tags"} after the change
//	POST /v1/executions/{id}/resume               (no body needed) resume a suspended execution as an operator
//	GET  /v1/executions/{id}/suspension           its open or last suspension, with its signals
//	GET  /v1/executions/{id}/waitpoints           its waitpoints, with the tokens of the open ones
//	GET  /v1/suspended?partition=&after=&limit=   one page of a partition's suspended executions
//	GET  /v1/signal-feed?partition=&after=&limit= a partition's signal deliveries by seq, and the last seq
//	GET  /v1/feeds/{completions|leases}?cursor=&limit=&wait_ms=&lane=&kind=&namespace=
//	                                              the feed's events after the cursor and the next cursor,
//	                                              waiting up to wait_ms (≤ 30 000) for one (404 feed_disabled
//	                                              when the store keeps no such feed)
//	POST /v1/signals                              {"token","name","source","payload"|"payload_base64","idempotency_key","dedup_ttl"}
//	                                              deliver a signal; the waitpoint token is the credential (no bearer token)
//	POST /v1/flows                                submit a flow (201; 200 with "duplicate":true for a repeated key)
//	GET  /v1/flows?finished=&cursor=&limit=       live (or finished) flows across every partition, described
//	GET  /v1/flows/{id}                           the flow
//	GET  /v1/flows/{id}/graph                     its members (id, kind, lane, state) and edges
//	POST /v1/flows/{id}/cancel                    {"policy","reason"}
//	GET  /v1/flows/{id}/tags                      {"id","tags"}
//	PATCH /v1/flows/{id}/tags                     {"set","remove"} as for an execution
//	DELETE /v1/flows/{id}                         (no body needed) a finished flow with all its members
//	POST /v1/budgets                              {"id"?,"limits":{"tokens":{"hard","soft"}},"reset_every","on_hard_breach"} (201; 200 when it existed)
//	GET  /v1/budgets/{id}                         usage, limits, breaches, next reset
//	POST /v1/budgets/{id}/usage                   {"deltas":{...},"dedup_key"} as an operator (409 budget_exceeded on a hard breach)
//	POST /v1/budgets/{id}/reset                   zero the usage now
//	POST /v1/quotas                               {"id"?,"rate","window","jitter","concurrency"}
//	GET  /v1/quotas/{id}?key=K                    one bucket: in window, active, free, retry after
//	POST /v1/lanes/{lane}/pause                   {"reason"?}: no new attempt starts on the lane, in any process, until resumed
//	POST /v1/lanes/{lane}/resume                  its waiting work is claimable at once ("was_paused")
//	GET  /v1/lanes/{lane}                         paused?, since when, why
//	GET  /v1/lanes                                the namespace's lanes with counts per state, workers, paused
//	GET  /v1/counts?namespace=&lane=&kind=        executions per public state
//	GET  /                                        redirects to ui/
//	GET  /ui/                                     the dashboard (embedded files; see below)
//
// # Contract
//
// Requests and responses are JSON (application/json), except the raw
// payload and result endpoints, which answer application/octet-stream
// with the bytes exactly as stored. Execution ids travel in their
// canonical form "{fp:N}:<uuid>" (percent-encode the braces in a path or
// not: both are accepted), flow ids as UUIDs, times as RFC 3339 in UTC
// with milliseconds, durations as Go duration strings ("1.5s").
//
// A submission's "payload" is any JSON value, stored as its JSON bytes
// (absent or null: an empty payload); "payload_base64" (standard
// encoding) carries binary payloads instead. Responses never inline
// payloads or results: read them from the raw endpoints.
//
// Request bodies are decoded strictly: an unknown field, a second JSON
// value or a wrong type is refused (400), so a typo is never silently
// ignored. An operator action's body may repeat the execution's (or the
// flow's) "id"; one that names another id than the path is refused (400).
// Submission bodies are capped at Options.MaxBodyBytes (1 MiB) and
// operator actions at Options.MaxControlBodyBytes (64 KiB); a larger body
// is refused with 413.
//
// With Options.Token set, every route but /healthz, POST /v1/signals and
// the dashboard's static files requires "Authorization: Bearer <token>"
// (compared in constant time) and answers 401 otherwise, before any
// routing, so unknown paths are not revealed. Options.Authorize, when
// set, makes that decision instead (the host's own authentication).
//
// # Dashboard
//
// GET /ui/ serves a single-page dashboard embedded in the package (HTML,
// JavaScript, CSS and inline SVG; nothing is fetched from another origin,
// so it works offline): lanes with their counts per state and pause and
// resume, executions filtered by state, lane and kind with paging, one
// execution's fields, attempts, lease history, stream frames, payload and
// result, flows drawn as their DAG with member states, the operator
// actions cancel, replay and retry now behind a confirmation, and charts
// of throughput and backlog sampled from GET /v1/counts while the page is
// open. It reads and acts only through the routes above, with URLs
// relative to the mount point. Its files need no credential (they hold no
// data); when the API needs a token the page asks for it once and keeps it
// in the tab's sessionStorage. Its responses carry a
// Content-Security-Policy that allows only the page's own origin, and it
// puts every value from the API into the page as text.
//
// Every error is {"error": message, "kind": kind, "retryable": bool}.
// kind is the engine's error code (model.Code, such as
// "execution_not_found" or "invalid_input") or, for conditions of the
// HTTP layer, one of "bad_request", "unauthorized", "not_found",
// "method_not_allowed", "body_too_large" and "unavailable". The status
// follows engine.md §5: 404 for what does not exist (an execution, a
// flow, a result not yet produced), 400 for invalid input, 409 for a
// state that refuses the operation (not active, not terminal, not
// eligible, a terminal or sealed flow, an idempotency conflict, a cycle),
// 429 for capacity and rate limits, 503 when the store could not answer
// (a connection error, a deadline; retryable), 500 for a broken
// invariant or a corrupt record, 413 for an oversized body. retryable is
// true when repeating the same request may succeed.
package httpapi
