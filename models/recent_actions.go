package models

import (
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
)

// RecentActionSlot is action n of a schedule, to record with
// SaveRecentActions (ring.go). Setting its ScheduleID as well lets the
// ring leave out an instance ID that the read can recompute.
func RecentActionSlot(scheduleULID string, n int64, a RecentAction) *RecentActionRow {
	return &RecentActionRow{ScheduleULID: scheduleULID, Slot: int(n % RecentActionsKept), N: n, Action: a}
}

// ringCodes are the stored codes of the outcome and skip-reason pairs the
// fire path records (scheduling's fire kinds, OutcomeBuffered, and
// OutcomeSkipped with each skip reason of CONTRACT §4). They are stored:
// a code is never renumbered or reused. A pair without a code is stored
// as text (code 0 in a ring, the old shape in a ten-row ring), so a new
// outcome or reason needs no migration; it gets a code here once every
// release that may share the database reads that code.
var ringCodes = [...]struct{ outcome, reason string }{
	1:  {"scheduled", ""},
	2:  {"manual", ""},
	3:  {"drained", ""},
	4:  {"backfilled", ""},
	5:  {"buffered", ""},
	6:  {"skipped", ""},
	7:  {"skipped", "overlap_policy_skip"},
	8:  {"skipped", "buffer_full"},
	9:  {"skipped", "status_not_triggerable"},
	10: {"skipped", "remaining_actions_exhausted"},
	11: {"skipped", "already_started"},
}

// RecentActionCode is the stored code of an outcome and reason, false for
// a pair without one.
func RecentActionCode(outcome, reason string) (int16, bool) {
	for c, p := range ringCodes {
		if c > 0 && p.outcome == outcome && p.reason == reason {
			return int16(c), true
		}
	}
	return 0, false
}

// FireLagMs is how late an action fired after its occurrence, in whole
// milliseconds (negative when it fired ahead). The fire path records it
// and a compact ring row recomputes it with this one rule.
func FireLagMs(firedAt, occurrence time.Time) int64 {
	return firedAt.Sub(occurrence).Milliseconds()
}

// ScheduledInstanceID names the instance of a schedule's occurrence at
// nominal: deterministic, so that one occurrence can start once only.
func ScheduledInstanceID(scheduleID string, nominal time.Time) string {
	return "schedule:" + scheduleID + ":" + strconv.FormatInt(nominal.Unix(), 10)
}

// BackfillInstanceID names a backfill's run of the occurrence at nominal:
// apart from the scheduled fire's, so a backfill never collides with it.
func BackfillInstanceID(scheduleID string, nominal time.Time) string {
	return "schedule:" + scheduleID + ":backfill:" + strconv.FormatInt(nominal.Unix(), 10)
}

// DerivedInstanceID is the instance ID a compact ring row or fire event
// with a NULL one has: a backfill's, or a scheduled fire's at its
// occurrence (which is the nominal time unless jitter moved the fire).
// Writers store NULL only where this gives back exactly the ID they had.
func DerivedInstanceID(scheduleID, outcome string, occurrence time.Time) string {
	if outcome == "backfilled" {
		return BackfillInstanceID(scheduleID, occurrence)
	}
	return ScheduledInstanceID(scheduleID, occurrence)
}

// decode is the action a row stores, in either shape. The previous
// release's upsert sets outcome and not code, so outcome tells the shapes
// apart even in a row it overwrote after this release wrote it.
func (r *RecentActionRow) decode() RecentAction {
	a := RecentAction{RunID: deref(r.RunID), FiredAt: r.FiredAt, OccurrenceTime: r.OccurrenceTime}
	if r.Outcome != nil || r.Code == nil {
		a.Outcome, a.InstanceID, a.Reason, a.FireLagMs = deref(r.Outcome), deref(r.InstanceID), deref(r.Reason), deref(r.FireLagMs)
		return a
	}
	if len(r.RunULID) == len(ulid.ULID{}) {
		a.RunID = ulid.ULID(r.RunULID).String()
	}
	if c := int(*r.Code); c > 0 && c < len(ringCodes) {
		a.Outcome, a.Reason = ringCodes[c].outcome, ringCodes[c].reason
	}
	if r.FireLagMs != nil {
		a.FireLagMs = *r.FireLagMs
	} else {
		a.FireLagMs = FireLagMs(a.FiredAt, a.OccurrenceTime)
	}
	if r.InstanceID != nil {
		a.InstanceID = *r.InstanceID
	} else {
		a.InstanceID = DerivedInstanceID(r.ScheduleID, a.Outcome, a.OccurrenceTime)
	}
	return a
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
