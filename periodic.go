package flowfabric

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/flowfabric/flowfabric/model"
	"github.com/flowfabric/flowfabric/scan"
)

// MissedPolicy says what a periodic job does with ticks that passed while
// no process ran its schedule (every process was down, or the one running
// it was stalled).
type MissedPolicy uint8

const (
	// MissedSkip (the default) submits no tick that passed before the
	// schedule was added to the running process; a process that falls
	// behind (stalled, or its clock jumped) submits only the newest tick
	// it missed, once, and goes on with the next.
	MissedSkip MissedPolicy = iota
	// MissedCatchUp submits, when the schedule is added and whenever a
	// process falls behind, the newest MaxCatchUp ticks it has not
	// handled that are at most MaxLateness old, oldest first. Ticks some
	// process submitted before are found by their idempotency keys and
	// not submitted again.
	MissedCatchUp
)

// Limits and defaults of a PeriodicJob.
const (
	// DefaultPeriodicMaxLateness is PeriodicJob.MaxLateness when zero.
	DefaultPeriodicMaxLateness = 24 * time.Hour
	// MaxPeriodicMaxLateness is the largest MaxLateness: a tick's
	// idempotency key lives MaxLateness + PeriodicKeyMargin, and an
	// idempotency key lives at most 30 days.
	MaxPeriodicMaxLateness = model.MaxIdempotencyTTL - PeriodicKeyMargin
	// PeriodicKeyMargin is how much longer than MaxLateness a tick's
	// idempotency key lives: room for the clocks of the processes sharing
	// a store to disagree.
	PeriodicKeyMargin = time.Hour
	// DefaultPeriodicMaxCatchUp is PeriodicJob.MaxCatchUp when zero.
	DefaultPeriodicMaxCatchUp = 10
	// MaxPeriodicMaxCatchUp bounds PeriodicJob.MaxCatchUp.
	MaxPeriodicMaxCatchUp = 1000
	// MaxPeriodicNameBytes bounds PeriodicJob.Name.
	MaxPeriodicNameBytes = 128
	// periodicRetry is how long a schedule whose submission failed waits
	// before it is tried again.
	periodicRetry = time.Second
	// periodicIdle is how long the scheduler sleeps with no schedule (an
	// added schedule wakes it at once).
	periodicIdle = time.Hour
)

// PeriodicJob submits a kind with its args on every tick of a schedule
// (Engine.AddPeriodic).
//
// Every process sharing a store may run the same job (same Name, same
// schedule): each tick is submitted with the idempotency key
// "periodic:<Name>:<tick in Unix ms>" in the job's namespace and lane, so
// the processes submit it once between them. A tick is submitted only
// while it is at most MaxLateness old, and its key lives MaxLateness +
// PeriodicKeyMargin after its first submission, so no process can
// submit it again once the key has expired. Processes must agree on the
// schedule, the lane and MaxLateness for this to hold.
type PeriodicJob struct {
	// Name identifies the job: 1–128 bytes of letters, digits, '_', '.'
	// or '-'. It is part of every tick's idempotency key.
	Name string
	// Cron is a cron spec: five fields (minute hour day-of-month month
	// day-of-week), six with a leading seconds field, or a descriptor
	// (@yearly, @monthly, @weekly, @daily, @hourly, "@every 5m"),
	// evaluated in Location. "@every d" is the same as Every = d. Set
	// exactly one of Cron and Every.
	Cron string
	// Every ticks at every multiple of Every since the Unix epoch (so
	// ticks of all processes coincide; 1h ticks on the hour, UTC): at
	// least 1s, a whole number of milliseconds. Location does not apply;
	// use Cron for ticks at a wall-clock time of a zone.
	Every time.Duration
	// Location is the time zone of Cron (nil: UTC). Across a daylight
	// saving change a cron tick follows the wall clock: a time skipped by
	// the change does not tick that day, and a repeated time ticks once,
	// at its first occurrence. A
	// "CRON_TZ=" prefix in Cron wins over Location.
	Location *time.Location
	// Args is the typed payload of every tick's execution (its kind is
	// Args.Kind() and its SubmitOpts, if any, are overlaid by Opts); when
	// nil, Kind and Payload are used, as with SubmitRaw.
	Args    Args
	Kind    Kind
	Payload []byte
	// Opts are the submit options of every tick (lane, priority, retry
	// policy, ...). IdempotencyKey, IdempotencyTTL and Unique are set by
	// the schedule and must be left empty (the tick's key makes it
	// unique; an Args type's own Unique is ignored).
	Opts *SubmitOpts
	// Missed is the policy for missed ticks (default MissedSkip).
	Missed MissedPolicy
	// MaxCatchUp bounds how many missed ticks MissedCatchUp submits at a
	// time (0: DefaultPeriodicMaxCatchUp; at most MaxPeriodicMaxCatchUp).
	// Set only with MissedCatchUp.
	MaxCatchUp int
	// MaxLateness is the age past which a tick is never submitted (0:
	// DefaultPeriodicMaxLateness; 1s..MaxPeriodicMaxLateness). With
	// MissedCatchUp it is also the window caught up when the job is added.
	MaxLateness time.Duration
}

// PeriodicInfo describes one periodic job of this engine (Engine.Periodics).
type PeriodicInfo struct {
	Name string
	// Next is the earliest tick this process has not handled yet: the
	// next one to come, or, while a MissedCatchUp job added moments ago
	// waits for its first pass, the start of its catch-up window (a pass
	// then submits only the newest MaxCatchUp of the missed ticks). Zero
	// when the schedule never ticks again.
	Next time.Time
	// Last is the newest tick this process submitted, or found already
	// submitted by another process (zero: none yet).
	Last time.Time
	// LastID is the execution of Last.
	LastID ExecutionID
}

// schedule is when a periodic job ticks: Next returns the first tick
// strictly after t (zero: none within five years).
type schedule interface {
	Next(t time.Time) time.Time
}

// everySchedule ticks at the multiples of d since the Unix epoch.
type everySchedule time.Duration

func (d everySchedule) Next(t time.Time) time.Time {
	step := time.Duration(d).Milliseconds()
	ms := t.UnixMilli()
	n := ms / step
	if ms < 0 && ms%step != 0 {
		n-- // floor
	}
	return time.UnixMilli((n + 1) * step).UTC()
}

// cronSchedule is a parsed cron spec whose ticks at a wall-clock time
// that a daylight saving change repeats happen once, at the first
// occurrence (robfig/cron would tick at both).
type cronSchedule struct{ cron.Schedule }

func (c cronSchedule) Next(t time.Time) time.Time {
	for {
		n := c.Schedule.Next(t)
		if n.IsZero() || !repeatsWallClock(n) {
			return n
		}
		t = n
	}
}

// repeatsWallClock reports whether n's wall-clock time (in n's location)
// already happened earlier, before the clocks went back.
func repeatsWallClock(n time.Time) bool {
	_, off := n.Zone()
	_, before := n.Add(-3 * time.Hour).Zone()
	if before <= off {
		return false
	}
	earlier := n.Add(-time.Duration(before-off) * time.Second)
	const wall = "2006-01-02 15:04:05.000"
	return earlier.Format(wall) == n.Format(wall)
}

// cronParser accepts five or six fields and descriptors, as Asynq's does.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month |
	cron.Dow | cron.Descriptor)

// periodicEntry is one job as the scheduler runs it.
type periodicEntry struct {
	name     string
	sched    schedule
	loc      *time.Location
	kind     Kind
	payload  []byte
	opts     SubmitOpts
	missed   MissedPolicy
	catchUp  int
	lateness time.Duration

	// done: every tick at or before it has been handled by this process.
	done    time.Time
	retryAt time.Time
	last    time.Time
	lastID  ExecutionID
}

// periodicScheduler is the scanner that submits the ticks of the engine's
// periodic jobs. Its Interval is the time until the earliest next tick.
type periodicScheduler struct {
	e    *Engine
	mu   sync.Mutex
	jobs map[string]*periodicEntry
}

const periodicScannerName = "periodic"

func (s *periodicScheduler) Name() string { return periodicScannerName }

// Interval is how long the scheduler may sleep: until the earliest next
// tick (or retry) of its jobs, an hour with none; AddPeriodic wakes it.
func (s *periodicScheduler) Interval() time.Duration {
	now := s.e.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := periodicIdle
	for _, j := range s.jobs {
		at := j.sched.Next(j.done.In(j.loc))
		if at.IsZero() {
			continue
		}
		if j.retryAt.After(at) {
			at = j.retryAt
		}
		d = min(d, at.Sub(now))
	}
	return max(d, time.Millisecond)
}

// RunOnce submits every due tick of every job.
func (s *periodicScheduler) RunOnce(ctx context.Context) (scan.Result, error) {
	now := s.e.clock.Now()
	s.mu.Lock()
	jobs := make([]*periodicEntry, 0, len(s.jobs))
	for _, j := range s.jobs {
		jobs = append(jobs, j)
	}
	s.mu.Unlock()
	slices.SortFunc(jobs, func(a, b *periodicEntry) int { return strings.Compare(a.name, b.name) })
	var res scan.Result
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		s.runJob(ctx, j, now, &res)
	}
	return res, nil
}

// runJob submits the due ticks of one job.
func (s *periodicScheduler) runJob(ctx context.Context, j *periodicEntry, now time.Time, res *scan.Result) {
	s.mu.Lock()
	if now.Before(j.retryAt) {
		s.mu.Unlock()
		return
	}
	after := j.done
	s.mu.Unlock()
	n := 1
	if j.missed == MissedCatchUp {
		n = j.catchUp
	}
	if oldest := now.Add(-j.lateness); after.Before(oldest) {
		after = oldest
	}
	ticks := newestTicks(j.sched, after.In(j.loc), now.In(j.loc), n)
	res.Scanned += len(ticks)
	done := now
	for _, tick := range ticks {
		o := j.tickOpts(tick)
		s.e.keepAtLeast(&o, o.IdempotencyTTL)
		r, err := s.e.submit(ctx, j.kind, j.payload, o)
		if err != nil {
			res.Errors++
			if errors.Is(err, ErrValidation) || errors.Is(err, ErrSubmissionRefused) {
				// the same inputs would be refused again: drop the tick
				s.e.log.Error("periodic: tick refused; skipped", "name", j.name, "tick", tick, "err", err)
				continue
			}
			s.e.log.Warn("periodic: submitting a tick failed; will retry", "name", j.name, "tick", tick, "err", err)
			done = tick.Add(-time.Millisecond) // this tick and the later ones again
			s.mu.Lock()
			j.retryAt = now.Add(periodicRetry)
			s.mu.Unlock()
			break
		}
		if !r.Duplicate {
			res.Acted++
		}
		s.mu.Lock()
		j.last, j.lastID = tick, r.ID
		j.done = later(j.done, tick)
		s.mu.Unlock()
	}
	s.mu.Lock()
	j.done = later(j.done, done)
	if !done.Before(now) {
		j.retryAt = time.Time{}
	}
	s.mu.Unlock()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// tickOpts are the submit options of one tick.
func (j *periodicEntry) tickOpts(tick time.Time) SubmitOpts {
	o := j.opts
	o.IdempotencyKey = "periodic:" + j.name + ":" + strconv.FormatInt(tick.UnixMilli(), 10)
	o.IdempotencyTTL = j.lateness + PeriodicKeyMargin
	o.Unique = nil // the tick's key is its uniqueness (an Args type's SubmitOpts may set one)
	return o
}

// newestTicks returns the newest n ticks of s in (after, now], oldest
// first. It looks back from now over a window that doubles until it holds
// n ticks or reaches after, so a dense schedule costs about 2n steps, not
// one per tick since after.
func newestTicks(s schedule, after, now time.Time, n int) []time.Time {
	if !after.Before(now) {
		return nil
	}
	for w := time.Second; ; w *= 2 {
		from := now.Add(-w)
		if !from.After(after) || w > 1<<60 {
			from = after
		}
		ticks := make([]time.Time, 0, n)
		for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
			if len(ticks) == n {
				copy(ticks, ticks[1:])
				ticks = ticks[:n-1]
			}
			ticks = append(ticks, t)
		}
		if len(ticks) >= n || from.Equal(after) {
			return ticks
		}
	}
}

// AddPeriodic adds a periodic job to this engine: from then on (while the
// engine is started) it submits the job's kind and args on every tick of
// its schedule, with the policy of MissedPolicy for missed ticks. Run the
// same job in every process that should be able to submit it; each tick is
// submitted once between them (see PeriodicJob). Errors: a validation
// error naming the field (Name, Cron, Every, Location, Args, Kind, Opts.*,
// MaxCatchUp, MaxLateness), or Name already added (invalid_input,
// "duplicate").
func (e *Engine) AddPeriodic(p PeriodicJob) error {
	j, err := e.periodicEntry(p)
	if err != nil {
		return wrap("add periodic", err)
	}
	now := e.clock.Now()
	j.done = now
	if j.missed == MissedCatchUp {
		j.done = now.Add(-j.lateness)
	}
	s := e.periodic
	s.mu.Lock()
	if _, dup := s.jobs[j.name]; dup {
		s.mu.Unlock()
		return wrap("add periodic", model.InvalidField("Name", "duplicate"))
	}
	s.jobs[j.name] = j
	s.mu.Unlock()
	e.prunner.Kick(periodicScannerName)
	return nil
}

// RemovePeriodic stops this engine from submitting the named job's ticks
// (other processes running it go on) and reports whether it had it.
func (e *Engine) RemovePeriodic(name string) bool {
	s := e.periodic
	s.mu.Lock()
	_, ok := s.jobs[name]
	delete(s.jobs, name)
	s.mu.Unlock()
	return ok
}

// Periodics lists this engine's periodic jobs by name.
func (e *Engine) Periodics() []PeriodicInfo {
	s := e.periodic
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PeriodicInfo, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, PeriodicInfo{Name: j.name, Next: j.sched.Next(j.done.In(j.loc)), Last: j.last, LastID: j.lastID})
	}
	slices.SortFunc(out, func(a, b PeriodicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// periodicEntry validates p and prepares it to run.
func (e *Engine) periodicEntry(p PeriodicJob) (*periodicEntry, error) {
	if err := model.ValidateName("Name", p.Name, MaxPeriodicNameBytes); err != nil {
		return nil, err
	}
	j := &periodicEntry{name: p.Name, loc: cmp.Or(p.Location, time.UTC), missed: p.Missed}
	spec := strings.TrimSpace(p.Cron)
	every := p.Every
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Cron", Detail: "bad_spec", Got: strconv.Quote(p.Cron),
				Want: "a cron spec or @every <duration>"}
		}
		if every != 0 {
			return nil, model.InvalidField("Every", "set_with_cron")
		}
		spec, every = "", d
	}
	switch {
	case spec != "" && every != 0:
		return nil, model.InvalidField("Every", "set_with_cron")
	case spec == "" && every == 0:
		return nil, model.InvalidField("Cron", "missing_schedule")
	case every != 0:
		if every < time.Second || every%time.Millisecond != 0 {
			return nil, model.OutOfRange("Every", every, "1s or more, a whole number of milliseconds")
		}
		j.sched = everySchedule(every)
	default:
		sched, err := cronParser.Parse(spec)
		if err != nil {
			return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Cron", Detail: "bad_spec", Got: strconv.Quote(p.Cron),
				Want: "5 or 6 cron fields or a descriptor: " + err.Error()}
		}
		if sched.Next(e.clock.Now().In(j.loc)).IsZero() {
			return nil, &model.Error{Code: model.CodeInvalidInput, Field: "Cron", Detail: "never_ticks", Got: strconv.Quote(p.Cron)}
		}
		j.sched = cronSchedule{sched}
	}
	switch p.Missed {
	case MissedSkip:
		if p.MaxCatchUp != 0 {
			return nil, model.InvalidField("MaxCatchUp", "set_without_catch_up")
		}
	case MissedCatchUp:
		j.catchUp = cmp.Or(p.MaxCatchUp, DefaultPeriodicMaxCatchUp)
		if p.MaxCatchUp < 0 || p.MaxCatchUp > MaxPeriodicMaxCatchUp {
			return nil, model.OutOfRange("MaxCatchUp", p.MaxCatchUp, "0 (the default) to "+strconv.Itoa(MaxPeriodicMaxCatchUp))
		}
	default:
		return nil, model.OutOfRange("Missed", int(p.Missed), "MissedSkip or MissedCatchUp")
	}
	j.lateness = cmp.Or(p.MaxLateness, DefaultPeriodicMaxLateness)
	if j.lateness < time.Second || j.lateness > MaxPeriodicMaxLateness {
		return nil, model.OutOfRange("MaxLateness", p.MaxLateness, "0 (the default) or 1s.."+MaxPeriodicMaxLateness.String())
	}
	if p.Opts != nil {
		switch {
		case p.Opts.IdempotencyKey != "":
			return nil, model.InvalidField("Opts.IdempotencyKey", "set_by_schedule")
		case p.Opts.IdempotencyTTL != 0:
			return nil, model.InvalidField("Opts.IdempotencyTTL", "set_by_schedule")
		case p.Opts.Unique != nil:
			return nil, model.InvalidField("Opts.Unique", "set_by_schedule")
		}
	}
	if p.Args != nil {
		kind, payload, defaults, err := encodeArgs(p.Args)
		if err != nil {
			return nil, err
		}
		j.kind, j.payload, j.opts = kind, payload, defaults.merge(p.Opts)
	} else {
		j.kind, j.payload, j.opts = p.Kind, p.Payload, SubmitOpts{}.merge(p.Opts)
	}
	// check the submission as a tick would make it (hooks run per tick)
	if _, err := e.createParams(j.kind, j.payload, j.tickOpts(e.clock.Now())); err != nil {
		var me *model.Error
		if errors.As(err, &me) && me.Field != "" && me.Field != "Kind" && me.Field != "Payload" {
			c := *me
			c.Field = "Opts." + c.Field
			return nil, &c
		}
		return nil, err
	}
	return j, nil
}
