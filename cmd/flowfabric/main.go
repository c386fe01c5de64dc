// Command flowfabric inspects and operates the executions a flowfabric
// engine keeps on Valkey or Redis: list, count, describe, cancel, replay,
// retry, delete, signal, pause and resume lanes, tail an attempt's stream,
// watch completions and run a bench of the engine against the server.
//
//	flowfabric [global flags] <command> [flags] [args]
//
// The global flags may also follow the command. The tool opens the store
// and an engine without starting its scanners or any worker: it never
// claims work and never runs timers; it only reads and performs the
// operator actions asked for. The exception is bench, which runs workers
// on a lane of its own ("ffbench" by default; it refuses a lane that holds
// executions or has live workers) and deletes what it created.
//
// Output is a human table by default; -json prints one JSON document (JSON
// lines for tail and watch) for scripts.
//
// Exit codes:
//
//	0  success
//	1  the operation failed (not found, not terminal, ...; the error's
//	   kind is printed)
//	2  usage or validation error (bad flags, a malformed id, a missing -yes)
//	3  the store is unreachable
//
// A bulk action (cancel, replay, retry, delete with -find) exits 0 only if
// every execution succeeded.
//
// bench measures this engine alone (throughput and latency of no-op jobs);
// the comparison with River and Asynq is a separate module:
// cd bench && go run ./cmd/ffbench.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/valkeystore"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usageText = `flowfabric inspects and operates a flowfabric engine's executions on Valkey/Redis.

Usage:
  flowfabric [global flags] <command> [flags] [args]

Reads:
  list      list executions (-lane -kind -state a,b -tag k=v -limit -cursor)
  count     count executions by lane, kind and state (-lane -kind -namespace)
  lanes     the namespace's lanes: counts, live workers, paused, unserved
  describe  one execution with its attempts and lease history: describe <id>
  tail      follow an attempt's stream until it closes: tail <id> [-attempt n]
  watch     follow the completions feed (needs -feeds completions)

Actions (several ids, or every match of -find filters with -yes):
  cancel    cancel executions: cancel <id>... [-reason text]
  replay    run terminal executions again: replay <id>... [-reason text]
  retry     run executions waiting for a time now: retry <id>...
  delete    delete terminal executions: delete <id>...
  signal    deliver a signal to a waitpoint: signal -token T [-name N] [-payload JSON]
  pause     pause a lane: pause <lane> [-reason text]
  resume    resume a lane: resume <lane>

Bench:
  bench     submit and run no-op jobs on an empty lane, then delete them:
            throughput and latency (-jobs -workers -payload -lane -keep)

Global flags (also accepted after the command):
%s
Exit codes:
  0  success
  1  the operation failed (not found, not terminal, ...; the error's kind is printed)
  2  usage or validation error (bad flags, a malformed id, a missing -yes)
  3  the store is unreachable

With -json every command prints one JSON document on stdout (tail and watch:
one JSON object per line) and errors as a JSON object on stderr.

bench measures flowfabric alone; the comparison against River and Asynq is
a separate module: cd bench && go run ./cmd/ffbench
Run "flowfabric <command> -h" for a command's flags.
`

// globals are the flags every command takes.
type globals struct {
	addr        string
	cluster     bool
	namespace   string
	prefix      string
	feeds       string
	feedLen     int
	partitions  int
	budgetParts int
	quotaParts  int
	keys        keyList
	json        bool
	timeout     time.Duration
}

// keyList collects -waitpoint-key flags ("id:secret").
type keyList []string

func (k *keyList) String() string { return strings.Join(*k, ",") }

func (k *keyList) Set(v string) error {
	*k = append(*k, v)
	return nil
}

func defaultGlobals() globals {
	g := globals{
		addr:      envOr("FLOWFABRIC_ADDR", "127.0.0.1:6379"),
		namespace: os.Getenv("FLOWFABRIC_NAMESPACE"),
		prefix:    os.Getenv("FLOWFABRIC_PREFIX"),
		feeds:     os.Getenv("FLOWFABRIC_FEEDS"),
		timeout:   30 * time.Second,
	}
	if v := os.Getenv("FLOWFABRIC_PARTITIONS"); v != "" {
		g.partitions, _ = strconv.Atoi(v) // a bad value is refused by the store's validation
		if g.partitions == 0 {
			g.partitions = -1
		}
	}
	if v := os.Getenv("FLOWFABRIC_WAITPOINT_KEYS"); v != "" {
		g.keys = strings.Split(v, ",")
	}
	return g
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// register adds the global flags to fs, their defaults the values g holds.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.addr, "addr", g.addr, "Valkey/Redis `host:port`, comma-separated for several seeds (env FLOWFABRIC_ADDR)")
	fs.BoolVar(&g.cluster, "cluster", g.cluster, "the server is a Valkey/Redis cluster")
	fs.StringVar(&g.namespace, "namespace", g.namespace, "the engine's namespace (env FLOWFABRIC_NAMESPACE; default \"default\"); list and count filter by it only when given")
	fs.StringVar(&g.prefix, "prefix", g.prefix, "the store's key prefix, valkeystore.Options.Prefix (env FLOWFABRIC_PREFIX; default \"ff\")")
	fs.StringVar(&g.feeds, "feeds", g.feeds, "the feeds the store keeps, as the engine processes have them: completions,leases (env FLOWFABRIC_FEEDS)")
	fs.IntVar(&g.feedLen, "feed-len", g.feedLen, "valkeystore.Options.Feeds.Len, as the engine processes have it (0: the default)")
	fs.IntVar(&g.partitions, "partitions", g.partitions, "execution partitions, as the engine processes have them (env FLOWFABRIC_PARTITIONS; 0: the default)")
	fs.IntVar(&g.budgetParts, "budget-partitions", g.budgetParts, "budget partitions (0: the default)")
	fs.IntVar(&g.quotaParts, "quota-partitions", g.quotaParts, "quota partitions (0: the default)")
	fs.Var(&g.keys, "waitpoint-key", "a waitpoint signing key `id:secret` (secret as text, or base64:...), repeatable, for signal (env FLOWFABRIC_WAITPOINT_KEYS, comma-separated)")
	fs.BoolVar(&g.json, "json", g.json, "print JSON for scripts")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "bound on the whole command (tail, watch, bench and -find actions: none unless given, each call of a -find action is bounded by 30s; 0: none)")
}

// usageError is a bad command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// unreachableError is a store that could not be reached: exit code 3.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return "store unreachable: " + e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var ue *usageError
	var be *bulkError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &be):
		return be.code
	case errors.As(err, &ue), errors.Is(err, flowfabric.ErrValidation):
		return exitUsage
	case unreachable(err):
		return exitUnreachable
	}
	return exitFailed
}

// unreachable reports an error that says the server could not be talked
// to (as opposed to one the engine or the server answered).
func unreachable(err error) bool {
	var ur *unreachableError
	var ne net.Error
	var me *model.Error
	if errors.As(err, &me) {
		return false
	}
	return errors.As(err, &ur) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, valkey.ErrClosing) || errors.Is(err, context.DeadlineExceeded)
}

// errorKind names an error for people and scripts: the engine's error
// code, or usage, unreachable, error.
func errorKind(err error) string {
	var be *bulkError
	if errors.As(err, &be) {
		return be.firstKind
	}
	if c := model.CodeOf(err); c != "" {
		return string(c)
	}
	switch exitCode(err) {
	case exitUsage:
		return "usage"
	case exitUnreachable:
		return "unreachable"
	}
	return "error"
}

// errText is err's message without the engine's "flowfabric: " prefix
// (the tool prints its own).
func errText(err error) string { return strings.TrimPrefix(err.Error(), "flowfabric: ") }

// cli is one run of the tool.
type cli struct {
	stdout, stderr io.Writer
	g              globals
	nsGiven        bool

	client valkey.Client
	store  *valkeystore.Store
	engine *flowfabric.Engine
}

// command is a subcommand: its flags are added to fs, then run does it.
type command struct {
	name    string
	summary string
	args    string
	// follow commands (tail, watch) and long ones (bench) have no
	// default timeout
	follow bool
	flags  func(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error
}

func commands() []command {
	return []command{
		{name: "list", summary: "list executions matching filters", flags: listCmd},
		{name: "count", summary: "count executions by namespace, lane, kind and state", flags: countCmd},
		{name: "lanes", summary: "list the namespace's lanes with counts, live workers and pauses", flags: lanesCmd},
		{name: "describe", summary: "show one execution, its attempts and lease history", args: "<id>", flags: describeCmd},
		{name: "cancel", summary: "cancel executions", args: "<id>... | -find [filters] -yes", flags: actionCmd("cancel")},
		{name: "replay", summary: "replay terminal executions", args: "<id>... | -find [filters] -yes", flags: actionCmd("replay")},
		{name: "retry", summary: "make executions waiting for a time eligible now", args: "<id>... | -find [filters] -yes", flags: actionCmd("retry")},
		{name: "delete", summary: "delete terminal executions", args: "<id>... | -find [filters] -yes", flags: actionCmd("delete")},
		{name: "signal", summary: "deliver a signal to the waitpoint a token names", flags: signalCmd},
		{name: "pause", summary: "pause a lane", args: "<lane>", flags: pauseCmd},
		{name: "resume", summary: "resume a paused lane", args: "<lane>", flags: resumeCmd},
		{name: "tail", summary: "follow an attempt's stream until it closes", args: "<id>", follow: true, flags: tailCmd},
		{name: "watch", summary: "follow the completions feed", follow: true, flags: watchCmd},
		{name: "bench", summary: "measure throughput and latency: submit no-op jobs on a lane of their own, run them with workers, then delete them",
			follow: true, flags: benchCmd},
	}
}

// run runs the tool and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &errWriter{w: stdout}
	code := runTo(ctx, args, out, stderr)
	if out.err != nil && code == exitOK {
		_, _ = fmt.Fprintf(stderr, "flowfabric: writing the output: %v\n", out.err)
		return exitFailed
	}
	return code
}

// errWriter remembers the first write error, so that output written with
// unchecked prints still fails the command.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func runTo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, g: defaultGlobals()}
	top := flag.NewFlagSet("flowfabric", flag.ContinueOnError)
	top.SetOutput(stderr)
	c.g.register(top)
	top.Usage = func() { _, _ = fmt.Fprintf(stderr, usageText, flagDefaults(top)) }
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	c.markNamespace(top)
	rest := top.Args()
	if len(rest) == 0 {
		top.Usage()
		return exitUsage
	}
	if rest[0] == "help" {
		top.SetOutput(stdout)
		_, _ = fmt.Fprintf(stdout, usageText, flagDefaults(top))
		return exitOK
	}
	var cmd *command
	for _, cm := range commands() {
		if cm.name == rest[0] {
			cmd = &cm
			break
		}
	}
	if cmd == nil {
		return c.fail(usagef("unknown command %q (run flowfabric -h)", rest[0]))
	}
	fs := flag.NewFlagSet("flowfabric "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.g.register(fs)
	do := cmd.flags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(stderr, "Usage: flowfabric %s [flags] %s\n\n%s.\n\nFlags:\n%s\nExit codes: 0 ok, 1 operation failed, 2 usage or validation error, 3 store unreachable.\n",
			cmd.name, cmd.args, cmd.summary, flagDefaults(fs))
	}
	pos, err := parseInterleaved(fs, rest[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	c.markNamespace(fs)
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	top.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	bulk := false
	if f := fs.Lookup("find"); f != nil && f.Value.String() == "true" {
		bulk = true // as long as it takes; each call is bounded (callTimeout)
	}
	if (cmd.follow || bulk) && !timeoutSet {
		c.g.timeout = 0
	}
	if c.g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.g.timeout)
		defer cancel()
	}
	if err := c.open(ctx); err != nil {
		return c.fail(err)
	}
	defer c.close()
	return c.fail(do(ctx, c, pos))
}

func (c *cli) markNamespace(fs *flag.FlagSet) {
	if os.Getenv("FLOWFABRIC_NAMESPACE") != "" {
		c.nsGiven = true
	}
	fs.Visit(func(f *flag.Flag) { c.nsGiven = c.nsGiven || f.Name == "namespace" })
}

// flagDefaults returns fs's flag help as text.
func flagDefaults(fs *flag.FlagSet) string {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	return b.String()
}

// parseInterleaved parses fs's flags wherever they appear among the
// positional arguments, which it returns.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil // "--" ended the flags
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// fail reports err (if any) on stderr and returns its exit code.
func (c *cli) fail(err error) int {
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if !c.g.cluster && strings.Contains(err.Error(), "MOVED ") {
		err = fmt.Errorf("%w (the server is a cluster: pass -cluster)", err)
	}
	if c.g.json {
		b, _ := json.Marshal(map[string]any{"error": errText(err), "kind": errorKind(err), "exit": code})
		_, _ = fmt.Fprintln(c.stderr, string(b))
	} else {
		_, _ = fmt.Fprintf(c.stderr, "flowfabric: %s (%s)\n", errText(err), errorKind(err))
	}
	return code
}

// open connects to the server and builds the store and the engine; it
// starts no scanner and no worker.
func (c *cli) open(ctx context.Context) error {
	g := c.g
	if g.addr == "" {
		return usagef("-addr is empty")
	}
	feeds := model.Feeds{Len: g.feedLen}
	if g.feeds != "" {
		for f := range strings.SplitSeq(g.feeds, ",") {
			switch model.FeedKind(strings.TrimSpace(f)) {
			case model.FeedCompletions:
				feeds.Completions = true
			case model.FeedLeases:
				feeds.Leases = true
			default:
				return usagef("-feeds: unknown feed %q (want completions, leases)", f)
			}
		}
	}
	var ring *flowfabric.KeyRing
	if len(g.keys) > 0 {
		var keys []flowfabric.SigningKey
		for _, k := range g.keys {
			id, secret, ok := strings.Cut(strings.TrimSpace(k), ":")
			if !ok {
				return usagef("-waitpoint-key: want id:secret, got %q", k)
			}
			sec := []byte(secret)
			if b64, ok := strings.CutPrefix(secret, "base64:"); ok {
				var err error
				if sec, err = base64.StdEncoding.DecodeString(b64); err != nil {
					return usagef("-waitpoint-key %s: the secret is not base64: %v", id, err)
				}
			}
			keys = append(keys, flowfabric.SigningKey{ID: id, Secret: sec})
		}
		var err error
		if ring, err = flowfabric.NewKeyRing(keys...); err != nil {
			return fmt.Errorf("-waitpoint-key: %w", err)
		}
	}
	ns := model.Namespace(g.namespace)
	if ns != "" {
		if err := ns.Validate(); err != nil {
			return fmt.Errorf("-namespace: %w", err)
		}
	}
	if g.partitions < 0 {
		return usagef("-partitions: want a positive number")
	}
	opts := &valkeystore.Options{
		Prefix: g.prefix,
		Feeds:  feeds,
		Partitions: model.PartitionConfig{FlowPartitions: g.partitions, BudgetPartitions: g.budgetParts,
			QuotaPartitions: g.quotaParts},
	}
	dialer := net.Dialer{Timeout: 5 * time.Second}
	if dl, ok := ctx.Deadline(); ok {
		dialer.Deadline = dl
	}
	client, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:       strings.Split(g.addr, ","),
		DisableCache:      true, // a short-lived tool gains nothing; miniredis and some servers lack it
		ForceSingleClient: !g.cluster,
		Dialer:            dialer,
	})
	if err != nil {
		return &unreachableError{err: fmt.Errorf("%s: %w", g.addr, err)}
	}
	store, err := valkeystore.New(client, opts)
	if err != nil {
		client.Close()
		return err
	}
	c.client, c.store = client, store
	// New starts nothing: no scanner runs until Start, which is never
	// called here, and no worker is made.
	c.engine = flowfabric.New(store, &flowfabric.Config{Namespace: ns, WaitpointKeys: ring})
	return nil
}

func (c *cli) close() {
	if c.store != nil {
		c.store.Close()
	}
	if c.client != nil {
		c.client.Close()
	}
}

// printJSON writes v as one JSON document.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine writes v as one line.
func (c *cli) printJSONLine(v any) error {
	return json.NewEncoder(c.stdout).Encode(v)
}
