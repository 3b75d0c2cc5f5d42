package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Compaction is a row of workflow_schedule_compaction (migration 0022):
// what audit compaction removed from one schedule's stream (SPEC §19).
// A schedule nothing was compacted from has none.
type Compaction struct {
	bun.BaseModel `bun:"table:workflow_schedule_compaction,alias:sc"`

	WorkflowScheduleID string    `bun:"workflow_schedule_id,pk"`
	FromSequence       int64     `bun:"from_sequence,notnull"`
	ThroughSequence    int64     `bun:"through_sequence,notnull"`
	Fires              int64     `bun:"fires,notnull"`
	Skips              int64     `bun:"skips,notnull"`
	ThroughAt          time.Time `bun:"through_at,notnull"`
}

// CompactionOf reads a schedule's compaction row; nil when nothing was
// compacted.
func CompactionOf(ctx context.Context, db bun.IDB, scheduleULID string) (*Compaction, error) {
	var c Compaction
	err := db.NewSelect().Model(&c).Where("sc.workflow_schedule_id = ?", scheduleULID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read compaction: %w", err)
	}
	return &c, nil
}

// CompactionCandidate is a schedule audit compaction passes: Due when the
// oldest fire or skip event compaction left of its stream was recorded
// before the cut, so a visit would delete something.
type CompactionCandidate struct {
	ID  string `bun:"id"`
	Due bool   `bun:"due"`
}

// CompactionCandidates lists up to limit schedules after the ULID cursor,
// in ULID order (the primary key), that have more than one event, each
// with whether it is due for compaction at before: one statement, one
// probe of the stream's (schedule, sequence) key per schedule, so a pass
// over schedules with nothing to compact costs a read per hundred of them
// rather than a transaction each.
func CompactionCandidates(ctx context.Context, db bun.IDB, after string, before time.Time, limit int) ([]CompactionCandidate, error) {
	var out []CompactionCandidate
	err := db.NewRaw(`SELECT s.id, COALESCE((SELECT e.recorded_at < ? FROM workflow_schedule_history_events AS e
			WHERE e.workflow_schedule_id = s.id AND e.event_type IN (?)
			AND e.sequence > COALESCE((SELECT c.through_sequence FROM workflow_schedule_compaction AS c
				WHERE c.workflow_schedule_id = s.id), 0)
			ORDER BY e.sequence ASC LIMIT 1), FALSE) AS due
		FROM workflow_schedules AS s WHERE s.id > ? AND s.last_sequence > 1 ORDER BY s.id ASC LIMIT ?`,
		before, bun.In(compactableTypes), after, limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list schedules to compact: %w", err)
	}
	return out, nil
}

// compactableTypes are the event types audit compaction deletes.
var compactableTypes = []string{FireEventType, "ScheduleTriggerSkipped"}

// NewestFireSequence is the sequence of a schedule's newest
// ScheduleTriggered (0 if none): one probe of the type index (0011).
func NewestFireSequence(ctx context.Context, db bun.IDB, scheduleULID string) (int64, error) {
	var seq []int64
	err := db.NewSelect().Model((*ScheduleEvent)(nil)).Column("se.sequence").
		Where("se.workflow_schedule_id = ? AND se.event_type = ?", scheduleULID, FireEventType).
		OrderExpr("se.sequence DESC").Limit(1).Scan(ctx, &seq)
	if err != nil {
		return 0, fmt.Errorf("read newest fire: %w", err)
	}
	if len(seq) == 0 {
		return 0, nil
	}
	return seq[0], nil
}

// CompactableEvent is a fire or skip event audit compaction may delete.
type CompactableEvent struct {
	Sequence       int64      `bun:"sequence"`
	EventType      string     `bun:"event_type"`
	RecordedAt     time.Time  `bun:"recorded_at"`
	OccurrenceTime *time.Time `bun:"occurrence_time"`
}

// FireAndSkipEvents lists up to limit of a schedule's fire and skip events
// with a sequence in (after, below), oldest first: a range of the
// (schedule, sequence) key.
func FireAndSkipEvents(ctx context.Context, db bun.IDB, scheduleULID string, after, below int64, limit int) ([]CompactableEvent, error) {
	var out []CompactableEvent
	err := db.NewSelect().Model((*ScheduleEvent)(nil)).
		Column("se.sequence", "se.event_type", "se.recorded_at", "se.occurrence_time").
		Where("se.workflow_schedule_id = ? AND se.sequence > ? AND se.sequence < ?", scheduleULID, after, below).
		Where("se.event_type IN (?)", bun.In(compactableTypes)).
		OrderExpr("se.sequence ASC").Limit(int64(limit)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list events to compact: %w", err)
	}
	return out, nil
}

// CompactEvents deletes the events of a schedule with the given sequences
// (probes of the stream's (schedule, sequence) key) and writes c, its
// compaction row with them counted, in the caller's transaction.
func CompactEvents(ctx context.Context, db bun.IDB, scheduleULID string, sequences []int64, c Compaction) (int, error) {
	n, err := affected(db.NewDelete().Model((*ScheduleEvent)(nil)).
		Where("workflow_schedule_id = ? AND sequence IN (?)", scheduleULID, bun.In(sequences)).Exec(ctx))
	if err != nil {
		return 0, fmt.Errorf("delete compacted events: %w", err)
	}
	c.WorkflowScheduleID = scheduleULID
	_, err = db.NewInsert().Model(&c).
		On("CONFLICT (workflow_schedule_id) DO UPDATE").
		Set("through_sequence = EXCLUDED.through_sequence").
		Set("from_sequence = EXCLUDED.from_sequence").
		Set("fires = EXCLUDED.fires").
		Set("skips = EXCLUDED.skips").
		Set("through_at = EXCLUDED.through_at").Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("record compaction: %w", err)
	}
	return n, nil
}
