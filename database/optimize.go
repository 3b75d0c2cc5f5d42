package database

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Optimize lets SQLite's planner see how big the tables have become.
// SQLite keeps no statistics unless asked, and without them it guesses:
// with 100,000 schedules it read every one of them each loop pass to find
// the failing few (models.ClaimFailing, ~70 ms a pass against ~1.3 ms with
// statistics; BenchmarkLoopPassIdle). PRAGMA optimize analyzes only the
// tables that were never analyzed or whose size changed a lot since, each
// within analysis_limit rows, so calling it often costs little. PostgreSQL
// keeps its statistics itself (autovacuum): nothing to do there.
func Optimize(ctx context.Context, db bun.IDB) error {
	if IsPostgres(db) {
		return nil
	}
	// 0x10002: consider every table, not only those this connection has
	// queried (it is called right after opening, too).
	for _, stmt := range []string{"PRAGMA analysis_limit = 1000", "PRAGMA optimize = 0x10002"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("optimize database: %w", err)
		}
	}
	return nil
}
