package scheduling

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
)

// Backfill worker defaults (docs/BACKFILLS.md).
const (
	// DefaultBackfillPassBudget bounds the occurrences one pass starts over
	// every job: about a fifth of a second of writes, after which the
	// worker looks again for fires coming due.
	DefaultBackfillPassBudget = 500
	// DefaultFireGuard: the worker does nothing while a fire is due within
	// this long, so slices never compete with a fire for the database (on
	// SQLite, for its one connection).
	DefaultFireGuard = 2 * time.Second
	// fireGuardLookback bounds how far back an overdue fire still holds the
	// worker back: a loop that keeps failing on one schedule must not
	// starve every backfill.
	fireGuardLookback = 30 * time.Second
	// backfillCandidates is how many due jobs one pass considers.
	backfillCandidates = 200
)

// BackfillWorker works the running backfill jobs in slices (SPEC §18), in
// its own goroutine and period, apart from the fire loop. Each pass is
// fair: jobs are taken served-longest-ago first, one per namespace in
// turn (round robin), each a slice of at most SliceSize occurrences,
// until PassBudget occurrences are handled. Replicas each run one; a job
// is claimed per slice with FOR UPDATE SKIP LOCKED, so they share the
// jobs and never work one slice twice.
type BackfillWorker struct {
	Service *Service
	// Period is the wait between passes that found nothing more to do;
	// a pass that used its whole budget is followed at once.
	Period     time.Duration
	SliceSize  int           // default Service's backfill batch (100)
	PassBudget int           // default DefaultBackfillPassBudget
	FireGuard  time.Duration // default DefaultFireGuard; negative disables the guard
	// Ahead is the loop's Ahead: on PostgreSQL the loop prepares the fires
	// of an instant that long before it at most, and the worker also yields
	// from the time preparing the next instant's fires should begin.
	Ahead  time.Duration
	Logger *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Work runs one pass and returns how many occurrences it handled. An
// error of one job is logged and the pass goes on with the others; the
// first is returned.
func (w *BackfillWorker) Work(ctx context.Context) (int, error) {
	s := w.Service
	slice, budget, guard := w.SliceSize, w.PassBudget, w.FireGuard
	if slice <= 0 {
		slice = s.backfillBatch
	}
	if budget <= 0 {
		budget = DefaultBackfillPassBudget
	}
	if guard == 0 {
		guard = DefaultFireGuard
	}
	now := s.now()
	// The jobs first: usually none has a slice due (the period's reading
	// of the loop's work says so without a statement of its own), and then
	// whether a fire is coming (up to three reads, one a count of the next
	// instant's schedules) need not be asked every period.
	if work, err := s.loopWork(ctx); err != nil || !work.BackfillDue(now) {
		return 0, err
	}
	candidates, err := models.BackfillCandidates(ctx, s.db, now, backfillCandidates)
	if err != nil || len(candidates) == 0 {
		return 0, err
	}
	if guard > 0 {
		if yield, err := w.fireComing(ctx, now, guard); err != nil || yield {
			return 0, err
		}
	}
	var firstErr error
	total := 0
	// Rounds over the candidates, each job one slice a round, until the
	// budget is spent or a round handled nothing (every job done, paced or
	// throttled): one job alone still gets the whole budget.
	jobs := fairOrder(candidates)
	for len(jobs) > 0 && total < budget && ctx.Err() == nil {
		var again []models.BackfillCandidate
		for _, c := range jobs {
			if total >= budget || ctx.Err() != nil {
				break
			}
			want := min(slice, budget-total)
			n, err := s.WorkBackfill(ctx, c.ID, want)
			total += n
			if err != nil {
				if !database.Unavailable(err) { // an outage is the pass's one line
					w.logger().Error("backfill slice failed", "backfill_id", c.ID, "err", err)
				}
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			if n == want {
				again = append(again, c)
			}
		}
		jobs = again
	}
	return total, firstErr
}

// fireComing reports whether a fire is due within guard (or overdue), or
// the loop should be preparing the next instant's fires by then: the
// lead it takes for the number due there, at its cautious initial rate.
func (w *BackfillWorker) fireComing(ctx context.Context, now time.Time, guard time.Duration) (bool, error) {
	s := w.Service
	due, err := models.FireDueIn(ctx, s.db, now.Add(-fireGuardLookback), now.Add(guard))
	if err != nil || due || w.Ahead <= 0 || !s.CanPrepare() {
		return due, err
	}
	at, ok, err := models.NextFireInstant(ctx, s.db, now, now.Add(w.Ahead+guard))
	if err != nil || !ok {
		return false, err
	}
	n, err := models.CountDueAt(ctx, s.db, at)
	if err != nil {
		return false, err
	}
	return !now.Add(guard).Before(at.Add(-prepareLead(n, initialPrepareRate, w.Ahead))), nil
}

// fairOrder interleaves the candidates by namespace: the first of each
// namespace (in the candidates' order, served longest ago first), then the
// second of each, and so on, so a namespace with many jobs waits its turn.
func fairOrder(cands []models.BackfillCandidate) []models.BackfillCandidate {
	byNS := map[string][]models.BackfillCandidate{}
	var order []string
	for _, c := range cands {
		if _, ok := byNS[c.Namespace]; !ok {
			order = append(order, c.Namespace)
		}
		byNS[c.Namespace] = append(byNS[c.Namespace], c)
	}
	out := make([]models.BackfillCandidate, 0, len(cands))
	for round := 0; len(out) < len(cands); round++ {
		for _, ns := range order {
			if list := byNS[ns]; round < len(list) {
				out = append(out, list[round])
			}
		}
	}
	return out
}

func (w *BackfillWorker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Start runs passes in the background until ctx ends or Stop is called.
func (w *BackfillWorker) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	w.cancel, w.done = cancel, make(chan struct{})
	period := w.Period
	if period <= 0 {
		period = time.Second
	}
	budget := w.PassBudget
	if budget <= 0 {
		budget = DefaultBackfillPassBudget
	}
	go func() {
		defer close(w.done)
		for {
			n, err := w.Work(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				logPassError(w.logger(), "backfill pass failed", err)
			}
			if n >= budget {
				continue
			}
			if !sleep(ctx, w.Service.clock, period) {
				return
			}
		}
	}()
}

// Stop ends the worker and waits for its current pass; calling it twice,
// or without Start, is harmless.
func (w *BackfillWorker) Stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel = nil
	w.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
