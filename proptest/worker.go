package proptest

import (
	"errors"
	"strings"

	"pgregory.net/rapid"

	"github.com/flowfabric/flowfabric/model"
)

func (m *machine) actWorkerRegister(t *rapid.T) {
	ns, w, session := m.drawRegistration(t)
	if chance(t, 20, "other_session") {
		session = drawFrom(t, sessions, "session")
	}
	p := &model.WorkerRegisterParams{
		Namespace: ns, WorkerID: w.id, WorkerInstanceID: w.instance,
		SessionID:    session,
		Lanes:        []model.LaneID{drawFrom(t, lanes, "lane"), drawFrom(t, lanes, "lane2")},
		Capabilities: drawCaps(t, "caps", 70),
		TTL:          ms(rapid.Int64Range(1, 300_000).Draw(t, "ttl_ms")),
		Now:          m.now(),
	}
	bad := invalid(t, 4)
	switch bad {
	case 0:
		p.Lanes = nil
	case 1:
		p.SessionID = ""
	case 2:
		p.TTL = 0
	case 3:
		p.Lanes = []model.LaneID{"bad lane"}
	}
	res, err := call(m, t, "WorkerRegister", p, model.Store.WorkerRegister)
	if bad >= 0 {
		m.expectValidation(t, "WorkerRegister", err)
		return
	}
	now := m.now()
	old := m.workers[ns][w.instance]
	alive := old != nil && old.expiresAt.After(now)
	if alive && old.session != p.SessionID {
		m.expect(t, errors.Is(err, model.ErrDuplicateWorker), "WorkerRegister over a live session: %v", err)
		return
	}
	m.expect(t, err == nil, "WorkerRegister failed: %v", err)
	want := model.WorkerRegistered
	if alive {
		want = model.WorkerRefreshed
	}
	m.expect(t, res.Outcome == want && res.ExpiresAt.Equal(now.Add(p.TTL)), "WorkerRegister: %+v, want %s", res, want)
	m.workers[ns][w.instance] = &refWorker{workerID: w.id, session: p.SessionID, expiresAt: res.ExpiresAt}
}

// drawRegistration draws a namespace, pool worker and session: often those
// of a registration the model knows.
func (m *machine) drawRegistration(t *rapid.T) (model.Namespace, poolWorker, string) {
	if !chance(t, 30, "unregistered") {
		type reg struct {
			ns      model.Namespace
			w       poolWorker
			session string
		}
		var regs []reg
		for _, ns := range namespaces {
			for _, w := range workerPool {
				if r := m.workers[ns][w.instance]; r != nil && r.expiresAt.After(m.now()) {
					regs = append(regs, reg{ns, w, r.session})
				}
			}
		}
		if len(regs) > 0 {
			r := drawFrom(t, regs, "registration")
			return r.ns, r.w, r.session
		}
	}
	return drawFrom(t, namespaces, "namespace"), drawFrom(t, workerPool, "worker"), drawFrom(t, sessions, "session")
}

func (m *machine) actWorkerHeartbeat(t *rapid.T) {
	ns, w, session := m.drawRegistration(t)
	p := &model.WorkerHeartbeatParams{
		Namespace: ns, WorkerInstanceID: w.instance, SessionID: session,
		TTL: ms(rapid.Int64Range(1, 300_000).Draw(t, "ttl_ms")), Now: m.now(),
	}
	bad := invalid(t, 2)
	switch bad {
	case 0:
		p.Namespace = ""
	case 1:
		p.SessionID = strings.Repeat("s", 129)
	}
	res, err := call(m, t, "WorkerHeartbeat", p, model.Store.WorkerHeartbeat)
	if bad >= 0 {
		m.expectValidation(t, "WorkerHeartbeat", err)
		return
	}
	now := m.now()
	old := m.workers[ns][w.instance]
	switch {
	case old == nil || !old.expiresAt.After(now):
		m.expect(t, errors.Is(err, model.ErrWorkerNotRegistered), "WorkerHeartbeat of an unregistered worker: %v", err)
	case old.session != p.SessionID:
		m.expect(t, errors.Is(err, model.ErrDuplicateWorker), "WorkerHeartbeat from another session: %v", err)
	default:
		m.expect(t, err == nil && res.ExpiresAt.Equal(now.Add(p.TTL)), "WorkerHeartbeat: %+v %v", res, err)
		old.expiresAt = res.ExpiresAt
	}
}

func (m *machine) actWorkerDeregister(t *rapid.T) {
	ns, w, session := m.drawRegistration(t)
	p := &model.WorkerDeregisterParams{Namespace: ns, WorkerInstanceID: w.instance, SessionID: session, Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.WorkerInstanceID = ""
	}
	res, err := call(m, t, "WorkerDeregister", p, model.Store.WorkerDeregister)
	if bad >= 0 {
		m.expectValidation(t, "WorkerDeregister", err)
		return
	}
	m.expect(t, err == nil, "WorkerDeregister failed: %v", err)
	old := m.workers[ns][w.instance]
	switch {
	case old == nil || old.session != p.SessionID:
		m.expect(t, !res.Removed, "WorkerDeregister removed a registration it does not own")
	case old.expiresAt.After(m.now()):
		m.expect(t, res.Removed, "WorkerDeregister of its own live registration removed nothing")
	}
	if res.Removed {
		delete(m.workers[ns], w.instance)
	}
}

func (m *machine) actWorkerExpire(t *rapid.T) {
	ns := drawFrom(t, namespaces, "namespace")
	p := &model.WorkerExpireParams{Namespace: ns, Limit: rapid.IntRange(1, 3).Draw(t, "limit"), Now: m.now()}
	bad := invalid(t, 1)
	if bad == 0 {
		p.Limit = -1
	}
	res, err := call(m, t, "WorkerExpire", p, model.Store.WorkerExpire)
	if bad >= 0 {
		m.expectValidation(t, "WorkerExpire", err)
		return
	}
	m.expect(t, err == nil && len(res.Removed) <= p.Limit, "WorkerExpire: %+v %v", res, err)
	now := m.now()
	for _, inst := range res.Removed {
		w := m.workers[ns][inst]
		m.expect(t, w != nil && !w.expiresAt.After(now), "WorkerExpire removed %s, which is live or unknown", inst)
		delete(m.workers[ns], inst)
	}
	if len(res.Removed) < p.Limit {
		for inst, w := range m.workers[ns] {
			m.expect(t, w.expiresAt.After(now), "WorkerExpire left the expired %s", inst)
		}
	}
}
