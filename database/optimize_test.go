package database_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
)

// Optimize gives the planner statistics of the tables as they are: SQLite's
// sqlite_stat1 holds the schedules table's row count afterwards, and on
// PostgreSQL a table never analyzed (autovacuum is off on this project's
// machines) has its reltuples from then on.
func TestOptimizeRecordsStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.SQLite(t)
	spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
	require.NoError(t, loadgen.Seed(ctx, db, "opt", 300, spec, time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)))
	var before int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").Scan(ctx, &before))
	require.Zero(t, before, "a new database has no statistics")

	require.NoError(t, database.Of(db).Optimize(ctx, db))
	// Each index's stat starts with the rows it covers; the full ones cover all.
	var rows int
	require.NoError(t, db.NewRaw("SELECT max(CAST(stat AS INTEGER)) FROM sqlite_stat1 WHERE tbl = 'workflow_schedules'").Scan(ctx, &rows))
	require.Equal(t, 300, rows, "the schedules table's row count")

	pg := dbtest.Postgres(t)
	require.NoError(t, loadgen.Seed(ctx, pg, "opt", 300, spec, time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)))
	var tuples float64
	require.NoError(t, pg.NewRaw("SELECT reltuples FROM pg_class WHERE oid = 'workflow_schedule_rings'::regclass").Scan(ctx, &tuples))
	require.Equal(t, -1.0, tuples, "never analyzed")
	require.NoError(t, database.Of(pg).Optimize(ctx, pg))
	require.NoError(t, pg.NewRaw("SELECT reltuples FROM pg_class WHERE oid = 'workflow_schedule_rings'::regclass").Scan(ctx, &tuples))
	require.Equal(t, 300.0, tuples, "a ring a schedule")
}
