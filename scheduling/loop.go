package scheduling

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
)

// LoopResult summarises one pass of the loop.
type LoopResult struct {
	Rows    []TickRow
	Expired int                // attempts failed or timed out by the deadline sweep
	Paused  []string           // namespace/schedule_id paused for consecutive failures
	Resumed []string           // namespace/schedule_id whose timed pause ended
	Deleted models.DeletedRows // rows retention deleted
}

// Loop drives the service: every Period, and as soon as a schedule is due
// within it, it ticks (until no batch is full, so a backlog drains at full
// speed) and enforces run deadlines. With Ahead set it also prepares fires
// before their instant and commits them at it (see PrepareFires). It never
// dies on an error; it logs it and tries again next period.
type Loop struct {
	Service *Service
	Period  time.Duration
	Limit   int
	// Ahead is how long before their instant fires may be prepared at most;
	// zero disables preparing, and so does a database other than
	// PostgreSQL. The lead actually taken follows the number of schedules
	// due at the instant and the rate measured so far (a handful are
	// prepared a quarter of a second ahead), because prepared schedules stay
	// locked — an edit of one waits for the commit — until the instant.
	Ahead time.Duration
	// Retention deletes old runs and purged schedules, a bounded part
	// every pass; the zero value keeps everything.
	Retention Retention
	Logger    *slog.Logger
	// OnPass, when set, observes every pass (metrics).
	OnPass func(LoopResult, time.Duration, error)
	// OnPrepared, when set, observes every prepared instant once its commit
	// was attempted; err is the commit's error.
	OnPrepared func(p *Prepared, err error)

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
	// Timed pauses that ended resume first, so their next fire is due
	// from this pass on.
	resumed, err := l.Service.ResumeDue(ctx, limit)
	res.Resumed = resumed
	if err != nil {
		return res, err
	}
	if _, err := l.Service.FoldHealth(ctx, limit); err != nil {
		return res, err
	}
	// Pause failing schedules first, so that they do not fire again.
	paused, err := l.Service.PauseFailing(ctx, limit)
	res.Paused = paused
	if err != nil {
		return res, err
	}
	rows, err := l.tickAll(ctx, limit)
	res.Rows = rows
	if err != nil {
		return res, err
	}
	expired, err := l.Service.EnforceDeadlines(ctx, limit)
	res.Expired = expired
	if err != nil {
		return res, err
	}
	res.Deleted, err = l.Service.Retain(ctx, l.Retention)
	return res, err
}

// tickParallelism is how many tick loops drain a backlog at once on
// PostgreSQL. One loop is serial on one connection: the database waits
// while the service builds a batch and the service waits while the
// database writes it, so on two cores one sits idle. Two loops claim
// disjoint batches (FOR UPDATE SKIP LOCKED) and keep both busy. SQLite has
// one connection, so it ticks alone.
const tickParallelism = 2

// tickAll ticks until a batch comes back short (each phase claims at most
// limit rows; a short one means caught up). The first tick runs alone, so
// a pass without a backlog is exactly one serial tick — drains before
// fires; only a full first batch makes the others join.
func (l *Loop) tickAll(ctx context.Context, limit int) ([]TickRow, error) {
	rows, err := l.Service.Tick(ctx, limit)
	if err != nil || len(rows) < limit || ctx.Err() != nil {
		return rows, err
	}
	loops := 1
	if l.Service.CanPrepare() {
		loops = tickParallelism
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range loops {
		wg.Go(func() {
			for ctx.Err() == nil {
				more, err := l.Service.Tick(ctx, limit)
				mu.Lock()
				rows = append(rows, more...)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil || len(more) < limit {
					return
				}
			}
		})
	}
	wg.Wait()
	return rows, firstErr
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
	var wg sync.WaitGroup
	wg.Go(func() { l.tickEvery(ctx, period, logger) })
	wg.Go(func() { l.notifyEvery(ctx, period, logger) })
	if l.Ahead > 0 && l.Service.CanPrepare() {
		wg.Go(func() { l.prepareAhead(ctx, period, logger) })
	}
	go func() {
		wg.Wait()
		close(l.done)
	}()
}

// tickEvery runs passes until ctx ends: one per period, or sooner when a
// schedule comes due within the period.
func (l *Loop) tickEvery(ctx context.Context, period time.Duration, logger *slog.Logger) {
	svc := l.Service
	var optimized, vacuumed time.Time
	for {
		started := svc.clock.Now()
		// SQLite's planner needs statistics as the tables grow (see
		// Dialect.Optimize); first thing, then once an hour.
		if started.Sub(optimized) >= optimizeEvery {
			optimized = started
			if err := database.Of(svc.db).Optimize(ctx, svc.db); err != nil && ctx.Err() == nil {
				logger.Warn("optimize database", "err", err)
			}
		}
		res, err := l.RunOnce(ctx)
		if ctx.Err() != nil {
			return // stopping: a pass cut short is not a failure
		}
		if started.Sub(vacuumed) >= vacuumEvery {
			vacuumed = started
			if err := models.VacuumDueQueue(ctx, svc.db); err != nil && ctx.Err() == nil {
				logger.Warn("vacuum the due queue", "err", err)
			}
		}
		if err != nil {
			logger.Error("scheduling pass failed", "err", err)
		}
		took := svc.clock.Now().Sub(started)
		if n := len(res.Rows); n > 0 {
			logger.Debug("scheduling pass", "rows", n, "expired_runs", res.Expired, "took", took)
		}
		if l.OnPass != nil {
			l.OnPass(res, took, err)
		}
		wait := period - took
		now := svc.now()
		if at, ok, err := models.NextFireInstant(ctx, svc.db, now, now.Add(period)); err == nil && ok {
			wait = min(wait, at.Sub(now))
		}
		if !sleep(ctx, l.Service.clock, wait) {
			return
		}
	}
}

// notifyEvery runs the notification dispatcher (Service.NotifyOnce) in
// its own goroutine: posting to a slow or dead receiver waits out its
// timeout here, never in a scheduling pass. A full pass goes again at once.
func (l *Loop) notifyEvery(ctx context.Context, period time.Duration, logger *slog.Logger) {
	for {
		sent, err := l.Service.NotifyOnce(ctx, DefaultDispatchLimit)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			logger.Error("notification pass failed", "err", err)
		}
		if sent < DefaultDispatchLimit && !sleep(ctx, l.Service.clock, period) {
			return
		}
	}
}

// prepareAhead prepares the fires of each coming instant early enough to
// write them all before it, then commits them at the instant.
func (l *Loop) prepareAhead(ctx context.Context, period time.Duration, logger *slog.Logger) {
	svc := l.Service
	limit := l.Limit
	if limit <= 0 {
		limit = DefaultTickLimit
	}
	rate := initialPrepareRate
	var handled time.Time // instants up to this one are done
	for ctx.Err() == nil {
		now := svc.now()
		at, due, ok, err := svc.NextFireInstant(ctx, later(now, handled), now.Add(l.Ahead))
		if err != nil {
			if ctx.Err() == nil {
				logger.Error("find the next instant to prepare", "err", err)
			}
			sleep(ctx, l.Service.clock, period)
			continue
		}
		if !ok {
			sleep(ctx, l.Service.clock, period)
			continue
		}
		if wait := at.Add(-prepareLead(due, rate, l.Ahead)).Sub(now); wait > 0 {
			sleep(ctx, l.Service.clock, min(wait, period)) // look again: more may come due at it
			continue
		}
		handled = at
		began := svc.clock.Now()
		p, err := svc.PrepareFires(ctx, at, limit, at.Add(-commitMargin))
		if err != nil {
			if ctx.Err() == nil {
				logger.Error("prepare fires", "at", at, "err", err)
			}
			continue
		}
		prepared := svc.clock.Now()
		if n, took := len(p.Rows), prepared.Sub(began); n >= 100 && took > 0 {
			rate = (rate + float64(n)/took.Seconds()) / 2
		}
		for ctx.Err() == nil {
			left := at.Sub(svc.clock.Now())
			if left <= 0 {
				break
			}
			sleep(ctx, l.Service.clock, min(left, period))
		}
		if ctx.Err() != nil {
			_ = p.Rollback()
			return
		}
		err = p.Commit(ctx)
		if err != nil {
			logger.Warn("prepared fires not committed; they fire at the next pass", "at", at, "fires", len(p.Rows), "err", err)
		} else if len(p.Rows) > 0 {
			logger.Debug("prepared fires committed", "at", at, "fires", len(p.Rows), "began_before", at.Sub(began), "prepared_in", prepared.Sub(began), "commit_delay", p.CommittedAt.Sub(at))
		}
		if l.OnPrepared != nil {
			l.OnPrepared(p, err)
		}
	}
}

// optimizeEvery is how often the loop refreshes SQLite's statistics.
const optimizeEvery = time.Hour

// vacuumEvery is how often the loop vacuums the due queue, which takes a
// new row version per fire (models.VacuumDueQueue): at 10,000 fires a
// minute, a minute's worth is ~1 MB the next minute's fires reuse.
const vacuumEvery = time.Minute

// Preparing ahead starts with a cautious guess of how fast fires are
// written, then follows what it measures.
const (
	initialPrepareRate = 1000.0 // fires per second
	minPrepareLead     = 250 * time.Millisecond
	commitMargin       = 50 * time.Millisecond
)

// prepareLead is how long before its instant to start preparing due fires:
// the time writing them should take, with half again as margin.
func prepareLead(due int, rate float64, ceiling time.Duration) time.Duration {
	lead := minPrepareLead + time.Duration(float64(due)/rate*1.5*float64(time.Second))
	return min(lead, ceiling)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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
