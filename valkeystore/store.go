package valkeystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// DefaultPrefix starts every key of a store whose Options.Prefix is empty.
const DefaultPrefix = "ff"

// DefaultGCSlack is added to the lifetime of idempotency and worker records
// to form their server-side TTL.
const DefaultGCSlack = time.Hour

// Options configures a Store. The zero value means the defaults.
type Options struct {
	// Partitions sets the partition counts (zero: the defaults). Every
	// process sharing a server must use the same counts and prefix.
	Partitions model.PartitionConfig
	// Prefix starts every key and channel name (default "ff"). Stores with
	// different prefixes share a server without seeing each other. It must
	// not contain braces, whitespace or control characters.
	Prefix string
	// GCSlack is how long idempotency and worker records outlive their
	// expiry on the server before the server drops them (default 1h). It
	// only collects garbage: expiry itself is decided against Params.Now.
	GCSlack time.Duration
	// Feeds says which event feeds the store keeps (model.FeedStore;
	// none by default). Every process sharing a server should use the
	// same: a process without a feed writes no events to it.
	Feeds model.Feeds
	// ScriptCalls says how the store runs its scripts: by default
	// (ScriptCallsAuto) as one function library (FCALL) where the server
	// has FUNCTION, loaded on the first call, and with EVALSHA elsewhere.
	// Both run the same Lua; functions skip redefining each script's
	// helpers on every call.
	ScriptCalls ScriptCalls
}

// Store is the model.Store on Valkey or Redis (≥ 7.0), standalone or
// cluster. Create it with New. It does not own the client.
type Store struct {
	client  valkey.Client
	cfg     model.PartitionConfig
	keys    keyspace
	gcSlack int64 // ms
	feeds   model.Feeds
	// feedsArg is the scripts' automatic argument feeds (feedsArg).
	feedsArg string

	watchMu  sync.Mutex
	watches  map[model.LaneID]*watch[int]
	watchSeq int
	closed   bool
	// watchLinger is how long a subscription outlives its last watcher
	// (watch.go)
	watchLinger time.Duration

	leaseWatches map[model.WorkerInstanceID]*watch[model.LeaseNotice]
	// streamWatches are by partition; the message is "<id>|<attempt>", ""
	// after a resubscription (stream_ops.go)
	streamWatches map[int]*watch[string]
	// feedWatches are by feed; the message is a partition and the event
	// appended there, partition -1 after a resubscription (feed_ops.go)
	feedWatches map[model.FeedKind]*watch[feedNotice]

	scripts scriptRunner
}

var (
	_ model.Store               = (*Store)(nil)
	_ model.WorkNotifier        = (*Store)(nil)
	_ model.LeaseNotifier       = (*Store)(nil)
	_ model.StreamFrameNotifier = (*Store)(nil)
	_ model.AdmissionStore      = (*Store)(nil)
	_ model.StreamStore         = (*Store)(nil)
	_ model.StreamNotifier      = (*Store)(nil)
	_ model.FeedStore           = (*Store)(nil)
	_ model.RetentionStore      = (*Store)(nil)
	_ model.FlowDeleter         = (*Store)(nil)
	_ model.FeedNotifier        = (*Store)(nil)
)

// New returns a store that keeps its state on client's server. It sends
// nothing to the server; scripts are loaded on first use.
func New(client valkey.Client, opts *Options) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("valkeystore: new: %w", model.InvalidField("client", "missing"))
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Partitions.Validate(); err != nil {
		return nil, fmt.Errorf("valkeystore: new: %w", err)
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(o.Prefix, "{}") || strings.IndexFunc(o.Prefix, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return nil, fmt.Errorf("valkeystore: new: %w", &model.Error{Code: model.CodeInvalidInput,
			Field: "Options.Prefix", Detail: "bad_character", Got: strconv.Quote(o.Prefix), Want: "no '{', '}', spaces or control characters"})
	}
	if o.GCSlack == 0 {
		o.GCSlack = DefaultGCSlack
	}
	if o.GCSlack < 0 {
		return nil, fmt.Errorf("valkeystore: new: %w", model.OutOfRange("Options.GCSlack", o.GCSlack, "0 (the default) or more"))
	}
	if err := o.Feeds.Validate(); err != nil {
		var me *model.Error
		if errors.As(err, &me) {
			c := *me
			c.Field = "Options." + c.Field
			err = &c
		}
		return nil, fmt.Errorf("valkeystore: new: %w", err)
	}
	if !o.ScriptCalls.valid() {
		return nil, fmt.Errorf("valkeystore: new: %w", invalidScriptCalls(o.ScriptCalls))
	}
	st := &Store{
		client:   client,
		cfg:      o.Partitions.WithDefaults(),
		keys:     keyspace{prefix: o.Prefix},
		gcSlack:  o.GCSlack.Milliseconds(),
		feeds:    o.Feeds,
		feedsArg: feedsArg(o.Feeds),
		watches:  make(map[model.LaneID]*watch[int]),

		leaseWatches:  make(map[model.WorkerInstanceID]*watch[model.LeaseNotice]),
		streamWatches: make(map[int]*watch[string]),
		watchLinger:   watchLinger,
		feedWatches:   make(map[model.FeedKind]*watch[feedNotice]),
	}
	st.scripts.mode = o.ScriptCalls
	return st, nil
}

// Partitions implements model.Store.
func (s *Store) Partitions() model.PartitionConfig { return s.cfg }

// args holds a script's arguments by name. Values are strings, []byte,
// integers, bools, time.Time (Unix ms, zero: 0), time.Duration (ms), or
// string-kinded model types.
type args map[string]any

// run executes sc with keys and arguments given by name. Every declared
// name must be present in keys (extra keys are ignored, so call sites pass
// a whole key set) and args must hold the declared arguments and nothing
// else, but for the automatic ones (autoArgs), which run fills in from the
// store when args lacks them; a mismatch is a programming error and
// panics. A script error comes back as its *model.Error; a client or
// server failure wrapped with the op name.
func (s *Store) run(ctx context.Context, sc *script, keys map[string]string, a args) (*reply, error) {
	ks, as := s.scriptInput(sc, keys, a)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.decode(sc, s.exec(ctx, sc, ks, as))
}

// runEach executes sc once per element of calls, pipelined (each call is
// its own atomic step, on its own slot), and returns the replies in order.
// The first error of any call is returned, with the replies of the calls
// that succeeded (nil for the others).
func (s *Store) runEach(ctx context.Context, sc *script, calls []scriptCall) ([]*reply, error) {
	if len(calls) == 0 {
		return nil, ctx.Err()
	}
	multi := make([]valkey.LuaExec, len(calls))
	for i, c := range calls {
		multi[i].Keys, multi[i].Args = s.scriptInput(sc, c.keys, c.args)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]*reply, len(calls))
	var first error
	for i, res := range s.execMulti(ctx, sc, multi) {
		r, err := s.decode(sc, res)
		if err != nil && first == nil {
			first = err
		}
		out[i] = r
	}
	return out, first
}

// argv holds a script's arguments in its header's order, set by name with
// put: what run does with args, without building a map and boxing every
// value on the heap, for calls made once per frame (StreamAppend).
type argv struct {
	sc  *script
	as  []string
	set uint64 // bit i: as[i] was put
}

// argv starts sc's arguments, with its automatic ones filled in.
func (s *Store) argv(sc *script) *argv {
	if len(sc.args) > 64 {
		panic("valkeystore: " + sc.name + ": more than 64 arguments for argv")
	}
	a := &argv{sc: sc, as: make([]string, len(sc.args))}
	for _, n := range sc.added {
		i := slices.Index(sc.args, n)
		a.as[i], _ = s.autoArg(n)
		a.set |= 1 << i
	}
	return a
}

// put sets argument name to v, already formatted as run formats it
// (argString; numArg and timeArg for numbers and times).
func (a *argv) put(name, v string) *argv {
	i := slices.Index(a.sc.args, name)
	if i < 0 || a.set&(1<<i) != 0 {
		panic("valkeystore: " + a.sc.name + ": argument " + name + " undeclared or set twice")
	}
	a.as[i] = v
	a.set |= 1 << i
	return a
}

// numArg formats an integer argument as argString does.
func numArg[N int | int64 | uint64](n N) string {
	if n < 0 {
		return strconv.FormatInt(int64(n), 10)
	}
	return strconv.FormatUint(uint64(n), 10)
}

// timeArg formats a time argument as argString does (Unix ms, "0" for
// the zero time).
func timeArg(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// runArgv is run with keys in sc's header order and arguments from argv.
func (s *Store) runArgv(ctx context.Context, sc *script, keys []string, a *argv) (*reply, error) {
	if len(keys) != len(sc.keys) || a.set != 1<<len(sc.args)-1 {
		panic(fmt.Sprintf("valkeystore: %s: %d of %d keys, arguments set %b", sc.name, len(keys), len(sc.keys), a.set))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.decode(sc, s.exec(ctx, sc, keys, a.as))
}

// scriptCall is one call of runEach: keys and arguments by name, as run
// takes them.
type scriptCall struct {
	keys map[string]string
	args args
}

// scriptInput orders keys and a by sc's header (see run).
func (s *Store) scriptInput(sc *script, keys map[string]string, a args) (ks, as []string) {
	ks = make([]string, len(sc.keys))
	for i, n := range sc.keys {
		k, ok := keys[n]
		if !ok {
			panic("valkeystore: " + sc.name + ": no key " + n)
		}
		ks[i] = k
	}
	as = make([]string, len(sc.args))
	given := 0
	for i, n := range sc.args {
		v, ok := a[n]
		if ok {
			as[i] = argString(v)
			given++
			continue
		}
		if as[i], ok = s.autoArg(n); !ok {
			panic("valkeystore: " + sc.name + ": no argument " + n)
		}
	}
	if given != len(a) {
		panic(fmt.Sprintf("valkeystore: %s: %d arguments given, %d of them declared", sc.name, len(a), given))
	}
	return ks, as
}

// decode reads the reply of one execution of sc.
func (s *Store) decode(sc *script, res valkey.ValkeyResult) (*reply, error) {
	if err := res.Error(); err != nil {
		return nil, transportError(sc.name, s.sourceError(sc, err))
	}
	msg, err := res.ToMessage()
	if err != nil {
		return nil, transportError(sc.name, err)
	}
	r := decodeReply(sc.name, msg)
	if err := r.scriptError(); err != nil {
		return nil, err
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return r, nil
}

// autoArg returns the value of automatic argument n (autoArgs), false if
// n is not one.
func (s *Store) autoArg(n string) (string, bool) {
	if n == "feeds" {
		return s.feedsArg, true
	}
	return "", false
}

// feedsArg encodes f for the scripts (lua/lib/feed.lua): "" when it keeps
// no feed, else "<c>,<l>,<len>", c "c" or "-" for completions, l "l" or
// "-" for leases, len the events each partition's feed keeps.
func feedsArg(f model.Feeds) string {
	if !f.Completions && !f.Leases {
		return ""
	}
	c, l := "-", "-"
	if f.Completions {
		c = "c"
	}
	if f.Leases {
		l = "l"
	}
	return c + "," + l + "," + strconv.Itoa(f.EffectiveLen())
}

func argString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		if x {
			return "1"
		}
		return "0"
	case time.Time:
		if x.IsZero() {
			return "0"
		}
		return strconv.FormatInt(x.UnixMilli(), 10)
	case time.Duration:
		return strconv.FormatInt(x.Milliseconds(), 10)
	case model.LaneID:
		return string(x)
	case model.Namespace:
		return string(x)
	case model.Kind:
		return string(x)
	case model.WorkerID:
		return string(x)
	case model.WorkerInstanceID:
		return string(x)
	case model.Source:
		return string(x)
	case model.FailureCategory:
		return string(x)
	case model.ExecutionID:
		return x.String()
	case model.LeaseID:
		return x.String()
	case model.AttemptID:
		return x.String()
	case model.Capabilities:
		return x.CSV()
	case fmt.Stringer:
		return x.String()
	}
	panic(fmt.Sprintf("valkeystore: unsupported argument type %T", v))
}

// fenceArgs are the arguments of a fenced operation.
func fenceArgs(a args, f model.Fence) args {
	a["lease_id"] = f.LeaseID
	a["epoch"] = f.LeaseEpoch
	a["attempt_id"] = f.AttemptID
	return a
}

// leaseArgs are the arguments of a claim.
func leaseArgs(a args, r *model.LeaseRequest) args {
	a["worker_id"] = r.WorkerID
	a["worker_instance_id"] = r.WorkerInstanceID
	a["lease_id"] = r.LeaseID
	a["attempt_id"] = r.AttemptID
	a["lease_ttl"] = r.LeaseTTL
	return a
}

// normCaps returns validated capabilities sorted and de-duplicated.
func normCaps(field string, c model.Capabilities) model.Capabilities {
	n, _ := model.NormalizeCapabilities(field, c)
	return n
}
