// Package loadgen drives and measures Tideline at scale from outside its
// loop: it seeds many schedules due at the same instants, watches the runs
// appear from a connection of its own, checks that every occurrence fired
// exactly once, and measures what the fires cost in table bytes and rows.
// `tideline bench` and the reliability benchmarks share it, so the numbers
// in docs/PERFORMANCE.md and the ones anyone reproduces come from one code.
package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
)

// seedChunk is how many schedules one INSERT carries: large enough to make
// seeding 100,000 quick, small enough to stay under SQLite's and bun's
// statement limits.
const seedChunk = 1000

// Seed inserts n active allow_all schedules with the given spec whose next
// fire is next, bypassing Create (no audit event, no validation) so that
// 100,000 take seconds. Schedule IDs are prefix-000000, prefix-000001, …;
// their internal IDs prefix followed by the zero-padded index.
//
// Each looks like a schedule that has been firing for a while: ten past
// actions fill its ring of recent actions (models.RingRow), so a fire
// measured on it costs what it costs from its eleventh on. (A new
// schedule's first fire adds its ring row, and its first ten make it grow.)
func Seed(ctx context.Context, db bun.IDB, prefix string, n int, spec models.Spec, next time.Time) error {
	created := next.Add(-time.Hour).UTC()
	for start := 0; start < n; start += seedChunk {
		if err := seedRings(ctx, db, prefix, start, min(start+seedChunk, n), next); err != nil {
			return err
		}
		batch := make([]models.Schedule, 0, seedChunk)
		for i := start; i < min(start+seedChunk, n); i++ {
			nt := next
			batch = append(batch, models.Schedule{
				ID: fmt.Sprintf("%s%020d", prefix, i), Namespace: "default", ScheduleID: ScheduleID(prefix, i),
				Status: models.StatusActive, Spec: spec,
				Action: models.Action{WorkflowType: "bench"}, OverlapPolicy: scheduling.OverlapAllowAll,
				Labels: map[string]string{}, Memo: map[string]string{}, SearchAttributes: map[string]string{},
				BufferedActions: []models.BufferedAction{}, ActionsCount: models.RecentActionsKept,
				NextFireAt: &nt, NextNominalAt: &nt, CreatedAt: created, UpdatedAt: created,
			})
		}
		if _, err := db.NewInsert().Model(&batch).Exec(ctx); err != nil {
			return fmt.Errorf("seed schedules: %w", err)
		}
	}
	return nil
}

// ringChunk is how many schedules' rings one statement writes.
const ringChunk = 200

// seedRings writes the rings of the schedules start…end-1 of prefix: the
// fires of the ten minutes before next.
func seedRings(ctx context.Context, db bun.IDB, prefix string, start, end int, next time.Time) error {
	for from := start; from < end; from += ringChunk {
		rows := make([]*models.RecentActionRow, 0, ringChunk*models.RecentActionsKept)
		for i := from; i < min(from+ringChunk, end); i++ {
			id := fmt.Sprintf("%s%020d", prefix, i)
			for k := range int64(models.RecentActionsKept) {
				at := next.Add(time.Duration(k-models.RecentActionsKept) * time.Minute).UTC()
				row := models.RecentActionSlot(id, k, models.RecentAction{
					InstanceID: models.ScheduledInstanceID(ScheduleID(prefix, i), at), RunID: fmt.Sprintf("SEEDRUN%019d", i*100+int(k)),
					Outcome: "scheduled", FiredAt: at, OccurrenceTime: at,
				})
				row.ScheduleID = ScheduleID(prefix, i)
				rows = append(rows, row)
			}
		}
		if err := models.SaveRecentActions(ctx, db, rows); err != nil {
			return fmt.Errorf("seed recent actions: %w", err)
		}
	}
	return nil
}

// ScheduleID is the schedule_id Seed gives the i-th schedule of prefix.
func ScheduleID(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }

// EverySpec is a spec firing every `every` at the instants first + k·every:
// an interval whose offset puts first on its grid. Unlike a cron
// expression it lets a run start within seconds instead of at the next
// minute boundary, and it fires in the same way (CONTRACT §3 intervals).
func EverySpec(first time.Time, every time.Duration) models.Spec {
	in := models.Interval{Every: timespec.FormatISODuration(every)}
	if off := time.Duration(first.UnixNano() % int64(every)); off > 0 {
		in.Offset = timespec.FormatISODuration(off)
	}
	return models.Spec{CronExpressions: []string{}, Intervals: []models.Interval{in}, Timezone: "UTC"}
}

// Arm makes every schedule of prefix due at first with spec: one UPDATE,
// so that the instant can be chosen after the (slow) seeding, close enough
// to now that nobody waits, far enough that the loop has its full
// fire-ahead window.
func Arm(ctx context.Context, db bun.IDB, prefix string, spec models.Spec, first time.Time) error {
	_, err := db.NewUpdate().Model((*models.Schedule)(nil)).
		Set("spec = ?", spec).Set("next_fire_at = ?", first).Set("next_nominal_at = ?", first).
		Where("schedule_id LIKE ?", prefix+"-%").Exec(ctx)
	if err != nil {
		return fmt.Errorf("arm schedules: %w", err)
	}
	return nil
}

// Analyze refreshes the planner's statistics of the given tables after a
// bulk load, table by table: a bare ANALYZE would go through every schema
// of a PostgreSQL database, other people's included.
func Analyze(ctx context.Context, db bun.IDB, tables ...string) error {
	for _, t := range tables {
		if _, err := db.NewRaw("ANALYZE ?", bun.Ident(t)).Exec(ctx); err != nil {
			return fmt.Errorf("analyze %s: %w", t, err)
		}
	}
	return nil
}
