package proptest

import (
	"errors"
	"time"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

var (
	kinds      = []model.Kind{"email.send", "report"}
	priorities = []int{0, 1, 5, 100, model.MaxPriority, -5, 99_999}
	smallInts  = []int{0, 1, 1, 2}
	idemKeys   = []string{"", "", "k1", "k2"}
	idemTTLs   = []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second}
	tagSets    = []map[string]string{nil, {"app.k": "v"}, {"app.k": "v", "ops.team": "x"}}
	metaSets   = []map[string]string{nil, {}, {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"app.k": "m", "x-empty": ""}}
	payloads   = [][]byte{nil, []byte("payload")}
	// idemStateSets are IdempotencyStates a keyed create may carry: none
	// (the key blocks whatever the state), the live states (a unique job
	// "not while one waits or runs"), and a few odd ones.
	idemStateSets = []model.PublicStateSet{0, 0,
		model.PublicStates(model.PublicWaiting, model.PublicDelayed, model.PublicActive),
		model.PublicStates(model.PublicWaiting), model.PublicStates(model.PublicCompleted, model.PublicFailed)}
)

func drawRetryPolicy(t *rapid.T) model.RetryPolicy {
	if !chance(t, 60, "retry_policy") {
		return model.RetryPolicy{}
	}
	p := model.RetryPolicy{MaxRetries: rapid.IntRange(0, 3).Draw(t, "max_retries")}
	if genBool.Draw(t, "fixed") {
		p.Backoff = model.BackoffFixed
		p.Delay = drawFrom(t, []time.Duration{0, time.Millisecond, 250 * time.Millisecond, 2 * time.Second}, "delay")
		return p
	}
	p.InitialDelay = drawFrom(t, []time.Duration{0, time.Millisecond, 100 * time.Millisecond, 2 * time.Second}, "initial_delay")
	p.Multiplier = drawFrom(t, []float64{0, 1, 1.5, 3}, "multiplier")
	init := p.InitialDelay
	if init == 0 {
		init = model.DefaultInitialDelay
	}
	p.MaxDelay = drawFrom(t, []time.Duration{0, init, init + 5*time.Second}, "max_delay")
	return p
}

// drawOffset draws an optional time around now (zero: none).
func (m *machine) drawOffset(t *rapid.T, label string, pct int, lo, hi int64) time.Time {
	if !chance(t, pct, label+"_set") {
		return time.Time{}
	}
	return m.now().Add(ms(rapid.Int64Range(lo, hi).Draw(t, label+"_ms")))
}

func (m *machine) actCreate(t *rapid.T) {
	now := m.now()
	lane := drawFrom(t, lanes, "lane")
	p := &model.ExecutionCreateParams{
		Namespace:            drawFrom(t, namespaces, "namespace"),
		Lane:                 lane,
		Kind:                 drawFrom(t, kinds, "kind"),
		Priority:             drawFrom(t, priorities, "priority"),
		RequiredCapabilities: drawCaps(t, "required", 35),
		RetryPolicy:          drawRetryPolicy(t),
		MaxReclaims:          drawFrom(t, smallInts, "max_reclaims"),
		MaxReplays:           drawFrom(t, smallInts, "max_replays"),
		Deadline:             m.drawOffset(t, "deadline", 20, -5_000, 120_000),
		DelayUntil:           m.drawOffset(t, "delay_until", 25, -5_000, 30_000),
		IdempotencyKey:       drawFrom(t, idemKeys, "idempotency_key"),
		IdempotencyTTL:       drawFrom(t, idemTTLs, "idempotency_ttl"),
		Tags:                 drawFrom(t, tagSets, "tags"),
		Metadata:             drawFrom(t, metaSets, "metadata"),
		Payload:              drawFrom(t, payloads, "payload"),
		Retention:            drawRetention(t),
		Now:                  now,
	}
	if p.IdempotencyKey != "" {
		p.IdempotencyStates = drawFrom(t, idemStateSets, "idempotency_states")
	}
	if chance(t, 40, "attempt_timeout_set") {
		p.AttemptTimeout = ms(rapid.Int64Range(1, 8_000).Draw(t, "attempt_timeout_ms"))
	}
	if chance(t, 35, "admission") {
		p.Budgets, p.Quota, p.QuotaKey = drawAttachments(t)
	}
	if len(m.execs)-m.awaitMade >= m.opts.MaxExecutions || (len(m.execs) > 0 && chance(t, 5, "reuse_id")) {
		p.ID = drawFrom(t, m.execs, "reuse").id
	} else {
		p.ID = m.newExecID(t, lane)
	}
	var into *FlowObservation // the flow the execution is created into
	if len(m.flows) > 0 && chance(t, 15, "into_flow") {
		f := drawFrom(t, m.flows, "into_flow_id").id
		p.Flow, p.ID = f, model.NewExecutionID(m.cfg.FlowPartition(f), p.ID.UUID())
		into = m.flowObs(f)
	}
	bad := invalid(t, 16)
	switch bad {
	case 0:
		p.Lane = "bad lane"
	case 1:
		p.Kind = ""
	case 2:
		p.Namespace = "UPPER"
	case 3:
		p.RetryPolicy.MaxRetries = model.MaxRetries + 1
	case 4:
		p.RequiredCapabilities = model.Capabilities{"a b"}
	case 5:
		p.Tags = map[string]string{"NoDot": "x"}
	case 6:
		p.AttemptTimeout = -time.Millisecond
	case 7:
		p.IdempotencyKey, p.IdempotencyTTL = "k1", 500*time.Millisecond
	case 8:
		p.ID = model.NewExecutionID(m.cfg.FlowPartitions, p.ID.UUID())
	case 9:
		p.MaxReclaims = -1
	case 10:
		p.Now = time.Time{}
	case 11:
		p.IdempotencyKey = "bad\x00key"
	case 12:
		p.Quota, p.QuotaKey = model.QuotaID{}, "k1"
	case 13:
		p.Budgets = []model.BudgetID{budgetIDs[0], budgetIDs[0]}
	case 14:
		p.IdempotencyKey, p.IdempotencyStates = "", model.PublicStates(model.PublicWaiting)
	case 15:
		p.Metadata = map[string]string{"bad key": "x"}
	}
	res, err := call(m, t, "ExecutionCreate", p, model.Store.ExecutionCreate)
	if bad >= 0 {
		m.expectValidation(t, "ExecutionCreate", err)
		return
	}
	// Predict: a live idempotency key wins (with states, while its
	// execution is in one of them), then an existing id; then a flow that
	// takes no member; else new.
	ik := idemRef{p.ID.Partition(), p.Namespace, p.IdempotencyKey}
	wantID, dup := p.ID, false
	if v, ok := m.idem[ik]; ok && p.IdempotencyKey != "" && v.expiresAt.After(now) && m.idemBlocks(v.id, p.IdempotencyStates) {
		wantID, dup = v.id, true
	} else if m.byID[p.ID] != nil {
		dup = true
	}
	if !p.Flow.IsZero() && !dup {
		switch {
		case into == nil:
			m.expect(t, errors.Is(err, model.ErrFlowNotFound), "ExecutionCreate into an unknown flow: %v", err)
			return
		case into.Snapshot.State == model.FlowCancelled:
			m.expect(t, errors.Is(err, model.ErrFlowTerminal), "ExecutionCreate into a %v flow: %v", into.Snapshot.State, err)
			return
		case into.Snapshot.Sealed:
			m.expect(t, errors.Is(err, model.ErrFlowSealed), "ExecutionCreate into a sealed flow: %v", err)
			return
		}
	}
	m.expect(t, err == nil, "ExecutionCreate with valid input failed: %v", err)
	m.expect(t, res.ID == wantID && res.Duplicate == dup, "ExecutionCreate: got id %v duplicate %v, want %v %v", res.ID, res.Duplicate, wantID, dup)
	if dup {
		if s := m.snap(wantID); s != nil {
			m.expect(t, res.PublicState == s.PublicState, "duplicate create reports %v, execution is %v", res.PublicState, s.PublicState)
		}
		return
	}
	want := model.PublicWaiting
	if !p.Flow.IsZero() {
		want = model.PublicWaitingChildren // a member is born held
	} else if p.DelayUntil.After(now) {
		want = model.PublicDelayed
	}
	m.expect(t, res.PublicState == want, "ExecutionCreate: public state %v, want %v", res.PublicState, want)
	r := &refExec{id: p.ID, lane: p.Lane}
	m.execs = append(m.execs, r)
	m.byID[p.ID] = r
	if p.IdempotencyKey != "" {
		ttl := p.IdempotencyTTL
		if ttl == 0 {
			ttl = model.DefaultIdempotencyTTL
		}
		m.idem[ik] = idemVal{p.ID, now.Add(ttl)}
	}
}

// idemBlocks predicts whether the execution a live key names blocks a
// create with states: always without states; with states, while it is
// in one of them (its observed state: nothing changes a public state but
// a store operation).
func (m *machine) idemBlocks(id model.ExecutionID, states model.PublicStateSet) bool {
	if states == 0 {
		return true
	}
	s := m.snap(id)
	return s != nil && states.Has(s.PublicState)
}
