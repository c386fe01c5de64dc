package valkeystore

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/internal/redisserver"
	"github.com/flowfabric/flowfabric/model"
)

// appendFloorLib holds the functions BenchmarkAppendFloor compares the
// store's append with. They are measuring aids, not store code: each
// covers less than stream_append does.
//
//   - floor_return: an FCALL that does nothing.
//   - floor_bare: the three commands no fenced, notified append can do
//     without (read the fence copy, add the frame, publish it), with two
//     prebuilt arguments and no logic; its frames go to a key of its own.
//   - floor_lean: the fast path stream_append had before the server
//     numbered frames (a durable frame on a persistent stream, the tail's
//     case: the meta read for the sequence and the count, and written),
//     as tightly as Lua allows, taking only the arguments that case needs;
//     anything else answers "slow". Its frames go to a key of their own,
//     whose meta the setup makes persistent.
//   - floor_nometa: floor_lean for a stream whose entry ids the server
//     numbers (0-*), so the sequence and the count come from the stream
//     key and the meta is neither read nor written: stream_append's fast
//     path now, less its second X:core field and its argument names; its
//     frames go to a key of their own.
//   - floor_packed: floor_nometa with the entry redesigned around the
//     notice: the client sends the frame already in the notice's layout
//     ("<#type>|<#encoding>|<#correlation>|" then type, encoding,
//     correlation and payload), the entry is that text behind the frame's
//     time, mode and version in one field, and the notice is the same text
//     behind the sequence, so the call takes six arguments and builds one
//     string; the fence check reads a second X:core field, what a
//     per-stream "persistent and server-numbered" marker would cost. Its
//     frames go to a key of their own.
const appendFloorLib = `#!lua name=ff_append_floor
redis.register_function('floor_return', function(KEYS, ARGV) return 1 end)
redis.register_function('floor_bare', function(KEYS, ARGV)
  if redis.call('HGET', KEYS[1], 'sf') ~= ARGV[1] then return 'slow' end
  local id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', '10000', '0-*', 'p', ARGV[2])
  redis.call('PUBLISH', ARGV[3], ARGV[2])
  return id
end)
redis.register_function('floor_lean', function(KEYS, ARGV)
  -- KEYS: core, the streams' prefix; ARGV: now fence type payload encoding
  -- correlation max_len channel id
` + floorFence + `  local key = KEYS[2] .. cur .. ':lean'
  local meta = key .. ':meta'
  local m = redis.call('HMGET', meta, 'last_seq', 'persistent', 'len')
  if m[2] ~= '1' or not m[3] then return 'slow' end
  local seq = tonumber(m[1]) + 1
  local limit = tonumber(ARGV[7])
  redis.call('XADD', key, 'MAXLEN', '=', ARGV[7], seq .. '-0', 't', ARGV[3], 'p', ARGV[4],
    'e', ARGV[5], 'c', ARGV[6], 'm', 'durable', 'ts', now, 'v', '0')
  local n = tonumber(m[3]) + 1
  if n > limit then n = limit end
  redis.call('HSET', meta, 'last_seq', seq, 'len', n)
` + floorNotice + `  return { 'seq', seq, 'frames', n, 'version', 0 }
end)
redis.register_function('floor_nometa', function(KEYS, ARGV)
` + floorFence + `  local key = KEYS[2] .. cur .. ':floor'
  local seq = string.sub(redis.call('XADD', key, 'MAXLEN', '=', ARGV[7], '0-*', 't', ARGV[3], 'p', ARGV[4],
    'e', ARGV[5], 'c', ARGV[6], 'm', 'durable', 'ts', now, 'v', '0'), 3)
  local n = redis.call('XLEN', key)
` + floorNotice + `  return { 'seq', tonumber(seq), 'frames', n, 'version', 0 }
end)
redis.register_function('floor_packed', function(KEYS, ARGV)
  -- KEYS: core, the streams' prefix; ARGV: now fence packed max_len channel id
  local sf = redis.call('HMGET', KEYS[1], 'sf', 'sp')[1]
` + floorFenceCheck + `  local key = KEYS[2] .. cur .. ':packed'
  local body = now .. '|durable|0|' .. ARGV[3]
  local seq = string.sub(redis.call('XADD', key, 'MAXLEN', '=', ARGV[4], '0-*', 'f', body), 3)
  local n = redis.call('XLEN', key)
  redis.call('PUBLISH', ARGV[5], ARGV[6] .. '|' .. cur .. '\n' .. seq .. '|' .. body)
  return { 'seq', tonumber(seq), 'frames', n, 'version', 0 }
end)
`

// floorFence is floor_lean's and floor_nometa's fence check: the caller's
// fence (ARGV[2], "<lease id>|<epoch>|<attempt id>") against the copy in
// X:core (stream_fence's "<attempt>|<expiry>|…"), leaving the attempt in
// cur and the time in now. floorFenceCheck is the check of the copy once
// read (sf), which floor_packed reads with a second field.
const floorFence = `  local sf = redis.call('HGET', KEYS[1], 'sf')
` + floorFenceCheck

const floorFenceCheck = `  if not sf then return 'slow' end
  local now = ARGV[1]
  local p = string.find(sf, '|', 1, true)
  local q = p and string.find(sf, '|', p + 1, true)
  if not q or string.sub(sf, q + 1) ~= ARGV[2] or tonumber(string.sub(sf, p + 1, q - 1)) <= tonumber(now) then
    return 'slow'
  end
  local cur = string.sub(sf, 1, p - 1)
`

// floorNotice publishes the frame's notice as stream_append does.
const floorNotice = `  redis.call('PUBLISH', ARGV[8], ARGV[9] .. '|' .. cur .. '\n' .. seq .. '|' .. now .. '|durable|0|' ..
    #ARGV[3] .. '|' .. #ARGV[5] .. '|' .. #ARGV[6] .. '|' .. ARGV[3] .. ARGV[5] .. ARGV[6] .. ARGV[4])
`

// BenchmarkAppendFloor puts the store's append after an idle gap (issue
// 13's tail target: append → tailing reader p50 ≤ 2 × a PING after the
// same gap) beside what any fenced, notified append must cost on the same
// server, to tell what a redesign of the append could still buy. Each
// call follows a 10–40 ms idle gap; the variants are shuffled together and
// each is reported as p50 over PING's p50 (metric "<variant>/ping"), and
// for a variant that publishes the frame's notice also the time until the
// stream's watch has it, the tail's own measure without the engine
// ("<variant>-notice/ping"):
//
//   - return: FCALL of a function that does nothing (what a function call
//     costs after the gap);
//   - bare: floor_bare (appendFloorLib), the least an append can run, with
//     its arguments built beforehand;
//   - lean: floor_lean, the earlier fast path's full work for a durable
//     frame, with its arguments built from the frame's parameters per call
//     as the store would (validation included);
//   - nometa: floor_nometa, the same without the stream's meta (the
//     store's fast path in its leanest form);
//   - packed: floor_packed, the same with the entry and the arguments in
//     the notice's layout, built per call after validation;
//   - packedpre: floor_packed with its arguments built beforehand (packed
//     less the Go that validates and builds them);
//   - store: Store.StreamAppend of the same frame.
//
// A reader holds the stream's notices (WatchStreamFrames), so each PUBLISH
// reaches a subscriber as in the tail; TestAppendFloorVariants checks that
// each variant but ping, return and bare publishes the frame the store's
// notices carry. The gaps make a run take about a minute at 300 samples
// per variant.
//
// Run: go test ./valkeystore/ -run xxx -bench AppendFloor -benchtime 300x
func BenchmarkAppendFloor(b *testing.B) {
	f := newAppendFloor(b)
	variants := f.variants
	var order []int
	for i := range variants {
		for range b.N {
			order = append(order, i)
		}
	}
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	lat := make([][]float64, len(variants))
	noticed := make([][]float64, len(variants))
	b.ResetTimer()
	for _, v := range order {
		for len(f.notices) > 0 {
			<-f.notices
		}
		// the idle gap is the condition measured (the server and the
		// client go cold), not a wait for another goroutine
		time.Sleep(10*time.Millisecond + time.Duration(rand.IntN(31))*time.Millisecond)
		t := time.Now()
		if err := variants[v].call(); err != nil {
			b.Fatalf("%s: %v", variants[v].name, err)
		}
		lat[v] = append(lat[v], float64(time.Since(t).Nanoseconds())/1e3)
		if variants[v].notice {
			n := <-f.notices
			noticed[v] = append(noticed[v], float64(n.at.Sub(t).Nanoseconds())/1e3)
		}
	}
	b.StopTimer()
	p50 := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	ping := p50(lat[0])
	b.ReportMetric(ping, "ping-p50-µs")
	for i, v := range variants[1:] {
		b.ReportMetric(p50(lat[i+1])/ping, v.name+"/ping")
		if v.notice {
			b.ReportMetric(p50(noticed[i+1])/ping, v.name+"-notice/ping")
		}
	}
}

// appendFloor is BenchmarkAppendFloor's setup: a store on a private server
// with appendFloorLib loaded, one execution claimed whose stream is open
// and persistent (a first frame appended) and watched, and the variants.
type appendFloor struct {
	s        *Store
	cl       *model.ClaimResult
	variants []floorVariant
	// notices has the stream's notices as the watch decodes them; a full
	// buffer drops them
	notices chan noticeSeen
}

// noticeSeen is a notice the watch passed on: its frame (nil: a notice
// without one) and when the watch had it.
type noticeSeen struct {
	fr *model.Frame
	at time.Time
}

type floorVariant struct {
	name string
	call func() error
	// notice: the call publishes the frame's notice as the store does
	notice bool
}

func newAppendFloor(tb testing.TB) *appendFloor {
	srv := redisserver.Start(tb, nil)
	c := newClient(tb, srv.Addr())
	s := newStoreWith(tb, c, &Options{ScriptCalls: ScriptCallsFunctions})
	if err := c.Do(bg, c.B().FunctionLoad().Replace().FunctionCode(appendFloorLib).Build()).Error(); err != nil {
		tb.Skipf("the server does not load functions: %v", err)
	}
	e := &costEnv{s: s, c: c, part: s.Partitions().SoloPartition(costLane), t: t0}
	e.createN(tb, 1, nil)
	cl := e.claimN(tb, 1, 24*time.Hour)[0]
	notices := make(chan noticeSeen, 16)
	tb.Cleanup(s.WatchStreamFrames(cl.ID, cl.AttemptIndex, func(fr *model.Frame) {
		select {
		case notices <- noticeSeen{fr, time.Now()}:
		default:
		}
	}))
	// the first frame opens the stream and makes it persistent
	if _, err := s.StreamAppend(bg, e.frameP(cl)); err != nil {
		tb.Fatal(err)
	}
	base := s.keys.execBase(cl.ID)
	channel := s.keys.streamChannel(cl.ID.Partition())
	// floor_lean's key of its own, persistent as the store's is
	leanMeta := base + ":stream:" + strconv.Itoa(cl.AttemptIndex) + ":lean:meta"
	if err := c.Do(bg, c.B().Hset().Key(leanMeta).FieldValue().FieldValue("last_seq", "0").
		FieldValue("persistent", "1").FieldValue("len", "0").Build()).Error(); err != nil {
		tb.Fatal(err)
	}
	sf, err := c.Do(bg, c.B().Hget().Key(base+":core").Field("sf").Build()).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	bare := c.B().Fcall().Function("floor_bare").Numkeys(2).Key(base+":core", base+":floor").
		Arg(sf, string(costFrame), channel).Build().Pin()
	fence := func(p *model.StreamAppendParams) string {
		return p.Fence.LeaseID.String() + "|" + strconv.FormatUint(p.Fence.LeaseEpoch, 10) + "|" + p.Fence.AttemptID.String()
	}
	// packed is floor_packed's call for p: the frame in the notice's layout
	packed := func(p *model.StreamAppendParams) valkey.Completed {
		frame := strconv.Itoa(len(p.Type)) + "|" + strconv.Itoa(len(p.Encoding)) + "|" + strconv.Itoa(len(p.CorrelationID)) + "|" +
			p.Type + p.Encoding + p.CorrelationID + string(p.Payload)
		return c.B().Fcall().Function("floor_packed").Numkeys(2).Key(base+":core", base+":stream:").
			Arg(timeArg(p.Now), fence(p), frame, numArg(p.EffectiveMaxLen()), channel, p.ID.String()).Build()
	}
	packedPre := packed(e.frameP(cl)).Pin()
	check := func(r valkey.ValkeyResult) error {
		if v, err := r.ToString(); err == nil && v == "slow" {
			return errors.New(`answered "slow"`)
		}
		return r.Error()
	}
	// lean calls fn with the arguments floor_lean takes, built from the
	// frame's parameters as the store builds its own
	lean := func(fn string) func() error {
		return func() error {
			p := e.frameP(cl)
			if err := p.Validate(s.cfg); err != nil {
				return err
			}
			return check(c.Do(bg, c.B().Fcall().Function(fn).Numkeys(2).Key(base+":core", base+":stream:").
				Arg(timeArg(p.Now), fence(p),
					p.Type, string(p.Payload), p.Encoding, p.CorrelationID, numArg(p.EffectiveMaxLen()), channel,
					p.ID.String()).Build()))
		}
	}
	return &appendFloor{s: s, cl: cl, notices: notices, variants: []floorVariant{
		{"ping", func() error { return c.Do(bg, c.B().Ping().Build()).Error() }, false},
		{"return", func() error { return c.Do(bg, c.B().Fcall().Function("floor_return").Numkeys(0).Build()).Error() }, false},
		{"bare", func() error { return check(c.Do(bg, bare)) }, false},
		{"lean", lean("floor_lean"), true},
		{"nometa", lean("floor_nometa"), true},
		{"packed", func() error {
			p := e.frameP(cl)
			if err := p.Validate(s.cfg); err != nil {
				return err
			}
			return check(c.Do(bg, packed(p)))
		}, true},
		{"packedpre", func() error { return check(c.Do(bg, packedPre)) }, true},
		{"store", func() error {
			_, err := s.StreamAppend(bg, e.frameP(cl))
			return err
		}, true},
	}}
}

// TestAppendFloorVariants keeps BenchmarkAppendFloor honest: every variant
// runs (none answers "slow" once the store's fence copy or keys change);
// each that stands for an append publishes a notice the store's watch
// decodes into the frame, numbered in its own key; and the store's frames
// read back in sequence.
func TestAppendFloorVariants(t *testing.T) {
	f := newAppendFloor(t)
	// the sequence each variant's frame gets: the store appends to the
	// stream (after the setup's frame 1), the others to keys of their own
	seqs := map[string]uint64{"lean": 1, "nometa": 1, "packed": 1, "packedpre": 2, "store": 2}
	notice := func(name string, seq uint64) {
		t.Helper()
		select {
		case n := <-f.notices:
			fr := n.fr
			if fr == nil {
				t.Fatalf("%s: a notice without a frame", name)
			}
			if fr.Time.IsZero() {
				t.Errorf("%s: the notice's frame has no time", name)
			}
			fr.Time = time.Time{}
			want := model.Frame{Sequence: seq, Type: "bench.frame", Payload: costFrame, Mode: model.StreamDurable}
			if diff := cmp.Diff(want, *fr); diff != "" {
				t.Errorf("%s: the notice's frame (-want +got):\n%s", name, diff)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notice within 10 s", name)
		}
	}
	notice("setup", 1)
	for _, v := range f.variants {
		if err := v.call(); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if v.notice {
			notice(v.name, seqs[v.name])
		}
	}
	if len(f.notices) != 0 {
		t.Errorf("%d notices more than the variants published", len(f.notices))
	}
	r, err := f.s.StreamRead(bg, &model.StreamReadParams{ID: f.cl.ID, Attempt: f.cl.AttemptIndex, Count: 10, Now: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// the setup's frame and the store's variant's
	if len(r.Frames) != 2 || r.LastSequence != 2 {
		t.Fatalf("frames %+v, last sequence %d; want 2 frames, last 2", r.Frames, r.LastSequence)
	}
	for i, fr := range r.Frames {
		want := model.Frame{Sequence: uint64(i + 1), Type: "bench.frame", Payload: costFrame, Mode: model.StreamDurable}
		fr.Time = time.Time{}
		if diff := cmp.Diff(want, fr); diff != "" {
			t.Errorf("frame %d (-want +got):\n%s", i+1, diff)
		}
	}
}
