package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/tidelinehq/tideline/models"
)

// Audit event types of SPEC §6.
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

// payloadKeys is the contract of SPEC §6: required keys, then optional ones.
// Every key written must be listed; every required key must be present.
var payloadKeys = map[string]struct{ required, optional []string }{
	EventScheduleCreated:   {required: []string{"spec", "action", "overlap_policy", "next_fire_at"}},
	EventSchedulePaused:    {required: []string{"paused_at"}, optional: []string{"reason", "paused_until"}},
	EventScheduleResumed:   {required: []string{"next_fire_at"}, optional: []string{"paused_until"}},
	EventScheduleUpdated:   {required: []string{"changed_fields", "spec", "action", "overlap_policy", "next_fire_at"}},
	EventScheduleTriggered: {required: []string{"workflow_instance_id", "workflow_run_id", "outcome", "effective_overlap_policy", "trigger_number", "occurrence_time"}},
	// occurrence_time names the skipped fire (absent for missed_occurrences,
	// which covers first_missed_at..last_missed_at, missed_count of them).
	EventScheduleTriggerSkipped: {required: []string{"reason", "skipped_trigger_count", "last_skipped_at"},
		optional: []string{"occurrence_time", "missed_count", "first_missed_at", "last_missed_at"}},
	EventScheduleDeleted: {required: []string{"reason", "deleted_at"}},
}

// validatePayload enforces payloadKeys. A violation is a programming error:
// it aborts the transaction instead of writing an event readers can't trust.
func validatePayload(eventType string, payload map[string]any) error {
	keys, ok := payloadKeys[eventType]
	if !ok {
		return fmt.Errorf("audit: unknown event type %q", eventType)
	}
	allowed := map[string]bool{"command_context": true}
	for _, k := range keys.required {
		allowed[k] = true
		if _, present := payload[k]; !present {
			return fmt.Errorf("audit: %s payload misses key %q", eventType, k)
		}
	}
	for _, k := range keys.optional {
		allowed[k] = true
	}
	var unknown []string
	for k := range payload {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("audit: %s payload has unknown keys %v", eventType, unknown)
	}
	return nil
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

func (r *recorder) record(ctx context.Context, s *models.Schedule, eventType string, payload map[string]any, instanceID, runID string) error {
	if !r.cc.empty() {
		payload["command_context"] = r.cc
	}
	if err := validatePayload(eventType, payload); err != nil {
		return err
	}
	body, err := json.Marshal(storedPayload(eventType, payload))
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

// storedPayload leaves out of the stored payload the keys that repeat the
// event's own columns (models.PayloadFromColumns): ScheduleTriggered — one
// per fire, most of the audit stream — names its instance and run in both,
// and reading puts them back, so readers see SPEC §6's keys either way.
func storedPayload(eventType string, payload map[string]any) map[string]any {
	keys := models.PayloadFromColumns[eventType]
	if len(keys) == 0 {
		return payload
	}
	stored := make(map[string]any, len(payload))
	for k, v := range payload {
		stored[k] = v
	}
	for _, k := range keys {
		delete(stored, k)
	}
	return stored
}

// timeOrNil renders an optional instant for a payload.
func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return FormatTime(*t)
}
