package scheduling

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
)

// Firing ahead. When thousands of schedules share one instant (every
// "* * * * *" schedule fires at second 0), writing their fires takes longer
// than a second even at the database's limit, so firing them when the
// instant comes makes the last ones seconds late. Instead the loop can
// prepare them beforehand: in open transactions (two, writing at once) it
// locks the schedules due at the instant, writes their fires as of the
// instant, and commits them when the clock reaches the instant. Until then
// nobody sees the runs, and the locked schedules cannot change, so the fire
// is exactly the one a tick at the instant would have made; only fires
// whose outcome cannot change in the meantime are prepared (see
// models.ClaimAt). Everything else, and anything not prepared in time,
// fires through the regular tick.

// MaxCommitDelay bounds how late a prepared set may be committed. Its rows
// say they were written at the instant; past this, Commit rolls them back
// instead, and the regular tick fires them with their real time.
const MaxCommitDelay = 500 * time.Millisecond

// ErrPrepareUnsupported: only PostgreSQL can hold many transactions open at
// once; on SQLite a held transaction would block every other request.
var ErrPrepareUnsupported = errors.New("preparing fires ahead needs PostgreSQL")

// CommitTooEarlyError refuses to commit before the instant: the runs would
// start early.
type CommitTooEarlyError struct{ Early time.Duration }

func (e *CommitTooEarlyError) Error() string {
	return fmt.Sprintf("prepared fires committed %s before their instant", e.Early)
}

// CommitTooLateError says the prepared fires were rolled back because the
// commit came more than MaxCommitDelay after their instant.
type CommitTooLateError struct{ Late time.Duration }

func (e *CommitTooLateError) Error() string {
	return fmt.Sprintf("prepared fires rolled back: commit would have been %s after their instant", e.Late)
}

// Prepared is a set of fires written in a transaction that is still open.
// Exactly one of Commit or Rollback must follow.
type Prepared struct {
	At   time.Time // the instant the fires are for
	Rows []TickRow // what each prepared fire did (as of At)
	// CommittedAt is when Commit made them visible (by the service clock).
	CommittedAt time.Time
	txs         []*bun.Tx // the open transactions holding the fires; none when nothing was prepared
	s           *Service
	started     *startedRuns // the runs the fires start: Commit wakes their pollers
}

// prepareParallelism is how many transactions prepare an instant at once.
// One is serial on its connection — the database waits while the service
// builds a batch, and the other way round — so two keep two cores busy and
// prepare 100,000 fires in well under a minute. They claim disjoint
// schedules (SKIP LOCKED) and commit together at the instant.
const prepareParallelism = 2

// maxPrepareRescans bounds how often a preparer walks the instant's range
// again from its start once its cursor reached the end.
const maxPrepareRescans = 2

// CanPrepare reports whether the database supports preparing fires ahead.
func (s *Service) CanPrepare() bool { return database.Of(s.db).CanFireAhead() }

// NextFireInstant is the earliest instant after after and no later than
// until at which an active schedule is due, and how many are due at it.
func (s *Service) NextFireInstant(ctx context.Context, after, until time.Time) (at time.Time, due int, ok bool, err error) {
	at, ok, err = models.NextFireInstant(ctx, s.db, after, until)
	if err != nil || !ok {
		return at, 0, ok, err
	}
	due, err = models.CountDueAt(ctx, s.db, at)
	return at.UTC(), due, err == nil, err
}

// PrepareFires writes the fires of the schedules due at the instant at, in
// batches of limit in prepareParallelism transactions, and returns them
// uncommitted. No transaction starts a batch that might not finish by
// deadline (judged by its slowest batch so far), so preparation never runs
// into the instant. A batch that fails is undone alone and ends its
// transaction's preparation: its schedules fire through the regular tick,
// which isolates failures one schedule at a time.
func (s *Service) PrepareFires(ctx context.Context, at time.Time, limit int, deadline time.Time) (*Prepared, error) {
	if !s.CanPrepare() {
		return nil, ErrPrepareUnsupported
	}
	if limit <= 0 {
		limit = DefaultTickLimit
	}
	at = utcMicro(at)
	ctx, started := withStartedRuns(ctx)
	p := &Prepared{At: at, s: s, started: started}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	for range prepareParallelism {
		wg.Go(func() {
			tx, rows, err := s.prepareInOneTx(ctx, at, limit, deadline)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if tx != nil {
				p.txs = append(p.txs, tx)
				p.Rows = append(p.Rows, rows...)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		_ = p.Rollback()
		return nil, firstErr
	}
	return p, nil
}

// prepareInOneTx is one preparer of PrepareFires: in a transaction of its
// own it writes batches of the instant's fires until none is left or the
// next might not finish by deadline, and returns the transaction open — or
// rolled back and nil when it wrote nothing. It fails only if it cannot
// begin or the context ends; a failed batch just ends its preparation.
func (s *Service) prepareInOneTx(ctx context.Context, at time.Time, limit int, deadline time.Time) (*bun.Tx, []TickRow, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("begin prepared fires: %w", err)
	}
	afterID := ""
	phase := s.duePhase(func(ctx context.Context, tx bun.Tx, _ time.Time) ([]models.ClaimedSchedule, error) {
		claimed, err := models.ClaimAt(ctx, tx, at, afterID, limit, startsAnyway)
		if len(claimed) > 0 {
			afterID = claimed[len(claimed)-1].ID
		}
		return claimed, err
	})
	var (
		all     []TickRow
		slowest time.Duration
		batches int
		rescans int
		stop    = "caught up"
	)
	defer func() {
		s.logger.Debug("preparer done", "at", at, "fires", len(all), "batches", batches, "rescans", rescans, "slowest_batch", slowest, "stopped", stop)
	}()
	for {
		started := s.clock.Now()
		if started.Add(slowest * 3 / 2).After(deadline) {
			stop = "deadline"
			break
		}
		rows, err := savepoint(ctx, tx, func() ([]TickRow, error) { return s.fastBatch(ctx, tx, phase, at) })
		if err != nil {
			if ctx.Err() != nil {
				_ = tx.Rollback()
				return nil, nil, ctx.Err()
			}
			s.logger.Warn("preparing fires ahead stopped; the rest fire at the instant", "at", at, "err", err)
			stop = "failed batch"
			break
		}
		all = append(all, rows...)
		batches++
		slowest = max(slowest, s.clock.Now().Sub(started))
		if len(rows) < limit {
			// The cursor passed rows the sibling preparer held at that
			// moment; a 100,000-schedule instant showed such holes (half
			// the instant left to the regular tick). Walking the range once
			// more from its start finds what is still free; rows this
			// transaction already moved are no longer in it.
			if rescans == maxPrepareRescans || afterID == "" {
				break
			}
			rescans++
			afterID = ""
		}
	}
	if len(all) == 0 {
		if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			s.logger.Warn("roll back empty prepared fires", "at", at, "err", err)
		}
		return nil, nil, nil
	}
	return &tx, all, nil
}

// Commit makes the prepared fires visible. Before the instant it refuses
// (the transactions stay open); more than MaxCommitDelay after it, it rolls
// the fires back and returns a CommitTooLateError. The transactions commit
// at once (each on its own connection); should one fail, the others' fires
// stand (each holds whole fires of its own schedules) and the failed one's
// schedules fire through the regular tick.
func (p *Prepared) Commit(ctx context.Context) error {
	if len(p.txs) == 0 {
		return nil
	}
	now := p.s.clock.Now()
	if early := p.At.Sub(now); early > 0 {
		return &CommitTooEarlyError{Early: early}
	}
	if late := now.Sub(p.At); late > MaxCommitDelay {
		if err := p.Rollback(); err != nil {
			return err
		}
		return &CommitTooLateError{Late: late}
	}
	txs := p.txs
	p.txs = nil
	errs := make([]error, len(txs))
	var wg sync.WaitGroup
	for i, tx := range txs {
		wg.Go(func() { errs[i] = tx.Commit() })
	}
	wg.Wait()
	var firstErr error
	for _, err := range errs {
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("commit prepared fires: %w", err)
		}
	}
	p.CommittedAt = p.s.clock.Now()
	p.s.wakeups.wake(p.started) // long-polling workers: new runs are committed
	return firstErr
}

// Rollback discards the prepared fires; their schedules are due again.
func (p *Prepared) Rollback() error {
	txs := p.txs
	p.txs = nil
	var firstErr error
	for _, tx := range txs {
		// A transaction whose context ended is already rolled back.
		if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) && firstErr == nil {
			firstErr = fmt.Errorf("roll back prepared fires: %w", err)
		}
	}
	return firstErr
}
