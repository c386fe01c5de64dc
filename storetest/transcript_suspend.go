package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/flowfabric/flowfabric/internal/invariant"
	"github.com/flowfabric/flowfabric/model"
)

// The suspension commands of the transcripts (testdata/transcripts/README.md):
// waitpoints, suspensions and signals are named like executions. A
// signal presents the creation time the transcript saw for its
// waitpoint (what the token signs).

func (r *transcriptRun) waitpointID(name string) model.WaitpointID {
	u := uuidOf("waitpoint", name)
	r.addName(u.String(), name)
	return model.WaitpointID(u)
}

func (r *transcriptRun) suspensionID(name string) model.SuspensionID {
	u := uuidOf("suspension", name)
	r.addName(u.String(), name)
	return model.SuspensionID(u)
}

func (r *transcriptRun) signalID(name string) model.SignalID {
	u := uuidOf("signal", name)
	r.addName(u.String(), name)
	return model.SignalID(u)
}

// suspendStoreOf returns the store's SuspendStore (ok false without one).
func (r *transcriptRun) suspendStoreOf() (model.SuspendStore, bool) {
	var s model.Store = r.s
	if p, ok := r.s.(*partialStore); ok {
		s = p.Store
	}
	ss, ok := s.(model.SuspendStore)
	return ss, ok
}

// suspendStore is the store's SuspendStore; without one the transcript
// skips.
func (r *transcriptRun) suspendStore() model.SuspendStore {
	ss, ok := r.suspendStoreOf()
	if !ok {
		r.t.Skipf("storetest: %T does not implement the optional model.SuspendStore", r.s)
	}
	return ss
}

// doSuspend runs a suspension command; ok is false for other commands.
func (r *transcriptRun) doSuspend(cmd string, a *args) (out string, ok bool, err error) {
	want, known := map[string]int{
		"waitpoint": 2, "suspend": 3, "signal": 3, "resume": 1, "expire-suspension": 1,
		"expire-waitpoints": 1, "describe-suspension": 1, "list-waitpoints": 1,
	}[cmd]
	if !known {
		return "", false, nil
	}
	ss := r.suspendStore()
	if len(a.pos) != want {
		return "", true, fmt.Errorf("%s takes %d names, got %q", cmd, want, a.pos)
	}
	if r.created == nil {
		r.created = map[model.WaitpointID]time.Time{}
	}
	x := r.exec(a.pos[0])
	ctx, now := r.ctx, r.now
	res := func(v any, err error) (string, bool, error) {
		if err != nil {
			return "", true, err
		}
		return r.fmtValue(reflect.ValueOf(v)), true, nil
	}
	switch cmd {
	case "waitpoint":
		_, f := r.fence(x, a)
		w := r.waitpointID(a.pos[1])
		out, err := ss.WaitpointCreate(ctx, &model.WaitpointCreateParams{
			ID: x.id, Fence: f, Waitpoint: w, ExpiresAt: now.Add(a.dur("expires", time.Hour)),
			SignalLimit: a.int("limit", 0), Now: now,
		})
		if err == nil {
			r.created[w] = out.CreatedAt
		}
		return res(out, err)
	case "suspend":
		_, f := r.fence(x, a)
		p := &model.ExecutionSuspendParams{
			ID: x.id, Fence: f, Suspension: r.suspensionID(a.pos[1]), Waitpoint: r.waitpointID(a.pos[2]),
			UsePending: a.str("pending", "") == "true", SignalLimit: a.int("limit", 0), Now: now,
		}
		var ok bool
		if p.Reason, ok = model.ParseSuspendReason(a.str("reason", "signal")); !ok {
			return "", true, fmt.Errorf("reason %q", a.str("reason", ""))
		}
		if p.Condition, err = r.parseCond(a.str("cond", "signal")); err != nil {
			return "", true, err
		}
		if a.has("timeout") {
			p.TimeoutAt = now.Add(a.dur("timeout", 0))
		}
		if b := a.str("on-timeout", ""); b != "" {
			if p.TimeoutBehavior, ok = model.ParseTimeoutBehavior(b); !ok {
				return "", true, fmt.Errorf("on-timeout %q", b)
			}
		}
		p.Policy.Delay = a.dur("delay", 0)
		switch k := a.str("keep", ""); k {
		case "":
		case "waitpoints":
			p.Policy.KeepWaitpoints = true
		case "signals":
			p.Policy.KeepWaitpoints, p.Policy.KeepSignals = true, true
		default:
			return "", true, fmt.Errorf("keep=%q: want waitpoints or signals", k)
		}
		out, err := ss.ExecutionSuspend(ctx, p)
		if err == nil {
			r.created[out.Waitpoint] = out.CreatedAt
		}
		return res(out, err)
	case "signal":
		w := r.waitpointID(a.pos[1])
		created, ok := r.created[w]
		if !ok {
			created = now // a waitpoint the transcript never saw: a token naming anything
		}
		if a.str("token", "") == "stale" {
			created = created.Add(time.Millisecond)
		}
		return res(ss.SignalDeliver(ctx, &model.SignalDeliverParams{
			Execution: x.id, Waitpoint: w, WaitpointCreatedAt: created, Signal: r.signalID(a.pos[2]),
			Name: a.str("name", ""), Source: a.str("source", ""), Payload: []byte(a.str("payload", "")),
			IdempotencyKey: a.str("key", ""), DedupTTL: a.dur("ttl", 0), Now: now,
		}))
	case "resume":
		return res(ss.ExecutionResume(ctx, &model.ExecutionResumeParams{ID: x.id, Now: now}))
	case "expire-suspension":
		return res(ss.SuspensionExpire(ctx, &model.SuspensionExpireParams{ID: x.id, Now: now}))
	case "expire-waitpoints":
		return res(ss.WaitpointExpire(ctx, &model.WaitpointExpireParams{ID: x.id, Now: now}))
	case "describe-suspension":
		s, err := ss.SuspensionDescribe(ctx, &model.SuspensionDescribeParams{ID: x.id})
		if err != nil {
			return "", true, err
		}
		return r.fmtSuspension(s), true, nil
	case "list-waitpoints":
		l, err := ss.WaitpointList(ctx, &model.WaitpointListParams{ID: x.id})
		if err != nil {
			return "", true, err
		}
		if len(l.Waitpoints) == 0 {
			return "no waitpoints", true, nil
		}
		lines := make([]string, len(l.Waitpoints))
		for i := range l.Waitpoints {
			lines[i] = r.fmtWaitpoint(&l.Waitpoints[i])
		}
		return strings.Join(lines, "\n"), true, nil
	}
	return "", false, nil
}

// parseCond parses a condition: signal[:name][@waitpoint],
// count:N:waitpoints|signals|sources[:name][@w1+w2], operator_only,
// timeout_only, all_of(c1,c2,...).
func (r *transcriptRun) parseCond(s string) (model.ResumeCondition, error) {
	c, rest, err := r.parseCondPrefix(s)
	if err == nil && rest != "" {
		err = fmt.Errorf("cond %q: trailing %q", s, rest)
	}
	return c, err
}

func (r *transcriptRun) parseCondPrefix(s string) (model.ResumeCondition, string, error) {
	if rest, ok := strings.CutPrefix(s, "all_of("); ok {
		c := model.ResumeCondition{Kind: model.CondAllOf}
		for {
			sub, more, err := r.parseCondPrefix(rest)
			if err != nil {
				return c, "", err
			}
			c.Of = append(c.Of, sub)
			switch {
			case strings.HasPrefix(more, ","):
				rest = more[1:]
			case strings.HasPrefix(more, ")"):
				return c, more[1:], nil
			default:
				return c, "", fmt.Errorf("all_of: want , or ) at %q", more)
			}
		}
	}
	end := strings.IndexAny(s, ",)")
	if end < 0 {
		end = len(s)
	}
	atom, rest := s[:end], s[end:]
	atom, wps, _ := strings.Cut(atom, "@")
	parts := strings.Split(atom, ":")
	var c model.ResumeCondition
	switch parts[0] {
	case "signal":
		c.Kind = model.CondSignal
		if len(parts) > 2 {
			return c, "", fmt.Errorf("signal[:name][@waitpoint], got %q", atom)
		}
		if len(parts) == 2 {
			c.Name = parts[1]
		}
		if wps != "" {
			c.Waitpoint = r.waitpointID(wps)
		}
	case "count":
		c.Kind = model.CondCount
		if len(parts) < 3 || len(parts) > 4 {
			return c, "", fmt.Errorf("count:N:distinct[:name][@w1+w2], got %q", atom)
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			return c, "", fmt.Errorf("count N: %w", err)
		}
		c.N = n
		var ok bool
		if c.Distinct, ok = model.ParseCountDistinct(parts[2]); !ok {
			return c, "", fmt.Errorf("count distinct %q", parts[2])
		}
		if len(parts) == 4 {
			c.Name = parts[3]
		}
		if wps != "" {
			for _, w := range strings.Split(wps, "+") {
				c.Waitpoints = append(c.Waitpoints, r.waitpointID(w))
			}
		}
	case "operator_only":
		c.Kind = model.CondOperator
	case "timeout_only":
		c.Kind = model.CondTimeout
	default:
		return c, "", fmt.Errorf("unknown condition %q", atom)
	}
	return c, rest, nil
}

// fmtCond prints a condition in parseCond's syntax.
func (r *transcriptRun) fmtCond(c *model.ResumeCondition) string {
	name := func(w model.WaitpointID) string { return r.names.Replace(w.String()) }
	switch c.Kind {
	case model.CondAllOf:
		parts := make([]string, len(c.Of))
		for i := range c.Of {
			parts[i] = r.fmtCond(&c.Of[i])
		}
		return "all_of(" + strings.Join(parts, ",") + ")"
	case model.CondSignal:
		s := "signal"
		if c.Name != "" {
			s += ":" + c.Name
		}
		if !c.Waitpoint.IsZero() {
			s += "@" + name(c.Waitpoint)
		}
		return s
	case model.CondCount:
		s := fmt.Sprintf("count:%d:%v", c.N, c.Distinct)
		if c.Name != "" {
			s += ":" + c.Name
		}
		var ws []string
		for _, w := range c.Waitpoints {
			ws = append(ws, name(w))
		}
		if len(ws) > 0 {
			s += "@" + strings.Join(ws, "+")
		}
		return s
	}
	return c.Kind.String()
}

func (r *transcriptRun) fmtSignal(s *model.SignalRecord) string {
	out := fmt.Sprintf("%v on %v %v", s.ID, s.Waitpoint, s.Effect)
	if s.IgnoredReason != "" {
		out += "(" + s.IgnoredReason + ")"
	}
	out += fmt.Sprintf(" name=%q source=%q", s.Name, s.Source)
	if len(s.Payload) > 0 {
		out += fmt.Sprintf(" payload=%q", s.Payload)
	}
	if s.IdempotencyKey != "" {
		out += fmt.Sprintf(" key=%q", s.IdempotencyKey)
	}
	return out + " at=" + r.rel(s.DeliveredAt)
}

func (r *transcriptRun) fmtSuspension(s *model.SuspensionSnapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "suspension %v of %s: attempt=#%d reason=%v suspended=%s", s.ID, r.fmtValue(reflect.ValueOf(s.Execution)),
		s.AttemptIndex, s.Reason, r.rel(s.SuspendedAt))
	if !s.TimeoutAt.IsZero() {
		fmt.Fprintf(&b, " timeout=%s", r.rel(s.TimeoutAt))
	}
	if s.TimeoutBehavior != 0 {
		fmt.Fprintf(&b, " on-timeout=%v", s.TimeoutBehavior)
	}
	if s.Escalated {
		b.WriteString(" escalated")
	}
	if pol := r.fmtValue(reflect.ValueOf(s.Policy)); pol != "" {
		b.WriteString(" policy={" + pol + "}")
	}
	if s.ClosedAt.IsZero() {
		b.WriteString(" open")
	} else {
		fmt.Fprintf(&b, " closed=%s by=%v", r.rel(s.ClosedAt), s.ClosedBy)
	}
	fmt.Fprintf(&b, "\n  condition: %s", r.fmtCond(&s.Condition))
	ws := make([]string, len(s.Waitpoints))
	for i, w := range s.Waitpoints {
		ws[i] = w.String()
	}
	fmt.Fprintf(&b, "\n  waitpoints: %s (own %v)", strings.Join(ws, " "), s.Waitpoint)
	for i := range s.Signals {
		fmt.Fprintf(&b, "\n  signal %s", r.fmtSignal(&s.Signals[i]))
	}
	return b.String()
}

func (r *transcriptRun) fmtWaitpoint(w *model.WaitpointSnapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %v", w.ID, w.State)
	if w.State == model.WaitpointClosed {
		fmt.Fprintf(&b, "(%v)", w.ClosedBy)
	}
	fmt.Fprintf(&b, " created=%s", r.rel(w.CreatedAt))
	if !w.ExpiresAt.IsZero() {
		fmt.Fprintf(&b, " expires=%s", r.rel(w.ExpiresAt))
	}
	if !w.ClosedAt.IsZero() {
		fmt.Fprintf(&b, " closed=%s", r.rel(w.ClosedAt))
	}
	fmt.Fprintf(&b, " limit=%d", w.SignalLimit)
	if !w.Suspension.IsZero() {
		fmt.Fprintf(&b, " suspension=%v", w.Suspension)
	}
	for i := range w.Signals {
		fmt.Fprintf(&b, "\n  signal %s", r.fmtSignal(&w.Signals[i]))
	}
	return b.String()
}

// observeSuspend adds what the SuspendStore shows of x to its printed
// block (a line for its suspension and one for its waitpoints, when it
// has them) and to its invariant view; nothing without the interface.
func (r *transcriptRun) observeSuspend(x *tExec, line func(format string, args ...any)) {
	ss, ok := r.suspendStoreOf()
	if !ok {
		return
	}
	v := &invariant.SuspendView{}
	sp, err := ss.SuspensionDescribe(r.ctx, &model.SuspensionDescribeParams{ID: x.id})
	switch {
	case err == nil:
		v.Suspension = sp
	case !errors.Is(err, model.ErrSuspensionNotFound):
		r.t.Fatalf("SuspensionDescribe: %v", err)
	}
	wl, err := ss.WaitpointList(r.ctx, &model.WaitpointListParams{ID: x.id})
	if err != nil {
		r.t.Fatalf("WaitpointList: %v", err)
	}
	v.Waitpoints = wl.Waitpoints
	x.inv.Suspend = v
	if sp != nil {
		state := "open"
		if !sp.ClosedAt.IsZero() {
			state = fmt.Sprintf("closed=%s by=%v", r.rel(sp.ClosedAt), sp.ClosedBy)
		}
		timeout := ""
		if !sp.TimeoutAt.IsZero() {
			timeout = " timeout=" + r.rel(sp.TimeoutAt)
		}
		line("suspension: %v %s reason=%v%s signals=%d", sp.ID, state, sp.Reason, timeout, len(sp.Signals))
	}
	if len(wl.Waitpoints) > 0 {
		ws := make([]string, len(wl.Waitpoints))
		for i, w := range wl.Waitpoints {
			ws[i] = fmt.Sprintf("%v %v", w.ID, w.State)
			if w.State == model.WaitpointClosed {
				ws[i] += "(" + w.ClosedBy.String() + ")"
			}
			if n := len(w.Signals); n > 0 {
				ws[i] += fmt.Sprintf(" signals=%d", n)
			}
		}
		line("waitpoints: %s", strings.Join(ws, ", "))
	}
}
