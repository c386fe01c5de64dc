package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// action is one per-execution operator action.
type action struct {
	done string // past tense, for output
	do   func(ctx context.Context, e *flowfabric.Engine, id flowfabric.ExecutionID, reason string) error
	// reason says whether the action takes -reason
	reason bool
}

var actions = map[string]action{
	"cancel": {done: "cancelled", reason: true, do: func(ctx context.Context, e *flowfabric.Engine, id flowfabric.ExecutionID, reason string) error {
		return e.Cancel(ctx, id, reason)
	}},
	"replay": {done: "replayed", reason: true, do: func(ctx context.Context, e *flowfabric.Engine, id flowfabric.ExecutionID, reason string) error {
		return e.Replay(ctx, id, &flowfabric.ReplayOpts{Reason: reason, RequestedBy: "flowfabric-cli"})
	}},
	"retry": {done: "retried", do: func(ctx context.Context, e *flowfabric.Engine, id flowfabric.ExecutionID, _ string) error {
		return e.RetryNow(ctx, id)
	}},
	"delete": {done: "deleted", do: func(ctx context.Context, e *flowfabric.Engine, id flowfabric.ExecutionID, _ string) error {
		return e.Delete(ctx, id)
	}},
}

// actionResult is one execution's outcome in an action's JSON document.
type actionResult struct {
	ID    string `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// bulkError says some executions of an action failed; its exit code is
// the worst of theirs.
type bulkError struct {
	action         string
	failed, total  int
	code           int
	firstKind      string
	firstErrorText string
}

func (e *bulkError) Error() string {
	return fmt.Sprintf("%s: %d of %d failed (first: %s)", e.action, e.failed, e.total, e.firstErrorText)
}

func actionCmd(name string) func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		act := actions[name]
		var reason *string
		if act.reason {
			reason = fs.String("reason", "", "free text recorded with the action")
		}
		find := fs.Bool("find", false, "act on every execution the filters match instead of ids given")
		yes := fs.Bool("yes", false, "confirm a -find action (without it the matches are only counted)")
		var f filters
		f.register(fs)
		return func(ctx context.Context, c *cli, args []string) error {
			var ids []flowfabric.ExecutionID
			switch {
			case *find && len(args) > 0:
				return usagef("%s: give ids or -find, not both", name)
			case !*find && f.any():
				return usagef("%s: filters (-lane, -kind, -state, -tag) need -find", name)
			case !*find && len(args) == 0:
				return usagef("%s: give one or more execution ids, or -find with filters and -yes", name)
			case *find:
				o, err := f.findOpts(c)
				if err != nil {
					return err
				}
				if ids, err = c.findAll(ctx, o); err != nil {
					return err
				}
				if !*yes {
					return usagef("%s: %d executions match; pass -yes to %s them", name, len(ids), name)
				}
			default:
				for _, a := range args {
					id, err := parseID(a)
					if err != nil {
						return err
					}
					ids = append(ids, id)
				}
			}
			r := ""
			if reason != nil {
				r = *reason
			}
			return c.act(ctx, name, act, ids, r, *find)
		}
	}
}

// callTimeout bounds each engine call of an action, so a bulk action
// without a -timeout still ends when the server stops answering.
const callTimeout = 30 * time.Second

// findAll collects every id the options match, page by page.
func (c *cli) findAll(ctx context.Context, o flowfabric.FindOpts) ([]flowfabric.ExecutionID, error) {
	o.Limit = model.MaxPageSize
	var ids []flowfabric.ExecutionID
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		p, err := c.engine.Find(cctx, &o)
		cancel()
		if err != nil {
			return nil, err
		}
		ids = append(ids, p.IDs...)
		if p.Next == "" {
			return ids, nil
		}
		o.Cursor = p.Next
	}
}

// act runs the action on every id, reporting each and a progress line
// for bulk runs.
func (c *cli) act(ctx context.Context, name string, act action, ids []flowfabric.ExecutionID, reason string, bulk bool) error {
	var prog *progress
	if bulk {
		prog = newProgress(c.stderr, name, len(ids))
	}
	results := make([]actionResult, 0, len(ids))
	var be *bulkError
	var only error
	for _, id := range ids {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := act.do(cctx, c.engine, id, reason)
		cancel()
		res := actionResult{ID: id.String(), OK: err == nil}
		if err != nil {
			res.Error, res.Kind = errText(err), errorKind(err)
			if be == nil {
				be = &bulkError{action: name, firstKind: res.Kind, firstErrorText: res.Error}
				only = err
			}
			be.failed++
			be.code = max(be.code, exitCode(err))
			if !c.g.json {
				_, _ = fmt.Fprintf(c.stderr, "%s: %s (%s)\n", id, res.Error, res.Kind)
			}
		} else if !c.g.json {
			_, _ = fmt.Fprintf(c.stdout, "%s %s\n", act.done, id)
		}
		results = append(results, res)
		if prog != nil {
			prog.step(err == nil)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if prog != nil {
		prog.finish()
	}
	if c.g.json {
		ok := 0
		for _, r := range results {
			if r.OK {
				ok++
			}
		}
		if err := c.printJSON(struct {
			Action    string         `json:"action"`
			Results   []actionResult `json:"results"`
			Succeeded int            `json:"succeeded"`
			Failed    int            `json:"failed"`
		}{name, results, ok, len(results) - ok}); err != nil {
			return err
		}
	}
	if be == nil {
		if len(results) < len(ids) {
			return ctx.Err()
		}
		return nil
	}
	if len(ids) == 1 {
		return only // the error itself: its kind and exit code
	}
	be.total = len(ids)
	return be
}

// progress draws a progress line on a writer: redrawn in place on a
// terminal, a line per tenth of the work otherwise.
type progress struct {
	w            io.Writer
	label        string
	total        int
	done, failed int
	tty          bool
	lastDrawn    int
	start        time.Time
}

func newProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, label: label, total: total, lastDrawn: -1, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) step(ok bool) {
	failed := p.failed
	if !ok {
		failed++
	}
	p.advance(p.done+1, failed)
}

// advance sets the counts (done includes failed) and redraws when the
// line changed enough: every percent on a terminal, every tenth
// otherwise, and at the end.
func (p *progress) advance(done, failed int) {
	if done == p.done && failed == p.failed {
		return
	}
	p.done, p.failed = done, failed
	step := 10
	if p.tty {
		step = 1
	}
	if pct := p.done * 100 / max(p.total, 1); pct/step != p.lastDrawn/step || p.done == p.total {
		p.lastDrawn = pct
		p.draw()
	}
}

func (p *progress) line() string {
	const width = 30
	n := width
	if p.total > 0 {
		n = p.done * width / p.total
	}
	bar := strings.Repeat("=", n)
	if n < width {
		bar += ">" + strings.Repeat(" ", width-n-1)
	}
	return fmt.Sprintf("%s [%s] %d/%d, %d failed", p.label, bar, p.done, p.total, p.failed)
}

func (p *progress) draw() {
	if p.tty {
		_, _ = fmt.Fprintf(p.w, "\r%s", p.line())
		return
	}
	_, _ = fmt.Fprintln(p.w, p.line())
}

// finish ends the progress line with a summary.
func (p *progress) finish() {
	if p.total == 0 {
		_, _ = fmt.Fprintln(p.w, p.line())
		return
	}
	if p.tty {
		_, _ = fmt.Fprintln(p.w)
	}
	_, _ = fmt.Fprintf(p.w, "%s: %d done, %d failed of %d in %s\n", p.label, p.done-p.failed, p.failed, p.total,
		time.Since(p.start).Round(time.Millisecond))
}

func signalCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	token := fs.String("token", "", "the waitpoint token (required)")
	name := fs.String("name", "", "the signal's name, what conditions match")
	payload := fs.String("payload", "", "the signal's payload, a JSON document")
	source := fs.String("source", "", "the sender, as type:identity (approver:alice)")
	idem := fs.String("idempotency-key", "", "makes a redelivery a harmless duplicate")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("signal takes no arguments (the token is -token), got %q", args)
		}
		if *token == "" {
			return usagef("signal: -token is required")
		}
		if len(c.g.keys) == 0 {
			return usagef("signal: the engine's waitpoint keys are needed to verify the token: -waitpoint-key id:secret or FLOWFABRIC_WAITPOINT_KEYS")
		}
		var p []byte
		if *payload != "" {
			if !json.Valid([]byte(*payload)) {
				return usagef("signal: -payload is not a JSON document: %q", *payload)
			}
			p = []byte(*payload)
		}
		d, err := c.engine.DeliverSignal(ctx, *token, &flowfabric.SignalInput{Name: *name, Source: *source, Payload: p, IdempotencyKey: *idem})
		if err != nil {
			return err
		}
		v := struct {
			Execution string `json:"execution"`
			Waitpoint string `json:"waitpoint"`
			Signal    string `json:"signal"`
			Effect    string `json:"effect"`
			Ignored   string `json:"ignored,omitempty"`
			State     string `json:"state"`
		}{d.Execution.String(), d.Waitpoint.String(), d.Signal.String(), d.Effect.String(), d.Ignored, d.State.String()}
		if c.g.json {
			return c.printJSON(v)
		}
		_, _ = fmt.Fprintf(c.stdout, "signal %s to %s: %s; the execution is %s\n", v.Signal, v.Execution, v.Effect, v.State)
		if v.Ignored != "" {
			_, _ = fmt.Fprintf(c.stdout, "ignored: %s\n", v.Ignored)
		}
		return nil
	}
}

// laneView is pause's and resume's document.
type laneView struct {
	Lane          string    `json:"lane"`
	Paused        bool      `json:"paused"`
	AlreadyPaused bool      `json:"already_paused,omitempty"`
	WasPaused     *bool     `json:"was_paused,omitempty"`
	Since         time.Time `json:"since,omitzero"`
	Reason        string    `json:"reason,omitempty"`
}

func laneArg(cmd string, args []string) (flowfabric.LaneID, error) {
	if len(args) != 1 {
		return "", usagef("%s takes one lane, got %d arguments", cmd, len(args))
	}
	l, err := model.ParseLaneID(args[0])
	if err != nil {
		return "", fmt.Errorf("lane %q: %w", args[0], err)
	}
	return l, nil
}

func pauseCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	reason := fs.String("reason", "", "why, for operators")
	return func(ctx context.Context, c *cli, args []string) error {
		lane, err := laneArg("pause", args)
		if err != nil {
			return err
		}
		st, already, err := c.engine.PauseLane(ctx, lane, *reason)
		if err != nil {
			return err
		}
		v := laneView{Lane: string(lane), Paused: st.Paused, AlreadyPaused: already, Since: st.PausedAt, Reason: st.Reason}
		if c.g.json {
			return c.printJSON(v)
		}
		if already {
			_, _ = fmt.Fprintf(c.stdout, "lane %s was already paused since %s\n", lane, fmtTime(st.PausedAt))
		} else {
			_, _ = fmt.Fprintf(c.stdout, "paused lane %s\n", lane)
		}
		return nil
	}
}

func resumeCmd(*flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		lane, err := laneArg("resume", args)
		if err != nil {
			return err
		}
		was, err := c.engine.ResumeLane(ctx, lane)
		if err != nil {
			return err
		}
		if c.g.json {
			return c.printJSON(laneView{Lane: string(lane), WasPaused: &was})
		}
		if was {
			_, _ = fmt.Fprintf(c.stdout, "resumed lane %s\n", lane)
		} else {
			_, _ = fmt.Fprintf(c.stdout, "lane %s was not paused\n", lane)
		}
		return nil
	}
}
