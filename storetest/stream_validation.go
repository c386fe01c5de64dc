package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowfabric/flowfabric/model"
)

// testStreamValidation states, for every stream method, that each bad
// input is refused with a validation error naming it, and that nothing
// was written: the validation fixture's executions, and the streams of
// its running execution (which holds a durable, a summary and a
// best-effort frame, so that an append that slipped through would show)
// and of its expired one. A store without model.StreamStore skips.
func testStreamValidation(t *testing.T, newStore NewStoreFunc) {
	for _, g := range []struct {
		name  string
		cases func(f *streamFixture) []badInput
	}{
		{"StreamAppend", (*streamFixture).appendCases},
		{"StreamRead", (*streamFixture).readCases},
		{"StreamSummary", (*streamFixture).summaryCases},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, newStore)
			st, ok := streamStoreOf(h)
			if !ok {
				t.Skipf("storetest: %T does not implement the optional model.StreamStore", h.s)
			}
			f := &streamFixture{fixture: newFixture(h), st: st}
			f.withFrames()
			before := f.view(h)
			for _, c := range g.cases(f) {
				t.Run(c.name, func(t *testing.T) {
					err := c.call()
					if !errors.Is(err, model.ErrValidation) {
						t.Fatalf("err = %v, want a validation error", err)
					}
					e := modelErr(t, err, c.code)
					if e.Field != c.field {
						t.Fatalf("field %q, want %q (%v)", e.Field, c.field, err)
					}
					if e.Detail == "out_of_range" && (e.Got == "" || e.Want == "") {
						t.Fatalf("%v: an out-of-range error must say the rejected value and the accepted range", err)
					}
					if d := cmp.Diff(before, f.view(f.on(t)), cmpOpts...); d != "" {
						t.Fatalf("store changed (-before +after):\n%s", d)
					}
				})
			}
		})
	}
}

// streamFixture is the validation fixture with frames on its running
// execution's stream.
type streamFixture struct {
	*fixture
	st model.StreamStore
}

// withFrames appends a durable, a summary (version 1) and a best-effort
// frame to f.active's stream.
func (f *streamFixture) withFrames() {
	f.t.Helper()
	h := &streamHarness{harness: f.harness, st: f.st}
	h.appended(durable(f.active, f.fence, "d", f.now), 1, 1)
	h.appended(summaryFrame(f.active, f.fence, 0, `{"v":1}`, `{"v":1}`, f.now), 2, 2)
	h.appended(bestEffort(f.active, f.fence, "b", f.now), 3, 3)
}

// streamValidationView is what a stream validation case must leave as
// it was.
type streamValidationView struct {
	Base    validationView
	Active  streamView
	Expired streamView
}

func (f *streamFixture) view(h *harness) streamValidationView {
	h.t.Helper()
	sh := &streamHarness{harness: h, st: f.st}
	return streamValidationView{
		Base:    f.validationView(h),
		Active:  sh.streamView(f.active, f.now),
		Expired: sh.streamView(f.expired, f.now),
	}
}

func (f *streamFixture) appendCases() []badInput {
	type P = model.StreamAppendParams
	mk := maker(f.ctx, func() *P {
		return &P{ID: f.active, Fence: f.fence, Mode: model.StreamDurable, Type: "token", Payload: []byte("p"), Now: f.now}
	}, f.st.StreamAppend)
	summary := func(p *P) {
		p.Mode = model.StreamSummary
		p.Summary = &model.SummaryUpdate{BaseVersion: 1, Document: []byte(`{"v":2}`)}
	}
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, fenceCases(mk, f.fence, func(p *P, fc model.Fence) { p.Fence = fc }, nil)...)
	cs = append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
	for _, m := range []model.StreamMode{"", "Durable", "bogus", "best-effort"} {
		cs = append(cs, mk("mode_"+string(m), "Mode", model.ErrInvalidInput, func(p *P) { p.Mode = m }))
	}
	cs = append(cs, nameCases(mk, "Type", 64, func(p *P, s string) { p.Type = s })...)
	cs = append(cs,
		mk("type_control", "Type", model.ErrInvalidInput, func(p *P) { p.Type = "tok\x00en" }),
		mk("payload_too_large", "Payload", model.ErrInvalidInput, func(p *P) { p.Payload = make([]byte, model.MaxFramePayloadBytes+1) }),
		mk("payload_too_large_best_effort", "Payload", model.ErrInvalidInput, func(p *P) {
			p.Mode, p.Payload = model.StreamBestEffort, make([]byte, model.MaxFramePayloadBytes+1)
		}),
		mk("encoding_too_long", "Encoding", model.ErrInvalidInput, func(p *P) { p.Encoding = strings.Repeat("e", model.FrameEncodingMaxBytes+1) }),
		mk("correlation_too_long", "CorrelationID", model.ErrInvalidInput, func(p *P) {
			p.CorrelationID = strings.Repeat("c", model.FrameCorrelationMaxBytes+1)
		}),
		mk("max_len_negative", "MaxLen", model.ErrInvalidInput, func(p *P) { p.MaxLen = -1 }),
		mk("max_len_too_large", "MaxLen", model.ErrInvalidInput, func(p *P) { p.MaxLen = model.MaxStreamMaxLen + 1 }),
		mk("max_len_best_effort", "MaxLen", model.ErrInvalidInput, func(p *P) { p.Mode, p.MaxLen = model.StreamBestEffort, 5 }),
		mk("max_len_summary", "MaxLen", model.ErrInvalidInput, func(p *P) { summary(p); p.MaxLen = 5 }),
		mk("ttl_durable", "TTL", model.ErrInvalidInput, func(p *P) { p.TTL = time.Second }),
		mk("ttl_summary", "TTL", model.ErrInvalidInput, func(p *P) { summary(p); p.TTL = time.Second }),
		mk("ttl_negative", "TTL", model.ErrInvalidInput, func(p *P) { p.Mode, p.TTL = model.StreamBestEffort, -time.Second }),
		mk("ttl_below_1s", "TTL", model.ErrInvalidInput, func(p *P) { p.Mode, p.TTL = model.StreamBestEffort, time.Second-time.Millisecond }),
		mk("ttl_above_1h", "TTL", model.ErrInvalidInput, func(p *P) { p.Mode, p.TTL = model.StreamBestEffort, time.Hour+time.Millisecond }),
		mk("ttl_sub_millisecond", "TTL", model.ErrInvalidInput, func(p *P) { p.Mode, p.TTL = model.StreamBestEffort, time.Second+time.Microsecond }),
		mk("summary_missing", "Summary", model.ErrInvalidInput, func(p *P) { summary(p); p.Summary = nil }),
		mk("summary_on_durable", "Summary", model.ErrInvalidInput, func(p *P) { summary(p); p.Mode = model.StreamDurable }),
		mk("summary_on_best_effort", "Summary", model.ErrInvalidInput, func(p *P) { summary(p); p.Mode = model.StreamBestEffort }),
		mk("summary_document_empty", "Summary.Document", model.ErrInvalidInput, func(p *P) { summary(p); p.Summary.Document = nil }),
		mk("summary_document_too_large", "Summary.Document", model.ErrInvalidInput, func(p *P) {
			summary(p)
			p.Summary.Document = []byte(`"` + strings.Repeat("s", model.MaxSummaryBytes-1) + `"`)
		}),
	)
	return cs
}

func (f *streamFixture) readCases() []badInput {
	type P = model.StreamReadParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Attempt: 0, Count: 10, Now: f.now} }, f.st.StreamRead)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
	return append(cs,
		mk("attempt_negative", "Attempt", model.ErrInvalidInput, func(p *P) { p.Attempt = -1 }),
		mk("count_zero", "Count", model.ErrInvalidInput, func(p *P) { p.Count = 0 }),
		mk("count_negative", "Count", model.ErrInvalidInput, func(p *P) { p.Count = -1 }),
		mk("count_too_large", "Count", model.ErrInvalidInput, func(p *P) { p.Count = model.MaxStreamRead + 1 }),
		mk("count_too_large_exclude_best_effort", "Count", model.ErrInvalidInput, func(p *P) {
			p.Count, p.ExcludeBestEffort = model.MaxStreamRead+1, true
		}),
	)
}

func (f *streamFixture) summaryCases() []badInput {
	type P = model.StreamSummaryParams
	mk := maker(f.ctx, func() *P { return &P{ID: f.active, Attempt: 0, Now: f.now} }, f.st.StreamSummary)
	cs := idCases(mk, f.out, func(p *P, id model.ExecutionID) { p.ID = id })
	cs = append(cs, nowCases(mk, func(p *P, t time.Time) { p.Now = t })...)
	return append(cs, mk("attempt_negative", "Attempt", model.ErrInvalidInput, func(p *P) { p.Attempt = -1 }))
}
