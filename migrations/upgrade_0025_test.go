package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
)

// Migration 0025 counts the schedules that were there before it: every
// namespace's active and paused ones, soft-deleted ones left out, and the
// triggers it creates count the writes after it.
func TestUpgradeTo0025CountsExistingSchedules(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := migratedUpTo(t, dialect, 24)

			spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
			at := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
			var seeded []models.Schedule
			for i := range 10 {
				seeded = append(seeded, models.Schedule{ID: fmt.Sprintf("UP%024d", i), Namespace: "default",
					ScheduleID: loadgen.ScheduleID("up", i), Status: models.StatusActive, Spec: spec, Action: models.Action{WorkflowType: "w"},
					OverlapPolicy: "skip", Labels: map[string]string{}, Memo: map[string]string{}, SearchAttributes: map[string]string{},
					BufferedActions: []models.BufferedAction{}, NextFireAt: &at, NextNominalAt: &at, CreatedAt: at, UpdatedAt: at})
			}
			insertOlder(t, db, &seeded)
			for _, set := range []struct{ ids, column, value string }{
				{"'up-000000', 'up-000001', 'up-000002'", "status", models.StatusPaused},
				{"'up-000003'", "status", models.StatusDeleted},
				{"'up-000004', 'up-000005'", "namespace", "other"},
				{"'up-000005'", "status", models.StatusPaused},
			} {
				_, err := db.ExecContext(ctx, "UPDATE workflow_schedules SET "+set.column+" = ? WHERE schedule_id IN ("+set.ids+")", set.value)
				require.NoError(t, err)
			}

			applied, err := migrations.ApplyUpTo(ctx, db, 25)
			require.NoError(t, err)
			require.Equal(t, []string{"0025_namespace_schedule_counts.sql"}, applied)
			counts := func() [2][2]int64 {
				t.Helper()
				var out [2][2]int64
				for i, ns := range []string{"default", "other"} {
					// What 0025's release read (models.CountSchedules reads
					// 0032's failing column too).
					require.NoError(t, db.NewRaw(`SELECT COALESCE(SUM(active), 0), COALESCE(SUM(paused), 0)
						FROM namespace_schedule_counts WHERE namespace = ?`, ns).Scan(ctx, &out[i][0], &out[i][1]))
				}
				return out
			}
			require.Equal(t, [2][2]int64{{4, 3}, {1, 1}}, counts(), "default: up-6…9 and up-0…2; other: up-4 and up-5")

			_, err = db.ExecContext(ctx, "UPDATE workflow_schedules SET status = ? WHERE schedule_id = 'up-000006'", models.StatusDeleted)
			require.NoError(t, err)
			require.Equal(t, [2][2]int64{{3, 3}, {1, 1}}, counts(), "after a delete")
		})
	}
}
