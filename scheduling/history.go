package scheduling

import (
	"context"

	"github.com/tidelinehq/tideline/models"
)

// History paging limits of SPEC §6.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 500
)

// HistoryPage is one page of a schedule's audit stream.
type HistoryPage struct {
	ScheduleID string
	Namespace  string
	Events     []models.ScheduleEvent
	NextCursor *int64 // the last returned sequence when HasMore
	HasMore    bool
}

// ClampHistoryLimit applies SPEC §6: the limit is clamped to 1..500.
func ClampHistoryLimit(limit int) int {
	return min(max(limit, 1), MaxHistoryLimit)
}

// History returns events with sequence > afterSequence, oldest first. It
// answers for deleted schedules too: their audit stream stays readable.
func (s *Service) History(ctx context.Context, namespace, scheduleID string, afterSequence int64, limit int) (*HistoryPage, error) {
	if afterSequence < 0 {
		return nil, &ValidationError{Code: "invalid_after_sequence", Fields: map[string]string{"after_sequence": "must be a non-negative integer"}}
	}
	limit = ClampHistoryLimit(limit)
	sch, err := s.Get(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	events, more, err := models.ListScheduleEvents(ctx, s.db, sch.ID, afterSequence, limit)
	if err != nil {
		return nil, err
	}
	page := &HistoryPage{ScheduleID: sch.ScheduleID, Namespace: sch.Namespace, Events: events, HasMore: more}
	if more {
		last := events[len(events)-1].Sequence
		page.NextCursor = &last
	}
	return page, nil
}
