package scheduling

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LoopResult summarises one pass of the loop.
type LoopResult struct {
	Rows    []TickRow
	Expired int // runs failed or timed out by the deadline sweep
}

// Loop drives the service: every Period it ticks (until no batch is full,
// so a backlog drains at full speed) and enforces run deadlines. It never
// dies on an error; it logs it and tries again next period.
type Loop struct {
	Service *Service
	Period  time.Duration
	Limit   int
	Logger  *slog.Logger
	// OnPass, when set, observes every pass (metrics).
	OnPass func(LoopResult, time.Duration, error)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// RunOnce performs one pass: tick batches until a batch comes back short,
// then the run deadline sweep.
func (l *Loop) RunOnce(ctx context.Context) (LoopResult, error) {
	limit := l.Limit
	if limit <= 0 {
		limit = DefaultTickLimit
	}
	var res LoopResult
	for {
		rows, err := l.Service.Tick(ctx, limit)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			return res, err
		}
		// Each phase claims at most limit rows; a short pass means caught up.
		if len(rows) < limit || ctx.Err() != nil {
			break
		}
	}
	expired, err := l.Service.EnforceDeadlines(ctx, limit)
	res.Expired = expired
	return res, err
}

// Start runs passes in the background until ctx ends or Stop is called.
func (l *Loop) Start(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	l.cancel = cancel
	l.done = make(chan struct{})
	period := l.Period
	if period <= 0 {
		period = time.Second
	}
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	go func() {
		defer close(l.done)
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		for {
			started := time.Now()
			res, err := l.RunOnce(ctx)
			if ctx.Err() != nil {
				return // stopping: a pass cut short is not a failure
			}
			if err != nil {
				logger.Error("scheduling pass failed", "err", err)
			}
			if n := len(res.Rows); n > 0 {
				logger.Debug("scheduling pass", "rows", n, "expired_runs", res.Expired, "took", time.Since(started))
			}
			if l.OnPass != nil {
				l.OnPass(res, time.Since(started), err)
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// Stop ends the loop and waits for the current pass; calling it twice, or
// without Start, is harmless.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
