package models

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// Delivery statuses of the notification outbox.
const (
	DeliveryPending   = "pending"
	DeliverySending   = "sending"
	DeliveryDelivered = "delivered"
	DeliveryDead      = "dead"
)

// Notifier is a row of notifiers: where a namespace's events are posted.
type Notifier struct {
	bun.BaseModel `bun:"table:notifiers,alias:n"`

	ID            string            `bun:"id,pk"`
	Namespace     string            `bun:"namespace,notnull"`
	Name          string            `bun:"name,notnull"`
	URL           string            `bun:"url,notnull"`
	Format        string            `bun:"format,notnull"`
	Events        []string          `bun:"events,type:jsonb,notnull"`
	LabelSelector map[string]string `bun:"label_selector,type:jsonb,notnull"`
	Secret        string            `bun:"secret,notnull"`
	CreatedAt     time.Time         `bun:"created_at,notnull"`
	UpdatedAt     time.Time         `bun:"updated_at,notnull"`
}

// Delivery is a row of notification_deliveries: one event for one notifier.
type Delivery struct {
	bun.BaseModel `bun:"table:notification_deliveries,alias:d"`

	ID             string          `bun:"id,pk"`
	Namespace      string          `bun:"namespace,notnull"`
	NotifierID     string          `bun:"notifier_id,notnull"`
	EventType      string          `bun:"event_type,notnull"`
	ScheduleID     *string         `bun:"schedule_id"`
	RunID          *string         `bun:"run_id"`
	Document       json.RawMessage `bun:"document,type:jsonb,notnull"`
	Status         string          `bun:"status,notnull"`
	Attempts       int             `bun:"attempts,notnull"`
	NextAttemptAt  *time.Time      `bun:"next_attempt_at"`
	LastAttemptAt  *time.Time      `bun:"last_attempt_at"`
	LastStatusCode *int            `bun:"last_status_code"`
	LastError      *string         `bun:"last_error"`
	DeliveredAt    *time.Time      `bun:"delivered_at"`
	// RedeliveredAt is when an operator last sent the dead delivery back;
	// its retry window counts from then (migration 0024).
	RedeliveredAt *time.Time `bun:"redelivered_at"`
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	UpdatedAt     time.Time  `bun:"updated_at,notnull"`
}

// InsertNotifier writes a new notifier; a duplicate name is reported by
// the unique key (the caller maps it).
func InsertNotifier(ctx context.Context, db bun.IDB, n *Notifier) error {
	if _, err := db.NewInsert().Model(n).Exec(ctx); err != nil {
		return fmt.Errorf("insert notifier: %w", err)
	}
	return nil
}

// UpdateNotifier saves every column of n.
func UpdateNotifier(ctx context.Context, db bun.IDB, n *Notifier) error {
	if _, err := db.NewUpdate().Model(n).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update notifier: %w", err)
	}
	return nil
}

// GetNotifier reads one notifier by name; sql.ErrNoRows when absent.
func GetNotifier(ctx context.Context, db bun.IDB, namespace, name string) (*Notifier, error) {
	n := new(Notifier)
	if err := db.NewSelect().Model(n).Where("n.namespace = ? AND n.name = ?", namespace, name).Scan(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// ListNotifiers returns the notifiers of the namespaces, by namespace and
// name. Namespaces hold few notifiers (the service caps them), so every
// fact's transaction can afford to read them.
func ListNotifiers(ctx context.Context, db bun.IDB, namespaces ...string) ([]Notifier, error) {
	out := []Notifier{}
	if len(namespaces) == 0 {
		return out, nil
	}
	err := db.NewSelect().Model(&out).Where("n.namespace IN (?)", bun.In(namespaces)).
		OrderExpr("n.namespace, n.name").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list notifiers: %w", err)
	}
	return out, nil
}

// NotifiersByID reads notifiers by ID (those deleted are absent).
func NotifiersByID(ctx context.Context, db bun.IDB, ids []string) (map[string]Notifier, error) {
	out := map[string]Notifier{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []Notifier
	if err := db.NewSelect().Model(&rows).Where("n.id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read notifiers: %w", err)
	}
	for _, n := range rows {
		out[n.ID] = n
	}
	return out, nil
}

// CountNotifiers returns how many notifiers the namespace has.
func CountNotifiers(ctx context.Context, db bun.IDB, namespace string) (int, error) {
	n, err := db.NewSelect().Model((*Notifier)(nil)).Where("n.namespace = ?", namespace).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count notifiers: %w", err)
	}
	return int(n), nil
}

// DeleteNotifier removes a notifier and its delivery log.
func DeleteNotifier(ctx context.Context, db bun.IDB, id string) error {
	if _, err := db.NewDelete().Model((*Delivery)(nil)).Where("notifier_id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("delete deliveries: %w", err)
	}
	if err := DeleteNotifierHealth(ctx, db, id); err != nil {
		return err
	}
	if _, err := db.NewDelete().Model((*Notifier)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("delete notifier: %w", err)
	}
	return nil
}

// InsertDeliveries writes outbox rows in one statement.
func InsertDeliveries(ctx context.Context, db bun.IDB, list []*Delivery) error {
	if len(list) == 0 {
		return nil
	}
	if _, err := db.NewInsert().Model(&list).Exec(ctx); err != nil {
		return fmt.Errorf("insert deliveries: %w", err)
	}
	return nil
}

// DeliveryLane is where due deliveries wait: one notifier of a namespace.
type DeliveryLane struct {
	Namespace  string `bun:"namespace"`
	NotifierID string `bun:"notifier_id"`
}

// DueDeliveryLanes returns up to limit notifiers with a delivery due now
// (as ClaimDeliveries takes them), by namespace and notifier. The partial
// due index holds only the deliveries still to be sent.
func DueDeliveryLanes(ctx context.Context, db bun.IDB, now time.Time, limit int) ([]DeliveryLane, error) {
	var out []DeliveryLane
	err := deliveriesToSend(db).ColumnExpr("d.namespace AS namespace, d.notifier_id AS notifier_id").
		Where("d.next_attempt_at <= ?", now).
		GroupExpr("d.namespace, d.notifier_id").OrderExpr("d.namespace, d.notifier_id").Limit(int64(limit)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read due delivery lanes: %w", err)
	}
	return out, nil
}

// deliveriesToSend selects the deliveries still to be sent (the partial
// due index's rows).
func deliveriesToSend(db bun.IDB) *bun.SelectQuery {
	return db.NewSelect().Model((*Delivery)(nil)).Where("d.status IN (?)", bun.In([]string{DeliveryPending, DeliverySending}))
}

// ClaimDeliveries locks up to limit deliveries of one notifier that are
// due (pending and not before now), or whose sender's lease ran out
// (sending, lease ended), oldest due first. SKIP LOCKED gives concurrent
// dispatchers disjoint rows.
func ClaimDeliveries(ctx context.Context, tx bun.IDB, now time.Time, notifierID string, limit int) ([]Delivery, error) {
	var out []Delivery
	q := tx.NewSelect().Model(&out).
		Where("d.notifier_id = ?", notifierID).
		Where("d.status IN (?)", bun.In([]string{DeliveryPending, DeliverySending})).
		Where("d.next_attempt_at <= ?", now).
		OrderExpr("d.next_attempt_at ASC, d.id ASC").Limit(int64(limit))
	if err := database.Lock(q, "UPDATE SKIP LOCKED").Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, nil
}

// UpdateDelivery saves a delivery.
func UpdateDelivery(ctx context.Context, db bun.IDB, d *Delivery) error {
	if _, err := db.NewUpdate().Model(d).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update delivery: %w", err)
	}
	return nil
}

// FinishAttempt saves the result of attempt number attempts of a delivery,
// only if the row is still that claim (sending, same attempt count): a
// sender that outlived its lease must not overwrite the work of the
// dispatcher that took the row over. It reports whether it wrote.
func FinishAttempt(ctx context.Context, db bun.IDB, d *Delivery, attempts int) (bool, error) {
	res, err := db.NewUpdate().Model(d).WherePK().
		Where("d.status = ? AND d.attempts = ?", DeliverySending, attempts).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("finish delivery attempt: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// GetDelivery reads one delivery of a notifier.
func GetDelivery(ctx context.Context, db bun.IDB, notifierID, id string) (*Delivery, error) {
	d := new(Delivery)
	if err := db.NewSelect().Model(d).Where("d.notifier_id = ? AND d.id = ?", notifierID, id).Scan(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// ListDeliveries returns a notifier's deliveries newest first, limit+1 read
// to tell whether more follow; beforeID continues a page.
func ListDeliveries(ctx context.Context, db bun.IDB, notifierID, beforeID string, limit int) ([]Delivery, bool, error) {
	var out []Delivery
	q := db.NewSelect().Model(&out).Where("d.notifier_id = ?", notifierID).OrderExpr("d.id DESC").Limit(int64(limit + 1))
	if beforeID != "" {
		q = q.Where("d.id < ?", beforeID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("list deliveries: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// CountOutbox returns the number of deliveries still to be sent, by status
// (pending, sending): the outbox depth. Only those statuses are counted, so
// the partial due index answers however long the delivery log grows.
func CountOutbox(ctx context.Context, db bun.IDB) (map[string]int64, error) {
	var rows []struct {
		Status string `bun:"status"`
		N      int64  `bun:"n"`
	}
	err := db.NewSelect().Model((*Delivery)(nil)).ColumnExpr("d.status AS status, count(*) AS n").
		Where("d.status IN (?)", bun.In([]string{DeliveryPending, DeliverySending})).Where("d.next_attempt_at IS NOT NULL").
		GroupExpr("d.status").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("count outbox: %w", err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// ScheduleLabels reads the schedule ID and labels of schedules without
// locking them (a run-ending transaction must not take schedule locks).
func ScheduleLabels(ctx context.Context, db bun.IDB, ulids []string) (map[string]Schedule, error) {
	out := map[string]Schedule{}
	if len(ulids) == 0 {
		return out, nil
	}
	var rows []Schedule
	err := db.NewSelect().Model(&rows).Column("s.id", "s.namespace", "s.schedule_id", "s.labels").
		Where("s.id IN (?)", bun.In(ulids)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read schedule labels: %w", err)
	}
	for _, s := range rows {
		out[s.ID] = s
	}
	return out, nil
}

// ClaimStartDeadlines locks up to limit pending runs whose start deadline
// passed and that were not reported yet.
func ClaimStartDeadlines(ctx context.Context, tx bun.IDB, now time.Time, limit int) ([]Run, error) {
	var out []Run
	q := startDeadlinePassed(tx, now).Model(&out).OrderExpr("r.start_deadline_at ASC").Limit(int64(limit))
	if err := database.Lock(q, "UPDATE SKIP LOCKED").Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim start deadlines: %w", err)
	}
	return out, nil
}

// startDeadlinePassed selects the pending runs past their start deadline.
func startDeadlinePassed(db bun.IDB, now time.Time) *bun.SelectQuery {
	return startDeadlines(db).Where("r.start_deadline_at <= ?", now)
}

// startDeadlines selects the pending runs with a start deadline not yet
// reported.
func startDeadlines(db bun.IDB) *bun.SelectQuery {
	return db.NewSelect().Model((*Run)(nil)).Where("r.start_deadline_at IS NOT NULL AND r.status = ?", RunPending)
}

// ClearStartDeadlines marks runs as reported.
func ClearStartDeadlines(ctx context.Context, tx bun.IDB, runIDs []string) error {
	if len(runIDs) == 0 {
		return nil
	}
	_, err := tx.NewUpdate().Model((*Run)(nil)).Set("start_deadline_at = NULL").Where("id IN (?)", bun.In(runIDs)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("clear start deadlines: %w", err)
	}
	return nil
}
