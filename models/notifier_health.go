package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// NotifierHealth is a row of notifier_health: what the dispatcher last saw
// of one notifier (migration 0024). Absent until the first attempt.
type NotifierHealth struct {
	bun.BaseModel `bun:"table:notifier_health,alias:nh"`

	NotifierID    string     `bun:"notifier_id,pk"`
	LastSuccessAt *time.Time `bun:"last_success_at"`
	LastFailureAt *time.Time `bun:"last_failure_at"`
	FailingSince  *time.Time `bun:"failing_since"`
	LastError     *string    `bun:"last_error"`

	// Pending (pending or sending) and Dead are counted from the delivery
	// log, not stored.
	Pending int64 `bun:"-"`
	Dead    int64 `bun:"-"`
}

// Notifier health states (NotifierHealth.State).
const (
	NotifierOK      = "ok"      // the latest attempt succeeded
	NotifierFailing = "failing" // the latest attempt failed
	NotifierIdle    = "idle"    // nothing attempted yet
)

// State names the health: failing while failing_since is set.
func (h NotifierHealth) State() string {
	switch {
	case h.FailingSince != nil:
		return NotifierFailing
	case h.LastSuccessAt == nil && h.LastFailureAt == nil:
		return NotifierIdle
	}
	return NotifierOK
}

// NoteDeliverySuccess records a delivered attempt at t. Attempts of one
// notifier finish concurrently and out of order (several senders, several
// replicas), so every column moves only forward: a success clears
// failing_since only when no failure is newer than it.
func NoteDeliverySuccess(ctx context.Context, db bun.IDB, notifierID string, t time.Time) error {
	_, err := db.NewInsert().Model(&NotifierHealth{NotifierID: notifierID, LastSuccessAt: &t}).
		On("CONFLICT (notifier_id) DO UPDATE").
		Set("last_success_at = CASE WHEN nh.last_success_at IS NULL OR nh.last_success_at < EXCLUDED.last_success_at THEN EXCLUDED.last_success_at ELSE nh.last_success_at END").
		Set("failing_since = CASE WHEN nh.last_failure_at IS NULL OR nh.last_failure_at <= EXCLUDED.last_success_at THEN NULL ELSE nh.failing_since END").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("note delivery success: %w", err)
	}
	return nil
}

// NoteDeliveryFailure records a failed attempt at t with its error: the
// newest failure's error is kept, and failing_since is set by the first
// failure after the last success.
func NoteDeliveryFailure(ctx context.Context, db bun.IDB, notifierID string, t time.Time, msg string) error {
	_, err := db.NewInsert().Model(&NotifierHealth{NotifierID: notifierID, LastFailureAt: &t, FailingSince: &t, LastError: &msg}).
		On("CONFLICT (notifier_id) DO UPDATE").
		Set("last_error = CASE WHEN nh.last_failure_at IS NULL OR nh.last_failure_at <= EXCLUDED.last_failure_at THEN EXCLUDED.last_error ELSE nh.last_error END").
		Set("last_failure_at = CASE WHEN nh.last_failure_at IS NULL OR nh.last_failure_at < EXCLUDED.last_failure_at THEN EXCLUDED.last_failure_at ELSE nh.last_failure_at END").
		Set("failing_since = CASE WHEN nh.failing_since IS NOT NULL AND nh.failing_since <= EXCLUDED.failing_since THEN nh.failing_since " +
			"WHEN nh.last_success_at IS NOT NULL AND nh.last_success_at >= EXCLUDED.failing_since THEN nh.failing_since " +
			"ELSE EXCLUDED.failing_since END").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("note delivery failure: %w", err)
	}
	return nil
}

// NotifierHealthOf returns the health of the notifiers by ID, with their
// pending and dead counts; a notifier never attempted has a zero entry.
// One read of notifier_health and one of the open-deliveries index, however
// many notifiers (a namespace holds few; the service caps them).
func NotifierHealthOf(ctx context.Context, db bun.IDB, ids []string) (map[string]NotifierHealth, error) {
	out := make(map[string]NotifierHealth, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	for _, id := range ids {
		out[id] = NotifierHealth{NotifierID: id}
	}
	var rows []NotifierHealth
	if err := db.NewSelect().Model(&rows).Where("nh.notifier_id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read notifier health: %w", err)
	}
	for _, h := range rows {
		out[h.NotifierID] = h
	}
	var counts []struct {
		NotifierID string `bun:"notifier_id"`
		Status     string `bun:"status"`
		N          int64  `bun:"n"`
	}
	// The status list is written out as the index's predicate is, so that
	// SQLite can prove the partial index applies.
	err := db.NewSelect().Model((*Delivery)(nil)).ColumnExpr("d.notifier_id AS notifier_id, d.status AS status, count(*) AS n").
		Where("d.notifier_id IN (?)", bun.In(ids)).
		Where("d.status IN ('pending', 'sending', 'dead')").
		GroupExpr("d.notifier_id, d.status").Scan(ctx, &counts)
	if err != nil {
		return nil, fmt.Errorf("count open deliveries: %w", err)
	}
	for _, c := range counts {
		h := out[c.NotifierID]
		if c.Status == DeliveryDead {
			h.Dead += c.N
		} else {
			h.Pending += c.N
		}
		out[c.NotifierID] = h
	}
	return out, nil
}

// DeleteNotifierHealth removes a deleted notifier's health row.
func DeleteNotifierHealth(ctx context.Context, db bun.IDB, notifierID string) error {
	if _, err := db.NewDelete().Model((*NotifierHealth)(nil)).Where("notifier_id = ?", notifierID).Exec(ctx); err != nil {
		return fmt.Errorf("delete notifier health: %w", err)
	}
	return nil
}

// LockDeadDeliveries locks up to limit dead deliveries of a notifier,
// oldest first, for redelivery.
func LockDeadDeliveries(ctx context.Context, tx bun.IDB, notifierID string, limit int) ([]Delivery, error) {
	var out []Delivery
	q := tx.NewSelect().Model(&out).Where("d.notifier_id = ?", notifierID).
		Where("d.status IN ('pending', 'sending', 'dead')").Where("d.status = 'dead'"). // the open index's predicate, then the status
		OrderExpr("d.id ASC").Limit(int64(limit))
	if err := database.Lock(q, "UPDATE").Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock dead deliveries: %w", err)
	}
	return out, nil
}

// LockDelivery locks one delivery of a notifier; sql.ErrNoRows when absent.
func LockDelivery(ctx context.Context, tx bun.IDB, notifierID, id string) (*Delivery, error) {
	d := new(Delivery)
	q := tx.NewSelect().Model(d).Where("d.notifier_id = ? AND d.id = ?", notifierID, id)
	if err := database.Lock(q, "UPDATE").Scan(ctx); err != nil {
		return nil, err
	}
	return d, nil
}
