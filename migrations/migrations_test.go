package migrations_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
)

// columns lists "table.column" for every Tideline table of db.
func columns(t *testing.T, db *bun.DB) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	if database.Of(db).Name() == database.PostgreSQL {
		require.NoError(t, db.NewRaw(`SELECT table_name || '.' || column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name LIKE 'workflow_%'`).Scan(ctx, &out))
	} else {
		// Migration 0031's side tables are SQLite's stand-ins for
		// PostgreSQL's label and trigram indexes, not tables of the schema
		// (the full-text table brings shadow tables of its own).
		require.NoError(t, db.NewRaw(`SELECT m.name || '.' || p.name FROM sqlite_master m, pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.name LIKE 'workflow_%'
			AND m.name <> 'workflow_schedule_labels' AND m.name NOT LIKE 'workflow_schedule_search%'`).Scan(ctx, &out))
	}
	sort.Strings(out)
	return out
}

func TestBothDialectsHaveTheSameTablesAndColumns(t *testing.T) {
	t.Parallel()
	sqlite := columns(t, dbtest.SQLite(t))
	pg := columns(t, dbtest.Postgres(t))
	require.Equal(t, pg, sqlite)

	tables := map[string]bool{}
	for _, c := range pg {
		tables[strings.SplitN(c, ".", 2)[0]] = true
	}
	require.Equal(t, map[string]bool{
		"workflow_schedules": true, "workflow_schedule_history_events": true,
		"workflow_runs": true, "workflow_history_events": true, "workflow_schedule_health": true,
		"workflow_schedule_health_pending": true, "workflow_schedule_due": true,
		"workflow_schedule_recent_actions": true, "workflow_schedule_secrets": true,
		"workflow_schedule_compaction": true, "workflow_schedule_rings": true,
	}, tables)
	require.Contains(t, pg, "workflow_schedules.next_nominal_at")
}

func TestApplyIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	for _, name := range dbtest.Dialects {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var rawURL string
			if name == "postgres" {
				rawURL = dbtest.PostgresURL(t)
			} else {
				rawURL = "sqlite:" + t.TempDir() + "/m.db"
			}
			const replicas = 4
			var wg sync.WaitGroup
			applied := make([][]string, replicas)
			errs := make([]error, replicas)
			for i := range replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					db, err := database.Open(ctx, rawURL)
					if err != nil {
						errs[i] = err
						return
					}
					defer db.Close()
					applied[i], errs[i] = migrations.Apply(ctx, db)
				}()
			}
			wg.Wait()
			total := 0
			for i := range replicas {
				require.NoError(t, errs[i], "replica %d", i)
				total += len(applied[i])
			}
			db, err := database.Open(ctx, rawURL)
			require.NoError(t, err)
			defer db.Close()
			all, err := migrations.Load(db)
			require.NoError(t, err)
			require.Equal(t, len(all), total, "each migration applied exactly once across replicas")
			pending, err := migrations.Pending(ctx, db)
			require.NoError(t, err)
			require.Zero(t, pending)
			again, err := migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.Empty(t, again)
		})
	}
}

// Migration 0010 adds the pending run ends beside the health rows: a
// database that has health rows keeps them, and their stored strips (whose
// entries carry no finish time) merge with the ends recorded afterwards,
// newest first.
func TestHealthPendingKeepsExistingHealth(t *testing.T) {
	t.Parallel()
	for _, name := range dbtest.Dialects {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rawURL := "sqlite:" + t.TempDir() + "/m.db"
			if name == "postgres" {
				rawURL = dbtest.PostgresURL(t)
			}
			db, err := database.Open(ctx, rawURL)
			require.NoError(t, err)
			defer db.Close()

			// The schema as it was before 0010, recorded as applied.
			all, err := migrations.Load(db)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "CREATE TABLE tideline_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)")
			require.NoError(t, err)
			for _, m := range all {
				if m.Version >= 10 {
					continue
				}
				_, err := db.ExecContext(ctx, m.SQL)
				require.NoError(t, err, m.Name)
				_, err = db.ExecContext(ctx, "INSERT INTO tideline_migrations (version, name, applied_at) VALUES (?, ?, 'then')", m.Version, m.Name)
				require.NoError(t, err)
			}
			t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
			sch := models.Schedule{ID: "01SCHEDULE", Namespace: "default", ScheduleID: "nightly", Status: models.StatusActive,
				Spec:   models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"},
				Action: models.Action{WorkflowType: "w"}, OverlapPolicy: "allow_all", Labels: map[string]string{}, Memo: map[string]string{},
				SearchAttributes: map[string]string{}, BufferedActions: []models.BufferedAction{},
				CreatedAt: t0, UpdatedAt: t0}
			insertOlder(t, db, &sch)
			_, err = db.ExecContext(ctx, `INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, paused_at_failures,
				last_run_id, last_run_status, last_run_finished_at, last_run_error, recent_runs, updated_at)
				VALUES ('01SCHEDULE', 2, 7, 2, '01RUN10', 'failed', ?, 'disk full',
				'[{"run_id":"01RUN10","status":"failed","occurrence_ms":1,"duration_ms":5},{"run_id":"01RUN09","status":"completed","occurrence_ms":0,"duration_ms":4}]', ?)`,
				t0.Add(10*time.Minute), t0)
			require.NoError(t, err)

			applied, err := migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.NotEmpty(t, applied)
			require.Equal(t, "0010_health_pending.sql", applied[0], "the upgrade starts at 0010 (later migrations follow)")

			health, err := models.GetHealth(ctx, db, []string{sch.ID})
			require.NoError(t, err)
			h := health[sch.ID]
			require.EqualValues(t, 2, h.ConsecutiveFailures, "kept")
			require.EqualValues(t, 7, h.FailuresCount)
			require.Equal(t, "01RUN10", *h.LastRunID)
			require.Equal(t, "disk full", *h.LastRunError)
			require.Len(t, h.RecentRuns, 2)

			// A completion afterwards: pending until a fold, first either way.
			finished, started := t0.Add(11*time.Minute), t0.Add(11*time.Minute-1500*time.Millisecond)
			run := &models.Run{ID: "01RUN11", Status: models.RunCompleted, StartedAt: &started, FinishedAt: &finished}
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			b := models.NewBatch(tx)
			require.NoError(t, models.AddHealth(b, tx, []models.HealthDelta{{ScheduleULID: sch.ID, Reset: true, Finished: []*models.Run{run}}}, finished))
			require.NoError(t, b.Exec(ctx, tx))
			require.NoError(t, tx.Commit())
			for _, fold := range []bool{false, true} {
				if fold {
					tx, err := db.BeginTx(ctx, nil)
					require.NoError(t, err)
					n, err := models.FoldHealth(ctx, tx, finished, 10)
					require.NoError(t, err)
					require.Equal(t, 1, n)
					require.NoError(t, tx.Commit())
				}
				health, err = models.GetHealth(ctx, db, []string{sch.ID})
				require.NoError(t, err)
				h = health[sch.ID]
				require.Zero(t, h.ConsecutiveFailures, "fold=%v", fold)
				require.Equal(t, "01RUN11", *h.LastRunID)
				require.True(t, finished.Equal(*h.LastRunFinishedAt), "%v", *h.LastRunFinishedAt)
				require.Nil(t, h.LastRunError)
				ids := []string{}
				for _, r := range h.RecentRuns {
					ids = append(ids, r.RunID)
				}
				require.Equal(t, []string{"01RUN11", "01RUN10", "01RUN09"}, ids, "fold=%v", fold)
				require.EqualValues(t, 1500, *h.RecentRuns[0].DurationMs)
			}
		})
	}
}

// On PostgreSQL, migration 0028 installs pg_trgm where it may (here it
// may) and indexes the free-text search: the schedule ID, the note and the
// workflow type, lower-cased as the search compares them.
func TestSearchTextIndexesOnPostgres(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	var defs []string
	require.NoError(t, db.NewRaw(`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()
		AND indexname IN ('workflow_schedules_id_trgm_idx', 'workflow_schedules_note_trgm_idx', 'workflow_schedules_type_trgm_idx')
		ORDER BY indexname`).Scan(context.Background(), &defs))
	require.Len(t, defs, 3)
	for i, column := range []string{"lower(schedule_id)", "lower(note)", "lower((action ->> 'workflow_type'::text))"} {
		require.Contains(t, defs[i], "USING gin ("+column+" public.gin_trgm_ops)")
	}
}
