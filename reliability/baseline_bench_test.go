package reliability

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// benchT0 matches the scheduling benchmarks' start instant.
var benchT0 = time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)

// seedMinutely bulk-inserts n active allow_all schedules on "* * * * *"
// whose next fire is at next (loadgen.Seed, as `tideline bench` seeds).
func seedMinutely(b testing.TB, db *bun.DB, prefix string, n int, next time.Time) {
	b.Helper()
	spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
	if err := loadgen.Seed(context.Background(), db, prefix, n, spec, next); err != nil {
		b.Fatal(err)
	}
}

// makeAllDue moves every schedule's next fire to at.
func makeAllDue(b testing.TB, db *bun.DB, at time.Time) {
	b.Helper()
	_, err := db.NewUpdate().Model((*models.Schedule)(nil)).
		Set("next_fire_at = ?", at).Set("next_nominal_at = ?", at).Where("TRUE").Exec(context.Background())
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFireBaseline is the yardstick for scheduling's
// BenchmarkFireThroughput: the same 10,000 due schedules, the same batches
// of 500 in one transaction each, the same claim query, and the same rows
// written per fire — a run carrying its ScheduleTriggered provenance (and
// standing for its instance, migration 0009), a ScheduleTriggered audit
// event and the schedule row update (counters, latest IDs, next fire,
// recent actions) — but as hand-written multi-row
// SQL with none of the service's work (no ORM models, no spec compilation,
// no payload validation; the next fire of "* * * * *" is hard-coded).
// fires/s here over fires/s there is how close the engine gets to what the
// database allows for this write set.
//
//	go test ./scheduling ./reliability -p 1 -run '^$' -bench 'FireThroughput|FireBaseline' -count 6
func BenchmarkFireBaseline(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			const n, batch = 10000, 500
			db := dbtest.Open(b, dialect)
			seedMinutely(b, db, "due", n, benchT0)
			var fired int
			var elapsed time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				at := benchT0.Add(time.Duration(i) * time.Minute)
				makeAllDue(b, db, at)
				now := at.Add(time.Second)
				b.StartTimer()
				started := time.Now()
				for {
					k, err := baselineBatch(context.Background(), db, now, batch)
					if err != nil {
						b.Fatal(err)
					}
					fired += k
					if k < batch {
						break
					}
				}
				elapsed += time.Since(started)
			}
			if fired%n != 0 {
				b.Fatalf("fired %d, not a multiple of %d", fired, n)
			}
			b.ReportMetric(float64(fired)/elapsed.Seconds(), "fires/s")
		})
	}
}

type baselineClaim struct {
	ID            string
	ScheduleID    string
	Namespace     string
	FiresCount    int64
	LastSequence  int64
	RecentActions []byte
	Nominal       time.Time
}

// baselineBatch fires up to limit due schedules in one transaction.
func baselineBatch(ctx context.Context, db *bun.DB, now time.Time, limit int) (int, error) {
	pg := database.Of(db).Name() == database.PostgreSQL
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()

	claim := `SELECT s.id, s.schedule_id, s.namespace, s.fires_count, s.last_sequence, s.recent_actions, s.next_nominal_at, r.status
		FROM workflow_schedules AS s LEFT JOIN workflow_runs AS r ON r.id = s.latest_run_id
		WHERE s.status = 'active' AND s.next_fire_at <= ? ORDER BY s.next_fire_at ASC, s.id ASC LIMIT ?`
	if pg {
		claim += " FOR UPDATE OF s SKIP LOCKED"
	}
	rows, err := tx.QueryContext(ctx, claim, now, limit)
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	var claimed []baselineClaim
	for rows.Next() {
		var c baselineClaim
		var runStatus sql.NullString
		var nominal any
		if err := rows.Scan(&c.ID, &c.ScheduleID, &c.Namespace, &c.FiresCount, &c.LastSequence, &c.RecentActions, &nominal, &runStatus); err != nil {
			_ = rows.Close()
			return 0, err
		}
		if c.Nominal, err = scanTime(nominal); err != nil {
			_ = rows.Close()
			return 0, err
		}
		claimed = append(claimed, c)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if len(claimed) == 0 {
		return 0, tx.Commit()
	}

	// The write set of a fire since migration 0009: the run (also the
	// occurrence's instance, with its ScheduleTriggered provenance), the
	// audit event and the schedule update.
	var (
		runs, events, updates strings.Builder
		runArgs, eventArgs    []any
		updArgs               []any
	)
	runs.WriteString("INSERT INTO workflow_runs (id, namespace, instance_id, workflow_schedule_id, schedule_id, workflow_type, workflow_class, input, status, trigger, connection, queue, attempt, occurrence_time, last_sequence, created_at, updated_at, trigger_number, trigger_cron, trigger_timezone, trigger_overlap_policy) VALUES ")
	events.WriteString("INSERT INTO workflow_schedule_history_events (id, workflow_schedule_id, sequence, event_type, payload, workflow_instance_id, workflow_run_id, recorded_at) VALUES ")
	cast := func(pgType string) string {
		if pg {
			return "CAST(? AS " + pgType + ")"
		}
		return "?"
	}
	updates.WriteString("WITH v (id, fires_count, last_sequence, last_fired_at, latest_instance_id, latest_run_id, next_fire_at, next_nominal_at, recent_actions, updated_at) AS (VALUES ")
	next := now.Truncate(time.Minute).Add(time.Minute) // Next of "* * * * *"
	entropy := ulid.Monotonic(rand.Reader, 0)
	newID := func() string { return ulid.MustNew(ulid.Timestamp(now), entropy).String() }
	for i, c := range claimed {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		runID := newID()
		instanceID := fmt.Sprintf("schedule:%s:%d", c.ScheduleID, c.Nominal.Unix())
		trigger := c.FiresCount + 1
		occurrence := scheduling.FormatTime(c.Nominal)

		runs.WriteString(sep + "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		runArgs = append(runArgs, runID, c.Namespace, instanceID, c.ID, c.ScheduleID, "bench", "", "null",
			"pending", "scheduled", "default", "default", 0, c.Nominal, 1, now, now, trigger, "* * * * *", "UTC", "allow_all")

		payload, _ := json.Marshal(map[string]any{
			"workflow_instance_id": instanceID, "workflow_run_id": runID, "outcome": "scheduled",
			"effective_overlap_policy": "allow_all", "trigger_number": trigger, "occurrence_time": occurrence,
			"command_context": map[string]string{"source": "scheduler"},
		})
		events.WriteString(sep + "(?, ?, ?, ?, ?, ?, ?, ?)")
		eventArgs = append(eventArgs, newID(), c.ID, c.LastSequence+1, "ScheduleTriggered", string(payload), instanceID, runID, now)

		var recent []json.RawMessage
		_ = json.Unmarshal(c.RecentActions, &recent)
		action, _ := json.Marshal(models.RecentAction{InstanceID: instanceID, RunID: runID, Outcome: "scheduled",
			FiredAt: now, OccurrenceTime: c.Nominal, FireLagMs: now.Sub(c.Nominal).Milliseconds()})
		recent = append([]json.RawMessage{action}, recent...)
		if len(recent) > 10 {
			recent = recent[:10]
		}
		recentJSON, _ := json.Marshal(recent)
		updates.WriteString(sep + "(" + strings.Join([]string{cast("text"), cast("bigint"), cast("bigint"), cast("timestamptz"),
			cast("text"), cast("text"), cast("timestamptz"), cast("timestamptz"), cast("jsonb"), cast("timestamptz")}, ", ") + ")")
		updArgs = append(updArgs, c.ID, trigger, c.LastSequence+1, now, instanceID, runID, next, next, string(recentJSON), now)
	}
	updates.WriteString(`) UPDATE workflow_schedules SET fires_count = v.fires_count, last_sequence = v.last_sequence,
		last_fired_at = v.last_fired_at, latest_instance_id = v.latest_instance_id, latest_run_id = v.latest_run_id,
		next_fire_at = v.next_fire_at, next_nominal_at = v.next_nominal_at, recent_actions = v.recent_actions, updated_at = v.updated_at
		FROM v WHERE workflow_schedules.id = v.id`)

	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{runs.String(), runArgs}, {events.String(), eventArgs}, {updates.String(), updArgs},
	} {
		if _, err := tx.ExecContext(ctx, stmt.sql, stmt.args...); err != nil {
			return 0, fmt.Errorf("%.40s…: %w", stmt.sql, err)
		}
	}
	return len(claimed), tx.Commit()
}

// scanTime reads a timestamp column: time.Time on PostgreSQL, text on SQLite.
func scanTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case string:
		return parseSQLiteTime(t)
	case []byte:
		return parseSQLiteTime(string(t))
	}
	return time.Time{}, fmt.Errorf("scan time: unexpected %T", v)
}

func parseSQLiteTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999Z07:00", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("scan time: cannot parse %q", s)
}
