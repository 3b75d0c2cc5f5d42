package scheduling

import (
	"context"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/models"
)

// lookout shares one reading of the loop's work (models.ReadLoopWork)
// among the served loop's fire pass and housekeeping tasks for a period:
// the fire pass reads it every period, and the tasks that run within a
// period of that reading decide from it whether to open a transaction, so
// an idle second costs one statement instead of one per task. What was
// there when it was read is seen on time, because time-bound work is read
// as the time it comes; what is added after it waits for the next reading,
// at most one period, as it waited for a task's next probe before.
type lookout struct {
	mu    sync.Mutex
	share time.Duration // 0: every caller reads (no served loop)
	work  models.LoopWork
	read  time.Time
}

// shareLoopWork lets a reading serve for period (the served loop's).
func (s *Service) shareLoopWork(period time.Duration) {
	s.lookout.mu.Lock()
	defer s.lookout.mu.Unlock()
	s.lookout.share = period
}

// loopWork is a reading of the loop's work: the shared one while it is
// younger than a period, else a new one (and that one shared).
func (s *Service) loopWork(ctx context.Context) (models.LoopWork, error) {
	now := s.now()
	s.lookout.mu.Lock()
	if s.lookout.share > 0 && !s.lookout.read.IsZero() && now.Sub(s.lookout.read) < s.lookout.share && !now.Before(s.lookout.read) {
		w := s.lookout.work
		s.lookout.mu.Unlock()
		return w, nil
	}
	s.lookout.mu.Unlock()
	return s.readLoopWork(ctx)
}

// readLoopWork reads the loop's work afresh and shares it.
func (s *Service) readLoopWork(ctx context.Context) (models.LoopWork, error) {
	read := s.now()
	w, err := models.ReadLoopWork(ctx, s.db)
	if err != nil {
		return w, err
	}
	s.lookout.mu.Lock()
	defer s.lookout.mu.Unlock()
	if read.After(s.lookout.read) {
		s.lookout.work, s.lookout.read = w, read
	}
	return w, nil
}
