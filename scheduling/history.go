package scheduling

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tidelinehq/tideline/models"
)

// History paging limits (docs/CONTRACT.md, "History paging").
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 500
)

// History orders: oldest first (the API's default) or newest first (the
// console's).
const (
	HistoryOldestFirst = "asc"
	HistoryNewestFirst = "desc"
)

// HistoryQuery selects one page of a schedule's audit stream.
type HistoryQuery struct {
	// Order is HistoryOldestFirst ("" too) or HistoryNewestFirst.
	Order string
	// AfterSequence continues an oldest-first listing: events with a greater
	// sequence. BeforeSequence continues a newest-first one: events with a
	// smaller sequence (0: from the newest). Each pairs with its order only.
	AfterSequence  int64
	BeforeSequence int64
	// EventType keeps only the events of one type ("" for all).
	EventType string
	// Limit is clamped to 1..MaxHistoryLimit.
	Limit int64
}

// HistoryPage is one page of a schedule's audit stream.
type HistoryPage struct {
	ScheduleID string
	Namespace  string
	// Events carry their served payloads (CONTRACT §6's keys), whatever
	// form they were stored in.
	Events     []models.ScheduleEvent
	NextCursor *int64 // the last returned sequence when HasMore
	HasMore    bool
	// Total is how many events the listing has over all its pages (of
	// EventType, when filtered); compacted events are no longer counted.
	Total int64
	// Compacted names the compacted range (SPEC §19) when the page's span
	// of sequences crosses it; nil otherwise.
	Compacted *CompactedRange
}

// CompactedRange is the part of a stream audit compaction removed: every
// fire and skip event from FromSequence through ToSequence (the lifecycle
// events in between are kept), Fires and Skips of them.
type CompactedRange struct {
	FromSequence, ToSequence int64
	Fires, Skips             int64
}

// ClampHistoryLimit applies the contract: the limit is clamped to 1..500.
func ClampHistoryLimit(limit int64) int {
	return int(min(max(limit, 1), MaxHistoryLimit))
}

func (q HistoryQuery) validate() error {
	if q.AfterSequence < 0 {
		return &ValidationError{Code: CodeInvalidAfterSequence, Fields: map[string]string{"after_sequence": "must be a non-negative integer"}}
	}
	if q.BeforeSequence < 0 {
		return &ValidationError{Code: CodeInvalidAfterSequence, Fields: map[string]string{"before_sequence": "must be a non-negative integer"}}
	}
	v := &ValidationError{Code: CodeValidationFailed}
	switch q.Order {
	case "", HistoryOldestFirst:
		if q.BeforeSequence > 0 {
			v.Add("before_sequence", "goes with order=desc; oldest first continues with after_sequence")
		}
	case HistoryNewestFirst:
		if q.AfterSequence > 0 {
			v.Add("after_sequence", "goes with order=asc; newest first continues with before_sequence")
		}
	default:
		v.Add("order", "must be asc (oldest first) or desc (newest first)")
	}
	if q.EventType != "" && !slices.Contains(EventTypes, q.EventType) {
		v.Add("event_type", "must be one of the audit event types (ScheduleCreated, ScheduleTriggered…)")
	}
	return v.OrNil()
}

// History returns one keyset page of a schedule's audit stream. It answers
// for deleted schedules too: their audit stream stays readable.
func (s *Service) History(ctx context.Context, namespace, scheduleID string, q HistoryQuery) (*HistoryPage, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	sch, err := s.Get(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	events, more, err := models.ListScheduleEvents(ctx, s.db, sch.ID, models.EventQuery{
		NewestFirst: q.Order == HistoryNewestFirst, After: q.AfterSequence, Before: q.BeforeSequence,
		EventType: q.EventType, Limit: ClampHistoryLimit(q.Limit),
	})
	if err != nil {
		return nil, err
	}
	for i := range events {
		if events[i].Payload, err = servedPayload(&events[i], sch.ScheduleID); err != nil {
			return nil, fmt.Errorf("read event %d of %s: %w", events[i].Sequence, sch.ScheduleID, err)
		}
	}
	page := &HistoryPage{ScheduleID: sch.ScheduleID, Namespace: sch.Namespace, Events: events, HasMore: more}
	comp, err := models.CompactionOf(ctx, s.db, sch.ID)
	if err != nil {
		return nil, err
	}
	if page.Total, err = s.historyTotal(ctx, sch, q.EventType); err != nil {
		return nil, err
	}
	if comp != nil {
		switch q.EventType {
		case "":
			page.Total -= comp.Fires + comp.Skips
		case EventScheduleTriggered:
			page.Total -= comp.Fires
		case EventScheduleTriggerSkipped:
			page.Total -= comp.Skips
		}
	}
	if more {
		last := events[len(events)-1].Sequence
		page.NextCursor = &last
	}
	if comp != nil && pageCrosses(q, events, more, comp) {
		page.Compacted = &CompactedRange{FromSequence: comp.FromSequence, ToSequence: comp.ThroughSequence, Fires: comp.Fires, Skips: comp.Skips}
	}
	return page, nil
}

// pageCrosses says whether a page's span of sequences meets the compacted
// range: oldest first, the span runs from after its cursor to its last
// event (to the stream's end on the last page); newest first, from before
// its cursor down to its last event (to the start on the last page).
func pageCrosses(q HistoryQuery, events []models.ScheduleEvent, more bool, c *models.Compaction) bool {
	if q.Order == HistoryNewestFirst {
		hi := int64(math.MaxInt64)
		if q.BeforeSequence > 0 {
			hi = q.BeforeSequence - 1
		}
		lo := int64(1)
		if more {
			lo = events[len(events)-1].Sequence
		}
		return lo <= c.ThroughSequence && hi >= c.FromSequence
	}
	lo := q.AfterSequence + 1
	hi := int64(math.MaxInt64)
	if more {
		hi = events[len(events)-1].Sequence
	}
	return lo <= c.ThroughSequence && hi >= c.FromSequence
}

// lifecycleEventTypes are the audit types a person's (or apply's) change
// writes: every type but fires and skips, whose number grows with time.
var lifecycleEventTypes = []string{EventScheduleCreated, EventSchedulePaused, EventScheduleResumed, EventScheduleUpdated, EventScheduleDeleted}

// historyTotal counts a listing without reading the fires or skips it
// holds (issue 36: counting a filter on ScheduleTriggered read every one of
// 2,000,000 events, 287 ms on PostgreSQL). The stream's length is its last
// sequence; its fires are fires_count, which the fire that records each
// ScheduleTriggered increments in the same transaction (fire.go, start);
// its skips are what remains once the lifecycle events — counted in the
// type index — are taken away. Only a lifecycle type is counted directly.
func (s *Service) historyTotal(ctx context.Context, sch *models.Schedule, eventType string) (int64, error) {
	switch eventType {
	case "":
		return sch.LastSequence, nil
	case EventScheduleTriggered:
		return sch.FiresCount, nil
	case EventScheduleTriggerSkipped:
		lifecycle, err := models.CountScheduleEvents(ctx, s.db, sch.ID, lifecycleEventTypes...)
		if err != nil {
			return 0, err
		}
		return sch.LastSequence - sch.FiresCount - lifecycle, nil
	default:
		return models.CountScheduleEvents(ctx, s.db, sch.ID, eventType)
	}
}
