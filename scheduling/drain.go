package scheduling

import (
	"context"
	"sync"
)

// draining is a process's shutdown as the service sees it (SPEC §20): from
// Drain on, workers polling this process get no runs — a long poll waiting
// is answered empty at once and a new one is answered empty without
// claiming — so nothing is leased to a worker through a process that is
// going away; runs stay pending for the workers of other replicas. Every
// other request is served as before until the HTTP server closes.
type draining struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
	// polls counts the polls in progress; idle is closed when it drops to
	// zero after Drain.
	polls int
	idle  chan struct{}
}

// pollStarted and pollDone bracket a poll, so that AwaitPolls can wait
// for the ones already claiming when the drain began.
func (d *draining) pollStarted() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.polls++
}

func (d *draining) pollDone() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.polls--
	if d.polls == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
}

func (d *draining) channel() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

// Drain starts the service's shutdown: polls claim nothing from now on and
// the ones waiting return at once. Calling it again is harmless.
func (s *Service) Drain() {
	ch := s.draining.channel()
	s.draining.once.Do(func() { close(ch) })
}

// AwaitPolls waits, after Drain, until no poll is in progress (or ctx
// ends): a poll that was claiming when the drain began returns its runs to
// its worker, so an in-process worker stopped after this has every run it
// holds in hand, and hands each back, instead of one leased to it by a
// claim whose answer its cancellation would lose.
func (s *Service) AwaitPolls(ctx context.Context) error {
	for {
		s.draining.mu.Lock()
		if s.draining.polls == 0 {
			s.draining.mu.Unlock()
			return nil
		}
		if s.draining.idle == nil {
			s.draining.idle = make(chan struct{})
		}
		idle := s.draining.idle
		s.draining.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Draining reports whether Drain was called (the readiness probe answers
// 503 from then on).
func (s *Service) Draining() bool {
	select {
	case <-s.draining.channel():
		return true
	default:
		return false
	}
}
