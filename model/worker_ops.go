package model

import (
	"context"
	"time"
	"unicode/utf8"
)

// WorkerStore holds the worker registry.
type WorkerStore interface {
	WorkerDeregister(ctx context.Context, p *WorkerDeregisterParams) (*WorkerDeregisterResult, error)
	WorkerExpire(ctx context.Context, p *WorkerExpireParams) (*WorkerExpireResult, error)
	WorkerHeartbeat(ctx context.Context, p *WorkerHeartbeatParams) (*WorkerHeartbeatResult, error)
	WorkerList(ctx context.Context, p *WorkerListParams) (*WorkerListResult, error)
	WorkerRegister(ctx context.Context, p *WorkerRegisterParams) (*WorkerRegisterResult, error)
}

// WorkerRegisterParams registers (or refreshes) a worker instance. A live
// registration of the same instance with another SessionID is a duplicate
// process and is refused with ErrDuplicateWorker.
type WorkerRegisterParams struct {
	Namespace        Namespace
	WorkerID         WorkerID
	WorkerInstanceID WorkerInstanceID
	// SessionID is unique per process start.
	SessionID    string
	Lanes        []LaneID
	Capabilities Capabilities
	TTL          time.Duration
	Now          time.Time
}

// Validate checks every field.
func (p *WorkerRegisterParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.WorkerID.Validate(); err != nil {
		return err
	}
	if err := p.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if err := checkSession(p.SessionID); err != nil {
		return err
	}
	if len(p.Lanes) == 0 {
		return invalidField("Lanes", "empty")
	}
	if len(p.Lanes) > 256 {
		return invalidField("Lanes", "too_many")
	}
	for _, l := range p.Lanes {
		if err := validName("Lanes", string(l), 64, false); err != nil {
			return err
		}
	}
	if _, err := NormalizeCapabilities("Capabilities", p.Capabilities); err != nil {
		return err
	}
	if err := checkDuration("TTL", p.TTL, time.Millisecond, MaxLeaseTTL); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// WorkerRegisterOutcome is what WorkerRegister did; its String is the wire
// name.
type WorkerRegisterOutcome uint8

// Worker registration outcomes.
const (
	WorkerRegistered WorkerRegisterOutcome = iota + 1 // "registered": a new registration (none was live)
	WorkerRefreshed                                   // "refreshed": the live registration of the same session was updated
)

var workerRegisterOutcomeNames = enumNames{"registered", "refreshed"}

func (v WorkerRegisterOutcome) String() string { return workerRegisterOutcomeNames.name(uint8(v)) }

// ParseWorkerRegisterOutcome parses a wire name.
func ParseWorkerRegisterOutcome(s string) (WorkerRegisterOutcome, bool) {
	v, ok := workerRegisterOutcomeNames.parse(s)
	return WorkerRegisterOutcome(v), ok
}

// WorkerRegisterResult reports a registration.
type WorkerRegisterResult struct {
	// Outcome is WorkerRegistered or WorkerRefreshed.
	Outcome   WorkerRegisterOutcome
	ExpiresAt time.Time
}

// WorkerHeartbeatParams keeps a registration alive.
type WorkerHeartbeatParams struct {
	Namespace        Namespace
	WorkerInstanceID WorkerInstanceID
	SessionID        string
	TTL              time.Duration
	Now              time.Time
}

// Validate checks every field.
func (p *WorkerHeartbeatParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if err := checkSession(p.SessionID); err != nil {
		return err
	}
	if err := checkDuration("TTL", p.TTL, time.Millisecond, MaxLeaseTTL); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// WorkerHeartbeatResult reports a heartbeat.
type WorkerHeartbeatResult struct {
	ExpiresAt time.Time
}

// WorkerDeregisterParams removes a registration on graceful shutdown.
type WorkerDeregisterParams struct {
	Namespace        Namespace
	WorkerInstanceID WorkerInstanceID
	SessionID        string
	Now              time.Time
}

// Validate checks every field.
func (p *WorkerDeregisterParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := p.WorkerInstanceID.Validate(); err != nil {
		return err
	}
	if err := checkSession(p.SessionID); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// WorkerDeregisterResult reports a removal.
type WorkerDeregisterResult struct {
	Removed bool
}

// WorkerExpireParams drops registrations that expired before Now.
type WorkerExpireParams struct {
	Namespace Namespace
	Limit     int
	Now       time.Time
}

// Validate checks every field.
func (p *WorkerExpireParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	if err := checkLimit("Limit", p.Limit); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// WorkerExpireResult lists the dropped instances.
type WorkerExpireResult struct {
	Removed []WorkerInstanceID
}

// WorkerListParams lists the live registrations of a namespace.
type WorkerListParams struct {
	Namespace Namespace
	Now       time.Time
}

// Validate checks every field.
func (p *WorkerListParams) Validate() error {
	if err := p.Namespace.Validate(); err != nil {
		return err
	}
	return checkNow(p.Now)
}

// WorkerListResult lists workers in instance-id order.
type WorkerListResult struct {
	Workers []WorkerInfo
}

// LiveCapabilities returns the union of the listed workers' capabilities.
func (r *WorkerListResult) LiveCapabilities() Capabilities {
	var all []string
	for _, w := range r.Workers {
		all = append(all, w.Capabilities...)
	}
	c, _ := ParseCapabilities("Capabilities", all)
	return c
}

func checkSession(s string) error {
	if s == "" {
		return invalidField("SessionID", "empty")
	}
	if len(s) > 128 || !utf8.ValidString(s) {
		return invalidField("SessionID", "malformed")
	}
	return nil
}
