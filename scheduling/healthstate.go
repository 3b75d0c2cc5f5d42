package scheduling

import (
	"time"

	"github.com/tidelinehq/tideline/models"
)

// A schedule's health state, one word for "what is wrong", as the API's
// health field, the registry's chips and its default order show it. The
// rules live here, in HealthStateOf; models.HealthConditions is their SQL
// twin for filters, counts and the order (TestHealthStateMatchesFilters
// holds the two together).
const (
	// HealthFailing: the latest finished runs failed (consecutive_failures > 0).
	HealthFailing = "failing"
	// HealthStuck: the latest run is pending past the schedule's
	// start_deadline_seconds, or DefaultStuckAfter when that is unset —
	// nothing is claiming its queue.
	HealthStuck = "stuck"
	// HealthOverdue: active and past its next fire time, not fired yet.
	HealthOverdue = "overdue"
	// HealthSkipping: fires were skipped by the overlap policy since the
	// latest run, still unfinished, was created.
	HealthSkipping = "skipping"
	// HealthOK: none of the above, and some run finished.
	HealthOK = "ok"
	// HealthNoRuns: none of the above, and no run finished yet.
	HealthNoRuns = "no_runs"
)

// DefaultStuckAfter is how long a run may stay pending before its schedule
// reads stuck when the schedule sets no start_deadline_seconds: longer than
// any claim takes with a worker polling its queue (a long poll returns
// within 30 s), short enough to be seen in the first minutes.
const DefaultStuckAfter = 5 * time.Minute

// StuckAfter is the schedule's stuck threshold.
func StuckAfter(s *models.Schedule) time.Duration {
	if s.StartDeadlineSeconds != nil {
		return time.Duration(*s.StartDeadlineSeconds) * time.Second
	}
	return DefaultStuckAfter
}

// HealthStateOf decides a schedule's health state at now. The order is the
// order of urgency: failing, stuck, overdue, skipping (a stuck run also
// makes its schedule skip; stuck says why).
func HealthStateOf(s *models.Schedule, now time.Time) string {
	state := healthStates[HealthRank(s, now)]
	if state == HealthOK && s.Health.LastRunID == nil {
		return HealthNoRuns
	}
	return state
}

// healthStates are the states by rank; HealthNoRuns shares the last rank
// with HealthOK (HealthStateOf tells them apart).
var healthStates = [...]string{HealthFailing, HealthStuck, HealthOverdue, HealthSkipping, HealthOK}

// HealthRank is the schedule's place in the health order (0 most urgent),
// as models.HealthConditions ranks it in the database.
func HealthRank(s *models.Schedule, now time.Time) int {
	lr := s.LatestRun
	switch {
	case s.Health.ConsecutiveFailures > 0:
		return 0
	case lr != nil && lr.Status == models.RunPending && !lr.PendingSince().Add(StuckAfter(s)).After(now):
		return 1
	case s.Status == models.StatusActive && s.NextFireAt != nil && s.NextFireAt.Before(now):
		return 2
	case lr != nil && (lr.Status == models.RunPending || lr.Status == models.RunRunning) &&
		s.LastSkippedAt != nil && !s.LastSkippedAt.Before(lr.CreatedAt) && s.LastSkipReason != nil && *s.LastSkipReason == SkipOverlap:
		return 3
	}
	return 4
}

// healthConditions are the SQL twins of the rules at now.
func healthConditions(now time.Time) *models.HealthConditions {
	return &models.HealthConditions{Now: now, DefaultStuckSeconds: int64(DefaultStuckAfter / time.Second), SkipReason: SkipOverlap}
}

// setHealthState records the schedules' health states at now.
func setHealthState(now time.Time, schedules ...*models.Schedule) {
	for _, s := range schedules {
		s.HealthState = HealthStateOf(s, now)
	}
}
