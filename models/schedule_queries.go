package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/tidelinehq/tideline/database"
)

// scheduleLock is the row lock of every locking read of schedules: FOR NO
// KEY UPDATE, not FOR UPDATE. Nothing in Tideline changes a schedule's keys
// (its ID, its namespace and schedule ID), and FOR UPDATE also blocks the
// key-share lock a foreign key takes on the schedule. With it, a run end
// that inserts its schedule's first health row (migrations 0005, 0032)
// waited for whoever held the schedule (the tick firing ahead holds
// schedules for seconds), and a delete holding the schedule, whose count
// trigger then waited for that same health row, deadlocked with the run
// end (TestFailingCountsUnderConcurrentWrites).
// FOR NO KEY UPDATE still serialises every writer of the schedule; only a
// hard delete now waits for the foreign keys' readers.
const scheduleLock = "NO KEY UPDATE"

// ClaimedSchedule is a schedule locked for processing together with the
// status of its latest run, so the overlap policy needs no extra query.
type ClaimedSchedule struct {
	Schedule        `bun:",extend"`
	LatestRunStatus *string `bun:"latest_run_status,scanonly"`
}

// InsertSchedule writes a new schedule row.
func InsertSchedule(ctx context.Context, db bun.IDB, s *Schedule) error {
	if _, err := db.NewInsert().Model(s).Exec(ctx); err != nil {
		return fmt.Errorf("insert schedule: %w", err)
	}
	return nil
}

// UpdateSchedule writes every column of s back to its row.
func UpdateSchedule(ctx context.Context, db bun.IDB, s *Schedule) error {
	if _, err := db.NewUpdate().Model(s).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update schedule: %w", err)
	}
	return nil
}

// GetSchedule reads one schedule by its namespace and user-facing ID.
// It returns an error matching sql.ErrNoRows when there is none.
func GetSchedule(ctx context.Context, db bun.IDB, namespace, scheduleID string) (*Schedule, error) {
	s := new(Schedule)
	err := db.NewSelect().Model(s).Where("s.namespace = ? AND s.schedule_id = ?", namespace, scheduleID).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", err)
	}
	return s, nil
}

// GetScheduleWithLatestRun reads a schedule and its latest run's status
// without locking (a dry run's view). It returns an error matching
// sql.ErrNoRows when there is none.
func GetScheduleWithLatestRun(ctx context.Context, db bun.IDB, namespace, scheduleID string) (*ClaimedSchedule, error) {
	s := new(ClaimedSchedule)
	if err := db.NewSelect().Model(s).Where("s.namespace = ? AND s.schedule_id = ?", namespace, scheduleID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get schedule: %w", err)
	}
	claimed := []ClaimedSchedule{*s}
	if err := readLatestRunStatus(ctx, db, claimed); err != nil {
		return nil, err
	}
	return &claimed[0], nil
}

// LockSchedule reads a schedule and its latest run status, locking the row
// until the transaction ends so concurrent changes serialise on it.
func LockSchedule(ctx context.Context, tx bun.IDB, namespace, scheduleID string) (*ClaimedSchedule, error) {
	s := new(ClaimedSchedule)
	q := tx.NewSelect().Model(s).
		Where("s.namespace = ? AND s.schedule_id = ?", namespace, scheduleID)
	q = database.Lock(q, scheduleLock)
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock schedule: %w", err)
	}
	claimed := []ClaimedSchedule{*s}
	if err := readLatestRunStatus(ctx, tx, claimed); err != nil {
		return nil, err
	}
	return &claimed[0], nil
}

// readLatestRunStatus fills in the status of each locked schedule's latest
// run with a statement of its own, issued after the lock is held. It must
// not come from a join in the locking statement: on PostgreSQL a SELECT …
// FOR UPDATE that waited for (or raced with) a lock holder returns the
// schedule's newest row version but the joined run as of the statement's
// snapshot, which predates the run the holder just started. Concurrent
// triggers then all saw "no active run" and all started one. In READ
// COMMITTED a new statement takes a new snapshot, so this one sees every
// run committed before the lock was granted.
//
// Schedules whose overlap policy is in startAnyway are left out (their
// LatestRunStatus stays nil): a fire under such a policy starts whatever
// the latest run is doing, so the claims of scheduled fires, which fire
// under the schedule's own policy, need not read it.
func readLatestRunStatus(ctx context.Context, tx bun.IDB, claimed []ClaimedSchedule, startAnyway ...string) error {
	ids := make([]string, 0, len(claimed))
	for i := range claimed {
		claimed[i].LatestRunStatus = nil
		if claimed[i].LatestRunID != nil && !slices.Contains(startAnyway, claimed[i].OverlapPolicy) {
			ids = append(ids, *claimed[i].LatestRunID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var rows []struct {
		ID     string `bun:"id"`
		Status string `bun:"status"`
	}
	err := tx.NewSelect().Model((*Run)(nil)).Column("r.id", "r.status").
		Where("r.id IN (?)", bun.In(ids)).Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("read latest run status: %w", err)
	}
	status := make(map[string]string, len(rows))
	for _, r := range rows {
		status[r.ID] = r.Status
	}
	for i := range claimed {
		if id := claimed[i].LatestRunID; id != nil {
			if st, ok := status[*id]; ok {
				claimed[i].LatestRunStatus = &st
			}
		}
	}
	return nil
}

// latestRunActive reports whether a claimed schedule's latest run is active.
func (c *ClaimedSchedule) latestRunActive() bool {
	return c.LatestRunStatus != nil && slices.Contains(ActiveRunStatuses, *c.LatestRunStatus)
}

// VacuumDueQueue reclaims the due queue's dead row versions (one per fire:
// its key is the next fire time, so no update of it can stay on its page
// the way the schedule row's does), and those of the other table the
// schedule triggers keep, namespace_schedule_counts (one or two per
// change of a schedule's status: a few rows read by every registry page).
// Not inside a transaction.
func VacuumDueQueue(ctx context.Context, db bun.IDB) error {
	if err := database.Of(db).Vacuum(ctx, db, "workflow_schedule_due"); err != nil {
		return err
	}
	return database.Of(db).Vacuum(ctx, db, "namespace_schedule_counts")
}

// VacuumHealth reclaims the dead row versions of the health rows: every
// run's end rewrites its schedule's row, and the health states' indexes
// cover the columns it changes, so no such update stays on its page. A
// simulated day of 200 schedules ending a run every 10 minutes grew the
// table from 54 MB to 111 MB of mostly dead versions where autovacuum is
// off (TestCompactionLevelsOffOverSimulatedDays); vacuumed each minute it
// is the size of its live rows. Not inside a transaction.
func VacuumHealth(ctx context.Context, db bun.IDB) error {
	return database.Of(db).Vacuum(ctx, db, "workflow_schedule_health")
}

// dueKey is a row of the due queue (workflow_schedule_due, migration
// 0012): the claim order of the schedules that can fire.
type dueKey struct {
	NextFireAt   time.Time `bun:"next_fire_at"`
	ScheduleULID string    `bun:"schedule_ulid"`
}

// claimFromDue locks up to limit schedules in the due queue's order: it
// reads a page of the queue's keys (no lock; where restricts them and
// starts them after the keyset cursor after, nil for the first page), then
// locks those schedules that still qualify —
// status active and also (with its args), which must test next_fire_at as
// the queue page did — with
// FOR NO KEY UPDATE SKIP LOCKED, and pages on until it holds limit or the queue
// runs out. Two statements instead of a join, so that no plan can take
// more locks than limit: a join planned on a table never analyzed once
// sorted all 100,000 schedules of an instant under a row lock each,
// locking the whole instant in one claim. Rows another transaction holds
// are skipped and the next page goes on past them, so replicas claim
// disjoint sets.
//
// where must put the cursor into the index's bounds, not a filter: pages
// go on past rows other transactions hold (the sibling preparer's, or a
// replica's), and a cursor the index scan only filters on makes every page
// read the range again from its start — at 1,000,000 schedules of one
// instant that was minutes a page (docs/PERFORMANCE.md, "One instant for a
// million"). A row comparison, (next_fire_at, schedule_ulid) > (?, ?), is
// an index bound on both databases; an OR of the two columns is not.
func claimFromDue(ctx context.Context, tx bun.IDB, limit int, where func(q *bun.SelectQuery, after *dueKey) *bun.SelectQuery,
	also string, args ...any) ([]ClaimedSchedule, error) {
	var out []ClaimedSchedule
	var after *dueKey
	for len(out) < limit {
		var keys []dueKey
		q := where(tx.NewSelect().TableExpr("workflow_schedule_due AS d").Column("d.next_fire_at", "d.schedule_ulid"), after)
		if err := q.OrderExpr("d.next_fire_at ASC, d.schedule_ulid ASC").Limit(int64(limit)).Scan(ctx, &keys); err != nil {
			return nil, fmt.Errorf("read the due queue: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		ids := make([]string, len(keys))
		for i, k := range keys {
			ids[i] = k.ScheduleULID
		}
		var page []ClaimedSchedule
		lock := forFiring(tx.NewSelect().Model(&page)).Where("s.id IN (?) AND s.status = ?", bun.In(ids), StatusActive)
		if also != "" {
			lock = lock.Where(also, args...)
		}
		lock = lock.OrderExpr("s.next_fire_at ASC, s.id ASC").Limit(int64(limit - len(out)))
		if err := database.Lock(lock, scheduleLock+" OF s SKIP LOCKED").Scan(ctx); err != nil {
			return nil, fmt.Errorf("lock due schedules: %w", err)
		}
		out = append(out, page...)
		if len(keys) < limit {
			break
		}
		after = &keys[len(keys)-1]
	}
	return out, nil
}

// notFired are the columns of a schedule that firing neither reads nor
// writes: the writer's free text and maps (a memo may be 64 KiB). The
// claims of the fire path leave them out, and a fire writes only
// FireColumns, so they are never overwritten with what was not read.
var notFired = []string{"memo", "search_attributes", "note"}

// forFiring leaves notFired out of a select of schedules to fire.
func forFiring(q *bun.SelectQuery) *bun.SelectQuery { return q.ExcludeColumn(notFired...) }

// ClaimDue locks up to limit active schedules whose next fire is due, oldest
// first. On PostgreSQL rows locked by another replica are skipped, so every
// replica claims a disjoint set; the due queue's key serves it. The latest
// run's status is read for every schedule whose policy is not in
// startAnyway (see readLatestRunStatus).
func ClaimDue(ctx context.Context, tx bun.IDB, now time.Time, limit int, startAnyway []string) ([]ClaimedSchedule, error) {
	out, err := claimFromDue(ctx, tx, limit, func(q *bun.SelectQuery, after *dueKey) *bun.SelectQuery {
		q = q.Where("d.next_fire_at <= ?", now)
		if after != nil {
			q = q.Where("(d.next_fire_at, d.schedule_ulid) > (?, ?)", after.NextFireAt, after.ScheduleULID)
		}
		return q
	}, "s.next_fire_at <= ?", now)
	if err != nil {
		return nil, fmt.Errorf("claim due schedules: %w", err)
	}
	return out, readLatestRunStatus(ctx, tx, out, startAnyway...)
}

// ClaimAt locks up to limit active schedules due exactly at the instant at
// (after afterID, in id order) whose fire cannot turn out differently if it
// is decided now rather than at the instant: nothing buffered, and a policy
// in startAnyway or no active latest run (a finished run stays finished,
// and only a fire of the locked schedule can replace it). PostgreSQL only:
// the rows stay locked until the caller's transaction ends.
func ClaimAt(ctx context.Context, tx bun.IDB, at time.Time, afterID string, limit int, startAnyway []string) ([]ClaimedSchedule, error) {
	// The latest run is looked up by a correlated subquery on its primary
	// key, not a join: right after an instant has added 100,000 runs, the
	// planner's statistics still see a small runs table, and a join planned
	// on them scanned every run for each schedule (a claim ran for minutes).
	// Under the OR the subquery stays a per-row primary-key probe, made only
	// for schedules whose policy does not start anyway.
	out, err := claimFromDue(ctx, tx, limit, func(q *bun.SelectQuery, after *dueKey) *bun.SelectQuery {
		// One instant: the cursor is an ID alone, in the index after the
		// instant's equality.
		from := afterID
		if after != nil {
			from = max(from, after.ScheduleULID)
		}
		return q.Where("d.next_fire_at = ? AND d.schedule_ulid > ?", at, from)
	}, "s.next_fire_at = ? AND s.buffer_depth = 0 AND (s.overlap_policy IN (?) OR s.latest_run_id IS NULL OR NOT EXISTS (SELECT 1 FROM workflow_runs AS r WHERE r.id = s.latest_run_id AND r.status IN (?)))",
		at, bun.In(startAnyway), bun.In(ActiveRunStatuses))
	if err != nil {
		return nil, fmt.Errorf("claim schedules due at %s: %w", at.UTC().Format(time.RFC3339Nano), err)
	}
	if err := readLatestRunStatus(ctx, tx, out, startAnyway...); err != nil {
		return nil, err
	}
	// The lock query above may have judged a row from before its lock was
	// taken (see readLatestRunStatus); a row that no longer qualifies stays
	// locked, unprocessed, and fires through the regular tick.
	return slices.DeleteFunc(out, func(c ClaimedSchedule) bool {
		return c.BufferDepth > 0 || (!slices.Contains(startAnyway, c.OverlapPolicy) && c.latestRunActive())
	}), nil
}

// NextFireInstant is the earliest instant in (after, until] at which an
// active schedule is due; ok is false when there is none. The due queue's
// key answers it by reading one entry.
func NextFireInstant(ctx context.Context, db bun.IDB, after, until time.Time) (at time.Time, ok bool, err error) {
	var next []time.Time
	err = db.NewSelect().TableExpr("workflow_schedule_due AS d").ColumnExpr("d.next_fire_at").
		Where("d.next_fire_at > ? AND d.next_fire_at <= ?", after, until).
		OrderExpr("d.next_fire_at ASC").Limit(1).
		Scan(ctx, &next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next fire instant: %w", err)
	}
	if len(next) == 0 {
		return time.Time{}, false, nil
	}
	return next[0], true, nil
}

// CountDueAt counts the active schedules due exactly at the instant at.
func CountDueAt(ctx context.Context, db bun.IDB, at time.Time) (int, error) {
	n, err := db.NewSelect().TableExpr("workflow_schedule_due AS d").Where("d.next_fire_at = ?", at).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count schedules due at %s: %w", at.UTC().Format(time.RFC3339Nano), err)
	}
	return int(n), nil
}

// ClaimDrainable locks up to limit active schedules that hold buffered fires
// and whose latest run has finished (or never existed).
func ClaimDrainable(ctx context.Context, tx bun.IDB, limit int) ([]ClaimedSchedule, error) {
	var out []ClaimedSchedule
	// A primary-key probe of the latest run, not a join (see ClaimAt).
	q := forFiring(tx.NewSelect().Model(&out)).
		Where("s.status = ? AND s.buffer_depth > 0", StatusActive).
		Where("(s.latest_run_id IS NULL OR NOT EXISTS (SELECT 1 FROM workflow_runs AS r WHERE r.id = s.latest_run_id AND r.status IN (?)))", bun.In(ActiveRunStatuses)).
		OrderExpr("s.id ASC").
		Limit(int64(limit))
	q = database.Lock(q, scheduleLock+" SKIP LOCKED")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim drainable schedules: %w", err)
	}
	if err := readLatestRunStatus(ctx, tx, out); err != nil {
		return nil, err
	}
	// As in ClaimAt: re-judge each row by what is true now that it is locked.
	return slices.DeleteFunc(out, func(c ClaimedSchedule) bool {
		return c.Status != StatusActive || c.BufferDepth == 0 || c.latestRunActive()
	}), nil
}

// ScheduleFilter selects schedules for listing. Statuses empty means all.
type ScheduleFilter struct {
	Namespace    string
	Statuses     []string
	Text         string // substring of schedule_id, workflow type or note
	WorkflowType string
	LabelKey     string
	LabelValue   string
	AfterID      string // keyset cursor: schedule_id of the last row of the previous page
	Limit        int
	// Conditions are the health rules; every list reads each row's rank
	// (Schedule.HealthRank) from them.
	Conditions *HealthConditions
	// HealthRank, when set, keeps the schedules of that rank: a health
	// state (the index of its rule), or len(Conditions.Rules) for the rest.
	HealthRank *int
	// ByNextFire orders by next fire, soonest first, schedules that never
	// fire again (paused, deleted, exhausted) last, then by ID; the keyset
	// cursor is then (AfterNextFire, AfterID), AfterNextFire nil for a
	// cursor among those that never fire.
	ByNextFire    bool
	AfterNextFire *time.Time
	// ByHealthRank orders by rank, then by ID; the keyset cursor is then
	// (AfterRank, AfterID).
	ByHealthRank bool
	AfterRank    int64
	// EmptyRanks are ranks known to hold none of the listed schedules (a
	// count of zero read for the same view): the health order skips their
	// statements. Later ranks still exclude them, so a schedule that
	// entered one meanwhile is not listed under a rank it is not in.
	EmptyRanks []int
}

// HealthRule is one health state's rule in SQL, over the schedule s, its
// health row h and its latest run lr (both LEFT JOINed: NULL when there is
// none). The rules themselves are the domain's (scheduling/healthstate.go).
type HealthRule struct {
	// Where is the state's condition, with its arguments.
	Where func(db bun.IDB) (string, []any)
	// From is a subquery of the IDs (s.id) of the schedules that may be in
	// the state, served by an index: a state holds a few schedules of
	// many, and a list or count of them starts from these instead of
	// walking every schedule of the namespace.
	From func(namespace string) (string, []any)
}

// HealthConditions are the health rules in order of urgency: a schedule's
// rank is the index of the first rule that holds, len(Rules) when none.
type HealthConditions struct {
	Rules []HealthRule
}

// rank is the rank expression (CASE WHEN rule 0 THEN 0 … ELSE n END).
func (c *HealthConditions) rank(db bun.IDB) (string, []any) {
	var b strings.Builder
	var args []any
	b.WriteString("(CASE")
	for i, r := range c.Rules {
		cond, a := r.Where(db)
		fmt.Fprintf(&b, " WHEN %s THEN %d", cond, i)
		args = append(args, a...)
	}
	fmt.Fprintf(&b, " ELSE %d END)", len(c.Rules))
	return b.String(), args
}

// inRank keeps q's schedules of one rank: those the rule's index finds
// (for a state) for which its rule holds and no earlier rule does. It is
// the rank expression's "= rank" spelled out rule by rule, because that is
// what PostgreSQL can estimate: it guessed "CASE … END = 4" kept 0.5 % of
// the rows, and sorted the whole namespace for a page of the rest (26 ms at
// 20,000 schedules) instead of walking the ID key for 51 (1.5 ms).
func (c *HealthConditions) inRank(db bun.IDB, q *bun.SelectQuery, namespace string, rank int) *bun.SelectQuery {
	if rank < len(c.Rules) {
		if c.Rules[rank].From != nil {
			from, args := c.Rules[rank].From(namespace)
			q = q.Where("s.id IN ("+from+")", args...)
		}
		cond, args := c.Rules[rank].Where(db)
		q = q.Where(cond, args...)
	}
	for _, r := range c.Rules[:min(rank, len(c.Rules))] {
		cond, args := r.Where(db)
		q = q.Where("("+cond+") IS NOT TRUE", args...)
	}
	return q
}

// scheduleWithHealth is a list row: the schedule and, joined in the same
// statement, its health row (absent until a run finished).
type scheduleWithHealth struct {
	Schedule            `bun:",extend"`
	ConsecutiveFailures *int64      `bun:"h_consecutive_failures,scanonly"`
	FailuresCount       *int64      `bun:"h_failures_count,scanonly"`
	PausedAtFailures    *int64      `bun:"h_paused_at_failures,scanonly"`
	LastRunID           *string     `bun:"h_last_run_id,scanonly"`
	LastRunStatus       *string     `bun:"h_last_run_status,scanonly"`
	LastRunFinishedAt   *time.Time  `bun:"h_last_run_finished_at,scanonly"`
	LastRunError        *string     `bun:"h_last_run_error,scanonly"`
	RecentRuns          []RecentRun `bun:"h_recent_runs,type:jsonb,scanonly"`
	LatestStatus        *string     `bun:"lr_status,scanonly"`
	LatestCreatedAt     *time.Time  `bun:"lr_created_at,scanonly"`
	LatestAvailableAt   *time.Time  `bun:"lr_available_at,scanonly"`
	LatestQueue         *string     `bun:"lr_queue,scanonly"`
	Rank                *int64      `bun:"h_rank,scanonly"`
	// HasPending: run ends not folded into the health row yet.
	HasPending bool `bun:"h_pending,scanonly"`
}

func (r *scheduleWithHealth) schedule() Schedule {
	s := r.Schedule
	deref := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	s.Health = ScheduleHealth{ScheduleULID: s.ID, ConsecutiveFailures: deref(r.ConsecutiveFailures), FailuresCount: deref(r.FailuresCount),
		PausedAtFailures: deref(r.PausedAtFailures), LastRunID: r.LastRunID, LastRunStatus: r.LastRunStatus,
		LastRunFinishedAt: r.LastRunFinishedAt, LastRunError: r.LastRunError, RecentRuns: r.RecentRuns}
	if s.Health.RecentRuns == nil {
		s.Health.RecentRuns = []RecentRun{}
	}
	if r.Rank != nil {
		s.HealthRank = *r.Rank
	}
	if r.LatestStatus != nil && r.LatestCreatedAt != nil {
		s.LatestRun = &LatestRunState{Status: *r.LatestStatus, CreatedAt: *r.LatestCreatedAt, AvailableAt: r.LatestAvailableAt}
		if r.LatestQueue != nil {
			s.LatestRun.Queue = *r.LatestQueue
		}
	}
	return s
}

// ListSchedules returns one page ordered by schedule_id (the unique key
// within a namespace makes it a stable keyset), by next fire, or by health
// rank, plus whether more follow. Each schedule comes with its health,
// joined in the same statement: a second query for the page's health cost
// more than the page itself.
//
// The health order is read rank by rank, each rank a keyset query of its
// own ordered by ID: the states' ranks start from their rule's index (the
// failing health rows, the pending or unfinished runs, the due queue) and
// the rest walks the (namespace, schedule_id) key, so no page sorts the
// namespace's schedules by a computed rank (BenchmarkRegistryHealthOrder).
func ListSchedules(ctx context.Context, db bun.IDB, f ScheduleFilter) ([]Schedule, bool, error) {
	search, err := searchConditions(ctx, db, f)
	if err != nil {
		return nil, false, err
	}
	var rows []scheduleWithHealth
	if f.ByHealthRank {
		for rank := int(f.AfterRank); rank <= len(f.Conditions.Rules) && len(rows) <= f.Limit; rank++ {
			if f.HealthRank != nil && *f.HealthRank != rank || slices.Contains(f.EmptyRanks, rank) {
				continue
			}
			after := ""
			if rank == int(f.AfterRank) {
				after = f.AfterID
			}
			page, err := listPage(ctx, db, f, search, &rank, after, f.Limit+1-len(rows))
			if err != nil {
				return nil, false, err
			}
			rows = append(rows, page...)
		}
	} else {
		if rows, err = listPage(ctx, db, f, search, f.HealthRank, f.AfterID, f.Limit+1); err != nil {
			return nil, false, err
		}
	}
	more := len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	out := make([]Schedule, len(rows))
	var ids []string
	for i := range rows {
		out[i] = rows[i].schedule()
		if rows[i].HasPending {
			ids = append(ids, out[i].ID)
		}
	}
	// Run ends not folded into the health rows yet (the loop folds them
	// every pass): a second read only when the page has some. The page's
	// statement only probes for them; a second statement for every page
	// cost a fifth of the page on PostgreSQL.
	if len(ids) > 0 {
		pending, err := newestPending(ctx, db, ids)
		if err != nil {
			return nil, false, err
		}
		for i := range out {
			out[i].Health.merge(pending[out[i].ID])
		}
	}
	return out, more, nil
}

// condition is a WHERE condition with its arguments.
type condition struct {
	where string
	args  []any
}

// searchFilter is a list's text and label conditions.
type searchFilter struct{ text, label []condition }

// searchConditions are the label filter's and the text search's
// conditions of f, decided once for all the statements of a page (the
// health order reads one per rank): on SQLite deciding them reads the
// side tables (database.Dialect.ScheduleLabel).
func searchConditions(ctx context.Context, db bun.IDB, f ScheduleFilter) (searchFilter, error) {
	var out searchFilter
	if f.Text != "" {
		lowered := strings.ToLower(f.Text)
		like := "%" + escapeLike(lowered) + "%"
		out.text = append(out.text, condition{"(LOWER(s.schedule_id) LIKE ? ESCAPE '\\' OR LOWER(s.note) LIKE ? ESCAPE '\\' OR LOWER(" +
			database.Of(db).JSONText("s.action", "workflow_type") + ") LIKE ? ESCAPE '\\')", []any{like, like, like}})
		where, args, err := database.Of(db).ScheduleTextCandidates(ctx, db, lowered)
		if err != nil {
			return out, fmt.Errorf("list schedules: %w", err)
		}
		if where != "" {
			out.text = append(out.text, condition{where, args})
		}
	}
	if f.LabelKey != "" {
		where, args, err := database.Of(db).ScheduleLabel(ctx, db, f.Namespace, f.LabelKey, f.LabelValue)
		if err != nil {
			return out, fmt.Errorf("list schedules: %w", err)
		}
		out.label = append(out.label, condition{where, args})
	}
	return out, nil
}

// listPage reads up to limit rows of f past afterID in f's order (ID or
// next fire), of one health rank when rank is set; search are f's text
// and label conditions (searchConditions).
func listPage(ctx context.Context, db bun.IDB, f ScheduleFilter, search searchFilter, rank *int, afterID string, limit int) ([]scheduleWithHealth, error) {
	var rows []scheduleWithHealth
	q := db.NewSelect().Model(&rows).ColumnExpr("s.*").
		ColumnExpr("h.consecutive_failures AS h_consecutive_failures, h.failures_count AS h_failures_count, h.paused_at_failures AS h_paused_at_failures").
		ColumnExpr("h.last_run_id AS h_last_run_id, h.last_run_status AS h_last_run_status, h.last_run_finished_at AS h_last_run_finished_at").
		ColumnExpr("h.last_run_error AS h_last_run_error, h.recent_runs AS h_recent_runs").
		ColumnExpr("EXISTS (SELECT 1 FROM workflow_schedule_health_pending AS hp WHERE hp.schedule_ulid = s.id) AS h_pending").
		ColumnExpr("lr.status AS lr_status, lr.created_at AS lr_created_at, lr.available_at AS lr_available_at, lr.queue AS lr_queue").
		Join("LEFT JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id").
		Join("LEFT JOIN workflow_runs AS lr ON lr.id = s.latest_run_id").
		Where("s.namespace = ?", f.Namespace)
	if len(f.Statuses) > 0 {
		q = q.Where("s.status IN (?)", bun.In(f.Statuses))
	}
	for _, c := range search.text {
		q = q.Where(c.where, c.args...)
	}
	if f.WorkflowType != "" {
		q = q.Where(database.Of(db).JSONText("s.action", "workflow_type")+" = ?", f.WorkflowType)
	}
	for _, c := range search.label {
		q = q.Where(c.where, c.args...)
	}
	if f.Conditions != nil {
		expr, args := f.Conditions.rank(db)
		q = q.ColumnExpr(expr+" AS h_rank", args...)
		if rank != nil {
			q = f.Conditions.inRank(db, q, f.Namespace, *rank)
		}
	}
	if f.ByNextFire {
		// NULLs last on both databases (PostgreSQL sorts them first in
		// ascending order, SQLite last), spelled out as a leading key.
		switch {
		case afterID != "" && f.AfterNextFire != nil:
			q = q.Where("(s.next_fire_at IS NULL OR s.next_fire_at > ? OR (s.next_fire_at = ? AND s.schedule_id > ?))",
				*f.AfterNextFire, *f.AfterNextFire, afterID)
		case afterID != "":
			q = q.Where("s.next_fire_at IS NULL AND s.schedule_id > ?", afterID)
		}
		q = q.OrderExpr("CASE WHEN s.next_fire_at IS NULL THEN 1 ELSE 0 END ASC, s.next_fire_at ASC, s.schedule_id ASC")
	} else {
		if afterID != "" {
			q = q.Where("s.schedule_id > ?", afterID)
		}
		q = q.OrderExpr("s.schedule_id ASC")
	}
	if err := q.Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return rows, nil
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// InsertScheduleEvent appends one audit event.
func InsertScheduleEvent(ctx context.Context, db bun.IDB, e *ScheduleEvent) error {
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("insert schedule event: %w", err)
	}
	return nil
}

// EventQuery selects one keyset page of a schedule's audit stream.
type EventQuery struct {
	// NewestFirst orders by descending sequence; Before (when > 0) then
	// bounds the page. Oldest first, After bounds it.
	NewestFirst bool
	After       int64
	Before      int64
	EventType   string // "" for every type
	Limit       int
}

// ListScheduleEvents returns up to q.Limit events past the cursor in the
// page's order, plus whether more follow. The unique (schedule, sequence)
// index, or for a type filter the type index of migration 0011, makes
// every page cost the same, however deep. Payloads are as stored (see
// ScheduleEvent): the service serves them.
func ListScheduleEvents(ctx context.Context, db bun.IDB, scheduleULID string, q EventQuery) ([]ScheduleEvent, bool, error) {
	var out []ScheduleEvent
	sel := db.NewSelect().Model(&out).Where("se.workflow_schedule_id = ?", scheduleULID)
	if q.EventType != "" {
		sel = sel.Where("se.event_type = ?", q.EventType)
		if q.EventType != FireEventType {
			sel = sel.Where(typeIndexPredicate)
		}
	}
	if q.NewestFirst {
		if q.Before > 0 {
			sel = sel.Where("se.sequence < ?", q.Before)
		}
		sel = sel.OrderExpr("se.sequence DESC")
	} else {
		sel = sel.Where("se.sequence > ?", q.After).OrderExpr("se.sequence ASC")
	}
	if err := sel.Limit(int64(q.Limit + 1)).Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("list schedule events: %w", err)
	}
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

// ListVersionEvents returns the ScheduleCreated and ScheduleUpdated events
// of some schedules, by schedule and sequence: their versions. The
// predicate repeats the partial index's own (migration 0011), which is what
// lets SQLite use it; the fires, most of a stream, are never read.
func ListVersionEvents(ctx context.Context, db bun.IDB, scheduleULIDs []string) ([]ScheduleEvent, error) {
	var out []ScheduleEvent
	if len(scheduleULIDs) == 0 {
		return out, nil
	}
	err := db.NewSelect().Model(&out).Where("se.workflow_schedule_id IN (?)", bun.In(scheduleULIDs)).
		Where("se.event_type IN ('ScheduleCreated', 'ScheduleUpdated')").Where(typeIndexPredicate).
		OrderExpr("se.workflow_schedule_id, se.sequence").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list version events: %w", err)
	}
	return out, nil
}

// FireEventType is the audit event type of a fire (ScheduleTriggered): the
// one type the type index of migration 0011 leaves out.
const FireEventType = "ScheduleTriggered"

// typeIndexPredicate repeats the type index's WHERE clause (migration
// 0011). SQLite uses a partial index only when the query's own WHERE
// clause contains the index's predicate as a term: it cannot prove that
// event_type = 'ScheduleCreated' implies event_type <> 'ScheduleTriggered',
// and without the term a type filter walked the schedule's whole stream by
// its (schedule, sequence) key (3.7 s at 2,000,000 events, issue 36).
// PostgreSQL proves the implication itself; the term costs it nothing.
const typeIndexPredicate = "se.event_type <> '" + FireEventType + "'"

// CountScheduleEvents counts a schedule's events of the given types, none
// of which may be FireEventType: the count reads the type index only, so it
// costs what the schedule's non-fire events number, however many fires its
// stream holds. (The whole stream needs no count: its sequences are
// gap-free, 1..last_sequence; its fires are the schedule's fires_count.)
func CountScheduleEvents(ctx context.Context, db bun.IDB, scheduleULID string, eventTypes ...string) (int64, error) {
	if len(eventTypes) == 0 || slices.Contains(eventTypes, FireEventType) {
		return 0, fmt.Errorf("count schedule events: %v: only types of the type index can be counted", eventTypes)
	}
	n, err := db.NewSelect().Model((*ScheduleEvent)(nil)).
		Where("se.workflow_schedule_id = ? AND se.event_type IN (?)", scheduleULID, bun.In(eventTypes)).
		Where(typeIndexPredicate).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count schedule events: %w", err)
	}
	return int64(n), nil
}

// InsertScheduleEvents appends many audit events in one statement; on
// PostgreSQL one typed array per column through unnest (see InsertRuns).
func InsertScheduleEvents(ctx context.Context, db bun.IDB, list []*ScheduleEvent) error {
	if len(list) == 0 {
		return nil
	}
	if !database.Of(db).TypedArrays() {
		if _, err := db.NewInsert().Model(&list).Exec(ctx); err != nil {
			return fmt.Errorf("insert schedule events: %w", err)
		}
		return nil
	}
	n := len(list)
	id, scheduleULID, eventType, payload := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	instanceID, runID, outcome, policy := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	sequence, recordedAt := make([]int64, n), make([]time.Time, n)
	triggerNumber, occurrence := make([]*int64, n), make([]*time.Time, n)
	for i, e := range list {
		id[i], scheduleULID[i], eventType[i], payload[i] = e.ID, e.WorkflowScheduleID, e.EventType, string(e.Payload)
		instanceID[i], runID[i], sequence[i], recordedAt[i] = e.WorkflowInstanceID, e.WorkflowRunID, e.Sequence, e.RecordedAt
		triggerNumber[i], occurrence[i], outcome[i], policy[i] = e.TriggerNumber, e.OccurrenceTime, e.TriggerOutcome, e.EffectiveOverlapPolicy
	}
	_, err := db.NewRaw(`INSERT INTO workflow_schedule_history_events (id, workflow_schedule_id, event_type, payload,
			workflow_instance_id, workflow_run_id, sequence, recorded_at,
			trigger_number, occurrence_time, trigger_outcome, effective_overlap_policy)
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::jsonb[], ?::text[], ?::text[], ?::bigint[], ?::timestamptz[],
			?::bigint[], ?::timestamptz[], ?::text[], ?::text[])`,
		pgdialect.Array(id), pgdialect.Array(scheduleULID), pgdialect.Array(eventType), pgdialect.Array(payload),
		pgdialect.Array(instanceID), pgdialect.Array(runID), pgdialect.Array(sequence), pgdialect.Array(recordedAt),
		pgdialect.Array(triggerNumber), pgdialect.Array(occurrence), pgdialect.Array(outcome), pgdialect.Array(policy)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("insert schedule events: %w", err)
	}
	return nil
}

// FireColumns are the columns a tick can change on a schedule: firing,
// skipping, buffering, draining, the max_runs soft delete, the audit
// sequence and the next fire. A tick batch writes only these; the static
// ones (spec, action, labels, memo…) would be most of the statement.
var FireColumns = []string{
	"status", "remaining_actions", "fires_count", "start_failures_count", "skipped_trigger_count",
	"last_skip_reason", "last_skipped_at", "next_fire_at", "next_nominal_at", "last_fired_at",
	"latest_instance_id", "latest_run_id", "buffered_actions", "buffer_depth", "actions_count",
	"last_sequence", "deleted_at", "updated_at",
}

// UpdateSchedules writes the FireColumns of many schedules back in one
// statement: on PostgreSQL UPDATE … FROM unnest of one typed array per
// column (see InsertRuns; its SET list is FireColumns, spelled out for
// the casts), elsewhere bun's UPDATE … FROM (VALUES …). The IDs are given
// a second time as "s.id = ANY(…)": PostgreSQL knows how many rows unnest
// yields, and for a batch of 500 of 10,000 schedules it planned a hash
// join over a scan of the whole table (8 of the statement's 18 ms, and
// more as the table grows); the ANY makes it an index probe per ID.
func UpdateSchedules(ctx context.Context, db bun.IDB, list []*Schedule) error {
	if len(list) == 0 {
		return nil
	}
	if !database.Of(db).TypedArrays() {
		if _, err := db.NewUpdate().Model(&list).Column(FireColumns...).Bulk().Exec(ctx); err != nil {
			return fmt.Errorf("update schedules: %w", err)
		}
		return nil
	}
	n := len(list)
	var (
		id, status, buffered                                   = make([]string, n), make([]string, n), make([]string, n)
		skipReason, latestInstance, latestRun                  = make([]*string, n), make([]*string, n), make([]*string, n)
		remaining                                              = make([]*int64, n)
		fires, startFailures, skipped, depth, sequence, count  = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		skippedAt, nextFire, nextNominal, lastFired, deletedAt = make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
		updatedAt                                              = make([]time.Time, n)
	)
	for i, s := range list {
		b, err := json.Marshal(nonNil(s.BufferedActions))
		if err != nil {
			return fmt.Errorf("update schedules: encode buffered actions: %w", err)
		}
		id[i], status[i], buffered[i], count[i] = s.ID, s.Status, string(b), s.ActionsCount
		skipReason[i], latestInstance[i], latestRun[i], remaining[i] = s.LastSkipReason, s.LatestInstanceID, s.LatestRunID, s.RemainingActions
		fires[i], startFailures[i], skipped[i], depth[i], sequence[i] = s.FiresCount, s.StartFailuresCount, s.SkippedTriggerCount, int64(s.BufferDepth), s.LastSequence
		skippedAt[i], nextFire[i], nextNominal[i], lastFired[i], deletedAt[i] = s.LastSkippedAt, s.NextFireAt, s.NextNominalAt, s.LastFiredAt, s.DeletedAt
		updatedAt[i] = s.UpdatedAt
	}
	_, err := db.NewRaw(`UPDATE workflow_schedules AS s SET status = v.status, remaining_actions = v.remaining_actions,
			fires_count = v.fires_count, start_failures_count = v.start_failures_count, skipped_trigger_count = v.skipped_trigger_count,
			last_skip_reason = v.last_skip_reason, last_skipped_at = v.last_skipped_at, next_fire_at = v.next_fire_at,
			next_nominal_at = v.next_nominal_at, last_fired_at = v.last_fired_at, latest_instance_id = v.latest_instance_id,
			latest_run_id = v.latest_run_id, buffered_actions = v.buffered_actions, buffer_depth = v.buffer_depth,
			actions_count = v.actions_count, last_sequence = v.last_sequence, deleted_at = v.deleted_at, updated_at = v.updated_at
		FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::text[], ?::timestamptz[],
			?::timestamptz[], ?::timestamptz[], ?::timestamptz[], ?::text[], ?::text[], ?::jsonb[], ?::int[], ?::bigint[],
			?::bigint[], ?::timestamptz[], ?::timestamptz[])
			AS v (id, status, remaining_actions, fires_count, start_failures_count, skipped_trigger_count, last_skip_reason,
			last_skipped_at, next_fire_at, next_nominal_at, last_fired_at, latest_instance_id, latest_run_id, buffered_actions,
			buffer_depth, actions_count, last_sequence, deleted_at, updated_at)
		WHERE s.id = v.id AND s.id = ANY(?::text[])`,
		pgdialect.Array(id), pgdialect.Array(status), pgdialect.Array(remaining), pgdialect.Array(fires),
		pgdialect.Array(startFailures), pgdialect.Array(skipped), pgdialect.Array(skipReason), pgdialect.Array(skippedAt),
		pgdialect.Array(nextFire), pgdialect.Array(nextNominal), pgdialect.Array(lastFired), pgdialect.Array(latestInstance),
		pgdialect.Array(latestRun), pgdialect.Array(buffered), pgdialect.Array(depth), pgdialect.Array(count),
		pgdialect.Array(sequence), pgdialect.Array(deletedAt), pgdialect.Array(updatedAt), pgdialect.Array(id)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("update schedules: %w", err)
	}
	return nil
}

// ClaimPauseEnded locks up to limit paused schedules whose paused_until is
// at or before now. The rows are read again by a statement of its own once
// locked (see readLatestRunStatus for why a locking read's answer can be
// stale), and only those still paused with an ended pause are returned: an
// operator's resume or a new pause committed meanwhile wins.
func ClaimPauseEnded(ctx context.Context, tx bun.IDB, now time.Time, limit int) ([]Schedule, error) {
	var ids []string
	q := pauseEnded(tx, now).Column("s.id").OrderExpr("s.paused_until ASC, s.id ASC").Limit(int64(limit))
	q = database.Lock(q, scheduleLock+" SKIP LOCKED")
	if err := q.Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("claim ended pauses: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var out []Schedule
	err := pauseEnded(tx, now).Model(&out).Where("s.id IN (?)", bun.In(ids)).OrderExpr("s.id ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read claimed pauses: %w", err)
	}
	return out, nil
}

// pauseEnded selects the paused schedules whose paused_until has come.
func pauseEnded(db bun.IDB, now time.Time) *bun.SelectQuery {
	return timedPauses(db).Where("s.paused_until <= ?", now)
}

// timedPauses selects the paused schedules whose pause has an end.
func timedPauses(db bun.IDB) *bun.SelectQuery {
	return db.NewSelect().Model((*Schedule)(nil)).Where("s.status = ? AND s.paused_until IS NOT NULL", StatusPaused)
}

// ScheduleCounts are a namespace's live schedules (active and paused) by
// status and health state, for the registry's filter chips.
type ScheduleCounts struct {
	All    int64 `bun:"all_count"`
	Active int64 `bun:"active_count"`
	Paused int64 `bun:"paused_count"`
	// Failing is kept with the status counts (migration 0032), exact.
	Failing int64 `bun:"failing_count"`
	// Stuck, Overdue and Skipping count the health states of those names
	// (CountHealthRank); Stale the overdue ones more than the grace past
	// their fire time, which a running loop would have fired: no loop may
	// be running. They change with the time alone, so they are counted
	// per view, each up to a cap: when its Capped flag is set, the state
	// holds more schedules than the count says (the count is the cap).
	Stuck    int64 `bun:"-"`
	Overdue  int64 `bun:"-"`
	Skipping int64 `bun:"-"`
	Stale    int64 `bun:"-"`

	StuckCapped, OverdueCapped, SkippingCapped, StaleCapped bool `bun:"-"`
}

// CountHealthRank counts a namespace's live schedules of one health rank
// (a state: rank < len(c.Rules)), and when also is set only those that
// meet it too. It starts from the rule's index, as a list of the rank
// does, and counts what that list pages through, up to limit: capped says
// more than limit match (n is limit then). The limit bounds the rows the
// count reads past those in the state, not the candidates the index gives
// that turn out not to be in it.
func CountHealthRank(ctx context.Context, db bun.IDB, namespace string, c *HealthConditions, rank int, limit int64, also string, args ...any) (n int64, capped bool, err error) {
	q := db.NewSelect().TableExpr("workflow_schedules AS s").ColumnExpr("1").
		Join("LEFT JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id").
		Join("LEFT JOIN workflow_runs AS lr ON lr.id = s.latest_run_id").
		Where("s.namespace = ? AND s.status IN (?)", namespace, bun.In([]string{StatusActive, StatusPaused}))
	q = c.inRank(db, q, namespace, rank)
	if also != "" {
		q = q.Where(also, args...)
	}
	err = db.NewSelect().TableExpr("(?) AS capped", q.Limit(limit+1)).ColumnExpr("count(*)").Scan(ctx, &n)
	if err != nil {
		return 0, false, fmt.Errorf("count schedules of health rank %d: %w", rank, err)
	}
	if n > limit {
		return limit, true, nil
	}
	return n, false, nil
}

// CountSchedules counts a namespace's live schedules by status, and the
// failing ones. The counts are kept by triggers on workflow_schedules
// (migration 0025) and workflow_schedule_health (0032) in the
// transactions that change the rows, so this reads the namespace's few
// rows of namespace_schedule_counts whatever the number of schedules (a
// scan of the namespace's rows took 81 ms at 100,000 on PostgreSQL). On
// PostgreSQL concurrent writers may leave a part each beside part 0; the
// sum is the count.
func CountSchedules(ctx context.Context, db bun.IDB, namespace string) (ScheduleCounts, error) {
	var c ScheduleCounts
	err := db.NewRaw(`SELECT COALESCE(SUM(c.active), 0) AS active_count, COALESCE(SUM(c.paused), 0) AS paused_count,
		COALESCE(SUM(c.failing), 0) AS failing_count
		FROM namespace_schedule_counts AS c WHERE c.namespace = ?`, namespace).Scan(ctx, &c)
	if err != nil {
		return c, fmt.Errorf("count schedules: %w", err)
	}
	c.All = c.Active + c.Paused
	return c, nil
}

// nonNil keeps an empty list a JSON array ("[]", as the columns' default)
// rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// SaveScheduleSecret writes a schedule's target secret, replacing any.
func SaveScheduleSecret(ctx context.Context, db bun.IDB, s *ScheduleSecret) error {
	_, err := db.NewInsert().Model(s).On("CONFLICT (schedule_ulid) DO UPDATE").
		Set("target_secret = EXCLUDED.target_secret, updated_at = EXCLUDED.updated_at").Exec(ctx)
	if err != nil {
		return fmt.Errorf("save schedule secret: %w", err)
	}
	return nil
}

// DeleteScheduleSecret removes a schedule's target secret.
func DeleteScheduleSecret(ctx context.Context, db bun.IDB, scheduleULID string) error {
	if _, err := db.NewDelete().Model((*ScheduleSecret)(nil)).Where("schedule_ulid = ?", scheduleULID).Exec(ctx); err != nil {
		return fmt.Errorf("delete schedule secret: %w", err)
	}
	return nil
}

// ScheduleSecrets reads the target secrets of schedules, by schedule ULID.
func ScheduleSecrets(ctx context.Context, db bun.IDB, ulids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ulids) == 0 {
		return out, nil
	}
	var rows []ScheduleSecret
	if err := db.NewSelect().Model(&rows).Where("ss.schedule_ulid IN (?)", bun.In(ulids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read schedule secrets: %w", err)
	}
	for _, r := range rows {
		out[r.ScheduleULID] = r.TargetSecret
	}
	return out, nil
}

// SchedulesByID reads schedules by ULID without locking them, deleted ones
// included (the HTTP executor reads the targets of the runs it claimed).
func SchedulesByID(ctx context.Context, db bun.IDB, ulids []string) (map[string]Schedule, error) {
	out := map[string]Schedule{}
	if len(ulids) == 0 {
		return out, nil
	}
	var rows []Schedule
	if err := db.NewSelect().Model(&rows).Column("s.id", "s.namespace", "s.schedule_id", "s.status", "s.action").
		Where("s.id IN (?)", bun.In(ulids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// ScheduleZones reads the time zones of schedules by ULID (deleted ones
// included): the runs list shows each run's times in its schedule's zone.
func ScheduleZones(ctx context.Context, db bun.IDB, ulids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ulids) == 0 {
		return out, nil
	}
	var rows []Schedule
	if err := db.NewSelect().Model(&rows).Column("s.id", "s.spec").Where("s.id IN (?)", bun.In(ulids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read schedule zones: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Spec.Timezone
	}
	return out, nil
}
