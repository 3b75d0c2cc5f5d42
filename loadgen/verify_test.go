package loadgen_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

var t0 = time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)

func fire(schedule string, at time.Time, run string) loadgen.Fire {
	return loadgen.Fire{ScheduleID: schedule, Occurrence: at, RunID: run,
		InstanceID: "schedule:" + schedule + ":" + unix(at), Audited: 1}
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func problems(ps []loadgen.Problem) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// The check finds every way a run can break exactly-once: a missing fire,
// a second one, one at no instant or of no seeded schedule, a wrong
// instance ID, a missing or doubled audit event.
func TestCheckExactlyOnce(t *testing.T) {
	t.Parallel()
	a, b := t0, t0.Add(time.Minute)
	ids := []string{"s-0", "s-1"}
	complete := []loadgen.Fire{fire("s-0", a, "r1"), fire("s-0", b, "r2"), fire("s-1", a, "r3"), fire("s-1", b, "r4")}
	require.Empty(t, loadgen.CheckExactlyOnce(ids, []time.Time{a, b}, complete))

	wrongInstance := fire("s-1", b, "r4")
	wrongInstance.InstanceID = "schedule:s-1:1"
	unaudited, doubled := fire("s-1", a, "r3"), fire("s-0", b, "r2")
	unaudited.Audited, doubled.Audited = 0, 2
	cases := []struct {
		name  string
		fires []loadgen.Fire
		want  []string
	}{
		{"missing", complete[:3], []string{"s-1 at 2026-07-16T12:01:00Z: never fired"}},
		{"twice", append(complete[:4:4], fire("s-0", a, "r5")), []string{"s-0 at 2026-07-16T12:00:00Z: fired more than once"}},
		{"no such instant", append(complete[:4:4], fire("s-0", a.Add(30*time.Second), "r5")),
			[]string{"s-0 at 2026-07-16T12:00:30Z: run r5 for an occurrence that is none of the instants"}},
		{"no such schedule", append(complete[:4:4], fire("other-0", a, "r5")),
			[]string{"other-0 at 2026-07-16T12:00:00Z: run r5 of a schedule the run did not seed"}},
		{"wrong instance", []loadgen.Fire{complete[0], complete[1], complete[2], wrongInstance},
			[]string{`s-1 at 2026-07-16T12:01:00Z: run r4 has instance "schedule:s-1:1", want "schedule:s-1:1784203260"`}},
		{"audit events", []loadgen.Fire{complete[0], doubled, unaudited, complete[3]}, []string{
			"s-0 at 2026-07-16T12:01:00Z: run r2 has 2 ScheduleTriggered audit events, want 1",
			"s-1 at 2026-07-16T12:00:00Z: run r3 has 0 ScheduleTriggered audit events, want 1",
		}},
		{"nothing fired", nil, []string{
			"s-0 at 2026-07-16T12:00:00Z: never fired", "s-0 at 2026-07-16T12:01:00Z: never fired",
			"s-1 at 2026-07-16T12:00:00Z: never fired", "s-1 at 2026-07-16T12:01:00Z: never fired",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, problems(loadgen.CheckExactlyOnce(ids, []time.Time{a, b}, c.fires)))
		})
	}
}

// Against the real tables: what the loop stored passes the check, and a
// run removed afterwards is reported as an occurrence that never fired.
func TestLoadFiresSeesWhatTheLoopStored(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := context.Background()
		clock := schedtest.NewClock(t0)
		svc := schedtest.Service(db, clock)
		every := time.Minute
		require.NoError(t, loadgen.Seed(ctx, db, "v", 5, loadgen.EverySpec(t0, every), t0))
		loop := &scheduling.Loop{Service: svc, Limit: 2}
		instants := []time.Time{t0, t0.Add(every)}
		for _, at := range instants {
			clock.Set(at.Add(time.Second))
			_, err := loop.RunOnce(ctx)
			require.NoError(t, err)
		}
		ids := []string{"v-000000", "v-000001", "v-000002", "v-000003", "v-000004"}
		fires, err := loadgen.LoadFires(ctx, db, "v")
		require.NoError(t, err)
		require.Len(t, fires, 10)
		require.Empty(t, problems(loadgen.CheckExactlyOnce(ids, instants, fires)))

		// Take one run away, with what refers to it.
		var run models.Run
		require.NoError(t, db.NewSelect().Model(&run).Where("instance_id = ?", "schedule:v-000003:"+unix(t0.Add(every))).Scan(ctx))
		for _, q := range []string{
			"DELETE FROM workflow_history_events WHERE workflow_run_id = ?",
			"DELETE FROM workflow_schedule_history_events WHERE workflow_run_id = ?",
			"UPDATE workflow_schedules SET latest_run_id = NULL WHERE latest_run_id = ?",
			"DELETE FROM workflow_runs WHERE id = ?",
		} {
			_, err := db.ExecContext(ctx, q, run.ID)
			require.NoError(t, err, q)
		}
		fires, err = loadgen.LoadFires(ctx, db, "v")
		require.NoError(t, err)
		got := problems(loadgen.CheckExactlyOnce(ids, instants, fires))
		require.Len(t, got, 1)
		require.True(t, strings.HasSuffix(got[0], "never fired"), got[0])
		require.True(t, strings.HasPrefix(got[0], "v-000003 "), got[0])
	})
}
