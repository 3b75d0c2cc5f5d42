package scheduling

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/tidelinehq/tideline/models"
)

// List paging limits.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// ListFilter selects schedules. Statuses empty means active and paused.
type ListFilter struct {
	Namespace    string
	Statuses     []string
	Text         string
	WorkflowType string
	Label        string // "key:value"
	Cursor       string // opaque, from a previous SchedulePage
	Limit        int
}

// SchedulePage is one page of schedules ordered by schedule ID.
type SchedulePage struct {
	Schedules  []models.Schedule
	NextCursor string
	HasMore    bool
}

// List returns one keyset page of schedules.
func (s *Service) List(ctx context.Context, f ListFilter) (*SchedulePage, error) {
	v := &ValidationError{Code: "validation_failed"}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []string{models.StatusActive, models.StatusPaused}
	}
	for _, st := range statuses {
		switch st {
		case models.StatusActive, models.StatusPaused, models.StatusDeleted:
		default:
			v.Add("status", "must be active, paused or deleted")
		}
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		v.Add("limit", "must be between 1 and 200")
	}
	var after string
	if f.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(f.Cursor)
		if err != nil || !ValidScheduleID(string(raw)) {
			v.Add("cursor", "is not a cursor returned by this API")
		}
		after = string(raw)
	}
	filter := models.ScheduleFilter{Namespace: f.Namespace, Statuses: statuses, Text: f.Text, WorkflowType: f.WorkflowType, AfterID: after, Limit: limit}
	if f.Label != "" {
		key, value, ok := strings.Cut(f.Label, ":")
		if !ok || !labelKeyPattern.MatchString(key) {
			v.Add("label", "must be key:value")
		}
		filter.LabelKey, filter.LabelValue = key, value
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	rows, more, err := models.ListSchedules(ctx, s.db, filter)
	if err != nil {
		return nil, err
	}
	list := make([]*models.Schedule, len(rows))
	for i := range rows {
		list[i] = &rows[i]
	}
	if err := s.attachHealth(ctx, list...); err != nil {
		return nil, err
	}
	page := &SchedulePage{Schedules: rows, HasMore: more}
	if more {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rows[len(rows)-1].ScheduleID))
	}
	return page, nil
}
