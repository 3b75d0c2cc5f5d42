// Package fairshare bounds how many outbound requests the server has in
// flight and shares them among tenants (namespaces) and the receivers each
// tenant calls, so that one tenant's slow or dead receiver cannot hold the
// slots another tenant needs. The HTTP target executor and the notification
// dispatcher each own a Pool (SPEC §15, §11; docs/SECURITY.md "Tenant
// isolation").
//
// A pool never queues: a caller asks how much Room a (tenant, host) lane
// has now, takes that many slots, and claims only that much work from the
// database. Work that cannot start stays in the database, where another
// pass or another replica can take it, instead of sitting claimed behind a
// hung request.
package fairshare

import (
	"sync"
	"time"
)

// Limits are a pool's bounds. Zero values get the defaults noted.
type Limits struct {
	// Total is the number of slots.
	Total int
	// PerTenant is the most one tenant may hold: Total/2 (at least 1)
	// when zero, so a second tenant always finds half the slots free.
	PerTenant int
	// PerHost is the most one tenant may hold towards one host: Total/4
	// (at least 1) when zero. Hosts are counted per tenant, so two tenants
	// that call the same service (hooks.slack.com) do not share its slots.
	PerHost int
	// FailuresToOpen consecutive failures of a lane open its breaker: the
	// lane gets no slot for Backoff, doubled on every reopening up to
	// MaxBackoff; then one probe at a time until one succeeds. Defaults 5,
	// 5 s and 5 min.
	FailuresToOpen int
	Backoff        time.Duration
	MaxBackoff     time.Duration
}

func (l Limits) withDefaults() Limits {
	l.Total = max(l.Total, 1)
	if l.PerTenant <= 0 {
		l.PerTenant = max(l.Total/2, 1)
	}
	if l.PerHost <= 0 {
		l.PerHost = max(l.Total/4, 1)
	}
	l.PerTenant, l.PerHost = min(l.PerTenant, l.Total), min(l.PerHost, l.Total)
	if l.FailuresToOpen <= 0 {
		l.FailuresToOpen = 5
	}
	if l.Backoff <= 0 {
		l.Backoff = 5 * time.Second
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = 5 * time.Minute
	}
	return l
}

// Pool hands out slots. It is safe for concurrent use.
type Pool struct {
	mu      sync.Mutex
	limits  Limits
	now     func() time.Time
	used    int
	tenants map[string]int
	lanes   map[lane]*laneState
	freed   chan struct{}
}

type lane struct{ tenant, host string }

type laneState struct {
	inFlight  int
	failures  int // consecutive
	opens     int // consecutive openings, for the backoff
	openUntil time.Time
}

// New returns a pool; now is the clock breakers are timed by.
func New(limits Limits, now func() time.Time) *Pool {
	return &Pool{limits: limits.withDefaults(), now: now, tenants: map[string]int{}, lanes: map[lane]*laneState{}, freed: make(chan struct{}, 1)}
}

// Limits returns the pool's limits with defaults filled in.
func (p *Pool) Limits() Limits { return p.limits }

// Free is how many slots nobody holds.
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limits.Total - p.used
}

// Freed receives (at most one pending value) whenever a slot is released,
// so that a claim loop waiting for room wakes.
func (p *Pool) Freed() <-chan struct{} { return p.freed }

// Room is how many slots the lane could take now: bounded by the free
// slots, the tenant's and the lane's caps, and its breaker (none while
// open, one probe at a time once the backoff is over).
func (p *Pool) Room(tenant, host string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.room(lane{tenant, host})
}

func (p *Pool) room(k lane) int {
	r := min(p.limits.Total-p.used, p.limits.PerTenant-p.tenants[k.tenant], p.limits.PerHost)
	if st := p.lanes[k]; st != nil {
		r = min(r, p.limits.PerHost-st.inFlight)
		if st.failures >= p.limits.FailuresToOpen {
			if p.now().Before(st.openUntil) || st.inFlight > 0 {
				return 0
			}
			r = min(r, 1) // half open: one probe
		}
	}
	return max(r, 0)
}

// Slot is one held slot; Release it exactly once.
type Slot struct {
	p    *Pool
	k    lane
	once sync.Once
}

// Acquire takes a slot for the lane, or reports false when it has no room.
func (p *Pool) Acquire(tenant, host string) (*Slot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := lane{tenant, host}
	if p.room(k) < 1 {
		return nil, false
	}
	st := p.lanes[k]
	if st == nil {
		st = &laneState{}
		p.lanes[k] = st
	}
	st.inFlight++
	p.tenants[tenant]++
	p.used++
	return &Slot{p: p, k: k}, true
}

// Release returns the slot. healthy says whether the receiver answered
// like a live one (any answer but a timeout, a connection failure, 408,
// 429 or 5xx); unhealthy answers count towards the lane's breaker.
func (s *Slot) Release(healthy bool) {
	s.once.Do(func() {
		p := s.p
		p.mu.Lock()
		st := p.lanes[s.k]
		st.inFlight--
		p.used--
		if p.tenants[s.k.tenant]--; p.tenants[s.k.tenant] == 0 {
			delete(p.tenants, s.k.tenant)
		}
		if healthy {
			st.failures, st.opens = 0, 0
		} else if st.failures++; st.failures >= p.limits.FailuresToOpen {
			backoff := p.limits.Backoff << min(st.opens, 20)
			st.openUntil = p.now().Add(min(backoff, p.limits.MaxBackoff))
			st.opens++
		}
		if st.inFlight == 0 && st.failures == 0 {
			delete(p.lanes, s.k) // forget healthy idle lanes: the map stays as small as the traffic
		}
		p.mu.Unlock()
		select {
		case p.freed <- struct{}{}:
		default:
		}
	})
}

// Return gives the slot back unused: no request was made, so the lane's
// health is not touched.
func (s *Slot) Return() {
	s.once.Do(func() {
		p := s.p
		p.mu.Lock()
		st := p.lanes[s.k]
		st.inFlight--
		p.used--
		if p.tenants[s.k.tenant]--; p.tenants[s.k.tenant] == 0 {
			delete(p.tenants, s.k.tenant)
		}
		if st.inFlight == 0 && st.failures == 0 {
			delete(p.lanes, s.k)
		}
		p.mu.Unlock()
	})
}

// Open reports whether the lane's breaker is open now (metrics, tests).
func (p *Pool) Open(tenant, host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.lanes[lane{tenant, host}]
	return st != nil && st.failures >= p.limits.FailuresToOpen && p.now().Before(st.openUntil)
}
