package proptest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flowfabric/flowfabric/model"
)

// What the machine observes and checks of the event feeds
// (model.FeedStore, model/feed.go): every partition's feeds, read whole
// from cursor 0 page by page, with the Behind flag of a read after 1 and
// of one past the last event. The rules of one observation follow from
// the contract alone (sim's observations are held to them too); the rules
// between two observations say that the new events are exactly the
// transitions the step made: a completion per execution that became
// terminal, a lease event per lease history entry added and per renewal.

// FeedKey names one partition's feed.
type FeedKey struct {
	Partition int
	Feed      model.FeedKind
}

func (k FeedKey) String() string { return fmt.Sprintf("feed %s/p%d", k.Feed, k.Partition) }

// FeedObservation is what FeedRead shows of one partition's feed.
type FeedObservation struct {
	// Events are the kept events, read after 0 page by page (Count
	// MaxFeedRead), oldest first.
	Events []model.FeedEvent
	// Last is the reads' Last.
	Last uint64
	// Behind is set when a page of that read reported Behind (a cursor of
	// 0, or the sequence of a kept event, never is).
	Behind bool
	// Behind1 is Behind of a read after 1: set exactly when Last is 0 or
	// the oldest kept event is above 2 (events were trimmed that a reader
	// at 1 had not read).
	Behind1 bool
	// BehindPast is Behind of a read after Last + 1: always set.
	BehindPast bool
}

// feedKinds are the feeds, in the order they are observed.
var feedKinds = []model.FeedKind{model.FeedCompletions, model.FeedLeases}

// observeFeeds reads the enabled feeds of a model.FeedStore into
// o.Feeds: every partition's when the store has at most 16, else those
// of the partitions with a listed execution.
func observeFeeds(ctx context.Context, s model.Store, o *Observation) error {
	fs, ok := s.(model.FeedStore)
	if !ok {
		return nil
	}
	for _, k := range feedKinds {
		if !fs.FeedEnabled(k) {
			continue
		}
		if o.Feeds == nil {
			o.Feeds = map[FeedKey]*FeedObservation{}
		}
		for part := range o.Partitions.FlowPartitions {
			if o.Partitions.FlowPartitions > 16 && o.Lists[part] == nil {
				continue
			}
			fo, err := observeFeedOf(ctx, fs, k, part)
			if err != nil {
				return err
			}
			o.Feeds[FeedKey{part, k}] = fo
		}
	}
	return nil
}

func observeFeedOf(ctx context.Context, fs model.FeedStore, k model.FeedKind, part int) (*FeedObservation, error) {
	fo := &FeedObservation{}
	read := func(after uint64, count int) (*model.FeedReadResult, error) {
		r, err := fs.FeedRead(ctx, &model.FeedReadParams{Feed: k, Partition: part, After: after, Count: count})
		if err != nil {
			return nil, fmt.Errorf("FeedRead(%s p%d after %d): %w", k, part, after, err)
		}
		return r, nil
	}
	var after uint64
	for page := 0; ; page++ {
		r, err := read(after, model.MaxFeedRead)
		if err != nil {
			return nil, err
		}
		want := after
		if n := len(r.Events); n > 0 {
			want = r.Events[n-1].Seq
		}
		switch {
		case r.Next != want:
			return nil, fmt.Errorf("FeedRead(%s p%d after %d): Next %d, want %d (the last event's sequence, or the cursor)", k, part, after, r.Next, want)
		case page > 0 && r.Last != fo.Last:
			return nil, fmt.Errorf("FeedRead(%s p%d after %d): Last %d, the first page said %d", k, part, after, r.Last, fo.Last)
		case len(r.Events) > model.MaxFeedRead:
			return nil, fmt.Errorf("FeedRead(%s p%d after %d): %d events, Count %d", k, part, after, len(r.Events), model.MaxFeedRead)
		case page > 100_000:
			return nil, fmt.Errorf("FeedRead(%s p%d): too many pages", k, part)
		}
		fo.Events = append(fo.Events, r.Events...)
		fo.Last = r.Last
		fo.Behind = fo.Behind || r.Behind
		if len(r.Events) < model.MaxFeedRead || r.Next >= r.Last {
			break
		}
		if r.Next <= after {
			return nil, fmt.Errorf("FeedRead(%s p%d): Next %d does not advance past %d", k, part, r.Next, after)
		}
		after = r.Next
	}
	r, err := read(1, 1)
	if err != nil {
		return nil, err
	}
	fo.Behind1 = r.Behind
	if r, err = read(fo.Last+1, 1); err != nil {
		return nil, err
	}
	fo.BehindPast = r.Behind
	return fo, nil
}

// oldest returns the sequence of the oldest kept event (Last + 1 when
// none is kept).
func (fo *FeedObservation) oldest() uint64 {
	if len(fo.Events) == 0 {
		return fo.Last + 1
	}
	return fo.Events[0].Seq
}

// event returns the kept event of sequence seq, or nil.
func (fo *FeedObservation) event(seq uint64) *model.FeedEvent {
	i, ok := slices.BinarySearchFunc(fo.Events, seq, func(e model.FeedEvent, s uint64) int { return cmpInt(int64(e.Seq), int64(s)) })
	if !ok {
		return nil
	}
	return &fo.Events[i]
}

func sortedFeedKeys(m map[FeedKey]*FeedObservation) []FeedKey {
	keys := make([]FeedKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b FeedKey) int {
		if a.Feed != b.Feed {
			return cmpStr(string(a.Feed), string(b.Feed))
		}
		return a.Partition - b.Partition
	})
	return keys
}

// leaseEventKinds are the kinds of a lease feed event.
var leaseEventKinds = []model.LeaseEventKind{model.LeaseAcquired, model.LeaseResumed, model.LeaseReleased, model.LeaseExpired,
	model.LeaseRevoked, model.LeaseReclaimed, model.LeaseRecovered, model.LeaseCancelled, model.LeaseReplayed, model.LeaseRenewed}

// feedViolations checks the feeds of one observation:
//
//   - the kept events are the newest ones: sequences consecutive, the
//     newest Last, none kept exactly when Last is 0; with the feeds'
//     length known (ObserveOptions.FeedLen) at most that many and no
//     fewer than Last allows (the feed keeps its newest FeedLen events);
//   - a read after 0 is never behind, one after 1 exactly when Last is 0
//     or the oldest kept event is above 2, one after Last + 1 always;
//   - each event is of the partition read, and so is its execution, which
//     is listed and whose namespace, lane and kind it repeats, with no
//     flow or the execution's; a completion carries a terminal outcome
//     (a result size only for a success) and nothing of a lease, a lease
//     event a known kind and no outcome;
//   - a terminal execution's newest kept completion is its current
//     outcome at its TerminalAt, with its result's size.
func (o *Observation) feedViolations(known []model.ExecutionID) []string {
	var out []string
	live := make(map[model.ExecutionID]bool, len(known))
	for _, id := range known {
		live[id] = true
	}
	for _, key := range sortedFeedKeys(o.Feeds) {
		fo := o.Feeds[key]
		bad := func(format string, args ...any) { out = append(out, key.String()+": "+fmt.Sprintf(format, args...)) }
		if fo == nil {
			bad("not observed")
			continue
		}
		for i := range fo.Events {
			if i > 0 && fo.Events[i].Seq != fo.Events[i-1].Seq+1 {
				bad("events %d then %d: the kept events are not the newest ones", fo.Events[i-1].Seq, fo.Events[i].Seq)
			}
		}
		n := len(fo.Events)
		switch {
		case n == 0 && fo.Last > 0:
			bad("last sequence %d, yet no event kept", fo.Last)
		case n > 0 && fo.Events[n-1].Seq != fo.Last:
			bad("newest kept event %d, last sequence %d", fo.Events[n-1].Seq, fo.Last)
		}
		if l := o.FeedLen; l > 0 {
			if n > l {
				bad("%d events kept, the feed keeps %d", n, l)
			} else if uint64(n) < min(fo.Last, uint64(l)) {
				bad("%d events kept of %d written, the feed keeps %d", n, fo.Last, l)
			}
		}
		if fo.Behind {
			bad("a read after 0 (or after a kept event) reported Behind")
		}
		if want := fo.Last == 0 || fo.oldest() > 2; fo.Behind1 != want {
			bad("a read after 1 reported Behind %v, want %v (last %d, oldest kept %d)", fo.Behind1, want, fo.Last, fo.oldest())
		}
		if !fo.BehindPast {
			bad("a read after %d, past the last sequence, did not report Behind", fo.Last+1)
		}
		newest := map[model.ExecutionID]*model.FeedEvent{}
		for i := range fo.Events {
			ev := &fo.Events[i]
			for _, msg := range o.feedEventViolations(key, ev, live) {
				bad("event %d (%v): %s", ev.Seq, ev.Execution, msg)
			}
			newest[ev.Execution] = ev
		}
		if key.Feed != model.FeedCompletions {
			continue
		}
		for _, id := range sortedExecIDs(o.Execs) {
			x, ev := o.Execs[id], newest[id]
			if ev == nil || x.Snapshot == nil || x.Snapshot.State.LifecyclePhase != model.PhaseTerminal {
				continue
			}
			if want := completionOf(x); !completionMatches(ev, want) {
				bad("event %d: %v's newest completion is %s at %v (%d bytes), the execution ended %s at %v (%d bytes)",
					ev.Seq, id, ev.Outcome, ev.At, ev.ResultBytes, want.Outcome, want.At, want.ResultBytes)
			}
		}
	}
	return out
}

// feedEventViolations checks one event of feed key on its own.
func (o *Observation) feedEventViolations(key FeedKey, ev *model.FeedEvent, known map[model.ExecutionID]bool) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if ev.Partition != key.Partition {
		bad("partition %d", ev.Partition)
	}
	if ev.Execution.Partition() != key.Partition {
		bad("the execution is of partition %d", ev.Execution.Partition())
	}
	if x := o.Execs[ev.Execution]; x == nil || x.Snapshot == nil {
		// a deleted execution's events stay in the feeds
		if known[ev.Execution] {
			bad("the execution is not listed")
		}
	} else if s := x.Snapshot; ev.Namespace != s.Namespace || ev.Lane != s.Lane || ev.Kind != s.Kind || (!ev.Flow.IsZero() && ev.Flow != s.Flow) {
		bad("namespace %s lane %s kind %s flow %v, the execution's are %s %s %s %v", ev.Namespace, ev.Lane, ev.Kind, ev.Flow,
			s.Namespace, s.Lane, s.Kind, s.Flow)
	}
	switch key.Feed {
	case model.FeedCompletions:
		if ev.Outcome < model.OutcomeSuccess || ev.Outcome > model.OutcomeSkipped {
			bad("outcome %v is not a terminal outcome", ev.Outcome)
		}
		if ev.ResultBytes < 0 || ev.ResultBytes > 0 && ev.Outcome != model.OutcomeSuccess {
			bad("%d result bytes for outcome %v", ev.ResultBytes, ev.Outcome)
		}
		if ev.Lease != "" || ev.Epoch != 0 || ev.Attempt != 0 || ev.Instance != "" || ev.Reason != "" {
			bad("a completion with lease fields %q epoch %d attempt %d instance %q reason %q", ev.Lease, ev.Epoch, ev.Attempt, ev.Instance, ev.Reason)
		}
	case model.FeedLeases:
		if !slices.Contains(leaseEventKinds, ev.Lease) {
			bad("unknown lease event %q", ev.Lease)
		}
		if ev.Outcome != 0 || ev.ResultBytes != 0 {
			bad("a lease event with outcome %v and %d result bytes", ev.Outcome, ev.ResultBytes)
		}
	}
	if ev.At.IsZero() {
		bad("no time")
	}
	return out
}

// completionOf is the completion event x's current terminal state
// implies (outcome, time, result size).
func completionOf(x *ExecObservation) model.FeedEvent {
	s := x.Snapshot
	ev := model.FeedEvent{Outcome: s.State.TerminalOutcome, At: s.TerminalAt}
	if ev.Outcome == model.OutcomeSuccess && x.HasResult {
		ev.ResultBytes = len(x.Result)
	}
	return ev
}

func completionMatches(ev *model.FeedEvent, want model.FeedEvent) bool {
	return ev.Outcome == want.Outcome && ev.At.Equal(want.At) && ev.ResultBytes == want.ResultBytes
}

// feedEventEqual compares two events, times by instant.
func feedEventEqual(a, b *model.FeedEvent) bool {
	x, y := *a, *b
	if !x.At.Equal(y.At) {
		return false
	}
	x.At, y.At = time.Time{}, time.Time{}
	return x == y
}

// feedRenewal is a successful LeaseRenew of a step: its renewed lease
// event carries the fence's epoch and attempt, the lease's holder and the
// call's time.
type feedRenewal struct {
	id    model.ExecutionID
	fence model.Fence
	at    time.Time
}

// feedStepViolations checks the feeds between two observations of one
// store:
//
//   - Last never falls, and an event of a sequence both show is the same;
//   - the new events (above the previous Last) are exactly the step's
//     transitions: of the completions feed, an execution has as many as
//     it became terminal (replays + 1 if it is terminal now − 1 if it was
//     before), the newest its current outcome; of the leases feed, an
//     execution has an event per lease history entry added (its newest
//     sequence rose by that many), the same kind, epoch, attempt,
//     instance, reason and time in the same order, and a renewed event
//     per renewal of the step (renewals; nil: not known, renewed events
//     are then not counted), with the fence's epoch and attempt, the
//     lease's holder and the call's time; nothing else has one; each new
//     event is timed within the step (prev.Now..cur.Now) and names the
//     execution's flow as it was (a member before the step: that flow);
//   - when the feed dropped new events in the step (the oldest kept is
//     above the previous Last + 1), or the history dropped added entries,
//     the counts are upper bounds and the events both still show are
//     compared (the newest of each).
func feedStepViolations(prev, cur *Observation, renewals []feedRenewal) []string {
	var out []string
	for _, key := range sortedFeedKeys(prev.Feeds) {
		if cur.Feeds[key] == nil {
			out = append(out, key.String()+": observed before, not now")
		}
	}
	for _, key := range sortedFeedKeys(cur.Feeds) {
		pf, cf := prev.Feeds[key], cur.Feeds[key]
		bad := func(format string, args ...any) { out = append(out, key.String()+": "+fmt.Sprintf(format, args...)) }
		if pf == nil || cf == nil {
			if cf != nil && prev.Feeds != nil {
				bad("observed now, not before")
			}
			continue
		}
		if cf.Last < pf.Last {
			bad("last sequence fell from %d to %d", pf.Last, cf.Last)
			continue
		}
		var fresh []model.FeedEvent
		for i := range cf.Events {
			ev := &cf.Events[i]
			if ev.Seq > pf.Last {
				fresh = append(fresh, *ev)
			} else if pe := pf.event(ev.Seq); pe != nil && !feedEventEqual(pe, ev) {
				bad("event %d changed: %+v -> %+v", ev.Seq, *pe, *ev)
			}
		}
		complete := cf.oldest() <= pf.Last+1
		byExec := map[model.ExecutionID][]model.FeedEvent{}
		for _, ev := range fresh {
			if ev.At.Before(prev.Now) || ev.At.After(cur.Now) {
				bad("new event %d (%v) at %v, the step ran %v..%v", ev.Seq, ev.Execution, ev.At, prev.Now, cur.Now)
			}
			if px := prev.Execs[ev.Execution]; px != nil && px.Snapshot != nil && !px.Snapshot.Flow.IsZero() && ev.Flow != px.Snapshot.Flow {
				bad("new event %d (%v) names flow %v, the execution was a member of %v", ev.Seq, ev.Execution, ev.Flow, px.Snapshot.Flow)
			}
			byExec[ev.Execution] = append(byExec[ev.Execution], ev)
		}
		for _, id := range sortedExecIDs(cur.Execs) {
			if id.Partition() != key.Partition {
				continue
			}
			var msgs []string
			if key.Feed == model.FeedCompletions {
				msgs = completionStep(prev.Execs[id], cur.Execs[id], byExec[id], complete)
			} else {
				msgs = leaseStep(prev.Execs[id], cur.Execs[id], byExec[id], complete, renewalsOf(renewals, id), renewals != nil)
			}
			for _, msg := range msgs {
				bad("%v: %s", id, msg)
			}
		}
	}
	return out
}

// completionStep checks the new completions of one execution (px nil: it
// did not exist before the step).
func completionStep(px, cx *ExecObservation, got []model.FeedEvent, complete bool) []string {
	if cx.Snapshot == nil {
		return nil
	}
	var out []string
	c := cx.Snapshot
	n := c.ReplayCount
	if c.State.LifecyclePhase == model.PhaseTerminal {
		n++
	}
	if px != nil && px.Snapshot != nil {
		p := px.Snapshot
		n -= p.ReplayCount
		if p.State.LifecyclePhase == model.PhaseTerminal {
			n--
		}
	}
	switch {
	case n < 0:
		return nil // StepViolations reports a fallen replay count
	case complete && len(got) != n:
		out = append(out, fmt.Sprintf("%d new completion(s), it became terminal %d time(s) in the step (%s)", len(got), n, feedSeqs(got)))
	case len(got) > n:
		out = append(out, fmt.Sprintf("%d new completion(s) kept, it became terminal %d time(s) in the step (%s)", len(got), n, feedSeqs(got)))
	}
	if k := len(got); k > 0 && c.State.LifecyclePhase == model.PhaseTerminal {
		if want := completionOf(cx); !completionMatches(&got[k-1], want) {
			out = append(out, fmt.Sprintf("new completion %d is %s at %v (%d bytes), it ended %s at %v (%d bytes)",
				got[k-1].Seq, got[k-1].Outcome, got[k-1].At, got[k-1].ResultBytes, want.Outcome, want.At, want.ResultBytes))
		}
	}
	return out
}

// leaseStep checks the new lease events of one execution against the
// lease history entries the step added and its renewals.
func leaseStep(px, cx *ExecObservation, got []model.FeedEvent, complete bool, rens []feedRenewal, rensKnown bool) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	var prevNewest, curNewest uint64
	if px != nil && len(px.History) > 0 {
		prevNewest = px.History[len(px.History)-1].Seq
	}
	if len(cx.History) > 0 {
		curNewest = cx.History[len(cx.History)-1].Seq
	}
	if curNewest < prevNewest {
		return nil // StepViolations reports the history
	}
	added := int(curNewest - prevNewest)
	var hist []model.LeaseEvent
	for _, h := range cx.History {
		if h.Seq > prevNewest {
			hist = append(hist, h)
		}
	}
	var gotHist, gotRenew []model.FeedEvent
	for _, ev := range got {
		if ev.Lease == model.LeaseRenewed {
			gotRenew = append(gotRenew, ev)
		} else {
			gotHist = append(gotHist, ev)
		}
	}
	switch {
	case complete && len(gotHist) != added:
		bad("%d new lease event(s) other than renewals (%s), the lease history gained %d entries (sequence %d -> %d)",
			len(gotHist), feedSeqs(gotHist), added, prevNewest, curNewest)
	case len(gotHist) > added:
		bad("%d new lease event(s) other than renewals kept (%s), the lease history gained %d entries (sequence %d -> %d)",
			len(gotHist), feedSeqs(gotHist), added, prevNewest, curNewest)
	}
	for k, i := min(len(gotHist), len(hist)), 0; i < k; i++ {
		ev, h := gotHist[len(gotHist)-k+i], hist[len(hist)-k+i]
		if ev.Lease != h.Kind || ev.Epoch != h.LeaseEpoch || ev.Attempt != h.AttemptIndex || ev.Instance != h.WorkerInstanceID ||
			ev.Reason != h.Reason || !ev.At.Equal(h.At) {
			bad("new lease event %d is %s epoch %d attempt %d instance %q reason %q at %v; its history entry %d is %s epoch %d attempt %d instance %q reason %q at %v",
				ev.Seq, ev.Lease, ev.Epoch, ev.Attempt, ev.Instance, ev.Reason, ev.At,
				h.Seq, h.Kind, h.LeaseEpoch, h.AttemptIndex, h.WorkerInstanceID, h.Reason, h.At)
		}
	}
	if !rensKnown {
		return out
	}
	switch {
	case complete && len(gotRenew) != len(rens):
		bad("%d new renewed event(s) (%s), %d successful renewal(s) in the step", len(gotRenew), feedSeqs(gotRenew), len(rens))
	case len(gotRenew) > len(rens):
		bad("%d new renewed event(s) kept (%s), %d successful renewal(s) in the step", len(gotRenew), feedSeqs(gotRenew), len(rens))
	}
	for k, i := min(len(gotRenew), len(rens)), 0; i < k; i++ {
		ev, r := gotRenew[len(gotRenew)-k+i], rens[len(rens)-k+i]
		attempt, instance, known := renewedBy(px, cx, r.fence)
		if ev.Epoch != r.fence.LeaseEpoch || ev.Reason != "" || !ev.At.Equal(r.at) || known && (ev.Attempt != attempt || ev.Instance != instance) {
			bad("renewed event %d is epoch %d attempt %d instance %q reason %q at %v; the renewal at %v had fence %+v (attempt %d, holder %q)",
				ev.Seq, ev.Epoch, ev.Attempt, ev.Instance, ev.Reason, ev.At, r.at, r.fence, attempt, instance)
		}
	}
	return out
}

// renewedBy resolves a renewal's fence to its attempt's index and the
// lease's holder, from the attempts (which name their lease and holder),
// the snapshots and the lease history of either observation.
func renewedBy(px, cx *ExecObservation, f model.Fence) (attempt int, instance model.WorkerInstanceID, ok bool) {
	attempt = -1
	for _, x := range []*ExecObservation{cx, px} {
		if x == nil {
			continue
		}
		for _, a := range x.Attempts {
			if a.ID == f.AttemptID {
				attempt = a.Index
				if a.LeaseID == f.LeaseID && a.WorkerInstanceID != "" {
					instance = a.WorkerInstanceID
				}
			}
		}
		if s := x.Snapshot; instance == "" && s != nil && s.CurrentLease != nil && s.CurrentLease.ID == f.LeaseID {
			instance = s.CurrentLease.WorkerInstanceID
		}
		for _, h := range x.History {
			if instance == "" && h.LeaseID == f.LeaseID && h.WorkerInstanceID != "" {
				instance = h.WorkerInstanceID
			}
		}
	}
	return attempt, instance, attempt >= 0 && instance != ""
}

func renewalsOf(rs []feedRenewal, id model.ExecutionID) []feedRenewal {
	var out []feedRenewal
	for _, r := range rs {
		if r.id == id {
			out = append(out, r)
		}
	}
	return out
}

func feedSeqs(evs []model.FeedEvent) string {
	if len(evs) == 0 {
		return "none"
	}
	s := ""
	for i, ev := range evs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(ev.Seq)
	}
	return s
}

// feedTimeViolations checks the times of the feeds of an observation
// written by callers whose Now never falls (the machine's clock): events'
// times never fall along the sequence and are not after Now.
func (o *Observation) feedTimeViolations() []string {
	var out []string
	for _, key := range sortedFeedKeys(o.Feeds) {
		fo := o.Feeds[key]
		if fo == nil {
			continue
		}
		for i, ev := range fo.Events {
			if i > 0 && ev.At.Before(fo.Events[i-1].At) {
				out = append(out, fmt.Sprintf("%v: event %d at %v before event %d at %v", key, ev.Seq, ev.At, fo.Events[i-1].Seq, fo.Events[i-1].At))
			}
			if ev.At.After(o.Now) {
				out = append(out, fmt.Sprintf("%v: event %d at %v after now %v", key, ev.Seq, ev.At, o.Now))
			}
		}
	}
	return out
}
