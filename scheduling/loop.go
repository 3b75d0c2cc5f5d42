package scheduling

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/maintenance"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
)

// LoopResult summarises one pass of the loop.
type LoopResult struct {
	Rows    []TickRow
	Expired int                // attempts failed or timed out by the deadline sweep
	Paused  []string           // namespace/schedule_id paused for consecutive failures
	Resumed []string           // namespace/schedule_id whose timed pause ended
	Deleted models.DeletedRows // rows retention deleted
}

// Loop drives the service. Its fire goroutine only claims and fires:
// every Period, and as soon as a schedule is due within it, it ticks
// (until no batch is full, so a backlog drains at full speed). The
// housekeeping — timed pauses, health, pauses on failure, run deadlines,
// retention, the database's upkeep (housekeeping.go) — runs beside it as
// maintenance tasks, each on a goroutine and period of its own, so a task
// that fails or hangs never delays a fire. With Ahead set it also prepares
// fires before their instant and commits them at it (see PrepareFires).
// It never dies on an error; it logs it and tries again next period.
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
	// Retention deletes old runs and purged schedules and compacts the
	// audit streams, a bounded part every pass (package retention); the
	// zero value keeps everything.
	Retention retention.Policy
	Logger    *slog.Logger
	// OnPass, when set, observes every fire pass (metrics).
	OnPass func(LoopResult, time.Duration, error)
	// OnPrepared, when set, observes every prepared instant once its commit
	// was attempted; err is the commit's error.
	OnPrepared func(p *Prepared, err error)
	// OnTask, when set, observes every run of a housekeeping task (metrics;
	// tests wait on it): its name, what it did, how long it took, its error.
	OnTask func(maintenance.Report[LoopResult])
	// BeforeTask, when set, runs before every housekeeping task; an error
	// fails that run. Tests inject faults through it; production leaves it
	// nil.
	BeforeTask func(ctx context.Context, task string) error
	// OnConnectionLost, when set, observes each time the loop finds the
	// database unavailable after it was reachable (metrics): once per
	// outage, however many of its parts meet it.
	OnConnectionLost func()
	// OutageMerge is how closely unavailable errors must follow each other
	// to be one outage (logged and counted once); zero means
	// DefaultOutageMerge.
	OutageMerge time.Duration

	mu     sync.Mutex
	cancel context.CancelFunc
	// stopClaiming ends the passes, the dispatcher and the preparer's
	// search, but lets a prepared set wait for its instant (Shutdown).
	stopClaiming context.CancelFunc
	// commitUntil is the last instant a prepared set may still be
	// committed at once claiming stopped (set by Shutdown).
	commitUntil time.Time
	done        chan struct{}
	outage      outage

	sweeperOnce sync.Once
	sweeper     *retention.Sweeper // the retention and compaction passes
}

// outage is whether the loop's parts last found the database unavailable
// (database.Unavailable), shared by them all: a restart or failover makes
// the pass, the dispatcher and the preparer fail together, and each again
// every period until it is back; and after pg_terminate_backend every
// pooled connection fails once more on its next use. One WARN when it goes
// and one INFO when it returns say it all: failures within outageMerge of
// the last one belong to the same outage.
type outage struct {
	mu    sync.Mutex
	since time.Time // when the open outage began; zero while the database answers
	last  time.Time // the last unavailable error
	quiet bool      // the open outage continues one already reported
}

// DefaultOutageMerge is Loop.OutageMerge's default: after a restart, a
// failover or pg_terminate_backend, the pooled connections that were open
// fail one by one as the parts next use them (database/sql only pings a
// connection idle for more than a second), over a few periods.
const DefaultOutageMerge = 5 * time.Second

// failed logs a part's error: an unavailable database once per outage at
// WARN (then DEBUG) and counted by OnConnectionLost; anything else at
// ERROR, every time.
func (l *Loop) failed(logger *slog.Logger, msg string, err error, args ...any) {
	if !database.Unavailable(err) {
		logger.Error(msg, append(args, "err", err)...)
		return
	}
	now := l.Service.clock.Now()
	o := &l.outage
	o.mu.Lock()
	report := false
	switch {
	case !o.since.IsZero(): // still out
	case !o.last.IsZero() && now.Sub(o.last) < cmp.Or(l.OutageMerge, DefaultOutageMerge):
		o.since, o.quiet = now, true // the tail of the last one
	default:
		o.since, o.quiet, report = now, false, true
	}
	o.last = now
	o.mu.Unlock()
	if !report {
		logger.Debug(msg+": database unavailable", append(args, "err", err)...)
		return
	}
	logger.Warn("database connection lost; the loop retries every period", append(args, "part", msg, "err", err)...)
	if l.OnConnectionLost != nil {
		l.OnConnectionLost()
	}
}

// reached records that a part reached the database; after an outage it
// logs how long the outage lasted.
func (l *Loop) reached(logger *slog.Logger) {
	o := &l.outage
	o.mu.Lock()
	since, quiet := o.since, o.quiet
	o.since = time.Time{}
	o.mu.Unlock()
	if !since.IsZero() && !quiet {
		logger.Info("database connection restored", "unavailable_for", l.Service.clock.Now().Sub(since).Round(time.Millisecond))
	}
}

// RunOnce performs one pass in order, for a caller that drives the loop
// (tests, `tideline tick`): the housekeeping that comes before firing
// (timed pauses that ended resume, so they fire this pass; health is
// folded and failing schedules pause, so they do not fire again), the
// ticks until a batch comes back short, then the run deadline sweep and
// retention. A failing task is logged, reported to OnTask and returned,
// joined with the others' errors — and the tick runs all the same.
func (l *Loop) RunOnce(ctx context.Context) (LoopResult, error) {
	limit := l.limit()
	before, after, _ := l.housekeeping(limit, l.Period)
	r := l.runner(nil)
	var res LoopResult
	beforeErr := l.runTasks(ctx, r, before, &res)
	rows, tickErr := l.tickAll(ctx, limit)
	res.Rows = rows
	afterErr := l.runTasks(ctx, r, after, &res)
	return res, errors.Join(beforeErr, tickErr, afterErr)
}

// Upkeep runs the database's upkeep tasks once (statistics, the vacuums of
// the due queue and the health rows), as a served loop does on periods of
// their own: for tests and simulations that drive the loop by RunOnce.
func (l *Loop) Upkeep(ctx context.Context) (LoopResult, error) {
	_, _, upkeep := l.housekeeping(l.limit(), l.Period)
	var res LoopResult
	err := l.runTasks(ctx, l.runner(nil), upkeep, &res)
	return res, err
}

// FireOnce is the fire goroutine's pass: tick until a batch comes back
// short, nothing else.
func (l *Loop) FireOnce(ctx context.Context) (LoopResult, error) {
	rows, err := l.tickAll(ctx, l.limit())
	return LoopResult{Rows: rows}, err
}

// firePass is one pass of the fire goroutine: it reads the loop's work
// (models.ReadLoopWork, shared with the housekeeping tasks for a period:
// lookout.go) and ticks only when something is due or buffered, so an
// idle period costs one statement instead of a tick's two transactions. It
// returns that reading, for the wait until the next pass.
func (l *Loop) firePass(ctx context.Context) (LoopResult, models.LoopWork, error) {
	work, err := l.Service.readLoopWork(ctx)
	if err != nil {
		return LoopResult{}, work, err
	}
	if !work.FireDue(l.Service.now()) {
		return LoopResult{}, work, nil
	}
	res, err := l.FireOnce(ctx)
	return res, work, err
}

func (l *Loop) limit() int {
	if l.Limit <= 0 {
		return DefaultTickLimit
	}
	return l.Limit
}

// tickParallelism is how many tick loops drain a backlog at once on
// PostgreSQL. One loop is serial on one connection: the database waits
// while the service builds a batch and the service waits while the
// database writes it, so on two cores one sits idle. Two loops claim
// disjoint batches (FOR NO KEY UPDATE SKIP LOCKED) and keep both busy. SQLite has
// one connection, so it ticks alone.
const tickParallelism = 2

// tickAll ticks until a batch comes back short (each phase claims at most
// limit rows; a short one means caught up). The first tick runs alone, so
// a pass without a backlog is exactly one serial tick — drains before
// fires; only a full first batch makes the others join.
func (l *Loop) tickAll(ctx context.Context, limit int) ([]TickRow, error) {
	defer l.Service.turns.fire()()
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

// logger is the loop's Logger, or one that discards.
func (l *Loop) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Logger
}

// Start runs passes in the background until ctx ends or Stop is called.
func (l *Loop) Start(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	claimCtx, stopClaiming := context.WithCancel(ctx)
	l.cancel, l.stopClaiming = cancel, stopClaiming
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
	// Everything that claims stops with claimCtx (Shutdown); a prepared
	// set waits for its instant on ctx.
	l.Service.shareLoopWork(period)
	wg.Go(func() { l.tickEvery(claimCtx, period, logger) })
	before, after, upkeep := l.housekeeping(l.limit(), period)
	wg.Go(l.runner(slices.Concat(before, after, upkeep)).Start(claimCtx))
	wg.Go(func() { l.notifyEvery(claimCtx, period, logger) })
	wg.Go(func() { l.Service.RunTargets(claimCtx, logger) })
	if l.Ahead > 0 && l.Service.CanPrepare() {
		wg.Go(func() { l.prepareAhead(claimCtx, ctx, period, logger) })
	}
	go func() {
		wg.Wait()
		close(l.done)
	}()
}

// tickEvery runs fire passes until ctx ends: one per period, or sooner
// when a schedule comes due within the period.
func (l *Loop) tickEvery(ctx context.Context, period time.Duration, logger *slog.Logger) {
	svc := l.Service
	for {
		started := svc.clock.Now()
		res, work, err := l.firePass(ctx)
		if ctx.Err() != nil {
			return // stopping: a pass cut short is not a failure
		}
		if err != nil {
			l.failed(logger, "scheduling pass failed", err)
		} else {
			l.reached(logger)
		}
		took := svc.clock.Now().Sub(started)
		if n := len(res.Rows); n > 0 {
			logger.Debug("scheduling pass", "rows", n, "took", took)
		}
		if l.OnPass != nil {
			l.OnPass(res, took, err)
		}
		// The next pass comes a period after this one began, or when a
		// schedule comes due before that. A pass that ticked changed the
		// due queue, so it is read again for that; an idle pass's reading
		// is still true (what others add meanwhile, the next period sees).
		wait := period - took
		now := svc.now()
		if len(res.Rows) > 0 || work.FireDue(now) {
			if at, ok, err := models.NextFireInstant(ctx, svc.db, now, now.Add(period)); err == nil && ok {
				wait = min(wait, at.Sub(now))
			}
		} else if work.Earliest != nil {
			wait = min(wait, work.Earliest.Sub(now))
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
	l.Service.RunNotifications(ctx, period, logger)
}

// prepareAhead prepares the fires of each coming instant early enough to
// write them all before it, then commits them at the instant. ctx ends its
// search for instants (claiming); hard ends everything. A set prepared when
// claiming stops is committed at its instant if that comes by the
// Shutdown's commitUntil, and rolled back otherwise.
func (l *Loop) prepareAhead(ctx, hard context.Context, period time.Duration, logger *slog.Logger) {
	svc := l.Service
	limit := l.limit()
	rate := initialPrepareRate
	var handled time.Time // instants up to this one are done
	var counted dueCount
	for ctx.Err() == nil {
		now := svc.now()
		at, ok, err := models.NextFireInstant(ctx, svc.db, later(now, handled), now.Add(l.Ahead))
		due := 0
		if err == nil && ok {
			at = at.UTC()
			due, err = counted.at(ctx, svc, at, now)
		}
		if err != nil {
			if ctx.Err() == nil {
				l.failed(logger, "find the next instant to prepare", err)
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
		// hard, not ctx: database/sql rolls a transaction back when its
		// context ends, and a set prepared when claiming stops may still
		// be committed (awaitInstant). Preparing ends by the instant anyway.
		p, err := svc.PrepareFires(hard, at, limit, at.Add(-commitMargin))
		if err != nil {
			if ctx.Err() == nil {
				l.failed(logger, "prepare fires", err, "at", at)
			}
			continue
		}
		prepared := svc.clock.Now()
		if n, took := len(p.Rows), prepared.Sub(began); n >= 100 && took > 0 {
			rate = (rate + float64(n)/took.Seconds()) / 2
		}
		if !l.awaitInstant(ctx, hard, at, period) {
			if err := p.Rollback(); err != nil {
				logger.Warn("roll back prepared fires on shutdown", "at", at, "err", err)
			} else if len(p.Rows) > 0 {
				logger.Info("prepared fires rolled back on shutdown; another replica (or the next start) fires them", "at", at, "fires", len(p.Rows))
			}
			return
		}
		err = p.Commit(hard)
		if err != nil && database.Unavailable(err) {
			l.failed(logger, "commit prepared fires", err, "at", at, "fires", len(p.Rows))
		} else if err != nil {
			logger.Warn("prepared fires not committed; they fire at the next pass", "at", at, "fires", len(p.Rows), "err", err)
		} else if len(p.Rows) > 0 {
			logger.Debug("prepared fires committed", "at", at, "fires", len(p.Rows), "began_before", at.Sub(began), "prepared_in", prepared.Sub(began), "commit_delay", p.CommittedAt.Sub(at))
		}
		if l.OnPrepared != nil {
			l.OnPrepared(p, err)
		}
	}
}

// recountDueEvery is how often the preparer counts again the schedules due
// at the instant it waits for.
const recountDueEvery = 15 * time.Second

// dueCount remembers how many schedules are due at the instant the
// preparer waits for. The count only sets how early preparing starts
// (prepareLead), and counting is a walk of the instant's part of the due
// queue — 3 ms at 10,000 here, so about a third of a second at 1,000,000 — which the
// preparer used to repeat every period for the whole lead. Once per
// instant, and again every recountDueEvery for what was added since, is
// enough: what does not fit in the lead fires at the instant anyway.
type dueCount struct {
	instant, countedAt time.Time
	due                int
}

func (c *dueCount) at(ctx context.Context, svc *Service, at, now time.Time) (int, error) {
	if at.Equal(c.instant) && now.Sub(c.countedAt) < recountDueEvery {
		return c.due, nil
	}
	due, err := models.CountDueAt(ctx, svc.db, at)
	if err != nil {
		return 0, err
	}
	*c = dueCount{instant: at, countedAt: now, due: due}
	return due, nil
}

// awaitInstant waits for the instant at of a prepared set and reports
// whether to commit it: true at the instant, false when the loop stops
// first (hard), or claiming stops (ctx) and at comes after commitUntil.
func (l *Loop) awaitInstant(ctx, hard context.Context, at time.Time, period time.Duration) bool {
	clock := l.Service.clock
	for hard.Err() == nil {
		left := at.Sub(clock.Now())
		if left <= 0 {
			return true
		}
		if ctx.Err() != nil {
			l.mu.Lock()
			until := l.commitUntil
			l.mu.Unlock()
			if at.After(until) {
				return false
			}
			sleep(hard, clock, left)
			continue
		}
		// Claiming may stop while this waits: wake for that too.
		wait := min(left, period)
		select {
		case <-ctx.Done():
		case <-sleepDone(hard, clock, wait):
		}
	}
	return false
}

// sleepDone is sleep as a channel, closed when it returns.
func sleepDone(ctx context.Context, clock Clock, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		sleep(ctx, clock, d)
		close(done)
	}()
	return done
}

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

// Shutdown stops the loop for a process going away (SPEC §20): it stops
// claiming at once — the pass under way ends (a tick cut short rolls back
// its batch: those schedules are due again for any replica), the
// dispatcher and the preparer stop looking — and a set of fires already
// prepared is committed at its instant when that comes within commitWithin,
// else rolled back. It returns when every part stopped, or, when ctx ends
// first, stops them hard and returns ctx's error.
func (l *Loop) Shutdown(ctx context.Context, commitWithin time.Duration) error {
	l.mu.Lock()
	stopClaiming, cancel, done := l.stopClaiming, l.cancel, l.done
	l.commitUntil = l.Service.clock.Now().Add(commitWithin)
	l.cancel, l.stopClaiming = nil, nil
	l.mu.Unlock()
	if cancel == nil {
		return nil
	}
	stopClaiming()
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
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
