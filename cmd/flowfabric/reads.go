package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/flowfabric/flowfabric"
	"github.com/flowfabric/flowfabric/model"
)

// filters are the selection flags of list and the bulk actions.
type filters struct {
	lane, kind, states, tag string
	maxExamined             int
}

func (f *filters) register(fs *flag.FlagSet) {
	fs.StringVar(&f.lane, "lane", "", "only this lane")
	fs.StringVar(&f.kind, "kind", "", "only this kind")
	fs.StringVar(&f.states, "state", "", "only these public states, comma-separated (waiting,delayed,rate_limited,waiting_children,active,suspended,completed,failed,cancelled,expired,skipped)")
	fs.StringVar(&f.tag, "tag", "", "only executions with this tag, `key=value`")
	fs.IntVar(&f.maxExamined, "max-examined", 0, "executions one page may read to find matches (0: the engine's default)")
}

func (f *filters) any() bool { return f.lane != "" || f.kind != "" || f.states != "" || f.tag != "" }

// findOpts turns the flags into FindOpts; the namespace filter applies
// only when -namespace was given.
func (f *filters) findOpts(c *cli) (flowfabric.FindOpts, error) {
	o := flowfabric.FindOpts{Lane: flowfabric.LaneID(f.lane), Kind: flowfabric.Kind(f.kind), MaxExamined: f.maxExamined}
	if c.nsGiven {
		o.Namespace = c.engine.Namespace()
	}
	if f.states != "" {
		for s := range strings.SplitSeq(f.states, ",") {
			st, ok := model.ParsePublicState(strings.TrimSpace(s))
			if !ok {
				return o, usagef("-state: unknown state %q", s)
			}
			o.States = append(o.States, st)
		}
	}
	if f.tag != "" {
		k, v, ok := strings.Cut(f.tag, "=")
		if !ok || k == "" {
			return o, usagef("-tag: want key=value, got %q", f.tag)
		}
		o.TagKey, o.TagValue = k, v
	}
	return o, nil
}

// parseID parses an execution id given on the command line.
func parseID(s string) (flowfabric.ExecutionID, error) {
	id, err := model.ParseExecutionID(s)
	if err != nil {
		return id, fmt.Errorf("execution id %q: %w", s, err)
	}
	return id, nil
}

// execRow is a line of list.
type execRow struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Namespace string    `json:"namespace"`
	Lane      string    `json:"lane"`
	Kind      string    `json:"kind"`
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

func listCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	var f filters
	f.register(fs)
	limit := fs.Int("limit", 100, "executions per page (1-1000)")
	cursor := fs.String("cursor", "", "the next cursor a previous page printed")
	idsOnly := fs.Bool("ids", false, "print only the ids, one a line (the next cursor goes to stderr)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("list takes no arguments, got %q", args)
		}
		o, err := f.findOpts(c)
		if err != nil {
			return err
		}
		o.Limit, o.Cursor = *limit, *cursor
		if *limit <= 0 {
			return usagef("-limit: want 1-1000, got %d", *limit)
		}
		page, err := c.engine.Find(ctx, &o)
		if err != nil {
			return err
		}
		if *idsOnly && !c.g.json {
			for _, id := range page.IDs {
				_, _ = fmt.Fprintln(c.stdout, id)
			}
			if page.Next != "" {
				_, _ = fmt.Fprintln(c.stderr, "next cursor:", page.Next)
			}
			return nil
		}
		rows := make([]execRow, 0, len(page.IDs))
		for _, id := range page.IDs {
			s, err := c.engine.Describe(ctx, id)
			if errors.Is(err, flowfabric.ErrNotFound) {
				continue // deleted since the page was read
			}
			if err != nil {
				return err
			}
			rows = append(rows, execRow{ID: id.String(), State: s.PublicState.String(), Namespace: string(s.Namespace),
				Lane: string(s.Lane), Kind: string(s.Kind), Attempts: s.TotalAttempts, CreatedAt: s.CreatedAt})
		}
		if c.g.json {
			return c.printJSON(struct {
				Executions []execRow `json:"executions"`
				Next       string    `json:"next"`
				Examined   int       `json:"examined"`
			}{rows, page.Next, page.Examined})
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "ID\tSTATE\tLANE\tKIND\tATTEMPTS\tCREATED")
		for _, r := range rows {
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.State, r.Lane, r.Kind, r.Attempts, fmtTime(r.CreatedAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if page.Next != "" {
			_, _ = fmt.Fprintf(c.stdout, "next cursor: %s\n", page.Next)
		} else {
			_, _ = fmt.Fprintf(c.stdout, "(%d listed; no more pages)\n", len(rows))
		}
		return nil
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// countRow is a row of count.
type countRow struct {
	Namespace string `json:"namespace"`
	Lane      string `json:"lane"`
	Kind      string `json:"kind"`
	State     string `json:"state"`
	Count     int64  `json:"count"`
}

func countCmd(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	lane := fs.String("lane", "", "only this lane")
	kind := fs.String("kind", "", "only this kind")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("count takes no arguments, got %q", args)
		}
		o := flowfabric.CountOpts{Lane: flowfabric.LaneID(*lane), Kind: flowfabric.Kind(*kind)}
		if c.nsGiven {
			o.Namespace = c.engine.Namespace()
		}
		cs, err := c.engine.Counts(ctx, &o)
		if err != nil {
			return err
		}
		rows := make([]countRow, 0, len(cs.Rows))
		for _, r := range cs.Rows {
			rows = append(rows, countRow{string(r.Namespace), string(r.Lane), string(r.Kind), r.State.String(), r.Count})
		}
		byState := map[string]int64{}
		for st, n := range cs.ByState {
			byState[st.String()] = n
		}
		if c.g.json {
			return c.printJSON(struct {
				Rows    []countRow       `json:"rows"`
				ByState map[string]int64 `json:"by_state"`
				Total   int64            `json:"total"`
			}{rows, byState, cs.Total})
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "NAMESPACE\tLANE\tKIND\tSTATE\tCOUNT")
		for _, r := range rows {
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Namespace, r.Lane, r.Kind, r.State, r.Count)
		}
		states := make([]flowfabric.PublicState, 0, len(cs.ByState))
		for st := range cs.ByState {
			states = append(states, st)
		}
		sort.Slice(states, func(i, j int) bool { return states[i] < states[j] })
		for _, st := range states {
			_, _ = fmt.Fprintf(tw, "TOTAL\t\t\t%s\t%d\n", st, cs.ByState[st])
		}
		_, _ = fmt.Fprintf(tw, "TOTAL\t\t\tall\t%d\n", cs.Total)
		return tw.Flush()
	}
}

// laneRow is a row of lanes.
type laneRow struct {
	Lane     string           `json:"lane"`
	Workers  int              `json:"workers"`
	Paused   bool             `json:"paused"`
	Unserved bool             `json:"unserved"`
	Backlog  int64            `json:"backlog"`
	Counts   map[string]int64 `json:"counts"`
}

func lanesCmd(*flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("lanes takes no arguments, got %q", args)
		}
		ls, err := c.engine.ListLanes(ctx)
		if err != nil {
			return err
		}
		rows := make([]laneRow, 0, len(ls))
		for _, l := range ls {
			r := laneRow{Lane: string(l.Lane), Workers: l.Workers, Paused: l.Paused, Unserved: l.Unserved(),
				Backlog: l.Backlog(), Counts: map[string]int64{}}
			for st, n := range l.Counts {
				r.Counts[st.String()] = n
			}
			rows = append(rows, r)
		}
		if c.g.json {
			return c.printJSON(struct {
				Namespace string    `json:"namespace"`
				Lanes     []laneRow `json:"lanes"`
			}{string(c.engine.Namespace()), rows})
		}
		cols := []flowfabric.PublicState{flowfabric.PublicWaiting, flowfabric.PublicDelayed, flowfabric.PublicActive,
			flowfabric.PublicSuspended, flowfabric.PublicCompleted, flowfabric.PublicFailed, flowfabric.PublicCancelled}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		head := "LANE\tWORKERS\tPAUSED\tUNSERVED\tBACKLOG"
		for _, st := range cols {
			head += "\t" + strings.ToUpper(st.String())
		}
		_, _ = fmt.Fprintln(tw, head)
		for _, r := range rows {
			line := fmt.Sprintf("%s\t%d\t%s\t%s\t%d", r.Lane, r.Workers, yesNo(r.Paused), yesNo(r.Unserved), r.Backlog)
			for _, st := range cols {
				line += "\t" + strconv.FormatInt(r.Counts[st.String()], 10)
			}
			_, _ = fmt.Fprintln(tw, line)
		}
		if len(rows) == 0 {
			_, _ = fmt.Fprintf(tw, "(no lane in namespace %s)\n", c.engine.Namespace())
		}
		return tw.Flush()
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// describeView is describe's document.
type describeView struct {
	ID                 string            `json:"id"`
	Namespace          string            `json:"namespace"`
	Lane               string            `json:"lane"`
	Kind               string            `json:"kind"`
	State              string            `json:"state"`
	Priority           int               `json:"priority"`
	LifecyclePhase     string            `json:"lifecycle_phase"`
	Ownership          string            `json:"ownership"`
	Eligibility        string            `json:"eligibility"`
	BlockingReason     string            `json:"blocking_reason"`
	BlockingDetail     string            `json:"blocking_detail,omitempty"`
	TerminalOutcome    string            `json:"terminal_outcome"`
	Flow               string            `json:"flow,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	Attempts           int               `json:"attempts"`
	RetryCount         int               `json:"retry_count"`
	ReplayCount        int               `json:"replay_count"`
	ReclaimCount       int               `json:"reclaim_count"`
	LeaseEpoch         uint64            `json:"lease_epoch"`
	LeaseHolder        string            `json:"lease_holder,omitempty"`
	LeaseExpiresAt     time.Time         `json:"lease_expires_at,omitzero"`
	CreatedAt          time.Time         `json:"created_at,omitzero"`
	StartedAt          time.Time         `json:"started_at,omitzero"`
	TerminalAt         time.Time         `json:"terminal_at,omitzero"`
	DelayUntil         time.Time         `json:"delay_until,omitzero"`
	Deadline           time.Time         `json:"deadline,omitzero"`
	ProgressPercent    int               `json:"progress_percent,omitempty"`
	ProgressMessage    string            `json:"progress_message,omitempty"`
	FailureReason      string            `json:"failure_reason,omitempty"`
	FailureCategory    string            `json:"failure_category,omitempty"`
	CancellationReason string            `json:"cancellation_reason,omitempty"`
	CancelledBy        string            `json:"cancelled_by,omitempty"`
	ResultText         *string           `json:"result_text,omitempty"`
	ResultBase64       []byte            `json:"result_base64,omitempty"`
	AttemptList        []attemptView     `json:"attempt_list"`
	LeaseHistory       []leaseEventView  `json:"lease_history"`
}

type attemptView struct {
	Index           int       `json:"index"`
	Type            string    `json:"type"`
	Status          string    `json:"status"`
	LeaseEpoch      uint64    `json:"lease_epoch"`
	Worker          string    `json:"worker,omitempty"`
	Instance        string    `json:"instance,omitempty"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
	FailureReason   string    `json:"failure_reason,omitempty"`
	FailureCategory string    `json:"failure_category,omitempty"`
}

type leaseEventView struct {
	Seq      uint64    `json:"seq"`
	Kind     string    `json:"kind"`
	Epoch    uint64    `json:"epoch"`
	Attempt  int       `json:"attempt"`
	Instance string    `json:"instance,omitempty"`
	At       time.Time `json:"at,omitzero"`
	Reason   string    `json:"reason,omitempty"`
}

func describeCmd(*flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("describe takes one execution id, got %d arguments", len(args))
		}
		id, err := parseID(args[0])
		if err != nil {
			return err
		}
		s, err := c.engine.Describe(ctx, id)
		if err != nil {
			return err
		}
		v := describeView{ID: s.ID.String(), Namespace: string(s.Namespace), Lane: string(s.Lane), Kind: string(s.Kind),
			State: s.PublicState.String(), Priority: s.Priority,
			LifecyclePhase: s.State.LifecyclePhase.String(), Ownership: s.State.OwnershipState.String(),
			Eligibility: s.State.EligibilityState.String(), BlockingReason: s.State.BlockingReason.String(),
			BlockingDetail: s.State.BlockingDetail, TerminalOutcome: s.State.TerminalOutcome.String(),
			Tags: s.Tags, Metadata: s.Metadata, Attempts: s.TotalAttempts, RetryCount: s.RetryCount, ReplayCount: s.ReplayCount,
			ReclaimCount: s.ReclaimCount, LeaseEpoch: s.LeaseEpoch, CreatedAt: s.CreatedAt, StartedAt: s.StartedAt,
			TerminalAt: s.TerminalAt, DelayUntil: s.DelayUntil, Deadline: s.Deadline, ProgressPercent: s.ProgressPercent,
			ProgressMessage: s.ProgressMessage, FailureReason: s.FailureReason, FailureCategory: string(s.FailureCategory),
			CancellationReason: s.CancellationReason, CancelledBy: s.CancelledBy,
			AttemptList: []attemptView{}, LeaseHistory: []leaseEventView{}}
		if !s.Flow.IsZero() {
			v.Flow = s.Flow.String()
		}
		if l := s.CurrentLease; l != nil {
			v.LeaseHolder, v.LeaseExpiresAt = string(l.WorkerInstanceID), l.ExpiresAt
		}
		if s.PublicState == flowfabric.PublicCompleted {
			res, err := c.engine.Result(ctx, id)
			switch {
			case errors.Is(err, flowfabric.ErrResultNotFound):
			case err != nil:
				return err
			case utf8.Valid(res):
				t := string(res)
				v.ResultText = &t
			default:
				v.ResultBase64 = res
			}
		}
		atts, err := c.engine.Attempts(ctx, id)
		if err != nil {
			return err
		}
		for _, a := range atts {
			v.AttemptList = append(v.AttemptList, attemptView{Index: a.Index, Type: a.Type.String(), Status: a.Status.String(),
				LeaseEpoch: a.LeaseEpoch, Worker: string(a.WorkerID), Instance: string(a.WorkerInstanceID),
				StartedAt: a.StartedAt, EndedAt: a.EndedAt, FailureReason: a.FailureReason, FailureCategory: string(a.FailureCategory)})
		}
		evs, err := c.engine.LeaseHistory(ctx, id, 0, model.MaxPageSize)
		if err != nil {
			return err
		}
		for _, e := range evs {
			v.LeaseHistory = append(v.LeaseHistory, leaseEventView{Seq: e.Seq, Kind: string(e.Kind), Epoch: e.LeaseEpoch,
				Attempt: e.AttemptIndex, Instance: string(e.WorkerInstanceID), At: e.At, Reason: e.Reason})
		}
		if c.g.json {
			return c.printJSON(v)
		}
		return c.printDescribe(&v)
	}
}

func (c *cli) printDescribe(v *describeView) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	kv := func(k, val string) {
		if val != "" {
			_, _ = fmt.Fprintf(tw, "%s:\t%s\n", k, val)
		}
	}
	kv("id", v.ID)
	kv("state", v.State)
	kv("namespace", v.Namespace)
	kv("lane", v.Lane)
	kv("kind", v.Kind)
	kv("priority", strconv.Itoa(v.Priority))
	kv("vector", fmt.Sprintf("phase=%s ownership=%s eligibility=%s blocking=%s outcome=%s",
		v.LifecyclePhase, v.Ownership, v.Eligibility, v.BlockingReason, v.TerminalOutcome))
	kv("blocking detail", v.BlockingDetail)
	kv("flow", v.Flow)
	if len(v.Tags) > 0 {
		kv("tags", pairs(v.Tags))
	}
	if len(v.Metadata) > 0 {
		kv("metadata", pairs(v.Metadata))
	}
	kv("attempts", fmt.Sprintf("%d (retries %d, replays %d, reclaims %d)", v.Attempts, v.RetryCount, v.ReplayCount, v.ReclaimCount))
	kv("lease", v.LeaseHolder)
	if !v.LeaseExpiresAt.IsZero() {
		kv("lease expires", fmtTime(v.LeaseExpiresAt))
	}
	for _, t := range []struct {
		k string
		t time.Time
	}{{"created", v.CreatedAt}, {"started", v.StartedAt}, {"terminal", v.TerminalAt}, {"delay until", v.DelayUntil}, {"deadline", v.Deadline}} {
		if !t.t.IsZero() {
			kv(t.k, fmtTime(t.t))
		}
	}
	if v.ProgressPercent > 0 || v.ProgressMessage != "" {
		kv("progress", fmt.Sprintf("%d%% %s", v.ProgressPercent, v.ProgressMessage))
	}
	kv("failure", strings.TrimSpace(v.FailureCategory+" "+v.FailureReason))
	kv("cancelled", strings.TrimSpace(v.CancellationReason+" "+by(v.CancelledBy)))
	if v.ResultText != nil {
		kv("result", quoteShort(*v.ResultText))
	} else if v.ResultBase64 != nil {
		kv("result", fmt.Sprintf("%d bytes (binary)", len(v.ResultBase64)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.AttemptList) > 0 {
		_, _ = fmt.Fprintln(c.stdout, "\nATTEMPTS")
		tw = tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "#\tTYPE\tSTATUS\tEPOCH\tINSTANCE\tSTARTED\tENDED\tFAILURE")
		for _, a := range v.AttemptList {
			_, _ = fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", a.Index, a.Type, a.Status, a.LeaseEpoch, dash(a.Instance),
				fmtTime(a.StartedAt), fmtTime(a.EndedAt), dash(strings.TrimSpace(a.FailureCategory+" "+a.FailureReason)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.LeaseHistory) > 0 {
		_, _ = fmt.Fprintln(c.stdout, "\nLEASE HISTORY")
		tw = tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "SEQ\tEVENT\tEPOCH\tATTEMPT\tINSTANCE\tAT\tREASON")
		for _, e := range v.LeaseHistory {
			_, _ = fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\n", e.Seq, e.Kind, e.Epoch, e.Attempt, dash(e.Instance), fmtTime(e.At), dash(e.Reason))
		}
		return tw.Flush()
	}
	return nil
}

func by(s string) string {
	if s == "" {
		return ""
	}
	return "(by " + s + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quoteShort shows text, cut when long.
func quoteShort(s string) string {
	if len(s) > 200 {
		return strconv.Quote(s[:200]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// pairs renders m as "k=v" pairs in key order, separated by spaces.
func pairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]string, len(keys))
	for i, k := range keys {
		b[i] = k + "=" + m[k]
	}
	return strings.Join(b, " ")
}
