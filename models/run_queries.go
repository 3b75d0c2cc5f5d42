package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/tidelinehq/tideline/database"
)

// InsertInstance creates a workflow instance unless its (namespace,
// instance_id) already exists; inserted is false in that case. This unique
// key is what makes a second start of the same occurrence impossible.
func InsertInstance(ctx context.Context, db bun.IDB, i *Instance) (inserted bool, err error) {
	res, err := db.NewInsert().Model(i).On("CONFLICT (namespace, instance_id) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("insert instance: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("insert instance: %w", err)
	}
	return n == 1, nil
}

// UpdateInstance writes every column of i back to its row.
func UpdateInstance(ctx context.Context, db bun.IDB, i *Instance) error {
	if _, err := db.NewUpdate().Model(i).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update instance: %w", err)
	}
	return nil
}

// SetInstanceStatus mirrors a run's status onto its instance.
func SetInstanceStatus(ctx context.Context, db bun.IDB, instanceULID, status string, run *Run) error {
	_, err := db.NewUpdate().Model((*Instance)(nil)).
		Set("status = ?", status).Set("updated_at = ?", run.UpdatedAt).
		Where("id = ?", instanceULID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("update instance status: %w", err)
	}
	return nil
}

// InsertRun writes a new run.
func InsertRun(ctx context.Context, db bun.IDB, r *Run) error {
	if _, err := db.NewInsert().Model(r).Exec(ctx); err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	return nil
}

// UpdateRun writes every column of r back to its row.
func UpdateRun(ctx context.Context, db bun.IDB, r *Run) error {
	if _, err := db.NewUpdate().Model(r).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update run: %w", err)
	}
	return nil
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
	Limit              int
}

// ListRuns returns one page of runs, newest first (run IDs are ULIDs, so ID
// order is creation order), plus whether more follow.
func ListRuns(ctx context.Context, db bun.IDB, f RunFilter) ([]Run, bool, error) {
	var out []Run
	q := db.NewSelect().Model(&out).Where("r.namespace = ?", f.Namespace)
	if f.WorkflowScheduleID != "" {
		q = q.Where("r.workflow_schedule_id = ?", f.WorkflowScheduleID)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("r.status IN (?)", bun.In(f.Statuses))
	}
	if f.BeforeID != "" {
		q = q.Where("r.id < ?", f.BeforeID)
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

// ClaimExpiredRuns locks active runs that are past a deadline or lease, or
// whose cancellation was requested before cancelBefore, oldest first.
//
// The loop runs it every pass, usually to find nothing, so it must not read
// the waiting runs: each way to expire is looked up on its own index (see
// migration 0003) and only those candidates are read and locked. One WHERE
// OR-ing the four conditions would scan every active run. The outer query
// repeats the conditions, so a run that a heartbeat or completion changed
// meanwhile is re-checked when it is locked.
func ClaimExpiredRuns(ctx context.Context, tx bun.IDB, now, cancelBefore time.Time, limit int) ([]Run, error) {
	active := bun.In(ActiveRunStatuses)
	candidates := tx.NewRaw(`
		SELECT id FROM (SELECT id FROM workflow_runs WHERE status = ? AND lease_expires_at <= ? ORDER BY id LIMIT ?) AS lease_lost
		UNION SELECT id FROM (SELECT id FROM workflow_runs WHERE status IN (?) AND execution_deadline_at <= ? ORDER BY id LIMIT ?) AS execution_timeout
		UNION SELECT id FROM (SELECT id FROM workflow_runs WHERE status IN (?) AND run_deadline_at <= ? ORDER BY id LIMIT ?) AS run_timeout
		UNION SELECT id FROM (SELECT id FROM workflow_runs WHERE status IN (?) AND cancel_requested_at <= ? ORDER BY id LIMIT ?) AS cancel_ignored`,
		RunRunning, now, limit, active, now, limit, active, now, limit, active, cancelBefore, limit)
	var out []Run
	q := tx.NewSelect().Model(&out).
		Where("r.id IN (?)", candidates).
		Where("r.status IN (?)", active).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("r.execution_deadline_at <= ?", now).
				WhereOr("r.run_deadline_at <= ?", now).
				WhereOr("r.cancel_requested_at <= ?", cancelBefore).
				WhereOr("(r.status = ? AND r.lease_expires_at <= ?)", RunRunning, now)
		}).
		OrderExpr("r.id ASC").Limit(int64(limit))
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

// InsertInstances writes many instances in one statement, skipping any
// that exist already, and returns how many were new.
func InsertInstances(ctx context.Context, db bun.IDB, list []*Instance) (int, error) {
	res, err := db.NewInsert().Model(&list).On("CONFLICT (namespace, instance_id) DO NOTHING").Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("insert instances: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert instances: %w", err)
	}
	return int(n), nil
}

// InsertRuns writes many runs in one statement.
func InsertRuns(ctx context.Context, db bun.IDB, list []*Run) error {
	if len(list) == 0 {
		return nil
	}
	if _, err := db.NewInsert().Model(&list).Exec(ctx); err != nil {
		return fmt.Errorf("insert runs: %w", err)
	}
	return nil
}

// InsertRunEvents writes many run events in one statement.
func InsertRunEvents(ctx context.Context, db bun.IDB, list []*RunEvent) error {
	if len(list) == 0 {
		return nil
	}
	if _, err := db.NewInsert().Model(&list).Exec(ctx); err != nil {
		return fmt.Errorf("insert run events: %w", err)
	}
	return nil
}

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

// AddTransition adds a run change, the run's new history event and the
// status mirrored onto its instance: what every claim and every end of a
// run writes.
func AddTransition(b *Batch, db bun.IDB, r *Run, ev *RunEvent) error {
	for _, q := range []interface {
		AppendQuery(schema.QueryGen, []byte) ([]byte, error)
	}{
		db.NewUpdate().Model(r).WherePK(),
		db.NewInsert().Model(ev),
		db.NewUpdate().Model((*Instance)(nil)).Set("status = ?", r.Status).Set("updated_at = ?", r.UpdatedAt).Where("id = ?", r.WorkflowInstanceID),
	} {
		if err := b.Add(q); err != nil {
			return err
		}
	}
	return nil
}
