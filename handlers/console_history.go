package handlers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// History answers GET /waterline/schedules/{id}/history: the audit stream,
// newest first unless ?order=asc, optionally of one ?event_type=, with its
// total (docs/CONTRACT.md, "History paging"). A cursor implies its order:
// after_sequence continues oldest first, before_sequence newest first.
// "Load more" asks with HX-Request and a cursor and gets only the next rows;
// everything else gets the page (the modal picks its panel out of it). It
// answers for deleted schedules too.
func (h *Console) History(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	order := scheduling.HistoryNewestFirst
	if c.QueryParam("after_sequence") != "" {
		order = scheduling.HistoryOldestFirst
	}
	q, err := historyQuery(c, order)
	if err != nil {
		return err
	}
	id := c.Param("schedule_id")
	// The schedule's zone, for the event times (Get also answers for
	// deleted schedules, as History does).
	s, err := h.Schedules.Get(c.Request().Context(), r.ns, id)
	if err != nil {
		return err
	}
	page, err := h.Schedules.History(c.Request().Context(), r.ns, id, q)
	if err != nil {
		return err
	}
	v := r.historyView(s, q, page)
	if isHX(c) && (q.AfterSequence > 0 || q.BeforeSequence > 0) {
		return ok(c, views.HistoryRows(v))
	}
	return ok(c, views.HistoryPage(r.layout("History of "+s.ScheduleID, "schedules"), v))
}

func (r *request) historyView(s *models.Schedule, q scheduling.HistoryQuery, page *scheduling.HistoryPage) views.HistoryView {
	loc := r.zone(s.Spec.Timezone)
	base := scheduleURL(s.ScheduleID) + "/history"
	limitParam := ""
	if limit := scheduling.ClampHistoryLimit(q.Limit); limit != scheduling.DefaultHistoryLimit {
		limitParam = strconv.Itoa(limit)
	}
	newest := q.Order == scheduling.HistoryNewestFirst
	// first is the first page of an order, with the filter and limit kept;
	// newest first is the default and needs no parameter.
	first := func(newestFirst bool) string {
		order := ""
		if !newestFirst {
			order = scheduling.HistoryOldestFirst
		}
		return r.url(base, "order", order, "event_type", q.EventType, "limit", limitParam)
	}
	v := views.HistoryView{ScheduleID: s.ScheduleID, ScheduleURL: r.url(scheduleURL(s.ScheduleID)),
		PageURL: first(newest), HasMore: page.HasMore, NewestFirst: newest, OrderURL: first(!newest),
		FilterURL: base, EventType: q.EventType, EventTypes: scheduling.EventTypes, Total: historyTotal(page.Total, q.EventType)}
	if !newest {
		v.FilterHidden = append(v.FilterHidden, views.KV{Key: "order", Value: scheduling.HistoryOldestFirst})
	}
	if limitParam != "" {
		v.FilterHidden = append(v.FilterHidden, views.KV{Key: "limit", Value: limitParam})
	}
	if ns := r.urlNamespace(); ns != "" {
		v.FilterHidden = append(v.FilterHidden, views.KV{Key: "namespace", Value: ns})
	}
	if page.NextCursor != nil {
		cursor := "after_sequence"
		if newest {
			cursor = "before_sequence"
		}
		v.MoreURL = r.url(base, cursor, strconv.FormatInt(*page.NextCursor, 10), "event_type", q.EventType, "limit", limitParam)
	}
	if q.AfterSequence > 0 || q.BeforeSequence > 0 {
		v.FromStartURL = v.PageURL
	}
	for _, e := range page.Events {
		v.Events = append(v.Events, r.historyEvent(e, loc))
	}
	return v
}

// historyTotal says how many events the listing has, e.g. "121 events" or
// "3 SchedulePaused events".
func historyTotal(n int64, eventType string) string {
	noun := "events"
	if n == 1 {
		noun = "event"
	}
	if eventType != "" {
		noun = eventType + " " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun
}

func (r *request) historyEvent(e models.ScheduleEvent, loc *time.Location) views.HistoryEventView {
	ev := views.HistoryEventView{Sequence: e.Sequence, EventType: e.EventType, RecordedAt: eventMoment(e.RecordedAt, loc, r.now),
		InstanceID: deref(e.WorkflowInstanceID), RunID: deref(e.WorkflowRunID), Payload: prettyJSON(e.Payload)}
	if ev.RunID != "" {
		ev.RunURL = r.url(runURL(ev.RunID))
	}
	p, err := scheduling.DecodePayload(e.EventType, e.Payload)
	if err != nil {
		return ev // the raw payload is still shown
	}
	if cc := p.Context(); cc != nil {
		ev.Actor = strings.Trim(cc.Source+" · "+cc.Actor, " ·")
	}
	at := func(i *scheduling.Instant) string {
		if i == nil {
			return "never"
		}
		return i.Time().In(loc).Format(minuteLayout)
	}
	field := func(label, value string) {
		if value != "" {
			ev.Fields = append(ev.Fields, views.KV{Key: label, Value: value})
		}
	}
	words := func(code string) string { return strings.ReplaceAll(code, "_", " ") }
	switch p := p.(type) {
	case *scheduling.CreatedPayload:
		ev.Summary = "next fire: " + at(p.NextFireAt)
		field("Workflow", p.Action.WorkflowType)
		field("Overlap policy", words(p.OverlapPolicy))
		field("Next fire", at(p.NextFireAt))
	case *scheduling.ResumedPayload:
		ev.Summary = "next fire: " + at(p.NextFireAt)
		field("Next fire", at(p.NextFireAt))
		if p.PausedUntil != nil {
			field("Timed pause ended", at(p.PausedUntil))
		}
	case *scheduling.UpdatedPayload:
		ev.Summary = "changed: " + strings.Join(p.ChangedFields, ", ")
		field("Changed", strings.Join(p.ChangedFields, ", "))
		field("Overlap policy", words(p.OverlapPolicy))
		field("Next fire", at(p.NextFireAt))
	case *scheduling.TriggeredPayload:
		ev.Summary = fmt.Sprintf("%s fire #%d, overlap policy %s", p.Outcome, p.TriggerNumber, p.EffectiveOverlapPolicy)
		field("Outcome", p.Outcome)
		field("Occurrence", at(&p.OccurrenceTime))
		field("Overlap policy", words(p.EffectiveOverlapPolicy))
	case *scheduling.SkippedPayload:
		ev.Summary = "reason: " + words(p.Reason)
		field("Reason", words(p.Reason))
		if p.OccurrenceTime != nil {
			field("Occurrence", at(p.OccurrenceTime))
		}
		if p.MissedCount > 0 {
			field("Missed", fmt.Sprintf("%d, %s – %s", p.MissedCount, at(p.FirstMissedAt), at(p.LastMissedAt)))
		}
		field("Skipped in all", strconv.FormatInt(p.SkippedTriggerCount, 10))
	case *scheduling.DeletedPayload:
		ev.Summary = "reason: " + words(p.Reason)
		field("Reason", words(p.Reason))
	case *scheduling.PausedPayload:
		if p.Reason != "" {
			ev.Summary = "reason: " + p.Reason // the operator's own words
		}
		if p.PausedUntil != nil {
			field("Until", at(p.PausedUntil))
		}
	}
	return ev
}
