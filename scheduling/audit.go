package scheduling

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
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
	// calendars are the calendars this batch read, by namespace and name
	// (compile); an empty entry is a name that has no calendar.
	calendars map[string][]*timespec.Calendar
}

func (r *recorder) record(ctx context.Context, s *models.Schedule, p Payload, instanceID, runID string) error {
	if !r.cc.empty() {
		p.setContext(r.cc)
	}
	s.LastSequence++
	ev := &models.ScheduleEvent{
		ID:                 r.ids.newAt(r.now),
		WorkflowScheduleID: s.ID,
		Sequence:           s.LastSequence,
		EventType:          p.EventType(),
		RecordedAt:         r.now,
	}
	if instanceID != "" {
		ev.WorkflowInstanceID = &instanceID
	}
	if runID != "" {
		ev.WorkflowRunID = &runID
	}
	if err := storedForm(ev, p); err != nil {
		return fmt.Errorf("encode %s payload: %w", ev.EventType, err)
	}
	return r.w.insertScheduleEvent(ctx, ev)
}

// schedulerContext is the command context of what the scheduler does on
// its own: every regular fire carries it.
func schedulerContext() *CommandContext { return &CommandContext{Source: "scheduler"} }

// storedForm puts p into ev the way the audit stream keeps it, and
// servedPayload is its inverse: readers see CONTRACT §6's keys whatever
// the form. An event stores its payload whole, except a ScheduleTriggered
// — one per fire, most of the stream, kept for the schedule's lifetime —
// whose facts are the event's columns (instance and run since migration
// 0009; trigger number, occurrence, outcome and policy since 0012). Its
// payload keeps only the command context (triggeredStored), and not even
// that when it is the scheduler's own: a regular fire stores {}.
//
// Its instance ID is stored too, though for every regular fire and
// backfill without jitter models.DerivedInstanceID gives it back from the
// schedule's ID and the occurrence (~30 bytes a fire). servedPayload
// already serves a NULL one that way; writing NULL is the contract step
// of that change, for the release after this one: until then a replica
// of the previous release, which reads the column as stored, may serve
// the same history during a rolling upgrade (TestRollingUpgrade).
func storedForm(ev *models.ScheduleEvent, p Payload) error {
	t, ok := p.(*TriggeredPayload)
	if !ok {
		body, err := json.Marshal(p)
		ev.Payload = safeJSONLiteral(body)
		return err
	}
	// To the microsecond, as the payload's FormatTime and PostgreSQL keep it.
	occurrence := utcMicro(t.OccurrenceTime.Time())
	ev.WorkflowInstanceID, ev.WorkflowRunID = &t.WorkflowInstanceID, &t.WorkflowRunID
	ev.TriggerNumber, ev.OccurrenceTime = &t.TriggerNumber, &occurrence
	ev.TriggerOutcome, ev.EffectiveOverlapPolicy = &t.Outcome, &t.EffectiveOverlapPolicy
	var stored triggeredStored
	switch cc := t.CommandContext; {
	case cc == nil:
		stored.CommandContext = json.RawMessage("null")
	case *cc != *schedulerContext():
		body, err := json.Marshal(cc)
		if err != nil {
			return err
		}
		stored.CommandContext = body
	}
	body, err := json.Marshal(&stored)
	ev.Payload = body
	return err
}

// safeJSONLiteral spells an escaped backslash followed by "u0000" (the
// text \u0000 in a note or label, which the API accepts) as \u005c: bun's
// JSON literal writer reads that backslash pair's second half as the start
// of a NUL escape, which PostgreSQL refuses (22P05). Both spellings decode
// to the same string.
func safeJSONLiteral(body []byte) []byte {
	if !bytes.Contains(body, []byte(`\\u0000`)) {
		return body
	}
	return bytes.ReplaceAll(body, []byte(`\\`), []byte(`\u005c`))
}

// triggeredStored is the payload a ScheduleTriggered stores since
// migration 0012.
type triggeredStored struct {
	// CommandContext is absent for the scheduler's own context and null
	// for an event recorded without one.
	CommandContext json.RawMessage `json:"command_context,omitempty"`
}

// servedPayload is the payload readers are served for a stored event of
// the schedule scheduleID (see storedForm). A fire event stored without
// its instance ID (the compact shape a later release writes) gets the
// derived one, in ev too.
func servedPayload(ev *models.ScheduleEvent, scheduleID string) (json.RawMessage, error) {
	if ev.EventType != EventScheduleTriggered {
		return ev.Payload, nil
	}
	if ev.TriggerOutcome == nil {
		return withColumnKeys(ev)
	}
	if ev.WorkflowInstanceID == nil && ev.OccurrenceTime != nil {
		id := models.DerivedInstanceID(scheduleID, *ev.TriggerOutcome, *ev.OccurrenceTime)
		ev.WorkflowInstanceID = &id
	}
	var stored triggeredStored
	if err := json.Unmarshal(ev.Payload, &stored); err != nil {
		return nil, fmt.Errorf("decode stored %s payload: %w", ev.EventType, err)
	}
	p := &TriggeredPayload{
		WorkflowInstanceID: deref(ev.WorkflowInstanceID), WorkflowRunID: deref(ev.WorkflowRunID),
		Outcome: *ev.TriggerOutcome, EffectiveOverlapPolicy: deref(ev.EffectiveOverlapPolicy),
		TriggerNumber: ptrOr(ev.TriggerNumber, 0), OccurrenceTime: Instant(ptrOr(ev.OccurrenceTime, time.Time{})),
	}
	switch string(stored.CommandContext) {
	case "":
		p.CommandContext = schedulerContext()
	case "null":
	default:
		p.CommandContext = new(CommandContext)
		if err := json.Unmarshal(stored.CommandContext, p.CommandContext); err != nil {
			return nil, fmt.Errorf("decode stored %s command context: %w", ev.EventType, err)
		}
	}
	return json.Marshal(p)
}

// withColumnKeys serves a ScheduleTriggered stored before migration 0012:
// its payload holds every key but, since 0009, the instance and run, which
// are set from the columns (events stored before 0009 hold them in both,
// with the same values).
func withColumnKeys(ev *models.ScheduleEvent) (json.RawMessage, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(ev.Payload, &keys); err != nil {
		return nil, fmt.Errorf("decode stored %s payload: %w", ev.EventType, err)
	}
	if keys == nil {
		keys = map[string]json.RawMessage{}
	}
	for key, column := range map[string]*string{"workflow_instance_id": ev.WorkflowInstanceID, "workflow_run_id": ev.WorkflowRunID} {
		v, err := json.Marshal(column)
		if err != nil {
			return nil, err
		}
		keys[key] = v
	}
	return json.Marshal(keys)
}
