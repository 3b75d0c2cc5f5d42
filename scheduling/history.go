package scheduling

import (
	"context"
	"fmt"
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
	// EventType, when filtered).
	Total int64
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
		if events[i].Payload, err = servedPayload(&events[i]); err != nil {
			return nil, fmt.Errorf("read event %d of %s: %w", events[i].Sequence, sch.ScheduleID, err)
		}
	}
	page := &HistoryPage{ScheduleID: sch.ScheduleID, Namespace: sch.Namespace, Events: events, HasMore: more, Total: sch.LastSequence}
	if q.EventType != "" {
		if page.Total, err = models.CountScheduleEvents(ctx, s.db, sch.ID, q.EventType); err != nil {
			return nil, err
		}
	}
	if more {
		last := events[len(events)-1].Sequence
		page.NextCursor = &last
	}
	return page, nil
}
