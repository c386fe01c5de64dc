package memstore

import (
	"maps"

	"github.com/flowfabric/flowfabric/model"
)

// Creating an execution (valkeystore/lua/lib/create.lua).

// newExec stores a new execution described by p, in its partition's
// indexes but in no lane index yet: the caller makes it runnable or holds
// it.
func (s *Store) newExec(p *model.ExecutionCreateParams, now int64) *execution {
	caps, _ := model.NormalizeCapabilities("required_capabilities", p.RequiredCapabilities)
	e := &execution{
		id: p.ID, namespace: p.Namespace, lane: p.Lane, kind: p.Kind,
		priority:       model.ClampPriority(p.Priority),
		createdAt:      now,
		requiredCaps:   caps,
		retry:          p.RetryPolicy,
		maxReclaims:    p.MaxReclaims,
		maxReplays:     p.MaxReplays,
		attemptTimeout: p.AttemptTimeout.Milliseconds(),
		deadline:       ms(p.Deadline),
		curAttempt:     -1,
		payload:        nonEmpty(p.Payload),
	}
	if e.maxReclaims == 0 {
		e.maxReclaims = model.DefaultMaxReclaims
	}
	if e.maxReplays == 0 {
		e.maxReplays = model.DefaultMaxReplays
	}
	if len(p.Tags) > 0 {
		e.tags = maps.Clone(p.Tags)
	}
	if len(p.Metadata) > 0 {
		e.meta = maps.Clone(p.Metadata)
	}
	e.retention = s.internRetention(p.Retention)
	e.idemKey = p.IdempotencyKey
	if len(p.Budgets) > 0 || !model.UUID(p.Quota).IsZero() {
		e.admit = true
		e.budgets = cloneBudgets(p.Budgets)
		e.quota, e.quotaKey = p.Quota, p.QuotaKey
	}
	s.execs[p.ID] = e
	s.execPeak = max(s.execPeak, len(s.execs))
	pt := s.part(p.ID.Partition())
	pt.lane(p.Lane)
	pt.all.add(p.ID)
	if e.deadline != 0 {
		pt.deadline.add(p.ID, e.deadline)
	}
	return e
}
