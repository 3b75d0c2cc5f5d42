package scheduling_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// healthZoo creates one schedule in every health state, and some in two
// states' conditions at once (a failing schedule that is also stuck and
// overdue), at f.clock's time once it returns: the wanted state by ID.
func healthZoo(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	yearly := func(id, policy string) {
		in := cronInput(id, "0 0 1 1 *")
		in.OverlapPolicy = policy
		f.create(in)
	}
	trigger := func(id string) string {
		t.Helper()
		res, err := f.svc.Trigger(f.ctx, "default", id, "", nil)
		require.NoError(t, err)
		return res.RunID
	}
	finish := func(id string, fail bool) {
		t.Helper()
		runID := trigger(id)
		require.Len(t, f.poll(1, 3600), 1)
		var err error
		if fail {
			_, err = f.svc.FailRun(f.ctx, "default", runID, w1, scheduling.Failure{Message: "disk full", Type: "io", NonRetryable: true})
		} else {
			_, err = f.svc.CompleteRun(f.ctx, "default", runID, w1, nil)
		}
		require.NoError(t, err)
	}
	yearly("failing", scheduling.OverlapAllowAll)
	finish("failing", true)
	yearly("ok", scheduling.OverlapAllowAll)
	finish("ok", false)
	yearly("no-runs", scheduling.OverlapSkip)
	// skipping: a run that goes on (claimed, running) and a fire skipped
	// behind it.
	yearly("skipping", scheduling.OverlapSkip)
	trigger("skipping")
	require.Len(t, f.poll(1, 3600), 1)
	trigger("skipping")

	// retrying: an attempt failed and the run waits 20 min to retry; a
	// run held back is not stuck before it may start.
	retrying := cronInput("retrying", "0 0 1 1 *")
	retrying.Action.RetryPolicy = &models.RetryPolicy{MaxAttempts: ptr(3), InitialIntervalSeconds: ptr[int64](1200)}
	f.create(retrying)
	retryRun := trigger("retrying")
	require.Len(t, f.poll(1, 3600), 1)
	_, err := f.svc.FailRun(f.ctx, "default", retryRun, w1, scheduling.Failure{Message: "flaky", Type: "io"})
	require.NoError(t, err)
	require.Equal(t, models.RunPending, f.run(retryRun).Status, "waiting for its next attempt")

	// Nothing polls from here on: the runs created below stay pending.
	// failing-stuck: failed once, then a run nobody claims (failing wins).
	yearly("failing-stuck", scheduling.OverlapAllowAll)
	finish("failing-stuck", true)
	trigger("failing-stuck")
	// stuck: a pending run past the default threshold, fires skipped
	// behind it (stuck wins over skipping).
	yearly("stuck", scheduling.OverlapSkip)
	trigger("stuck")
	trigger("stuck")
	// stuck-deadline: its own start deadline, shorter than the default.
	deadline := cronInput("stuck-deadline", "0 0 1 1 *")
	deadline.StartDeadlineSeconds = ptr[int64](60)
	f.create(deadline)
	trigger("stuck-deadline")
	// pending-young: pending, not for long enough (the default applies).
	f.clock.Advance(scheduling.DefaultStuckAfter - 2*time.Minute)
	yearly("pending-young", scheduling.OverlapSkip)
	trigger("pending-young")
	// overdue: due every minute and never ticked; its paused twin is not.
	f.create(cronInput("overdue", "* * * * *"))
	f.create(cronInput("paused-overdue", "* * * * *"))
	_, err = f.svc.Pause(f.ctx, "default", "paused-overdue", scheduling.PauseInput{Reason: "r"}, nil)
	require.NoError(t, err)
	f.clock.Advance(2*time.Minute + time.Second)
	return map[string]string{
		"failing": scheduling.HealthFailing, "failing-stuck": scheduling.HealthFailing,
		"stuck": scheduling.HealthStuck, "stuck-deadline": scheduling.HealthStuck,
		"overdue": scheduling.HealthOverdue, "skipping": scheduling.HealthSkipping,
		"pending-young": scheduling.HealthNoRuns, "paused-overdue": scheduling.HealthNoRuns,
		"ok": scheduling.HealthOK, "no-runs": scheduling.HealthNoRuns, "retrying": scheduling.HealthNoRuns,
	}
}

// The one definition of the health states, read three ways, agrees: the
// state a schedule is read with (describe, a list row's label), each
// state's filter (exactly the rows labelled so), its count (the chip), and
// the health order's ranks, page by page.
func TestHealthStatesAgree(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		want := healthZoo(t, f)

		for id, state := range want {
			require.Equal(t, state, f.get(id).HealthState, "describe %s", id)
		}
		all, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Limit: 200})
		require.NoError(t, err)
		require.Len(t, all.Schedules, len(want))
		for _, s := range all.Schedules {
			require.Equal(t, want[s.ScheduleID], s.HealthState, "list row %s", s.ScheduleID)
		}

		counts, err := f.svc.Counts(f.ctx, "default")
		require.NoError(t, err)
		byState := map[string]int64{scheduling.HealthFailing: counts.Failing, scheduling.HealthStuck: counts.Stuck,
			scheduling.HealthOverdue: counts.Overdue, scheduling.HealthSkipping: counts.Skipping}
		for _, state := range scheduling.HealthStates() {
			var wantIDs []string
			for id, st := range want {
				if st == state {
					wantIDs = append(wantIDs, id)
				}
			}
			slices.Sort(wantIDs)
			for _, sort := range []string{"", "health", "next_fire"} {
				page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Health: state, Sort: sort})
				require.NoError(t, err)
				var got []string
				for _, s := range page.Schedules {
					require.Equal(t, state, s.HealthState, "%s listed under health=%s", s.ScheduleID, state)
					got = append(got, s.ScheduleID)
				}
				slices.Sort(got)
				require.Equal(t, wantIDs, got, "health=%s sort=%q", state, sort)
			}
			require.EqualValues(t, len(wantIDs), byState[state], "the %s chip counts its filter's rows", state)
		}
		require.EqualValues(t, 1, counts.Stale, "overdue by more than the loop's grace")

		// The health order, one row a page: by rank, then by ID.
		var order []string
		cursor := ""
		for {
			page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Sort: "health", Limit: 1, Cursor: cursor})
			require.NoError(t, err)
			for _, s := range page.Schedules {
				order = append(order, s.ScheduleID)
			}
			if !page.HasMore {
				break
			}
			cursor = page.NextCursor
		}
		require.Equal(t, []string{"failing", "failing-stuck", "stuck", "stuck-deadline", "overdue", "skipping",
			"no-runs", "ok", "paused-overdue", "pending-young", "retrying"}, order)
		// One page of everything in the same order.
		page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Sort: "health"})
		require.NoError(t, err)
		var whole []string
		for _, s := range page.Schedules {
			whole = append(whole, s.ScheduleID)
		}
		require.Equal(t, order, whole)

		// A claimed run is no longer stuck; skipped fires behind it make
		// the schedule skipping.
		require.Len(t, f.poll(10, 3600), 4, "the four pending runs")
		require.Equal(t, scheduling.HealthSkipping, f.get("stuck").HealthState)
		require.Equal(t, scheduling.HealthNoRuns, f.get("stuck-deadline").HealthState)

		// The retrying run is stuck once its next attempt has waited past
		// the threshold, counted from when it could start.
		f.clock.Advance(20*time.Minute + scheduling.DefaultStuckAfter - 5*time.Minute)
		require.Equal(t, scheduling.HealthStuck, f.get("retrying").HealthState)
		page, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Health: scheduling.HealthStuck})
		require.NoError(t, err)
		require.Len(t, page.Schedules, 1)
		require.Equal(t, "retrying", page.Schedules[0].ScheduleID)
	})
}

// The health order reads no statement for a state the namespace's counts
// hold none of, and lists the same rows as without them; a schedule that
// enters such a state after the counts were read is not listed under a
// rank it is not in. The stale count is read only when some schedule is
// overdue.
func TestHealthOrderSkipsTheStatesCountedEmpty(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		pages, counted := &markedStatements{marker: "h_rank"}, &markedStatements{marker: "AS capped"}
		f.svc = schedtest.Service(db.WithQueryHook(pages).WithQueryHook(counted), f.clock)
		yearly := func(ns, id string) {
			in := cronInput(id, "0 0 1 1 *")
			in.Namespace, in.OverlapPolicy = ns, scheduling.OverlapAllowAll
			f.create(in)
		}
		for _, outcome := range []string{"ok", "failing"} {
			yearly("default", outcome)
			res, err := f.svc.Trigger(f.ctx, "default", outcome, "", nil)
			require.NoError(t, err)
			require.Len(t, f.poll(1, 3600), 1)
			if outcome == "ok" {
				_, err = f.svc.CompleteRun(f.ctx, "default", res.RunID, w1, nil)
			} else {
				_, err = f.svc.FailRun(f.ctx, "default", res.RunID, w1, scheduling.Failure{Message: "disk full", NonRetryable: true})
			}
			require.NoError(t, err)
		}
		f.create(cronInput("overdue", "* * * * *"))
		yearly("calm", "quiet")
		f.clock.Advance(2*time.Minute + time.Second)

		ids := func(p *scheduling.SchedulePage) []string {
			var out []string
			for _, s := range p.Schedules {
				out = append(out, s.ScheduleID+":"+s.HealthState)
			}
			return out
		}
		counts, err := f.svc.Counts(f.ctx, "default")
		require.NoError(t, err)
		require.Equal(t, [4]int64{1, 0, 1, 0}, [4]int64{counts.Failing, counts.Stuck, counts.Overdue, counts.Skipping})
		require.EqualValues(t, 1, counts.Stale)
		require.Len(t, counted.take(), 4, "stuck, overdue, skipping and stale")
		pages.take()
		want := []string{"failing:failing", "overdue:overdue", "ok:ok"}
		page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Sort: "health"})
		require.NoError(t, err)
		require.Equal(t, want, ids(page))
		require.Len(t, pages.take(), 5, "without the counts: every rank")
		page, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Sort: "health", Counts: &counts})
		require.NoError(t, err)
		require.Equal(t, want, ids(page))
		require.Len(t, pages.take(), 3, "failing, overdue and the rest")
		// A deleted schedule is in no count: a list that shows them reads every rank.
		page, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Sort: "health", Counts: &counts,
			Statuses: []string{models.StatusActive, models.StatusPaused, models.StatusDeleted}})
		require.NoError(t, err)
		require.Equal(t, want, ids(page))
		require.Len(t, pages.take(), 5)

		calm, err := f.svc.Counts(f.ctx, "calm")
		require.NoError(t, err)
		require.Len(t, counted.take(), 3, "no stale count without an overdue schedule")
		page, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "calm", Sort: "health", Counts: &calm})
		require.NoError(t, err)
		require.Equal(t, []string{"quiet:no_runs"}, ids(page))
		require.Len(t, pages.take(), 1, "the rest only")

		// quiet becomes stuck after its counts were read: the page of
		// those counts leaves it out rather than list it among the rest.
		_, err = f.svc.Trigger(f.ctx, "calm", "quiet", "", nil)
		require.NoError(t, err)
		f.clock.Advance(scheduling.DefaultStuckAfter + time.Minute)
		page, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "calm", Sort: "health", Counts: &calm})
		require.NoError(t, err)
		require.Empty(t, page.Schedules)
		calm, err = f.svc.Counts(f.ctx, "calm")
		require.NoError(t, err)
		page, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "calm", Sort: "health", Counts: &calm})
		require.NoError(t, err)
		require.Equal(t, []string{"quiet:stuck"}, ids(page))
	})
}

// Stuck starts at the threshold: the schedule's start deadline, or the
// default when it sets none.
func TestHealthStuckThreshold(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("d", "0 0 1 1 *")
		in.StartDeadlineSeconds = ptr[int64](90)
		f.create(in)
		f.create(cronInput("n", "0 0 1 1 *"))
		for _, id := range []string{"d", "n"} {
			_, err := f.svc.Trigger(f.ctx, "default", id, "", nil)
			require.NoError(t, err)
		}
		state := func(id string) string { return f.get(id).HealthState }
		stuck := func() []string {
			page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Health: scheduling.HealthStuck})
			require.NoError(t, err)
			var ids []string
			for _, s := range page.Schedules {
				ids = append(ids, s.ScheduleID)
			}
			return ids
		}
		f.clock.Advance(89 * time.Second)
		require.Equal(t, scheduling.HealthNoRuns, state("d"))
		require.Empty(t, stuck())
		f.clock.Advance(time.Second)
		require.Equal(t, scheduling.HealthStuck, state("d"), "at its start deadline")
		require.Equal(t, []string{"d"}, stuck())
		f.clock.Advance(scheduling.DefaultStuckAfter - 90*time.Second - time.Millisecond)
		require.Equal(t, scheduling.HealthNoRuns, state("n"))
		f.clock.Advance(time.Millisecond)
		require.Equal(t, scheduling.HealthStuck, state("n"), "at the default threshold")
		require.Equal(t, []string{"d", "n"}, stuck())
		require.Equal(t, models.RunPending, f.get("n").LatestRun.Status)
	})
}
