package schedtest

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// ScanCounts counts a namespace's live schedules by status, and the
// failing ones, the way models.CountSchedules did before migrations 0025
// and 0032: a scan of the namespace's schedule rows, each joined to its
// health row. The counts the triggers keep must equal it after every
// write; BenchmarkScheduleCounts measures both.
func ScanCounts(ctx context.Context, db bun.IDB, namespace string) (models.ScheduleCounts, error) {
	var c models.ScheduleCounts
	err := db.NewRaw(`SELECT
		COALESCE(SUM(CASE WHEN s.status = ? THEN 1 ELSE 0 END), 0) AS active_count,
		COALESCE(SUM(CASE WHEN s.status = ? THEN 1 ELSE 0 END), 0) AS paused_count,
		COALESCE(SUM(CASE WHEN h.consecutive_failures > 0 THEN 1 ELSE 0 END), 0) AS failing_count
		FROM workflow_schedules AS s
		LEFT JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id
		WHERE s.namespace = ? AND s.status IN (?)`,
		models.StatusActive, models.StatusPaused,
		namespace, bun.In([]string{models.StatusActive, models.StatusPaused})).Scan(ctx, &c)
	c.All = c.Active + c.Paused
	return c, err
}
