package scheduling

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
)

// A schedule's health state, one word for "what is wrong", as the API's
// health field, the registry's chips, its row labels and its default order
// show it. Every state is one entry of healthRules below, its rule written
// twice side by side: in Go (one schedule read with its health and latest
// run) and in SQL (the filters, the chips' counts and the health order).
// A schedule is in the first state whose rule holds, so the states do not
// overlap: the Stuck chip lists exactly the rows labelled stuck.
// TestHealthStatesAgree holds the two spellings together on both databases.
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

// healthRule is one health state: its rule in Go and in SQL.
type healthRule struct {
	State string
	// Holds decides one schedule (read with its health and latest run).
	Holds func(s *models.Schedule, now time.Time) bool
	// SQL is the same rule over s, h and lr (see models.HealthRule).
	SQL func(now time.Time) models.HealthRule
}

// healthRules are the states in the order of urgency: failing, stuck,
// overdue, skipping (a stuck run also makes its schedule skip; stuck says
// why). Their index is the rank the health order sorts by.
var healthRules = []healthRule{
	{
		State: HealthFailing,
		Holds: func(s *models.Schedule, _ time.Time) bool { return s.Health.ConsecutiveFailures > 0 },
		SQL: func(time.Time) models.HealthRule {
			return models.HealthRule{
				Where: func(bun.IDB) (string, []any) { return "COALESCE(h.consecutive_failures, 0) > 0", nil },
				// The failing-health partial index (migration 0005).
				From: func(string) (string, []any) {
					return "SELECT hf.schedule_ulid FROM workflow_schedule_health AS hf WHERE hf.consecutive_failures > 0", nil
				},
			}
		},
	},
	{
		State: HealthStuck,
		Holds: func(s *models.Schedule, now time.Time) bool {
			lr := s.LatestRun
			return lr != nil && lr.Status == models.RunPending && !lr.PendingSince().Add(StuckAfter(s)).After(now)
		},
		SQL: func(now time.Time) models.HealthRule {
			return models.HealthRule{
				Where: func(db bun.IDB) (string, []any) {
					return "(lr.status = ? AND " + database.Of(db).PastBy("COALESCE(lr.available_at, lr.created_at)", "COALESCE(s.start_deadline_seconds, ?)") + ")",
						[]any{models.RunPending, int64(DefaultStuckAfter / time.Second), now}
				},
				// The pending runs, from the (namespace, status, id) index.
				From: func(namespace string) (string, []any) {
					return "SELECT pr.workflow_schedule_id FROM workflow_runs AS pr WHERE pr.namespace = ? AND pr.status = ? AND pr.workflow_schedule_id IS NOT NULL",
						[]any{namespace, models.RunPending}
				},
			}
		},
	},
	{
		State: HealthOverdue,
		Holds: func(s *models.Schedule, now time.Time) bool {
			return s.Status == models.StatusActive && s.NextFireAt != nil && s.NextFireAt.Before(now)
		},
		SQL: func(now time.Time) models.HealthRule {
			return models.HealthRule{
				Where: func(bun.IDB) (string, []any) {
					return "(s.status = ? AND s.next_fire_at IS NOT NULL AND s.next_fire_at < ?)", []any{models.StatusActive, now}
				},
				// The due queue's key (migration 0012).
				From: func(string) (string, []any) {
					return "SELECT dq.schedule_ulid FROM workflow_schedule_due AS dq WHERE dq.next_fire_at < ?", []any{now}
				},
			}
		},
	},
	{
		State: HealthSkipping,
		Holds: func(s *models.Schedule, _ time.Time) bool {
			lr := s.LatestRun
			return lr != nil && (lr.Status == models.RunPending || lr.Status == models.RunRunning) &&
				s.LastSkippedAt != nil && !s.LastSkippedAt.Before(lr.CreatedAt) && s.LastSkipReason != nil && *s.LastSkipReason == SkipOverlap
		},
		SQL: func(time.Time) models.HealthRule {
			return models.HealthRule{
				Where: func(bun.IDB) (string, []any) {
					return "(lr.status IN (?) AND s.last_skipped_at IS NOT NULL AND s.last_skipped_at >= lr.created_at AND s.last_skip_reason = ?)",
						[]any{bun.In(models.ActiveRunStatuses), SkipOverlap}
				},
				// The unfinished runs, from the (namespace, status, id) index.
				From: func(namespace string) (string, []any) {
					return "SELECT ar.workflow_schedule_id FROM workflow_runs AS ar WHERE ar.namespace = ? AND ar.status IN (?) AND ar.workflow_schedule_id IS NOT NULL",
						[]any{namespace, bun.In(models.ActiveRunStatuses)}
				},
			}
		},
	},
}

// HealthStates are the states a list can be filtered by, in rank order.
func HealthStates() []string {
	out := make([]string, len(healthRules))
	for i, r := range healthRules {
		out[i] = r.State
	}
	return out
}

// healthRankOf is the rank of a filterable state; ok is false for others.
func healthRankOf(state string) (int, bool) {
	for i, r := range healthRules {
		if r.State == state {
			return i, true
		}
	}
	return 0, false
}

// HealthStateOf decides a schedule's health state at now: the first rule
// that holds, else ok (no_runs before any run finished).
func HealthStateOf(s *models.Schedule, now time.Time) string {
	rank := HealthRank(s, now)
	if rank < len(healthRules) {
		return healthRules[rank].State
	}
	if s.Health.LastRunID == nil {
		return HealthNoRuns
	}
	return HealthOK
}

// HealthRank is the schedule's place in the health order (0 most urgent,
// len(healthRules) for the rest), as models.HealthConditions ranks it in
// the database.
func HealthRank(s *models.Schedule, now time.Time) int {
	for i, r := range healthRules {
		if r.Holds(s, now) {
			return i
		}
	}
	return len(healthRules)
}

// healthConditions are the rules in SQL at now.
func healthConditions(now time.Time) *models.HealthConditions {
	c := &models.HealthConditions{Rules: make([]models.HealthRule, len(healthRules))}
	for i, r := range healthRules {
		c.Rules[i] = r.SQL(now)
	}
	return c
}

// setHealthState records the schedules' health states at now.
func setHealthState(now time.Time, schedules ...*models.Schedule) {
	for _, s := range schedules {
		s.HealthState = HealthStateOf(s, now)
	}
}
