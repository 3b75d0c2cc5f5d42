package scheduling

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
)

// DefaultLateAfter is how late a fire may be before it is reported
// (fire_late, CONTRACT §11 --late-after).
const DefaultLateAfter = 60 * time.Second

// notice is one fact worth a notification, collected in the transaction
// that records the fact and turned into outbox rows (one per matching
// notifier) before it commits. See enqueueNotices.
type notice struct {
	event        string
	namespace    string
	scheduleULID string
	scheduleID   string
	// labels route the notice; nil means "read them" (runs know their
	// schedule, not its labels).
	labels     map[string]string
	occurrence *time.Time
	run        *notify.Run
	err        *notify.Error
	summary    string
	details    map[string]any
	// key names the fact: the same fact gives the same delivery ID
	// entropy, so the ID is stable for the receiver's dedupe.
	key string
}

// runNotice reports a run that ended unsuccessfully after its last attempt.
func runNotice(run *models.Run) (notice, bool) {
	event := ""
	switch run.Status {
	case models.RunFailed:
		event = notify.EventRunFailed
	case models.RunTimedOut:
		event = notify.EventRunTimedOut
	default:
		return notice{}, false
	}
	n := notice{
		event: event, namespace: run.Namespace, occurrence: run.OccurrenceTime, key: event + "|" + run.ID,
		run:     &notify.Run{RunID: run.ID, InstanceID: run.InstanceID, Status: run.Status, Attempt: run.Attempt},
		details: map[string]any{"attempts": run.Attempt, "workflow_type": run.WorkflowType},
	}
	if run.WorkflowScheduleID != nil {
		n.scheduleULID = *run.WorkflowScheduleID
	}
	if run.ScheduleID != nil {
		n.scheduleID = *run.ScheduleID
	}
	e := &notify.Error{}
	if run.FailureType != nil {
		e.Type = *run.FailureType
	}
	if run.FailureMessage != nil {
		e.Message = *run.FailureMessage
	}
	n.err = e
	verb := "failed"
	if event == notify.EventRunTimedOut {
		verb = "timed out"
	}
	n.summary = fmt.Sprintf("Run %s of schedule %s %s after %d attempt(s)", run.ID, n.scheduleID, verb, run.Attempt)
	if e.Message != "" {
		n.summary += ": " + summaryExcerpt(e.Message)
	}
	return n, true
}

// deliveryID is a ULID stamped now whose random part is derived from the
// notifier and the fact, so IDs sort by time and one fact yields one ID per
// notifier.
func deliveryID(now time.Time, notifierID, key string) string {
	sum := sha256.Sum256([]byte(notifierID + "|" + key))
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(now))
	_ = id.SetEntropy(sum[:10])
	return id.String()
}

// selects reports whether every key of the selector has its value in labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// enqueueNotices writes the outbox rows for notices in the caller's
// transaction, so a notification exists exactly when its fact committed.
// It reads the namespaces' notifiers (few, capped per namespace) and, only
// when one subscribes, the labels of the schedules concerned — plain reads
// that take no lock, so it may run in a run-ending transaction (see
// models.AddHealth on lock order).
func enqueueNotices(ctx context.Context, tx bun.IDB, now time.Time, notices []notice) error {
	if len(notices) == 0 {
		return nil
	}
	var namespaces []string
	for _, n := range notices {
		if !slices.Contains(namespaces, n.namespace) {
			namespaces = append(namespaces, n.namespace)
		}
	}
	notifiers, err := models.ListNotifiers(ctx, tx, namespaces...)
	if err != nil || len(notifiers) == 0 {
		return err
	}
	wanted := func(n *notice) []models.Notifier {
		var out []models.Notifier
		for _, nf := range notifiers {
			if nf.Namespace == n.namespace && slices.Contains(nf.Events, n.event) {
				out = append(out, nf)
			}
		}
		return out
	}
	var unlabelled []string
	for i := range notices {
		n := &notices[i]
		if n.labels == nil && n.scheduleULID != "" && len(wanted(n)) > 0 && !slices.Contains(unlabelled, n.scheduleULID) {
			unlabelled = append(unlabelled, n.scheduleULID)
		}
	}
	schedules, err := models.ScheduleLabels(ctx, tx, unlabelled)
	if err != nil {
		return err
	}
	var rows []*models.Delivery
	for i := range notices {
		n := &notices[i]
		if n.labels == nil {
			if sch, ok := schedules[n.scheduleULID]; ok {
				n.labels, n.scheduleID = sch.Labels, sch.ScheduleID
			}
		}
		for _, nf := range wanted(n) {
			if !selects(nf.LabelSelector, n.labels) {
				continue
			}
			d, err := newDelivery(deliveryID(now, nf.ID, n.key), now, &nf, n)
			if err != nil {
				return err
			}
			rows = append(rows, d)
		}
	}
	return models.InsertDeliveries(ctx, tx, rows)
}

// newDelivery builds the pending outbox row id of one notice for one
// notifier.
func newDelivery(id string, now time.Time, nf *models.Notifier, n *notice) (*models.Delivery, error) {
	doc := notify.Document{
		Version: notify.Version, ID: id, Event: n.event, OccurredAt: now, Namespace: n.namespace, Notifier: nf.Name,
		Summary: n.summary, OccurrenceTime: n.occurrence, Run: n.run, Error: n.err, Details: n.details,
	}
	if doc.Details == nil {
		doc.Details = map[string]any{}
	}
	if n.scheduleID != "" {
		labels := n.labels
		if labels == nil {
			labels = map[string]string{}
		}
		doc.Schedule = &notify.Schedule{ScheduleID: n.scheduleID, Labels: labels}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode notification: %w", err)
	}
	d := &models.Delivery{
		ID: id, Namespace: n.namespace, NotifierID: nf.ID, EventType: n.event, Document: body,
		Status: models.DeliveryPending, NextAttemptAt: ptrTime(now), CreatedAt: now, UpdatedAt: now,
	}
	if n.scheduleID != "" {
		d.ScheduleID = &n.scheduleID
	}
	if n.run != nil {
		d.RunID = &n.run.RunID
	}
	return d, nil
}

// noteLateFire reports a scheduled fire that started more than lateAfter
// after its occurrence (the scheduler was down or behind). Only fires that
// start a run are reported; the check costs nothing on a fire on time.
func (s *Service) noteLateFire(rec *recorder, sch *models.ClaimedSchedule, run *models.Run, occurrence time.Time) {
	lag := rec.now.Sub(occurrence)
	if s.notify.LateAfter <= 0 || lag <= s.notify.LateAfter {
		return
	}
	rec.ended.note(notice{
		event: notify.EventFireLate, namespace: sch.Namespace, scheduleULID: sch.ID, scheduleID: sch.ScheduleID,
		labels: sch.Labels, occurrence: &occurrence, key: notify.EventFireLate + "|" + run.ID,
		run:     &notify.Run{RunID: run.ID, InstanceID: run.InstanceID, Status: run.Status, Attempt: run.Attempt},
		summary: fmt.Sprintf("Schedule %s fired %s late (occurrence %s)", sch.ScheduleID, lag.Round(time.Millisecond), FormatTime(occurrence)),
		details: map[string]any{"fire_lag_ms": lag.Milliseconds(), "late_after_seconds": int64(s.notify.LateAfter / time.Second)},
	})
}

// noteMissedOccurrences is the hook for the missed-fire policy (CONTRACT §12):
// where a tick records ScheduleTriggerSkipped{reason: missed_occurrences}
// for count dropped occurrences, it calls this in the same transaction so
// that occurrences_missed is delivered with the fact.
func (s *Service) noteMissedOccurrences(rec *recorder, sch *models.Schedule, count int64, first, last time.Time) {
	rec.ended.note(notice{
		event: notify.EventOccurrencesMissed, namespace: sch.Namespace, scheduleULID: sch.ID, scheduleID: sch.ScheduleID,
		labels: sch.Labels, occurrence: &first, key: fmt.Sprintf("%s|%s|%d", notify.EventOccurrencesMissed, sch.ID, sch.LastSequence),
		summary: fmt.Sprintf("Schedule %s missed %d occurrence(s) between %s and %s", sch.ScheduleID, count, FormatTime(first), FormatTime(last)),
		details: map[string]any{"missed": count, "first_missed": FormatTime(first), "last_missed": FormatTime(last)},
	})
}

// pausedOnFailureNotice reports a schedule the scheduler paused for its
// consecutive failures.
func pausedOnFailureNotice(sch *models.Schedule, h models.ScheduleHealth, reason string) notice {
	n := notice{
		event: notify.EventSchedulePausedOnFailure, namespace: sch.Namespace, scheduleULID: sch.ID, scheduleID: sch.ScheduleID,
		labels: sch.Labels, key: fmt.Sprintf("%s|%s|%d", notify.EventSchedulePausedOnFailure, sch.ID, sch.LastSequence),
		summary: fmt.Sprintf("Schedule %s was paused: %s", sch.ScheduleID, reason),
		details: map[string]any{"consecutive_failures": h.ConsecutiveFailures, "pause_reason": reason},
	}
	if h.LastRunID != nil {
		n.run = &notify.Run{RunID: *h.LastRunID}
		if h.LastRunStatus != nil {
			n.run.Status = *h.LastRunStatus
		}
	}
	if h.LastRunError != nil {
		n.err = &notify.Error{Message: *h.LastRunError}
	}
	return n
}

// backfillNotice reports a finished backfill with its counts.
func backfillNotice(sch *models.Schedule, in BackfillInput, outcome string, results []BackfillResult) notice {
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Outcome]++
	}
	return notice{
		event: notify.EventBackfillFinished, namespace: sch.Namespace, scheduleULID: sch.ID, scheduleID: sch.ScheduleID,
		labels: sch.Labels, key: fmt.Sprintf("%s|%s|%d", notify.EventBackfillFinished, sch.ID, sch.LastSequence),
		summary: fmt.Sprintf("Backfill of schedule %s from %s to %s %s: %d started, %d skipped, %d failed",
			sch.ScheduleID, FormatTime(in.From), FormatTime(in.To), outcome, counts[BackfillStarted], counts[BackfillSkipped], counts[BackfillFailed]),
		details: map[string]any{
			"from": FormatTime(in.From), "to": FormatTime(in.To), "outcome": outcome, "occurrences": len(results),
			"started": counts[BackfillStarted], "skipped": counts[BackfillSkipped], "failed": counts[BackfillFailed], "buffered": counts[BackfillBuffered],
		},
	}
}

// startDeadline is when a new run still pending is reported as not
// started. A scheduled fire counts from its occurrence; backfilled, drained
// and manual runs from their creation, because their occurrence may lie
// long in the past by design (a backfill would report every run at once).
func startDeadline(sch *models.Schedule, kind string, occurrence, now time.Time) *time.Time {
	d := sch.StartDeadlineSeconds
	if d == nil {
		return nil
	}
	base := now
	if kind == kindScheduled {
		base = occurrence
	}
	return ptrTime(base.Add(time.Duration(*d) * time.Second))
}

// CheckStartDeadlines reports (run_not_started) up to limit pending runs
// whose start deadline passed: nothing is draining their queue. Each run is
// reported once; its deadline is cleared in the same transaction.
func (s *Service) CheckStartDeadlines(ctx context.Context, limit int) (int, error) {
	now := s.now()
	// Usually no run is past it: ask before opening a transaction.
	if work, err := s.loopWork(ctx); err != nil || !work.StartDeadlinePassed(now) {
		return 0, err
	}
	reported := 0
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		runs, err := models.ClaimStartDeadlines(ctx, tx, now, limit)
		if err != nil || len(runs) == 0 {
			return err
		}
		var out outcomes
		ids := make([]string, len(runs))
		for i := range runs {
			run := &runs[i]
			ids[i] = run.ID
			n := notice{
				event: notify.EventRunNotStarted, namespace: run.Namespace, occurrence: run.OccurrenceTime,
				key: notify.EventRunNotStarted + "|" + run.ID,
				run: &notify.Run{RunID: run.ID, InstanceID: run.InstanceID, Status: run.Status, Attempt: run.Attempt},
				details: map[string]any{"pending_since": FormatTime(run.CreatedAt), "start_deadline_at": FormatTime(*run.StartDeadlineAt),
					"connection": run.Connection, "queue": run.Queue},
			}
			if run.WorkflowScheduleID != nil {
				n.scheduleULID = *run.WorkflowScheduleID
			}
			if run.ScheduleID != nil {
				n.scheduleID = *run.ScheduleID
			}
			n.summary = fmt.Sprintf("Run %s of schedule %s is still pending past its start deadline: no worker is taking runs from %s/%s",
				run.ID, n.scheduleID, run.Connection, run.Queue)
			out.note(n)
		}
		reported = len(runs)
		if err := models.ClearStartDeadlines(ctx, tx, ids); err != nil {
			return err
		}
		return out.flush(ctx, tx, now)
	})
	return reported, err
}
