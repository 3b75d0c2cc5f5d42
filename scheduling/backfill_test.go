package scheduling_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

func TestBackfillStartsCanonicalOccurrencesInWindow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.svc = scheduling.New(scheduling.Config{DB: db, Clock: f.clock, Rand: fixedRand(1 << 40)}) // maximal jitter
		in := cronInput("bf", "0 */6 * * *")
		in.JitterSeconds = 600
		in.OverlapPolicy = scheduling.OverlapBufferOne // acts as allow_all in a backfill
		f.create(in)
		from := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
		to := time.Date(2026, 7, 11, 0, 0, 0, 0, time.UTC)

		dry, err := f.svc.Backfill(f.ctx, "default", "bf", scheduling.BackfillInput{From: from, To: to, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, "dry_run", dry.Outcome)
		require.Equal(t, 4, dry.Occurrences)
		runs, _, err := models.ListRuns(f.ctx, db, models.RunFilter{Namespace: "default", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, runs, "a dry run starts nothing")
		require.Len(t, f.events("bf"), 1, "a dry run records nothing")

		rep, err := f.svc.Backfill(f.ctx, "default", "bf", scheduling.BackfillInput{From: from, To: to, CommandContext: &scheduling.CommandContext{Source: "cli", Actor: "bob"}})
		require.NoError(t, err)
		require.Equal(t, "completed", rep.Outcome)
		var got []string
		for _, r := range rep.Results {
			require.Equal(t, "started", r.Outcome, r.Reason)
			require.NotEmpty(t, r.RunID)
			got = append(got, r.OccurrenceTime.UTC().Format(time.RFC3339)+" "+r.InstanceID)
		}
		require.Equal(t, []string{ // from inclusive, to exclusive, no jitter
			"2026-07-10T00:00:00Z schedule:bf:backfill:1783641600",
			"2026-07-10T06:00:00Z schedule:bf:backfill:1783663200",
			"2026-07-10T12:00:00Z schedule:bf:backfill:1783684800",
			"2026-07-10T18:00:00Z schedule:bf:backfill:1783706400",
		}, got)
		events := f.events("bf")
		require.Len(t, events, 5)
		for _, e := range events[1:] {
			p := payload(t, e)
			require.Equal(t, "backfilled", p["outcome"])
			require.Equal(t, "allow_all", p["effective_overlap_policy"])
			require.Equal(t, map[string]any{"source": "cli", "actor": "bob"}, p["command_context"])
		}

		// The same window again: every occurrence already started.
		rep, err = f.svc.Backfill(f.ctx, "default", "bf", scheduling.BackfillInput{From: from, To: to, OverlapPolicy: "allow_all"})
		require.NoError(t, err)
		for _, r := range rep.Results {
			require.Equal(t, "skipped", r.Outcome)
			require.Equal(t, "already_started", r.Reason)
		}

		// An explicit override wins over the buffer → allow_all rule.
		rep, err = f.svc.Backfill(f.ctx, "default", "bf", scheduling.BackfillInput{From: to, To: to.Add(12 * time.Hour), OverlapPolicy: "skip"})
		require.NoError(t, err)
		require.Equal(t, []string{"skipped", "skipped"}, []string{rep.Results[0].Outcome, rep.Results[1].Outcome})
		require.Equal(t, "overlap_policy_skip", rep.Results[0].Reason, "the previous backfill's runs are still pending")
	})
}

// The dry run says which occurrences a backfill already started (they
// would be skipped as already_started), with their run, and plans the rest.
func TestBackfillDryRunMarksStartedOccurrences(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("hourly", "0 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		f.create(cronInput("hourly.other", "0 * * * *")) // its IDs sort next to hourly's
		t0 := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
		first, err := f.svc.Backfill(f.ctx, "default", "hourly", scheduling.BackfillInput{From: t0.Add(2 * time.Hour), To: t0.Add(4 * time.Hour)})
		require.NoError(t, err)
		_, err = f.svc.Backfill(f.ctx, "default", "hourly.other", scheduling.BackfillInput{From: t0, To: t0.Add(6 * time.Hour), OverlapPolicy: "allow_all"})
		require.NoError(t, err)

		dry, err := f.svc.Backfill(f.ctx, "default", "hourly", scheduling.BackfillInput{From: t0, To: t0.Add(6 * time.Hour), DryRun: true})
		require.NoError(t, err)
		require.Equal(t, 6, dry.Occurrences)
		var got []string
		for _, r := range dry.Results {
			got = append(got, r.OccurrenceTime.UTC().Format("15:04")+" "+r.Outcome+" "+r.Reason)
		}
		require.Equal(t, []string{"00:00 planned ", "01:00 planned ", "02:00 skipped already_started", "03:00 skipped already_started",
			"04:00 planned ", "05:00 planned "}, got, "only hourly's own earlier backfill counts")
		require.Equal(t, first.Results[0].RunID, dry.Results[2].RunID, "the run that started it")
		require.Equal(t, first.Results[1].RunID, dry.Results[3].RunID)
		require.Empty(t, dry.Results[0].RunID)

		// What the dry run predicts is what the backfill does.
		rep, err := f.svc.Backfill(f.ctx, "default", "hourly", scheduling.BackfillInput{From: t0, To: t0.Add(6 * time.Hour)})
		require.NoError(t, err)
		for i, r := range rep.Results {
			want := "started"
			if dry.Results[i].Outcome == "skipped" {
				want = "skipped"
			}
			require.Equal(t, want, r.Outcome, "occurrence %d", i)
		}
	})
}

func TestBackfillRespectsMaxRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("limited", "0 * * * *")
		in.MaxRuns = ptr[int64](2)
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.Paused = true // backfill works on paused schedules
		f.create(in)
		rep, err := f.svc.Backfill(f.ctx, "default", "limited", scheduling.BackfillInput{
			From: time.Date(2026, 7, 16, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 7, 16, 5, 0, 0, 0, time.UTC),
		})
		require.NoError(t, err)
		require.Equal(t, "max_runs_exhausted", rep.Outcome)
		require.Equal(t, 5, rep.Occurrences)
		require.Len(t, rep.Results, 2, "stops when the runs are exhausted")
		s := f.get("limited")
		require.Equal(t, models.StatusDeleted, s.Status)
		events := f.events("limited")
		require.Equal(t, []string{"ScheduleCreated", "SchedulePaused", "ScheduleTriggered", "ScheduleTriggered", "ScheduleDeleted"}, eventTypes(events))
	})
}

func TestBackfillRejectsBadWindows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	f.create(cronInput("minutely", "* * * * *"))
	cases := []struct {
		name     string
		from, to time.Time
		code     string
	}{
		{"from equals to", t0, t0, "invalid_time_range"},
		{"from after to", t0.Add(time.Hour), t0, "invalid_time_range"},
		{"missing from", time.Time{}, t0, "validation_failed"},
		{"over 10,000 occurrences", t0, t0.Add(10001 * time.Minute), "backfill_too_large"},
	}
	for _, tc := range cases {
		_, err := f.svc.Backfill(f.ctx, "default", "minutely", scheduling.BackfillInput{From: tc.from, To: tc.to})
		var v *scheduling.ValidationError
		require.ErrorAs(t, err, &v, tc.name)
		require.Equal(t, tc.code, v.Code, tc.name)
	}
	rep, err := f.svc.Backfill(f.ctx, "default", "minutely", scheduling.BackfillInput{From: t0, To: t0.Add(10000 * time.Minute), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 10000, rep.Occurrences, "exactly 10,000 is allowed")
	_, err = f.svc.Backfill(f.ctx, "default", "nope", scheduling.BackfillInput{From: t0, To: t0.Add(time.Hour)})
	require.ErrorIs(t, err, scheduling.ErrNotFound)
	require.Len(t, f.events("minutely"), 1, fmt.Sprint("rejected backfills record nothing"))
}

// steppingClock moves a microsecond every time it is read, so each
// transaction's "now" (read once per transaction) tells transactions apart.
type steppingClock struct{ *schedtest.Clock }

func (c steppingClock) Now() time.Time {
	c.Advance(time.Microsecond)
	return c.Clock.Now()
}

// A large backfill commits in batches of at most DefaultBackfillBatch occurrences,
// so other work interleaves with it (on SQLite one transaction held the only
// connection for seconds); max_runs still stops it exactly, across batches.
func TestBackfillCommitsInBoundedBatches(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		clock := steppingClock{schedtest.NewClock(t0)}
		f := &fixture{t: t, db: db, clock: clock.Clock, svc: schedtest.Service(db, clock), ctx: t.Context()}
		in := cronInput("bulk", "0 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		const n = 2*scheduling.DefaultBackfillBatch + 25
		rep, err := f.svc.Backfill(f.ctx, "default", "bulk", scheduling.BackfillInput{From: t0.Add(-n * time.Hour), To: t0})
		require.NoError(t, err)
		require.Equal(t, "completed", rep.Outcome)
		require.Len(t, rep.Results, n)
		for i, r := range rep.Results {
			require.Equal(t, scheduling.BackfillStarted, r.Outcome, "occurrence %d", i)
			require.True(t, t0.Add(time.Duration(i-n)*time.Hour).Equal(r.OccurrenceTime), "in order")
		}
		var perTx []int
		require.NoError(t, db.NewSelect().Model((*models.Run)(nil)).ColumnExpr("count(*)").
			Where("schedule_id = ?", "bulk").Group("created_at").OrderExpr("created_at").Scan(f.ctx, &perTx))
		require.Equal(t, []int{scheduling.DefaultBackfillBatch, scheduling.DefaultBackfillBatch, 25}, perTx, "runs per transaction")

		// max_runs ends it in the middle of the second batch.
		in = cronInput("capped", "0 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.MaxRuns = ptr[int64](scheduling.DefaultBackfillBatch + 10)
		f.create(in)
		rep, err = f.svc.Backfill(f.ctx, "default", "capped", scheduling.BackfillInput{From: t0.Add(-n * time.Hour), To: t0})
		require.NoError(t, err)
		require.Equal(t, "max_runs_exhausted", rep.Outcome)
		require.Len(t, rep.Results, scheduling.DefaultBackfillBatch+10)
		require.Equal(t, models.StatusDeleted, f.get("capped").Status)
	})
}

// Issue 37, major 4: the dry run plays the overlap policy forward as the
// backfill applies it — under every policy (the schedule's, and each as an
// override), from a schedule with no run, with a run still pending, and
// with part of the window started by an earlier backfill — and says what
// the backfill then does, occurrence by occurrence; a job over the same
// window on a twin schedule ends with the same counts.
func TestBackfillDryRunPlaysTheOverlapPolicy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		from := time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)
		to := from.Add(8 * time.Hour)
		setups := map[string]func(id string){
			"idle":    func(string) {},
			"running": func(id string) { _, err := f.svc.Trigger(f.ctx, "default", id, "", nil); require.NoError(t, err) },
			"partly-started": func(id string) {
				_, err := f.svc.Backfill(f.ctx, "default", id, scheduling.BackfillInput{From: from.Add(3 * time.Hour), To: from.Add(5 * time.Hour), OverlapPolicy: "allow_all"})
				require.NoError(t, err)
			},
		}
		overrides := append([]string{""}, scheduling.OverlapPolicies...)
		seen := map[string]bool{}
		for state, setup := range setups {
			for _, override := range overrides {
				for _, own := range []string{scheduling.OverlapSkip, scheduling.OverlapBufferAll} {
					name := fmt.Sprintf("%s/%s/%s", state, own, override)
					sync, job := fmt.Sprintf("s%d", len(seen)), fmt.Sprintf("j%d", len(seen))
					seen[name] = true
					for _, id := range []string{sync, job} {
						in := cronInput(id, "0 * * * *")
						in.OverlapPolicy = own
						f.create(in)
						setup(id)
					}

					dry, err := f.svc.Backfill(f.ctx, "default", sync, scheduling.BackfillInput{From: from, To: to, OverlapPolicy: override, DryRun: true})
					require.NoError(t, err, name)
					rep, err := f.svc.Backfill(f.ctx, "default", sync, scheduling.BackfillInput{From: from, To: to, OverlapPolicy: override})
					require.NoError(t, err, name)
					require.Len(t, rep.Results, len(dry.Results), name)
					counts := map[string]int64{}
					for i, r := range rep.Results {
						want := dry.Results[i]
						if want.Outcome == scheduling.BackfillPlanned {
							want.Outcome = scheduling.BackfillStarted
						}
						require.Equal(t, want.Outcome+" "+want.Reason, r.Outcome+" "+r.Reason, "%s: occurrence %d", name, i)
						counts[want.Outcome]++
					}

					bf, err := f.svc.StartBackfill(f.ctx, "default", job, scheduling.BackfillJobInput{From: from, To: to, OverlapPolicy: override})
					require.NoError(t, err, name)
					require.Equal(t, models.BackfillCompleted, bf.Status, "%s: eight occurrences are the first slice", name)
					require.Equal(t, []int64{counts["started"], counts["buffered"], counts["skipped"]}, []int64{bf.Started, bf.Buffered, bf.Skipped}, name)
				}
			}
		}

		// The cases that told the old dry run apart: skip behind a pending
		// run starts nothing; skip from idle starts one and skips the rest.
		dry, err := f.svc.Backfill(f.ctx, "default", "s0", scheduling.BackfillInput{From: to, To: to.Add(3 * time.Hour), OverlapPolicy: "skip", DryRun: true})
		require.NoError(t, err)
		for _, r := range dry.Results {
			require.Equal(t, "skipped overlap_policy_skip", r.Outcome+" "+r.Reason, "s0's backfilled runs are still pending")
		}
	})
}
