package models

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ObjectAuditEvent is a row of object_audit_events (migration 0016): one
// change of a namespace object other than a schedule — a notifier, a
// calendar — with who made it.
type ObjectAuditEvent struct {
	bun.BaseModel `bun:"table:object_audit_events,alias:oa"`

	ID         string          `bun:"id,pk"`
	Namespace  string          `bun:"namespace,notnull"`
	ObjectKind string          `bun:"object_kind,notnull"`
	ObjectName string          `bun:"object_name,notnull"`
	EventType  string          `bun:"event_type,notnull"`
	Actor      string          `bun:"actor,notnull"`
	Source     string          `bun:"source,notnull"`
	RequestID  string          `bun:"request_id,notnull"`
	Payload    json.RawMessage `bun:"payload,type:jsonb,notnull"`
	RecordedAt time.Time       `bun:"recorded_at,notnull"`
}

// InsertObjectAuditEvent appends one change to an object's trail.
func InsertObjectAuditEvent(ctx context.Context, db bun.IDB, e *ObjectAuditEvent) error {
	if _, err := db.NewInsert().Model(e).Exec(ctx); err != nil {
		return fmt.Errorf("insert object audit event: %w", err)
	}
	return nil
}

// LastObjectChangeSource is the source of an object's latest change of one
// of eventTypes ("" when it has none): one step back along the object index.
func LastObjectChangeSource(ctx context.Context, db bun.IDB, namespace, kind, name string, eventTypes []string) (string, error) {
	var source []string
	err := db.NewSelect().Model((*ObjectAuditEvent)(nil)).Column("oa.source").
		Where("oa.namespace = ? AND oa.object_kind = ? AND oa.object_name = ? AND oa.event_type IN (?)", namespace, kind, name, bun.In(eventTypes)).
		OrderExpr("oa.id DESC").Limit(1).Scan(ctx, &source)
	if err != nil {
		return "", fmt.Errorf("last object change: %w", err)
	}
	if len(source) == 0 {
		return "", nil
	}
	return source[0], nil
}

// ListObjectAuditEvents returns up to limit changes of one object after the
// cursor (an event ID; "" from the start), oldest first, and whether more
// follow. The object index makes every page cost the same.
func ListObjectAuditEvents(ctx context.Context, db bun.IDB, namespace, kind, name, after string, limit int) ([]ObjectAuditEvent, bool, error) {
	var out []ObjectAuditEvent
	err := db.NewSelect().Model(&out).
		Where("oa.namespace = ? AND oa.object_kind = ? AND oa.object_name = ? AND oa.id > ?", namespace, kind, name, after).
		OrderExpr("oa.id ASC").Limit(int64(limit + 1)).Scan(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("list object audit events: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
