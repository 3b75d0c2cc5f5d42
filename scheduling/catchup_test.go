package scheduling_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// missedEvents returns the missed_occurrences skips of a schedule.
func (f *fixture) missedEvents(id string) []map[string]any {
	f.t.Helper()
	var out []map[string]any
	for _, e := range f.events(id) {
		if e.EventType != scheduling.EventScheduleTriggerSkipped {
			continue
		}
		if p := payload(f.t, e); p["reason"] == scheduling.SkipMissed {
			out = append(out, p)
		}
	}
	return out
}

// runOccurrences lists the nominal occurrences of a schedule's runs, oldest
// first, by their instance IDs.
func (f *fixture) runInstances(id string) []string {
	f.t.Helper()
	var ids []string
	err := f.db.NewSelect().Model((*models.Run)(nil)).Column("instance_id").
		Where("schedule_id = ?", id).OrderExpr("id ASC").Scan(f.ctx, &ids)
	require.NoError(f.t, err)
	return ids
}

func instanceAt(id string, at time.Time) string {
	return fmt.Sprintf("schedule:%s:%d", id, at.Unix())
}

func TestDowntimeWithoutWindowFiresOnceAndCountsTheRest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("hourly", "0 * * * *"))
		// Down from 12:00 to 15:20: 13:00 fires, 14:00 and 15:00 are dropped.
		f.clock.Set(t0.Add(3*time.Hour + 20*time.Minute))
		rows := f.tick()
		require.Len(t, rows, 1)
		require.Equal(t, "triggered", rows[0].Outcome)
		require.Equal(t, []string{instanceAt("hourly", t0.Add(time.Hour))}, f.runInstances("hourly"))

		missed := f.missedEvents("hourly")
		require.Len(t, missed, 1, "one event per tick, not one per occurrence")
		require.EqualValues(t, 2, missed[0]["missed_count"])
		require.EqualValues(t, 2, missed[0]["skipped_trigger_count"])
		require.Equal(t, "2026-07-16T14:00:00.000000Z", missed[0]["first_missed_at"])
		require.Equal(t, "2026-07-16T15:00:00.000000Z", missed[0]["last_missed_at"])
		require.Equal(t, map[string]any{"source": "scheduler"}, missed[0]["command_context"])
		s := f.get("hourly")
		require.EqualValues(t, 2, s.SkippedTriggerCount)
		require.Equal(t, scheduling.SkipMissed, *s.LastSkipReason)
		require.Equal(t, t0.Add(4*time.Hour), s.NextFireAt.UTC())

		// On time, nothing is dropped and no event is written.
		f.clock.Set(t0.Add(4 * time.Hour))
		require.Len(t, f.tick(), 1)
		require.Len(t, f.missedEvents("hourly"), 1)
	})
}

func TestDowntimeWithWindowFiresInsideItInOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("hourly", "0 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.CatchupWindowSeconds = ptr(3 * 3600)
		f.create(in)
		// Down until 18:20: the window reaches back to 15:20, so 13, 14 and
		// 15:00 are dropped and 16, 17 and 18:00 fire, oldest first.
		f.clock.Set(t0.Add(6*time.Hour + 20*time.Minute))
		rows := f.tick()
		require.Len(t, rows, 1, "one row per schedule")
		require.Equal(t, "triggered", rows[0].Outcome)
		require.Equal(t, t0.Add(4*time.Hour), rows[0].OccurrenceTime.UTC(), "the row reports the oldest fire")
		require.Equal(t, []string{instanceAt("hourly", t0.Add(4*time.Hour)), instanceAt("hourly", t0.Add(5*time.Hour)),
			instanceAt("hourly", t0.Add(6*time.Hour))}, f.runInstances("hourly"))
		missed := f.missedEvents("hourly")
		require.Len(t, missed, 1)
		require.EqualValues(t, 3, missed[0]["missed_count"])
		s := f.get("hourly")
		require.EqualValues(t, 3, s.FiresCount)
		require.EqualValues(t, 3, s.SkippedTriggerCount)
		require.Equal(t, t0.Add(7*time.Hour), s.NextFireAt.UTC())
		require.Empty(t, f.tick())
	})
}

func TestDowntimeWithWindowAppliesTheOverlapPolicy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("hourly", "0 * * * *")
		in.CatchupWindowSeconds = ptr(3 * 3600) // overlap policy skip (default)
		f.create(in)
		f.clock.Set(t0.Add(6*time.Hour + 20*time.Minute))
		f.tick()
		// 16:00 starts; 17:00 and 18:00 meet its pending run and are skipped.
		require.Equal(t, []string{instanceAt("hourly", t0.Add(4*time.Hour))}, f.runInstances("hourly"))
		var overlap []string
		for _, e := range f.events("hourly") {
			if p := payload(t, e); e.EventType == scheduling.EventScheduleTriggerSkipped && p["reason"] == scheduling.SkipOverlap {
				overlap = append(overlap, *e.WorkflowInstanceID)
			}
		}
		require.Equal(t, []string{instanceAt("hourly", t0.Add(5*time.Hour)), instanceAt("hourly", t0.Add(6*time.Hour))}, overlap)
		s := f.get("hourly")
		require.EqualValues(t, 3+2, s.SkippedTriggerCount, "3 missed + 2 overlap skips")
		require.Equal(t, scheduling.SkipOverlap, *s.LastSkipReason)
	})
}

func TestCatchupFiresAtMost100PerTickAndContinues(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("minutely", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.CatchupWindowSeconds = ptr(2 * 3600)
		f.create(in)
		// Down 12:00 → 15:00: 12:01–12:59 fall out of the window (59); the
		// 121 occurrences 13:00–15:00 fire over two ticks.
		f.clock.Set(t0.Add(3 * time.Hour))
		f.tick()
		require.Len(t, f.runInstances("minutely"), scheduling.MaxCatchupFires)
		s := f.get("minutely")
		require.Equal(t, t0.Add(time.Hour+100*time.Minute), s.NextFireAt.UTC(), "the rest is due at once")
		f.tick()
		runs := f.runInstances("minutely")
		require.Len(t, runs, 121)
		for i, id := range runs {
			require.Equal(t, instanceAt("minutely", t0.Add(time.Hour+time.Duration(i)*time.Minute)), id)
		}
		missed := f.missedEvents("minutely")
		require.Len(t, missed, 1)
		require.EqualValues(t, 59, missed[0]["missed_count"])
		require.Equal(t, t0.Add(3*time.Hour+time.Minute), f.get("minutely").NextFireAt.UTC())
	})
}

func TestCatchupWindowIsValidated(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("w", "0 * * * *")
		in.CatchupWindowSeconds = ptr(0)
		_, err := f.svc.Create(f.ctx, in, nil)
		var v *scheduling.ValidationError
		require.ErrorAs(t, err, &v)
		require.Contains(t, v.Fields, "catchup_window_seconds")

		f.create(cronInput("w", "0 * * * *"))
		s, err := f.svc.Update(f.ctx, "default", "w", scheduling.UpdateInput{CatchupWindowSeconds: scheduling.Nullable[int]{Set: true, Value: ptr(600)}}, nil)
		require.NoError(t, err)
		require.Equal(t, 600, *s.CatchupWindowSeconds)
		events := f.events("w")
		require.Equal(t, []any{"catchup_window_seconds"}, payload(t, events[len(events)-1])["changed_fields"])
		_, err = f.svc.Update(f.ctx, "default", "w", scheduling.UpdateInput{CatchupWindowSeconds: scheduling.Nullable[int]{Set: true, Value: ptr(scheduling.MaxCatchupWindowSeconds + 1)}}, nil)
		require.ErrorAs(t, err, &v)
		s, err = f.svc.Update(f.ctx, "default", "w", scheduling.UpdateInput{CatchupWindowSeconds: scheduling.Nullable[int]{Set: true}}, nil)
		require.NoError(t, err)
		require.Nil(t, s.CatchupWindowSeconds)
	})
}

func TestTimedPauseResumesAtItsEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("hourly", "0 * * * *"))
		until := t0.Add(90 * time.Minute)
		_, err := f.svc.Pause(f.ctx, "default", "hourly", scheduling.PauseInput{Reason: "maintenance", Until: &until}, &scheduling.CommandContext{Source: "api"})
		require.NoError(t, err)
		loop := &scheduling.Loop{Service: f.svc}

		f.clock.Set(until.Add(-time.Second))
		res, err := loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Empty(t, res.Resumed, "not before its end")
		require.Equal(t, models.StatusPaused, f.get("hourly").Status)

		f.clock.Set(until)
		res, err = loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"default/hourly"}, res.Resumed)
		s := f.get("hourly")
		require.Equal(t, models.StatusActive, s.Status)
		require.Nil(t, s.PausedUntil)
		require.Nil(t, s.PauseReason)
		require.Equal(t, t0.Add(2*time.Hour), s.NextFireAt.UTC(), "from now; 13:00 was paused")
		events := f.events("hourly")
		last := events[len(events)-1]
		require.Equal(t, scheduling.EventScheduleResumed, last.EventType)
		p := payload(t, last)
		require.Equal(t, "scheduler", p["command_context"].(map[string]any)["source"])
		require.Equal(t, "2026-07-16T13:30:00.000000Z", p["paused_until"])

		res, err = loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Empty(t, res.Resumed, "resumed once")
	})
}

// Two replicas' loops reach the end of a timed pause in the same instant:
// each pause ends once, with one ScheduleResumed.
func TestTimedPauseResumesOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 2, clock)
	const schedules = 40
	until := t0.Add(time.Hour + 30*time.Minute)
	for i := range schedules {
		id := fmt.Sprintf("p-%02d", i)
		_, err := services[0].Create(t.Context(), cronInput(id, "0 * * * *"), nil)
		require.NoError(t, err)
		_, err = services[0].Pause(t.Context(), "default", id, scheduling.PauseInput{Until: &until}, nil)
		require.NoError(t, err)
	}
	clock.Set(until)
	for round := range 3 {
		var wg sync.WaitGroup
		got := make([][]string, len(services))
		errs := make([]error, len(services))
		for r := range services {
			wg.Go(func() {
				loop := &scheduling.Loop{Service: services[r], Limit: 7}
				res, err := loop.RunOnce(t.Context())
				got[r], errs[r] = res.Resumed, err
			})
		}
		wg.Wait()
		seen := map[string]int{}
		for r := range services {
			require.NoError(t, errs[r])
			for _, id := range got[r] {
				seen[id]++
			}
		}
		for id, n := range seen {
			require.Equal(t, 1, n, "%s resumed once in round %d", id, round)
		}
		if round > 0 {
			require.Empty(t, seen, "nothing left to resume in round %d", round)
		}
	}
	db := services[0].DB()
	n, err := db.NewSelect().Model((*models.ScheduleEvent)(nil)).Where("event_type = ?", scheduling.EventScheduleResumed).Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, schedules, n)
	n, err = db.NewSelect().Model((*models.Schedule)(nil)).Where("status = ?", models.StatusActive).Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, schedules, n)
}
