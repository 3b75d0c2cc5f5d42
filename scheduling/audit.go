package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tidelinehq/tideline/models"
)

// Audit event types of CONTRACT §6.
const (
	EventScheduleCreated        = "ScheduleCreated"
	EventSchedulePaused         = "SchedulePaused"
	EventScheduleResumed        = "ScheduleResumed"
	EventScheduleUpdated        = "ScheduleUpdated"
	EventScheduleTriggered      = "ScheduleTriggered"
	EventScheduleTriggerSkipped = "ScheduleTriggerSkipped"
	EventScheduleDeleted        = "ScheduleDeleted"
)

// CommandContext says who asked for a change and why; it is stored in the
// event payload as command_context.
type CommandContext struct {
	Source    string `json:"source,omitempty"` // ui | api | cli | scheduler | worker
	Actor     string `json:"actor,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// MaxReasonLength caps the reason an operator gives for a change; it is
// stored in the audit stream and the run history, which are kept for the
// schedule's lifetime, so free text there must be bounded.
const MaxReasonLength = 4096

// MaxRequestIDLength matches what the HTTP layer accepts as X-Request-Id.
const MaxRequestIDLength = 64

// validate bounds the free text of a command context before it is stored.
// Every use case that takes one calls it first.
func (c *CommandContext) validate() error {
	if c == nil {
		return nil
	}
	v := &ValidationError{Code: CodeValidationFailed}
	if utf8.RuneCountInString(c.Reason) > MaxReasonLength {
		v.Add("reason", fmt.Sprintf("must be at most %d characters", MaxReasonLength))
	}
	if utf8.RuneCountInString(c.Actor) > MaxNameLength {
		v.Add("actor", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	if len(c.RequestID) > MaxRequestIDLength {
		v.Add("request_id", fmt.Sprintf("must be at most %d characters", MaxRequestIDLength))
	}
	return v.OrNil()
}

func (c *CommandContext) empty() bool {
	return c == nil || *c == CommandContext{}
}

// author names who made a change: the actor, else the source.
func (c *CommandContext) author() string {
	if c == nil {
		return ""
	}
	if c.Actor != "" {
		return c.Actor
	}
	return c.Source
}

// recorder appends audit events for one locked schedule inside one
// transaction. The sequence comes from the schedule row's counter, which the
// caller's row lock protects; the caller must save the schedule afterwards.
type recorder struct {
	w   *writer
	ids *ids
	now time.Time
	cc  *CommandContext
	// ended collects runs that fires ended (cancel_other, terminate_other).
	ended outcomes
}

func (r *recorder) record(ctx context.Context, s *models.Schedule, p Payload, instanceID, runID string) error {
	if !r.cc.empty() {
		p.setContext(r.cc)
	}
	eventType := p.EventType()
	body, err := json.Marshal(storedForm(p))
	if err != nil {
		return fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	s.LastSequence++
	ev := &models.ScheduleEvent{
		ID:                 r.ids.newAt(r.now),
		WorkflowScheduleID: s.ID,
		Sequence:           s.LastSequence,
		EventType:          eventType,
		Payload:            body,
		RecordedAt:         r.now,
	}
	if instanceID != "" {
		ev.WorkflowInstanceID = &instanceID
	}
	if runID != "" {
		ev.WorkflowRunID = &runID
	}
	return r.w.insertScheduleEvent(ctx, ev)
}

// storedForm is what record writes for p. A ScheduleTriggered — one per
// fire, most of the audit stream — leaves out the keys that repeat the
// event's own columns (models.PayloadFromColumns: its instance and run), and
// reading puts them back, so readers see CONTRACT §6's keys either way.
func storedForm(p Payload) any {
	t, ok := p.(*TriggeredPayload)
	if !ok {
		return p
	}
	return &triggeredStored{Outcome: t.Outcome, EffectiveOverlapPolicy: t.EffectiveOverlapPolicy,
		TriggerNumber: t.TriggerNumber, OccurrenceTime: t.OccurrenceTime, Recorded: t.Recorded}
}

// triggeredStored is TriggeredPayload without its column keys.
type triggeredStored struct {
	Outcome                string  `json:"outcome"`
	EffectiveOverlapPolicy string  `json:"effective_overlap_policy"`
	TriggerNumber          int64   `json:"trigger_number"`
	OccurrenceTime         Instant `json:"occurrence_time"`
	Recorded
}
