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

// Migration 0032 counts the failing schedules that were there before it:
// every namespace's live ones whose health says consecutive failures,
// deleted ones and healthy ones left out, beside the status counts 0025
// kept; and its triggers count the writes after it.
func TestUpgradeTo0032CountsFailingSchedules(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := migratedUpTo(t, dialect, 25)

			spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
			at := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
			var seeded []models.Schedule
			var health []models.ScheduleHealth
			for i := range 8 {
				ns, status := "default", models.StatusActive
				switch i {
				case 1:
					status = models.StatusPaused
				case 2:
					status = models.StatusDeleted
				case 6, 7:
					ns = "other"
				}
				id := fmt.Sprintf("UP%024d", i)
				seeded = append(seeded, models.Schedule{ID: id, Namespace: ns,
					ScheduleID: loadgen.ScheduleID("up", i), Status: status, Spec: spec, Action: models.Action{WorkflowType: "w"},
					OverlapPolicy: "skip", Labels: map[string]string{}, Memo: map[string]string{}, SearchAttributes: map[string]string{},
					BufferedActions: []models.BufferedAction{}, NextFireAt: &at, NextNominalAt: &at, CreatedAt: at, UpdatedAt: at})
				// up-0…2 and up-6 failing, up-3 healthy, up-4 without a row.
				if i != 4 && i != 5 && i != 7 {
					failures := int64(0)
					if i <= 2 || i == 6 {
						failures = int64(i + 1)
					}
					health = append(health, models.ScheduleHealth{ScheduleULID: id, ConsecutiveFailures: failures, FailuresCount: failures,
						RecentRuns: []models.RecentRun{}, UpdatedAt: at})
				}
			}
			insertOlder(t, db, &seeded)
			insertOlder(t, db, &health)

			applied, err := migrations.ApplyUpTo(ctx, db, 32)
			require.NoError(t, err)
			require.NotEmpty(t, applied)
			require.Equal(t, "0032_namespace_failing_counts.sql", applied[len(applied)-1])
			counts := func() [2][3]int64 {
				t.Helper()
				var out [2][3]int64
				for i, ns := range []string{"default", "other"} {
					c, err := models.CountSchedules(ctx, db, ns)
					require.NoError(t, err)
					out[i] = [3]int64{c.Active, c.Paused, c.Failing}
				}
				return out
			}
			require.Equal(t, [2][3]int64{{4, 1, 2}, {2, 0, 1}}, counts(), "default: up-0 and up-1 failing (up-2 deleted); other: up-6")

			_, err = db.ExecContext(ctx, "UPDATE workflow_schedules SET status = ? WHERE schedule_id = 'up-000000'", models.StatusDeleted)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "UPDATE workflow_schedule_health SET consecutive_failures = 1 WHERE schedule_ulid = ?", fmt.Sprintf("UP%024d", 3))
			require.NoError(t, err)
			require.Equal(t, [2][3]int64{{3, 1, 2}, {2, 0, 1}}, counts(), "after a delete of a failing one and a first failure")
		})
	}
}
