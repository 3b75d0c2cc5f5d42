package models

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/tidelinehq/tideline/database"
)

// InsertRun creates a run unless its (namespace, instance_id) exists
// already; inserted is false in that case. This unique key is what makes a
// second start of the same occurrence impossible, across replicas too.
func InsertRun(ctx context.Context, db bun.IDB, r *StartedRun) (inserted bool, err error) {
	n, err := InsertRuns(ctx, db, []*StartedRun{r})
	return n == 1, err
}

// UpdateRun writes every column of r back to its row.
func UpdateRun(ctx context.Context, db bun.IDB, r *Run) error {
	if _, err := db.NewUpdate().Model(r).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update run: %w", err)
	}
	return nil
}

// GetStartedRun reads a run in a namespace with its provenance;
// sql.ErrNoRows when absent.
func GetStartedRun(ctx context.Context, db bun.IDB, namespace, runID string) (*StartedRun, error) {
	r := new(StartedRun)
	if err := db.NewSelect().Model(r).Where("r.namespace = ? AND r.id = ?", namespace, runID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	return r, nil
}

// GetRun reads a run in a namespace; sql.ErrNoRows when absent.
func GetRun(ctx context.Context, db bun.IDB, namespace, runID string) (*Run, error) {
	r := new(Run)
	if err := db.NewSelect().Model(r).Where("r.namespace = ? AND r.id = ?", namespace, runID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	return r, nil
}

// LockRun reads a run by ID and locks it until the transaction ends.
func LockRun(ctx context.Context, tx bun.IDB, runID string) (*Run, error) {
	r := new(Run)
	q := database.Lock(tx.NewSelect().Model(r).Where("r.id = ?", runID), "UPDATE")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock run: %w", err)
	}
	return r, nil
}

// InsertRunEvent appends one event to a run's history.
func InsertRunEvent(ctx context.Context, db bun.IDB, e *RunEvent) error {
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("insert run event: %w", err)
	}
	return nil
}

// ListRunEvents returns a run's whole history in sequence order. Run
// histories are short (a handful of lifecycle events), so no paging.
func ListRunEvents(ctx context.Context, db bun.IDB, runID string) ([]RunEvent, error) {
	var out []RunEvent
	if err := db.NewSelect().Model(&out).Where("he.workflow_run_id = ?", runID).OrderExpr("he.sequence ASC").Limit(1000).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list run events: %w", err)
	}
	return out, nil
}

// RunFilter selects runs for listing, newest first.
type RunFilter struct {
	Namespace          string
	WorkflowScheduleID string
	Statuses           []string
	BeforeID           string // keyset cursor: run ID of the last row of the previous page
	// FromID keeps runs at or after it: a ULID's first ten characters are
	// its creation time, so a time range is a range of the primary key.
	FromID string
	// WorkflowType keeps one workflow type; there is no index for it (an
	// index on workflow_runs slows every fire), so it is matched among the
	// runs of a bounded scan (RunScanFloor).
	WorkflowType string
	// ScanFloorID, with WorkflowType: the lowest ID the scan reaches.
	ScanFloorID string
	Limit       int
}

// runRange applies the filter's ID range and equalities, the part an
// index or the primary key serves.
func (f RunFilter) runRange(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("r.namespace = ?", f.Namespace)
	if f.WorkflowScheduleID != "" {
		q = q.Where("r.workflow_schedule_id = ?", f.WorkflowScheduleID)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("r.status IN (?)", bun.In(f.Statuses))
	}
	if f.BeforeID != "" {
		q = q.Where("r.id < ?", f.BeforeID)
	}
	if f.FromID != "" {
		q = q.Where("r.id >= ?", f.FromID)
	}
	return q
}

// RunScanFloor returns the ID of the scan-th run of the filter's range,
// newest first (its workflow type aside), when more runs follow it, else
// "": how far a workflow-type page may look. One index or key range of at
// most scan+1 entries.
func RunScanFloor(ctx context.Context, db bun.IDB, f RunFilter, scan int) (string, error) {
	var ids []string
	q := f.runRange(db.NewSelect().TableExpr("workflow_runs AS r").Column("r.id"))
	if err := q.OrderExpr("r.id DESC").Limit(2).Offset(int64(scan-1)).Scan(ctx, &ids); err != nil {
		return "", fmt.Errorf("find the run scan floor: %w", err)
	}
	if len(ids) < 2 {
		return "", nil
	}
	return ids[0], nil
}

// ListRuns returns one page of runs, newest first (run IDs are ULIDs, so ID
// order is creation order), plus whether more follow.
func ListRuns(ctx context.Context, db bun.IDB, f RunFilter) ([]Run, bool, error) {
	var out []Run
	q := f.runRange(db.NewSelect().Model(&out))
	if f.WorkflowType != "" {
		q = q.Where("r.workflow_type = ?", f.WorkflowType)
		if f.ScanFloorID != "" {
			q = q.Where("r.id >= ?", f.ScanFloorID)
		}
	}
	if err := q.OrderExpr("r.id DESC").Limit(int64(f.Limit + 1)).Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("list runs: %w", err)
	}
	more := len(out) > f.Limit
	if more {
		out = out[:f.Limit]
	}
	return out, more, nil
}

// LockRunsByStatus locks up to limit runs of a namespace (and of one
// schedule when workflowScheduleID is set) in the given statuses, oldest
// first: one range of workflow_runs_namespace_idx per status.
func LockRunsByStatus(ctx context.Context, tx bun.IDB, namespace, workflowScheduleID string, statuses []string, limit int) ([]Run, error) {
	var out []Run
	q := tx.NewSelect().Model(&out).Where("r.namespace = ? AND r.status IN (?)", namespace, bun.In(statuses))
	if workflowScheduleID != "" {
		q = q.Where("r.workflow_schedule_id = ?", workflowScheduleID)
	}
	q = database.Lock(q.OrderExpr("r.id").Limit(int64(limit)), "UPDATE")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock runs by status: %w", err)
	}
	return out, nil
}

// ExpiredRunIDs lists, oldest first, up to limit active runs that are past
// a deadline or lease, or whose cancellation was requested before
// cancelBefore. It reads without a lock and needs no transaction: the loop
// asks every pass, usually to find nothing, and opens a transaction
// (ClaimExpiredRuns) only for what it found.
//
// It must not read the waiting runs: each way to expire is looked up on
// its own index (see migration 0003) and only those candidates are read.
// One WHERE OR-ing the four conditions would scan every active run.
func ExpiredRunIDs(ctx context.Context, db bun.IDB, now, cancelBefore time.Time, limit int) ([]string, error) {
	active := bun.In(ActiveRunStatuses)
	var ids []string
	err := db.NewRaw(`
		SELECT id FROM (SELECT id FROM workflow_runs WHERE status = ? AND lease_expires_at <= ? ORDER BY id LIMIT ?) AS lease_lost
		UNION SELECT id FROM (SELECT id FROM workflow_runs WHERE status IN (?) AND execution_deadline_at <= ? ORDER BY id LIMIT ?) AS execution_timeout
		UNION SELECT id FROM (SELECT id FROM workflow_runs WHERE status IN (?) AND run_deadline_at <= ? ORDER BY id LIMIT ?) AS run_timeout
		UNION SELECT id FROM (SELECT id FROM workflow_runs WHERE status IN (?) AND cancel_requested_at <= ? ORDER BY id LIMIT ?) AS cancel_ignored
		ORDER BY id LIMIT ?`,
		RunRunning, now, limit, active, now, limit, active, now, limit, active, cancelBefore, limit, limit).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("find expired runs: %w", err)
	}
	return ids, nil
}

// ClaimExpiredRuns locks those of the runs ids (from ExpiredRunIDs) that
// are still past a deadline or lease, or whose cancellation was requested
// before cancelBefore, oldest first. It repeats the conditions, so a run
// that a heartbeat or completion changed since it was listed is left.
func ClaimExpiredRuns(ctx context.Context, tx bun.IDB, ids []string, now, cancelBefore time.Time) ([]Run, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []Run
	q := tx.NewSelect().Model(&out).
		Where("r.id IN (?)", bun.In(ids)).
		Where("r.status IN (?)", bun.In(ActiveRunStatuses)).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("r.execution_deadline_at <= ?", now).
				WhereOr("r.run_deadline_at <= ?", now).
				WhereOr("r.cancel_requested_at <= ?", cancelBefore).
				WhereOr("(r.status = ? AND r.lease_expires_at <= ?)", RunRunning, now)
		}).
		OrderExpr("r.id ASC")
	q = database.Lock(q, "UPDATE OF r SKIP LOCKED")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim expired runs: %w", err)
	}
	return out, nil
}

// ClaimPending locks up to limit pending runs of one queue that are
// available (a run waiting to retry is not before its available_at), oldest
// first.
// SKIP LOCKED hands concurrent pollers disjoint runs on PostgreSQL.
func ClaimPending(ctx context.Context, tx bun.IDB, now time.Time, namespace, connection, queue string, limit int) ([]Run, error) {
	var out []Run
	q := tx.NewSelect().Model(&out).
		Where("r.namespace = ? AND r.connection = ? AND r.queue = ? AND r.status = ?", namespace, connection, queue, RunPending).
		Where("(r.available_at IS NULL OR r.available_at <= ?)", now).
		OrderExpr("r.id ASC").Limit(int64(limit))
	q = database.Lock(q, "UPDATE SKIP LOCKED")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim pending runs: %w", err)
	}
	return out, nil
}

// CountActiveRuns returns how many runs are pending and running.
func CountActiveRuns(ctx context.Context, db bun.IDB) (map[string]int64, error) {
	var rows []struct {
		Status string `bun:"status"`
		N      int64  `bun:"n"`
	}
	err := db.NewSelect().Model((*Run)(nil)).ColumnExpr("r.status AS status, count(*) AS n").
		Where("r.status IN (?)", bun.In(ActiveRunStatuses)).GroupExpr("r.status").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("count active runs: %w", err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// InsertRuns writes new runs (pending, never claimed) in one statement,
// skipping any whose (namespace, instance_id) exists already, and returns
// how many were new. On PostgreSQL the rows travel as one typed array per
// column through unnest: the statement's text, and so its parse, is the
// same size for 1 run or 500 (bun inlines values, and 500 rows of VALUES
// were most of the time PostgreSQL spent on a fire). SQLite parses
// quickly and takes bun's multi-row VALUES.
func InsertRuns(ctx context.Context, db bun.IDB, list []*StartedRun) (int, error) {
	if len(list) == 0 {
		return 0, nil
	}
	if !database.Of(db).TypedArrays() {
		return affected(db.NewInsert().Model(&list).On("CONFLICT (namespace, instance_id) DO NOTHING").Exec(ctx))
	}
	n := len(list)
	var (
		id, namespace, instanceID, workflowType, workflowClass, status, trigger, connection, queue = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		scheduleULID, scheduleID, input, retry, cron, timezone, policy                             = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		attempt, lastSequence                                                                      = make([]int64, n), make([]int64, n)
		runTimeout, triggerNumber                                                                  = make([]*int64, n), make([]*int64, n)
		occurrence, runDeadline, executionDeadline, startDeadline, available                       = make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
		createdAt, updatedAt                                                                       = make([]time.Time, n), make([]time.Time, n)
	)
	for i, r := range list {
		id[i], namespace[i], instanceID[i], workflowType[i], workflowClass[i] = r.ID, r.Namespace, r.InstanceID, r.WorkflowType, r.WorkflowClass
		status[i], trigger[i], connection[i], queue[i] = r.Status, r.Trigger, r.Connection, r.Queue
		scheduleULID[i], scheduleID[i] = r.WorkflowScheduleID, r.ScheduleID
		if len(r.Input) > 0 {
			input[i] = ptr(string(r.Input))
		}
		if r.RetryPolicy != nil {
			body, err := json.Marshal(r.RetryPolicy)
			if err != nil {
				return 0, fmt.Errorf("insert runs: encode retry policy: %w", err)
			}
			retry[i] = ptr(string(body))
		}
		cron[i], timezone[i], policy[i], triggerNumber[i] = r.TriggerCron, r.TriggerTimezone, r.TriggerOverlapPolicy, r.TriggerNumber
		attempt[i], lastSequence[i], runTimeout[i] = int64(r.Attempt), r.LastSequence, r.RunTimeoutSeconds
		occurrence[i], runDeadline[i], executionDeadline[i] = r.OccurrenceTime, r.RunDeadlineAt, r.ExecutionDeadlineAt
		startDeadline[i], available[i], createdAt[i], updatedAt[i] = r.StartDeadlineAt, r.AvailableAt, r.CreatedAt, r.UpdatedAt
	}
	return affected(db.NewRaw(`INSERT INTO workflow_runs (id, namespace, instance_id, workflow_type, workflow_class, status, trigger,
			connection, queue, workflow_schedule_id, schedule_id, input, retry_policy, trigger_cron, trigger_timezone,
			trigger_overlap_policy, attempt, last_sequence, run_timeout_seconds, trigger_number, occurrence_time, run_deadline_at,
			execution_deadline_at, start_deadline_at, available_at, created_at, updated_at)
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
			?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::jsonb[], ?::text[], ?::text[],
			?::text[], ?::int[], ?::bigint[], ?::bigint[], ?::bigint[], ?::timestamptz[], ?::timestamptz[],
			?::timestamptz[], ?::timestamptz[], ?::timestamptz[], ?::timestamptz[], ?::timestamptz[])
		ON CONFLICT (namespace, instance_id) DO NOTHING`,
		pgdialect.Array(id), pgdialect.Array(namespace), pgdialect.Array(instanceID), pgdialect.Array(workflowType),
		pgdialect.Array(workflowClass), pgdialect.Array(status), pgdialect.Array(trigger), pgdialect.Array(connection),
		pgdialect.Array(queue), pgdialect.Array(scheduleULID), pgdialect.Array(scheduleID), pgdialect.Array(input),
		pgdialect.Array(retry), pgdialect.Array(cron), pgdialect.Array(timezone), pgdialect.Array(policy),
		pgdialect.Array(attempt), pgdialect.Array(lastSequence), pgdialect.Array(runTimeout), pgdialect.Array(triggerNumber),
		pgdialect.Array(occurrence), pgdialect.Array(runDeadline), pgdialect.Array(executionDeadline),
		pgdialect.Array(startDeadline), pgdialect.Array(available), pgdialect.Array(createdAt), pgdialect.Array(updatedAt),
	).Exec(ctx))
}

func ptr[T any](v T) *T { return &v }

// Batch gathers write statements to send in one round trip. bun inlines
// every value into its statements, so the joined text needs no arguments.
// Workers are bound by round trips: a completion sent as one batch instead
// of five statements is most of their throughput (docs/PERFORMANCE.md).
type Batch struct {
	gen schema.QueryGen
	sql []byte
}

// NewBatch starts an empty batch for db's dialect.
func NewBatch(db bun.IDB) *Batch { return &Batch{gen: schema.NewQueryGen(db.Dialect())} }

// Add appends a statement.
func (b *Batch) Add(q interface {
	AppendQuery(schema.QueryGen, []byte) ([]byte, error)
}) error {
	if len(b.sql) > 0 {
		b.sql = append(b.sql, ";\n"...)
	}
	var err error
	if b.sql, err = q.AppendQuery(b.gen, b.sql); err != nil {
		return fmt.Errorf("build batched statement: %w", err)
	}
	return nil
}

// Exec sends the batch, if any, and empties it.
func (b *Batch) Exec(ctx context.Context, db bun.IDB) error {
	if len(b.sql) == 0 {
		return nil
	}
	sql := string(b.sql)
	b.sql = b.sql[:0]
	if _, err := db.ExecContext(ctx, sql); err != nil {
		return fmt.Errorf("write batch: %w", err)
	}
	return nil
}

// AddTransition adds a run change and the run's new history event: what
// every claim and every end of a run writes.
func AddTransition(b *Batch, db bun.IDB, r *Run, ev *RunEvent) error {
	for _, q := range []interface {
		AppendQuery(schema.QueryGen, []byte) ([]byte, error)
	}{
		db.NewUpdate().Model(r).WherePK(),
		db.NewInsert().Model(ev),
	} {
		if err := b.Add(q); err != nil {
			return err
		}
	}
	return nil
}

// Lane is where HTTP-target runs wait: a namespace and a target host (the
// run's queue on the HTTP connection).
type Lane struct {
	Namespace string `bun:"namespace"`
	Queue     string `bun:"queue"`
}

// ReadyLanes returns up to limit lanes of the connection that hold a run
// ready to claim now (pending, available), in namespace and queue order,
// and the earliest time a pending run of the connection that is not yet
// available becomes so (a retry's backoff; nil when none waits), for
// when to look again. Migration 0014's partial index holds exactly the
// pending runs of HTTP targets, so this reads those and nothing of the
// workers' queues. (Only when more than limit lanes hold waiting runs can
// a ready lane or the earliest time be left out; the caller's next look
// finds them.)
func ReadyLanes(ctx context.Context, db bun.IDB, now time.Time, connection string, limit int) ([]Lane, *time.Time, error) {
	var rows []struct {
		Lane
		Ready bool       `bun:"ready"`
		Later *time.Time `bun:"later"`
	}
	err := db.NewSelect().Model((*Run)(nil)).ColumnExpr("r.namespace AS namespace, r.queue AS queue").
		ColumnExpr("max(CASE WHEN r.available_at IS NULL OR r.available_at <= ? THEN 1 ELSE 0 END) AS ready", now).
		ColumnExpr("min(CASE WHEN r.available_at > ? THEN r.available_at END) AS later", now).
		Where("r.status = ? AND r.connection = ?", RunPending, connection).
		GroupExpr("r.namespace, r.queue").OrderExpr("ready DESC, r.namespace, r.queue").Limit(int64(limit)).Scan(ctx, &rows)
	if err != nil {
		return nil, nil, fmt.Errorf("read ready lanes: %w", err)
	}
	var out []Lane
	var later *time.Time
	for _, r := range rows {
		if r.Ready {
			out = append(out, r.Lane)
		}
		if r.Later != nil && (later == nil || r.Later.Before(*later)) {
			later = r.Later
		}
	}
	return out, later, nil
}

// RunState is what an executor watches of a run it is executing.
type RunState struct {
	ID                string     `bun:"id"`
	Status            string     `bun:"status"`
	Attempt           int        `bun:"attempt"`
	WorkerID          *string    `bun:"worker_id"`
	CancelRequestedAt *time.Time `bun:"cancel_requested_at"`
}

// RunStates reads the state of runs by ID (a few dozen: those in flight).
func RunStates(ctx context.Context, db bun.IDB, ids []string) ([]RunState, error) {
	var out []RunState
	if len(ids) == 0 {
		return out, nil
	}
	err := db.NewSelect().Model((*Run)(nil)).Column("r.id", "r.status", "r.attempt", "r.worker_id", "r.cancel_requested_at").
		Where("r.id IN (?)", bun.In(ids)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read run states: %w", err)
	}
	return out, nil
}

// LatestRunStates reads the state of the given runs (the schedules'
// latest), by run ID, in one statement.
func LatestRunStates(ctx context.Context, db bun.IDB, runIDs []string) (map[string]*LatestRunState, error) {
	out := map[string]*LatestRunState{}
	if len(runIDs) == 0 {
		return out, nil
	}
	var runs []Run
	err := db.NewSelect().Model(&runs).Column("id", "status", "created_at", "available_at", "queue").Where("r.id IN (?)", bun.In(runIDs)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read latest runs: %w", err)
	}
	for _, r := range runs {
		out[r.ID] = &LatestRunState{Status: r.Status, CreatedAt: r.CreatedAt, AvailableAt: r.AvailableAt, Queue: r.Queue}
	}
	return out, nil
}
