package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ExpiredRun is a finished run old enough to delete.
type ExpiredRun struct {
	ID string `bun:"id"`
}

// ExpiredRuns lists up to limit runs that finished before `before`, oldest
// first, leaving out every schedule's latest run (which the overlap policy
// and the console still read). The partial index on finished_at serves it,
// reading only the expired rows.
func ExpiredRuns(ctx context.Context, db bun.IDB, before time.Time, limit int) ([]ExpiredRun, error) {
	var out []ExpiredRun
	err := db.NewSelect().Model((*Run)(nil)).Column("r.id").
		Where("r.finished_at IS NOT NULL AND r.finished_at < ?", before).
		// By the run's own schedule's primary key: an index on latest_run_id
		// would take an entry on every fire (migration 0009).
		Where("NOT EXISTS (SELECT 1 FROM workflow_schedules AS s WHERE s.id = r.workflow_schedule_id AND s.latest_run_id = r.id)").
		OrderExpr("r.finished_at ASC").Limit(int64(limit)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list expired runs: %w", err)
	}
	return out, nil
}

// DeletedRows counts what a retention step deleted, per table.
type DeletedRows struct {
	Runs, RunEvents, Schedules, ScheduleEvents, Deliveries int
}

// Tables names the tables d has deleted rows from.
func (d DeletedRows) Tables() []string {
	var out []string
	for _, t := range []struct {
		n     int
		table string
	}{
		{d.Runs, "workflow_runs"}, {d.RunEvents, "workflow_history_events"}, {d.Deliveries, "notification_deliveries"},
		{d.ScheduleEvents, "workflow_schedule_history_events"}, {d.Schedules, "workflow_schedules"},
	} {
		if t.n > 0 {
			out = append(out, t.table)
		}
	}
	return out
}

// Add sums two counts.
func (d *DeletedRows) Add(o DeletedRows) {
	d.Runs += o.Runs
	d.RunEvents += o.RunEvents
	d.Schedules += o.Schedules
	d.ScheduleEvents += o.ScheduleEvents
	d.Deliveries += o.Deliveries
}

// Total is every row deleted.
func (d DeletedRows) Total() int {
	return d.Runs + d.RunEvents + d.Schedules + d.ScheduleEvents + d.Deliveries
}

// DeleteSettledDeliveries deletes up to limit notification deliveries that
// were delivered or went dead before `before`.
func DeleteSettledDeliveries(ctx context.Context, db bun.IDB, before time.Time, limit int) (int, error) {
	ids := db.NewSelect().Model((*Delivery)(nil)).Column("d.id").
		Where("d.status IN (?) AND d.updated_at < ?", bun.In([]string{DeliveryDelivered, DeliveryDead}), before).
		OrderExpr("d.updated_at ASC").Limit(int64(limit))
	n, err := affected(db.NewDelete().Model((*Delivery)(nil)).Where("id IN (?)", ids).Exec(ctx))
	if err != nil {
		return 0, fmt.Errorf("delete settled deliveries: %w", err)
	}
	return n, nil
}

// DeleteRuns deletes the runs and their history events, in foreign-key
// order. (A run is its instance since migration 0009.)
func DeleteRuns(ctx context.Context, db bun.IDB, runs []ExpiredRun) (DeletedRows, error) {
	var d DeletedRows
	if len(runs) == 0 {
		return d, nil
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	var err error
	if d.RunEvents, err = affected(db.NewDelete().Model((*RunEvent)(nil)).Where("workflow_run_id IN (?)", bun.In(ids)).Exec(ctx)); err != nil {
		return d, fmt.Errorf("delete run events: %w", err)
	}
	if d.Runs, err = affected(db.NewDelete().Model((*Run)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx)); err != nil {
		return d, fmt.Errorf("delete runs: %w", err)
	}
	return d, nil
}

// PurgeableSchedules lists up to limit schedules deleted before `before`.
func PurgeableSchedules(ctx context.Context, db bun.IDB, before time.Time, limit int) ([]string, error) {
	var ids []string
	err := db.NewSelect().Model((*Schedule)(nil)).Column("s.id").
		Where("s.status = ? AND s.deleted_at < ?", StatusDeleted, before).
		OrderExpr("s.deleted_at ASC").Limit(int64(limit)).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("list purgeable schedules: %w", err)
	}
	return ids, nil
}

// PurgeSchedulePart deletes up to limit rows of one deleted schedule's data,
// children first: run events, runs, audit events, then — once
// nothing else is left — its health rows, its recent actions and the
// schedule itself. done
// reports that the schedule is gone; call it again until then.
func PurgeSchedulePart(ctx context.Context, db bun.IDB, scheduleULID string, limit int) (d DeletedRows, done bool, err error) {
	var ids []ExpiredRun
	if err := db.NewSelect().Model((*Run)(nil)).Column("r.id").
		Where("r.workflow_schedule_id = ?", scheduleULID).Limit(int64(limit)).Scan(ctx, &ids); err != nil {
		return d, false, fmt.Errorf("list runs to purge: %w", err)
	}
	if len(ids) > 0 {
		d, err = DeleteRuns(ctx, db, ids)
		return d, false, err
	}
	// By the stream's (schedule, sequence) key: on PostgreSQL the event's
	// id has no index since migration 0029.
	events := db.NewSelect().Model((*ScheduleEvent)(nil)).Column("se.sequence").Where("se.workflow_schedule_id = ?", scheduleULID).
		OrderExpr("se.sequence").Limit(int64(limit))
	if d.ScheduleEvents, err = affected(db.NewDelete().Model((*ScheduleEvent)(nil)).
		Where("workflow_schedule_id = ? AND sequence IN (?)", scheduleULID, events).Exec(ctx)); err != nil {
		return d, false, fmt.Errorf("purge audit events: %w", err)
	}
	if d.ScheduleEvents == limit {
		return d, false, nil
	}
	if _, err := db.NewDelete().Model((*HealthPending)(nil)).Where("schedule_ulid = ?", scheduleULID).Exec(ctx); err != nil {
		return d, false, fmt.Errorf("purge pending health: %w", err)
	}
	if _, err := db.NewDelete().Model((*ScheduleHealth)(nil)).Where("schedule_ulid = ?", scheduleULID).Exec(ctx); err != nil {
		return d, false, fmt.Errorf("purge health: %w", err)
	}
	if _, err := db.NewDelete().Model((*ScheduleSecret)(nil)).Where("schedule_ulid = ?", scheduleULID).Exec(ctx); err != nil {
		return d, false, fmt.Errorf("purge schedule secret: %w", err)
	}
	if _, err := db.NewDelete().Model((*RecentActionRow)(nil)).Where("schedule_ulid = ?", scheduleULID).Exec(ctx); err != nil {
		return d, false, fmt.Errorf("purge recent actions: %w", err)
	}
	if _, err := db.NewDelete().Model((*RingRow)(nil)).Where("schedule_ulid = ?", scheduleULID).Exec(ctx); err != nil {
		return d, false, fmt.Errorf("purge ring: %w", err)
	}
	if _, err := db.NewDelete().Model((*Compaction)(nil)).Where("workflow_schedule_id = ?", scheduleULID).Exec(ctx); err != nil {
		return d, false, fmt.Errorf("purge compaction: %w", err)
	}
	if d.Schedules, err = affected(db.NewDelete().Model((*Schedule)(nil)).Where("id = ?", scheduleULID).Exec(ctx)); err != nil {
		return d, false, fmt.Errorf("purge schedule: %w", err)
	}
	return d, true, nil
}

func affected(res interface{ RowsAffected() (int64, error) }, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
