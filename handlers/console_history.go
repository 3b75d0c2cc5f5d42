package handlers

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// History answers GET /waterline/schedules/{id}/history: the audit stream
// oldest first by sequence (SPEC §6 read contract). "Load more" asks with
// HX-Request and after_sequence and gets only the next rows; everything
// else gets the page (the modal picks its panel out of it). It answers for
// deleted schedules too.
func (h *Console) History(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultHistoryLimit, "invalid_limit")
	if err != nil {
		return err
	}
	after, err := queryInt(c, "after_sequence", 0, "invalid_after_sequence")
	if err != nil {
		return err
	}
	limit = int64(scheduling.ClampHistoryLimit(int(min(max(limit, 0), scheduling.MaxHistoryLimit))))
	id := c.Param("schedule_id")
	// The schedule's zone, for the event times (Get also answers for
	// deleted schedules, as History does).
	s, err := h.Service.Get(c.Request().Context(), r.ns, id)
	if err != nil {
		return err
	}
	page, err := h.Service.History(c.Request().Context(), r.ns, id, after, int(limit))
	if err != nil {
		return err
	}
	loc := r.zone(s.Spec.Timezone)
	base := scheduleURL(s.ScheduleID) + "/history"
	limitParam := ""
	if limit != scheduling.DefaultHistoryLimit {
		limitParam = strconv.FormatInt(limit, 10)
	}
	v := views.HistoryView{ScheduleID: s.ScheduleID, ScheduleURL: r.url(scheduleURL(s.ScheduleID)),
		PageURL: r.url(base, "limit", limitParam), HasMore: page.HasMore}
	if page.NextCursor != nil {
		v.MoreURL = r.url(base, "after_sequence", strconv.FormatInt(*page.NextCursor, 10), "limit", limitParam)
	}
	if after > 0 {
		v.FromStartURL = v.PageURL
	}
	for _, e := range page.Events {
		v.Events = append(v.Events, r.historyEvent(e, loc))
	}
	if isHX(c) && c.QueryParam("after_sequence") != "" {
		return ok(c, views.HistoryRows(v))
	}
	return ok(c, views.HistoryPage(r.layout("History of "+s.ScheduleID, "schedules"), v))
}

func (r *request) historyEvent(e models.ScheduleEvent, loc *time.Location) views.HistoryEventView {
	ev := views.HistoryEventView{Sequence: e.Sequence, EventType: e.EventType, RecordedAt: eventMoment(e.RecordedAt, loc, r.now),
		InstanceID: deref(e.WorkflowInstanceID), RunID: deref(e.WorkflowRunID), Payload: prettyJSON(e.Payload)}
	if ev.RunID != "" {
		ev.RunURL = r.url(runURL(ev.RunID))
	}
	var p struct {
		Reason         string   `json:"reason"`
		ChangedFields  []string `json:"changed_fields"`
		Outcome        string   `json:"outcome"`
		Policy         string   `json:"effective_overlap_policy"`
		TriggerNumber  int64    `json:"trigger_number"`
		NextFireAt     *string  `json:"next_fire_at"`
		CommandContext *struct {
			Source string `json:"source"`
			Actor  string `json:"actor"`
		} `json:"command_context"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	if cc := p.CommandContext; cc != nil {
		ev.Actor = strings.Trim(cc.Source+" · "+cc.Actor, " ·")
	}
	switch e.EventType {
	case scheduling.EventScheduleCreated, scheduling.EventScheduleResumed:
		ev.Summary = "next fire: " + r.eventTime(p.NextFireAt, loc)
	case scheduling.EventScheduleUpdated:
		ev.Summary = "changed: " + strings.Join(p.ChangedFields, ", ")
	case scheduling.EventScheduleTriggered:
		ev.Summary = fmt.Sprintf("%s fire #%d, overlap policy %s", p.Outcome, p.TriggerNumber, p.Policy)
	case scheduling.EventScheduleTriggerSkipped, scheduling.EventScheduleDeleted:
		ev.Summary = "reason: " + strings.ReplaceAll(p.Reason, "_", " ")
	case scheduling.EventSchedulePaused:
		if p.Reason != "" {
			ev.Summary = "reason: " + p.Reason // the operator's own words
		}
	}
	return ev
}

func (r *request) eventTime(raw *string, loc *time.Location) string {
	if raw == nil {
		return "never"
	}
	t, err := time.Parse(time.RFC3339Nano, *raw)
	if err != nil {
		return *raw
	}
	return t.In(loc).Format(minuteLayout)
}
