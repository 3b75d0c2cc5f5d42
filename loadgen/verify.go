package loadgen

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// Fire is one stored fire as the exactly-once check sees it.
type Fire struct {
	ScheduleID string    `bun:"schedule_id"`
	Occurrence time.Time `bun:"occurrence_time"`
	RunID      string    `bun:"run_id"`
	InstanceID string    `bun:"instance_id"`
	// Audited is how many ScheduleTriggered audit events name the run.
	Audited int `bun:"audited"`
}

// Problem is one way the stored fires break exactly-once.
type Problem struct {
	ScheduleID string
	Occurrence time.Time
	What       string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s at %s: %s", p.ScheduleID, p.Occurrence.UTC().Format(time.RFC3339), p.What)
}

// CheckExactlyOnce compares the stored fires with what should have
// happened: each schedule fired at each instant exactly once — one run,
// named by the deterministic instance ID schedule:{schedule_id}:{unix}
// (CONTRACT §5), with exactly one ScheduleTriggered audit event — and nothing
// else fired. It returns every problem, in schedule and time order; none
// means exactly once.
func CheckExactlyOnce(scheduleIDs []string, instants []time.Time, fires []Fire) []Problem {
	type key struct {
		schedule string
		unix     int64
	}
	expected := make(map[string]bool, len(scheduleIDs))
	for _, id := range scheduleIDs {
		expected[id] = true
	}
	atInstant := make(map[int64]bool, len(instants))
	for _, at := range instants {
		atInstant[at.Unix()] = true
	}
	var problems []Problem
	seen := make(map[key]int, len(fires))
	for _, f := range fires {
		occ := f.Occurrence.UTC()
		switch {
		case !expected[f.ScheduleID]:
			problems = append(problems, Problem{f.ScheduleID, occ, "run " + f.RunID + " of a schedule the run did not seed"})
			continue
		case !atInstant[occ.Unix()] || !occ.Equal(occ.Truncate(time.Second)):
			problems = append(problems, Problem{f.ScheduleID, occ, "run " + f.RunID + " for an occurrence that is none of the instants"})
			continue
		}
		k := key{f.ScheduleID, occ.Unix()}
		seen[k]++
		if seen[k] == 2 {
			problems = append(problems, Problem{f.ScheduleID, occ, "fired more than once"})
		}
		if want := "schedule:" + f.ScheduleID + ":" + strconv.FormatInt(occ.Unix(), 10); f.InstanceID != want {
			problems = append(problems, Problem{f.ScheduleID, occ, fmt.Sprintf("run %s has instance %q, want %q", f.RunID, f.InstanceID, want)})
		}
		if f.Audited != 1 {
			problems = append(problems, Problem{f.ScheduleID, occ, fmt.Sprintf("run %s has %d ScheduleTriggered audit events, want 1", f.RunID, f.Audited)})
		}
	}
	for _, id := range scheduleIDs {
		for _, at := range instants {
			if seen[key{id, at.Unix()}] == 0 {
				problems = append(problems, Problem{id, at.UTC(), "never fired"})
			}
		}
	}
	slices.SortStableFunc(problems, func(a, b Problem) int {
		if a.ScheduleID != b.ScheduleID {
			if a.ScheduleID < b.ScheduleID {
				return -1
			}
			return 1
		}
		return a.Occurrence.Compare(b.Occurrence)
	})
	return problems
}

// LoadFires reads every run of prefix's schedules with the number of
// ScheduleTriggered audit events naming it: two statements, whatever the
// number of schedules.
func LoadFires(ctx context.Context, db bun.IDB, prefix string) ([]Fire, error) {
	var fires []Fire
	err := db.NewRaw(`SELECT s.schedule_id, r.occurrence_time, r.id AS run_id, r.instance_id, 0 AS audited
		FROM workflow_runs AS r JOIN workflow_schedules AS s ON s.id = r.workflow_schedule_id
		WHERE s.schedule_id LIKE ?`, prefix+"-%").Scan(ctx, &fires)
	if err != nil {
		return nil, fmt.Errorf("load runs: %w", err)
	}
	var audited []struct {
		RunID string `bun:"run_id"`
		N     int    `bun:"n"`
	}
	err = db.NewRaw(`SELECT e.workflow_run_id AS run_id, count(*) AS n
		FROM workflow_schedule_history_events AS e JOIN workflow_schedules AS s ON s.id = e.workflow_schedule_id
		WHERE s.schedule_id LIKE ? AND e.event_type = 'ScheduleTriggered' AND e.workflow_run_id IS NOT NULL
		GROUP BY e.workflow_run_id`, prefix+"-%").Scan(ctx, &audited)
	if err != nil {
		return nil, fmt.Errorf("load audit events: %w", err)
	}
	byRun := make(map[string]int, len(audited))
	for _, a := range audited {
		byRun[a.RunID] = a.N
	}
	for i := range fires {
		fires[i].Audited = byRun[fires[i].RunID]
	}
	return fires, nil
}
