package migrations_test

import (
	"context"
	"fmt"
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
	if database.IsPostgres(db) {
		require.NoError(t, db.NewRaw(`SELECT table_name || '.' || column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name LIKE 'workflow_%'`).Scan(ctx, &out))
	} else {
		require.NoError(t, db.NewRaw(`SELECT m.name || '.' || p.name FROM sqlite_master m, pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.name LIKE 'workflow_%'`).Scan(ctx, &out))
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
		"workflow_instances": true, "workflow_runs": true, "workflow_history_events": true, "workflow_schedule_health": true,
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

// Migration 0010 drops the last run and the strip from the health rows
// (they are read from the runs since): a database that had them keeps its
// counters and shows the same last run and strip afterwards.
func TestHealthFromRunsKeepsExistingHealth(t *testing.T) {
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
				SearchAttributes: map[string]string{}, BufferedActions: []models.BufferedAction{}, RecentActions: []models.RecentAction{},
				CreatedAt: t0, UpdatedAt: t0}
			_, err = db.NewInsert().Model(&sch).Exec(ctx)
			require.NoError(t, err)
			// Twelve finished runs, one a minute; the last two failed.
			msg := "disk full"
			for i := range 12 {
				at := t0.Add(time.Duration(i) * time.Minute)
				started, finished := at.Add(time.Second), at.Add(1500*time.Millisecond+time.Duration(i)*time.Millisecond)
				id := fmt.Sprintf("01RUN%02d", i)
				status, failure := models.RunCompleted, (*string)(nil)
				if i >= 10 {
					status, failure = models.RunFailed, &msg
				}
				inst := models.Instance{ID: "01INST" + id, Namespace: "default", InstanceID: id, WorkflowType: "w", WorkflowScheduleID: &sch.ID,
					ScheduleID: &sch.ScheduleID, Status: status, CreatedAt: at, UpdatedAt: finished}
				run := models.Run{ID: id, Namespace: "default", WorkflowInstanceID: inst.ID, InstanceID: id, WorkflowScheduleID: &sch.ID,
					ScheduleID: &sch.ScheduleID, WorkflowType: "w", Status: status, Trigger: "scheduled", Connection: "default", Queue: "default",
					Attempt: 1, OccurrenceTime: &at, CreatedAt: at, StartedAt: &started, FinishedAt: &finished, FailureMessage: failure, UpdatedAt: finished}
				_, err = db.NewInsert().Model(&inst).Exec(ctx)
				require.NoError(t, err)
				_, err = db.NewInsert().Model(&run).Exec(ctx)
				require.NoError(t, err)
			}
			_, err = db.ExecContext(ctx, `INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, paused_at_failures,
				last_run_id, last_run_status, last_run_finished_at, last_run_error, recent_runs, updated_at)
				VALUES ('01SCHEDULE', 2, 7, 2, '01RUN11', 'failed', ?, 'disk full', '[{"run_id":"01RUN11","status":"failed"}]', ?)`,
				t0.Add(11*time.Minute+1511*time.Millisecond), t0)
			require.NoError(t, err)

			applied, err := migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.Equal(t, []string{"0010_health_from_runs.sql"}, applied)

			health, err := models.GetHealth(ctx, db, []string{sch.ID})
			require.NoError(t, err)
			h := health[sch.ID]
			require.EqualValues(t, 2, h.ConsecutiveFailures, "counters kept")
			require.EqualValues(t, 7, h.FailuresCount)
			require.EqualValues(t, 2, h.PausedAtFailures)
			require.Equal(t, "01RUN11", *h.LastRunID)
			require.Equal(t, models.RunFailed, *h.LastRunStatus)
			require.Equal(t, "disk full", *h.LastRunError)
			require.Equal(t, t0.Add(11*time.Minute+1511*time.Millisecond), *h.LastRunFinishedAt)
			require.Len(t, h.RecentRuns, models.RecentRunsKept)
			for i, rr := range h.RecentRuns {
				n := 11 - i // newest first
				require.Equal(t, fmt.Sprintf("01RUN%02d", n), rr.RunID)
				require.Equal(t, t0.Add(time.Duration(n)*time.Minute), *rr.Occurrence())
				require.EqualValues(t, 500+n, *rr.DurationMs)
			}
			require.Equal(t, models.RunFailed, h.RecentRuns[0].Status)
			require.Equal(t, models.RunCompleted, h.RecentRuns[2].Status)
		})
	}
}
