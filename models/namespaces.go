package models

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// ListNamespaces returns up to limit namespaces that hold schedules, in
// order. It is a skip scan over the unique (namespace, schedule_id) index:
// each step asks for the smallest namespace after the previous one, so it
// reads one index entry per namespace, never the whole table (a plain
// SELECT DISTINCT would visit every schedule). The counter bounds the
// recursion on both databases, whatever the outer LIMIT does.
func ListNamespaces(ctx context.Context, db bun.IDB, limit int) ([]string, error) {
	var out []string
	err := db.NewRaw(`WITH RECURSIVE ns(name, n) AS (
	SELECT MIN(namespace), 1 FROM workflow_schedules
	UNION ALL
	SELECT (SELECT MIN(s.namespace) FROM workflow_schedules AS s WHERE s.namespace > ns.name), ns.n + 1
	FROM ns WHERE ns.name IS NOT NULL AND ns.n < ?
)
SELECT name FROM ns WHERE name IS NOT NULL ORDER BY name`, limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	return out, nil
}

// NamespacesHolding returns which of namespaces hold a schedule with this
// ID (any status), in order: one lookup per namespace in the unique
// (namespace, schedule_id) index.
func NamespacesHolding(ctx context.Context, db bun.IDB, scheduleID string, namespaces []string) ([]string, error) {
	if len(namespaces) == 0 {
		return nil, nil
	}
	var out []string
	err := db.NewSelect().TableExpr("workflow_schedules AS s").ColumnExpr("s.namespace").
		Where("s.schedule_id = ?", scheduleID).Where("s.namespace IN (?)", bun.In(namespaces)).
		OrderExpr("s.namespace ASC").Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("namespaces holding %q: %w", scheduleID, err)
	}
	return out, nil
}
