package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
)

// openDB opens the test's database from the test process itself, to
// prepare data and to check what the replicas wrote.
func openDB(t testing.TB, url string) *bun.DB {
	t.Helper()
	db, err := database.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fireStats summarises a verified run of scheduled fires.
type fireStats struct {
	Schedules int
	Fires     int
	// Dropped counts occurrences that passed while their schedule's
	// previous fire was late: the missed-fire policy skips them on purpose.
	Dropped int
	LagP50  time.Duration
	LagP99  time.Duration
	LagMax  time.Duration
}

func (s fireStats) String() string {
	return fmt.Sprintf("%d schedules, %d fires, %d occurrences dropped by the missed-fire policy, fire lag p50 %s p99 %s max %s",
		s.Schedules, s.Fires, s.Dropped, s.LagP50, s.LagP99, s.LagMax)
}

type runRow struct {
	ID             string    `bun:"id"`
	ScheduleULID   string    `bun:"workflow_schedule_id"`
	InstanceID     string    `bun:"instance_id"`
	TriggerNumber  *int64    `bun:"trigger_number"` // its served ScheduleTriggered event's
	Trigger        string    `bun:"trigger"`
	OccurrenceTime time.Time `bun:"occurrence_time"`
	CreatedAt      time.Time `bun:"created_at"`
}

// verifyExactlyOnce checks, from the database alone (the audit streams
// read through the service, as the API serves them), that every schedule
// whose ID starts with prefix fired each of its occurrences at most once
// and lost none beyond the missed-fire policy (CONTRACT §4: a late fire is
// followed by Next(now); the occurrences it passed are dropped):
//
//   - one ScheduleTriggered event and one run (which is the occurrence's
//     instance) per fired occurrence, the run's own ScheduleTriggered
//     numbered in fire order; fires_count equals each count; no failures and
//     no skips (an already_started skip would mean two replicas claimed the
//     same occurrence);
//   - the audit stream's sequences are exactly 1..last_sequence;
//   - the first fire is the next_fire_at recorded at creation; every next
//     fired occurrence is exactly Next(time of the previous fire), so every
//     gap is an occurrence that had already passed when the previous fire
//     happened; and the stored next fire is Next(time of the last fire).
func verifyExactlyOnce(t testing.TB, db *bun.DB, prefix string) fireStats {
	t.Helper()
	ctx := ctxTimeout(t)
	var schedules []models.Schedule
	if err := db.NewSelect().Model(&schedules).Where("s.schedule_id LIKE ?", prefix+"-%").Order("s.schedule_id").Scan(ctx); err != nil {
		t.Fatalf("load schedules: %v", err)
	}
	if len(schedules) == 0 {
		t.Fatalf("no schedules named %s-*", prefix)
	}
	ulids := make([]string, 0, len(schedules))
	for _, s := range schedules {
		ulids = append(ulids, s.ID)
	}
	// The audit streams as their readers see them: a ScheduleTriggered's
	// payload is served from its columns (scheduling/audit.go), so it is
	// read through the service, page by page.
	svc := scheduling.New(scheduling.Config{DB: db})
	eventsOf := map[string][]models.ScheduleEvent{}
	for _, s := range schedules {
		for after := int64(0); ; {
			page, err := svc.History(ctx, s.Namespace, s.ScheduleID, scheduling.HistoryQuery{AfterSequence: after, Limit: scheduling.MaxHistoryLimit})
			if err != nil {
				t.Fatalf("load audit events of %s: %v", s.ScheduleID, err)
			}
			eventsOf[s.ID] = append(eventsOf[s.ID], page.Events...)
			if page.NextCursor == nil {
				break
			}
			after = *page.NextCursor
		}
	}
	var runs []runRow
	if err := db.NewSelect().Table("workflow_runs").
		Column("id", "workflow_schedule_id", "instance_id", "trigger_number", "trigger", "occurrence_time", "created_at").
		Where("workflow_schedule_id IN (?)", bun.In(ulids)).Order("workflow_schedule_id", "occurrence_time").Scan(ctx, &runs); err != nil {
		t.Fatalf("load runs: %v", err)
	}
	runsOf := map[string][]runRow{}
	for _, r := range runs {
		runsOf[r.ScheduleULID] = append(runsOf[r.ScheduleULID], r)
	}

	stats := fireStats{Schedules: len(schedules)}
	var lags []time.Duration
	for _, s := range schedules {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Errorf("%s: %s", s.ScheduleID, fmt.Sprintf(format, args...))
		}
		evs, rs := eventsOf[s.ID], runsOf[s.ID]

		// The audit stream: gap-free, one ScheduleTriggered per occurrence.
		if int64(len(evs)) != s.LastSequence {
			fail("%d audit events but last_sequence %d", len(evs), s.LastSequence)
		}
		triggered := map[string]models.ScheduleEvent{} // by occurrence_time
		var created *models.ScheduleEvent
		counted := 0 // occurrences the scheduler said it dropped (missed_occurrences skips)
		for i, e := range evs {
			if e.Sequence != int64(i+1) {
				fail("audit sequence %d at position %d: sequences must be 1, 2, 3, …", e.Sequence, i+1)
				break
			}
			var p map[string]any
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				fail("event %d payload: %v", e.Sequence, err)
				continue
			}
			switch e.EventType {
			case "ScheduleCreated":
				created = &evs[i]
			case "ScheduleTriggered":
				occ, _ := p["occurrence_time"].(string)
				if run, _ := p["workflow_run_id"].(string); e.WorkflowRunID == nil || run != *e.WorkflowRunID {
					fail("event %d names run %q in its payload, %v in its column", e.Sequence, run, e.WorkflowRunID)
				}
				if prev, dup := triggered[occ]; dup {
					fail("occurrence %s fired twice: audit events %d and %d", occ, prev.Sequence, e.Sequence)
				}
				triggered[occ] = e
			case "ScheduleTriggerSkipped":
				// The missed-fire policy counts what downtime dropped; any
				// other skip is a fire that should have happened.
				if p["reason"] != "missed_occurrences" {
					fail("unexpected skip event %d: %s", e.Sequence, e.Payload)
				}
				n, _ := p["missed_count"].(float64)
				counted += int(n)
			default:
				fail("unexpected %s event %d: %s", e.EventType, e.Sequence, e.Payload)
			}
		}
		if s.FiresCount != int64(len(triggered)) || s.FiresCount != int64(len(rs)) {
			fail("fires_count %d, ScheduleTriggered events %d, runs %d: all three must agree",
				s.FiresCount, len(triggered), len(rs))
		}
		if s.StartFailuresCount != 0 || s.SkippedTriggerCount != int64(counted) {
			reason := ""
			if s.LastSkipReason != nil {
				reason = *s.LastSkipReason
			}
			fail("start_failures_count %d, skipped_trigger_count %d (last skip reason %q): want 0 and %d (the missed occurrences counted)",
				s.StartFailuresCount, s.SkippedTriggerCount, reason, counted)
		}
		if created == nil {
			fail("no ScheduleCreated event")
			continue
		}
		compiled, err := timespec.Compile(s.Spec)
		if err != nil {
			fail("compile spec: %v", err)
			continue
		}

		// The runs: one per occurrence, named after it, consecutive under
		// the missed-fire policy.
		var createdPayload struct {
			NextFireAt string `json:"next_fire_at"`
		}
		_ = json.Unmarshal(created.Payload, &createdPayload)
		expected, err := time.Parse(time.RFC3339Nano, createdPayload.NextFireAt)
		if err != nil {
			fail("ScheduleCreated next_fire_at %q: %v", createdPayload.NextFireAt, err)
			continue
		}
		seenInstance := map[string]bool{}
		dropped := 0
		for i, r := range rs {
			occ := r.OccurrenceTime.UTC()
			if want := "schedule:" + s.ScheduleID + ":" + strconv.FormatInt(occ.Unix(), 10); r.InstanceID != want {
				fail("run %s has instance %q, want %q", r.ID, r.InstanceID, want)
			}
			if seenInstance[r.InstanceID] {
				fail("instance %s started twice", r.InstanceID)
			}
			seenInstance[r.InstanceID] = true
			if r.TriggerNumber == nil || *r.TriggerNumber != int64(i+1) {
				fail("run %s carries trigger_number %v, want %d (its fire's place)", r.ID, r.TriggerNumber, i+1)
			}
			if r.Trigger != "scheduled" {
				fail("run %s trigger %q, want scheduled", r.ID, r.Trigger)
			}
			if e, ok := triggered[scheduling.FormatTime(occ)]; !ok || e.WorkflowRunID == nil || *e.WorkflowRunID != r.ID {
				fail("run %s for %s has no matching ScheduleTriggered event", r.ID, scheduling.FormatTime(occ))
			}
			switch {
			case occ.Before(expected) && i == 0:
				fail("first fire %s is before the next_fire_at %s recorded at creation", occ, expected)
			case occ.Before(expected):
				fail("fire %d: occurrence %s had already passed when the previous fire ran at %s (want %s: the missed-fire policy continues from the previous fire)",
					i+1, occ, rs[i-1].CreatedAt.UTC(), expected)
			case occ.After(expected) && i == 0:
				fail("first occurrence %s was lost: the first fire is %s", expected, occ)
			case occ.After(expected):
				fail("occurrence %s was lost: the previous fire ran at %s, before it, and the next fire is %s",
					expected, rs[i-1].CreatedAt.UTC(), occ)
			}
			if i > 0 {
				if missed, err := compiled.Between(rs[i-1].OccurrenceTime.Add(time.Second), occ, 1_000_000); err == nil {
					dropped += len(missed)
				}
			}
			lag := r.CreatedAt.Sub(occ)
			if lag < 0 {
				fail("run %s started at %s, before its occurrence %s", r.ID, r.CreatedAt.UTC(), occ)
			}
			lags = append(lags, lag)
			next, ok := compiled.Next(r.CreatedAt)
			if !ok {
				fail("spec never fires after %s", r.CreatedAt)
				break
			}
			expected = next
		}
		if s.Status != models.StatusActive {
			fail("status %s, want active", s.Status)
		} else if s.NextNominalAt == nil || !s.NextNominalAt.Equal(expected) {
			fail("stored next occurrence %v, want %s (Next of the last fire)", s.NextNominalAt, expected)
		}
		if n := len(rs); n > 0 {
			// The last fire dropped what lay between it and the next one.
			if missed, err := compiled.Between(rs[n-1].OccurrenceTime.Add(time.Second), expected, 1_000_000); err == nil {
				dropped += len(missed)
			}
		}
		stats.Fires += len(rs)
		stats.Dropped += dropped
		// Every occurrence dropped between two fires was counted.
		if counted != dropped {
			fail("the missed-occurrences skips count %d dropped occurrences; the gaps between fires hold %d", counted, dropped)
		}
	}
	slices.Sort(lags)
	if n := len(lags); n > 0 {
		stats.LagP50, stats.LagP99, stats.LagMax = lags[n/2], lags[min(n-1, n*99/100)], lags[n-1]
	}
	return stats
}

// firedSince counts the prefix's schedules whose last fire is after t.
func firedSince(ctx context.Context, db *bun.DB, prefix string, t time.Time) (int64, error) {
	return db.NewSelect().Model((*models.Schedule)(nil)).
		Where("schedule_id LIKE ?", prefix+"-%").Where("last_fired_at > ?", t).Count(ctx)
}

// totalFires sums fires_count over the prefix's schedules.
func totalFires(ctx context.Context, db *bun.DB, prefix string) (int64, error) {
	var n int64
	err := db.NewSelect().Model((*models.Schedule)(nil)).ColumnExpr("COALESCE(SUM(fires_count), 0)").
		Where("schedule_id LIKE ?", prefix+"-%").Scan(ctx, &n)
	return n, err
}
