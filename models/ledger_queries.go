package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// LifecycleEventTypes are the audit events that change what a schedule
// does with its occurrences: they open and close the ledger's intervals.
// The lifecycle index of migration 0007 is filtered on exactly this list.
var LifecycleEventTypes = []string{"ScheduleCreated", "SchedulePaused", "ScheduleResumed", "ScheduleUpdated", "ScheduleDeleted"}

// IDRange is an inclusive range of instance IDs: for IDs that embed a
// fixed-width number after a common prefix, one index range scan. IDs, when
// set, are the exact ones wanted instead (the widths differ).
type IDRange struct {
	From, To string
	IDs      []string
}

func (r IDRange) where(q *bun.SelectQuery, column string) *bun.SelectQuery {
	if len(r.IDs) > 0 {
		return q.Where(column+" IN (?)", bun.In(r.IDs))
	}
	return q.Where(column+" >= ? AND "+column+" <= ?", r.From, r.To)
}

// LastLifecycleBefore returns the schedule's latest event of one of types
// recorded strictly before t, or nil.
func LastLifecycleBefore(ctx context.Context, db bun.IDB, scheduleULID string, types []string, t time.Time) (*ScheduleEvent, error) {
	var out []ScheduleEvent
	err := db.NewSelect().Model(&out).
		Where("se.workflow_schedule_id = ? AND se.recorded_at < ?", scheduleULID, t).
		Where("se.event_type IN (?)", bun.In(types)).
		Where("se.event_type IN (?)", bun.In(LifecycleEventTypes)). // lets the planner use the partial index
		OrderExpr("se.recorded_at DESC, se.sequence DESC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read lifecycle event: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &out[0], nil
}

// LifecycleEvents returns up to limit of the schedule's lifecycle events
// recorded in [from, to), in order.
func LifecycleEvents(ctx context.Context, db bun.IDB, scheduleULID string, from, to time.Time, limit int) ([]ScheduleEvent, error) {
	var out []ScheduleEvent
	err := db.NewSelect().Model(&out).
		Where("se.workflow_schedule_id = ? AND se.recorded_at >= ? AND se.recorded_at < ?", scheduleULID, from, to).
		Where("se.event_type IN (?)", bun.In(LifecycleEventTypes)).
		OrderExpr("se.recorded_at ASC, se.sequence ASC").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read lifecycle events: %w", err)
	}
	return out, nil
}

// SkipEvents returns the schedule's ScheduleTriggerSkipped events whose
// instance ID is in r (the skips index of migration 0007).
func SkipEvents(ctx context.Context, db bun.IDB, scheduleULID string, r IDRange) ([]ScheduleEvent, error) {
	var out []ScheduleEvent
	q := db.NewSelect().Model(&out).Column("se.workflow_instance_id", "se.payload", "se.sequence").
		Where("se.workflow_schedule_id = ? AND se.event_type = ?", scheduleULID, "ScheduleTriggerSkipped")
	if err := r.where(q, "se.workflow_instance_id").OrderExpr("se.sequence ASC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("read skip events: %w", err)
	}
	return out, nil
}

// InstanceRun is the run of an instance ID, for the ledger.
type InstanceRun struct {
	InstanceID   string     `bun:"instance_id"`
	RunID        *string    `bun:"run_id"`
	RunStatus    *string    `bun:"run_status"`
	Trigger      *string    `bun:"trigger"`
	RunCreatedAt *time.Time `bun:"run_created_at"`
}

// InstanceRuns returns the runs of namespace whose instance IDs are in r:
// a range scan of the (namespace, instance_id) unique index of the runs
// (migration 0009) and a heap fetch per row.
func InstanceRuns(ctx context.Context, db bun.IDB, namespace string, r IDRange) ([]InstanceRun, error) {
	var out []InstanceRun
	q := db.NewSelect().TableExpr("workflow_runs AS r").
		ColumnExpr("r.instance_id, r.id AS run_id, r.status AS run_status, r.trigger, r.created_at AS run_created_at").
		Where("r.namespace = ?", namespace)
	if err := r.where(q, "r.instance_id").Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read instance runs: %w", err)
	}
	return out, nil
}

// FirstInstanceRun returns the lowest instance ID among namespace's runs in
// r ("" for none): one step into the (namespace, instance_id) unique index.
func FirstInstanceRun(ctx context.Context, db bun.IDB, namespace string, r IDRange) (string, error) {
	var ids []string
	q := db.NewSelect().TableExpr("workflow_runs AS r").Column("r.instance_id").Where("r.namespace = ?", namespace)
	if err := r.where(q, "r.instance_id").OrderExpr("r.instance_id").Limit(1).Scan(ctx, &ids); err != nil {
		return "", fmt.Errorf("read the first instance run: %w", err)
	}
	if len(ids) == 0 {
		return "", nil
	}
	return ids[0], nil
}
