package valkeystore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/flowfabric/flowfabric/model"
)

// evalMessage returns what the server replies to a Lua chunk, built like a
// script without keys or arguments (the library definitions it uses in
// front, names rewritten), so tests can use enc and friends.
func evalMessage(t *testing.T, c valkey.Client, body string) valkey.ValkeyMessage {
	t.Helper()
	s := &script{name: "test"}
	if err := s.build("test.lua", body); err != nil {
		t.Fatal(err)
	}
	m, err := c.Do(bg, c.B().Eval().Script(s.src).Numkeys(0).Build()).ToMessage()
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	return m
}

func TestReplyDecoder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { testReplyDecoder(t, b.client(t)) })
}

func testReplyDecoder(t *testing.T, c valkey.Client) {
	m := evalMessage(t, c, `return ok({
		s = 'text', n = 1700000000000, neg = -7299999999999999, big = '18446744073709551615',
		yes = true, no = false, empty = '', bin = '\0\1\255',
		obj = { a = '1', b = { x = 'y' } }, list = { 'p', 'q' }, none = {},
		rows = { '{fp:1}:00000001-0000-4000-8000-00000000005a', 'lane', '5' },
	})`)
	r := decodeReply("test", m)
	if got := r.str("s"); got != "text" {
		t.Errorf("str = %q", got)
	}
	if got := r.i64("n"); got != 1700000000000 {
		t.Errorf("i64 = %d", got)
	}
	if got := r.i64("neg"); got != -7299999999999999 {
		t.Errorf("negative i64 = %d (lost precision)", got)
	}
	if got := r.u64("big"); got != 1<<64-1 {
		t.Errorf("u64 = %d", got)
	}
	if !r.bool("yes") || r.bool("no") {
		t.Error("bool")
	}
	if r.bytes("empty") != nil {
		t.Error("empty bytes are not nil")
	}
	if got := r.bytes("bin"); string(got) != "\x00\x01\xff" {
		t.Errorf("binary = %q", got)
	}
	if got := r.time("n"); !got.Equal(time.UnixMilli(1700000000000)) || got.Location() != time.UTC {
		t.Errorf("time = %v", got)
	}
	if got := r.time("empty"); !got.IsZero() {
		// "" is not an integer: a corruption
		t.Errorf("time of empty = %v", got)
	}
	if !errors.Is(r.err(), model.ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt for the empty integer", r.err())
	}
	// the first problem sticks
	first := r.err()
	_ = r.str("missing")
	if r.err() != first { //nolint:errorlint // the very same value must stick
		t.Errorf("sticky error replaced: %v", r.err())
	}
	if r.str("s") != "" {
		t.Error("reads after an error must return zero values")
	}

	r = decodeReply("test", m)
	o := r.obj("obj")
	if o.str("a") != "1" || o.obj("b").str("x") != "y" {
		t.Error("nested objects")
	}
	if got := r.strs("list"); len(got) != 2 || got[0] != "p" {
		t.Errorf("strs = %v", got)
	}
	if got := r.strs("none"); got != nil {
		t.Errorf("empty list = %#v, want nil", got)
	}
	if got := r.strMap("none"); got == nil || len(got) != 0 {
		t.Errorf("empty map = %#v, want empty non-nil", got)
	}
	if got := r.rows("rows", 3); len(got) != 1 || got[0][1] != "lane" {
		t.Errorf("rows = %v", got)
	}
	if r.err() != nil {
		t.Fatal(r.err())
	}
	_ = o.str("nope") // a nested miss poisons the whole reply
	if err := r.err(); !errors.Is(err, model.ErrCorrupt) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("nested miss: %v", err)
	}

	for name, body := range map[string]string{
		"odd":       `return {'a'}`,
		"not array": `return 'x'`,
	} {
		r := decodeReply(name, evalMessage(t, c, body))
		if err := r.err(); !errors.Is(err, model.ErrCorrupt) || !strings.HasPrefix(err.Error(), "valkeystore: "+name+": ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestScriptErrorMapping(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { testScriptErrorMapping(t, b.client(t)) })
}

func testScriptErrorMapping(t *testing.T, c valkey.Client) {
	cases := []struct {
		body string
		want *model.Error
		same *model.Error // the sentinel expected by identity
	}{
		{body: `return fail('stale_lease')`, want: model.ErrStaleLease, same: model.ErrStaleLease},
		{body: `return fail('execution_not_found')`, want: model.ErrNotFound, same: model.ErrNotFound},
		{body: `return fail('capability_mismatch', 'a,b')`,
			want: &model.Error{Code: model.CodeCapabilityMismatch, Detail: "a,b"}},
		{body: `return fail('invalid_input', 'bad', 'lane')`,
			want: &model.Error{Code: model.CodeInvalidInput, Field: "lane", Detail: "bad"}},
		{body: `return fail('some_new_code')`, want: &model.Error{Code: "some_new_code"}},
		{body: `local e = blank_exec({})
			e.lifecycle_phase, e.terminal_outcome, e.epoch = 'terminal', 'success', 7
			e.cur_attempt_id = '00000001-0000-4000-8000-00000000005a'
			return not_active(e)`,
			want: &model.Error{Code: model.CodeExecutionNotActive, State: &model.NotActiveState{
				LifecyclePhase: model.PhaseTerminal, TerminalOutcome: model.OutcomeSuccess, LeaseEpoch: 7,
				AttemptID: model.AttemptID(model.MustParseExecutionID("{fp:0}:00000001-0000-4000-8000-00000000005a").UUID()),
			}}},
	}
	for _, tc := range cases {
		err := decodeReply("op", evalMessage(t, c, tc.body)).scriptError()
		if errDiff(tc.want, err) != "" {
			t.Errorf("%s: %s", tc.body, errDiff(tc.want, err))
		}
		if tc.same != nil && err != error(tc.same) { //nolint:errorlint // identity, as memstore returns it
			t.Errorf("%s: got a copy, want the sentinel", tc.body)
		}
	}
	if err := decodeReply("op", evalMessage(t, c, `return ok({ x = '1' })`)).scriptError(); err != nil {
		t.Errorf("success reply mapped to %v", err)
	}
	if err := decodeReply("op", evalMessage(t, c, `return enc({ err = '', detail = '', field = '' })`)).scriptError(); !errors.Is(err, model.ErrCorrupt) {
		t.Errorf("empty code: %v", err)
	}
	if err := decodeReply("op", evalMessage(t, c, `return enc({ err = 'execution_not_active', detail = '', field = '', state = { lifecycle_phase = 'bogus' } })`)).scriptError(); !errors.Is(err, model.ErrCorrupt) {
		t.Errorf("bad state: %v", err)
	}
}

func TestTransportErrors(t *testing.T) {
	s := newStore(t, backends[0], nil)
	// a script that fails at run time: the server's error, wrapped once
	boom := &script{name: "boom", keys: []string{"k"}, lua: valkey.NewLuaScript("error('boom')")}
	_, err := s.run(bg, boom, map[string]string{"k": "x"}, args{})
	var verr *valkey.ValkeyError
	if !errors.As(err, &verr) || !strings.HasPrefix(err.Error(), "valkeystore: boom: ") {
		t.Errorf("runtime error = %v", err)
	}
	// a closed client
	c := miniredisClient(t)
	s2, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = s2.ExecutionDescribe(bg, &model.ExecutionDescribeParams{ID: model.NewExecutionID(1, model.NewUUIDv4([16]byte{1}))})
	if !errors.Is(err, valkey.ErrClosing) || !strings.HasPrefix(err.Error(), "valkeystore: execution_describe: ") {
		t.Errorf("closed client = %v", err)
	}
	// validation errors are the model's, sent before anything is sent
	_, err = s2.ExecutionDescribe(bg, &model.ExecutionDescribeParams{})
	if !errors.Is(err, model.ErrValidation) {
		t.Errorf("validation = %v", err)
	}
	// a cancelled context sends nothing
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := s.ExecutionDescribe(ctx, &model.ExecutionDescribeParams{ID: model.NewExecutionID(1, model.NewUUIDv4([16]byte{1}))}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled = %v", err)
	}
}

func TestNewOptions(t *testing.T) {
	c := miniredisClient(t)
	for _, o := range []*Options{
		{Prefix: "a{b"}, {Prefix: "a b"}, {GCSlack: -time.Second},
		{Partitions: model.PartitionConfig{FlowPartitions: model.MaxPartitions + 1}},
	} {
		if _, err := New(c, o); !errors.Is(err, model.ErrValidation) {
			t.Errorf("New(%+v) = %v, want a validation error", o, err)
		}
	}
	if _, err := New(nil, nil); err == nil {
		t.Error("New(nil client) succeeded")
	}
	s, err := New(c, nil)
	if err != nil || s.keys.prefix != DefaultPrefix || s.Partitions().FlowPartitions != model.DefaultFlowPartitions {
		t.Fatalf("defaults: %v %+v", err, s)
	}
}

func TestArgsMustMatchDeclaration(t *testing.T) {
	s := newStore(t, backends[0], nil)
	for name, f := range map[string]func(){
		"missing key": func() { _, _ = s.run(bg, scriptExecutionList, map[string]string{}, args{"after": "", "limit": 1}) },
		"extra arg": func() {
			_, _ = s.run(bg, scriptExecutionList, s.keys.partKeys(0), args{"after": "", "limit": 1, "x": 1})
		},
		"missing arg": func() { _, _ = s.run(bg, scriptExecutionList, s.keys.partKeys(0), args{"after": "", "lim": 1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
