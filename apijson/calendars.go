package apijson

import (
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// Calendar is a namespace's calendar (CONTRACT §16): GET /calendars/{name}.
type Calendar struct {
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Dates       []string `json:"dates"`
	Weekend     []string `json:"weekend"`
	Version     int64    `json:"version"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	// UsedBy names the live schedules listing the calendar (GET only).
	UsedBy []string `json:"used_by,omitempty"`
	// ManagedBy is "apply" when `schedule apply` made the calendar's last
	// change (GET only; scheduling.CalendarView.ManagedByApply).
	ManagedBy string `json:"managed_by,omitempty"`
}

// CalendarSummary is a calendar in a list: its dates by count, as a
// calendar holds up to 20,000.
type CalendarSummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	DateCount   int      `json:"date_count"`
	FirstDate   *string  `json:"first_date"`
	LastDate    *string  `json:"last_date"`
	Weekend     []string `json:"weekend"`
	Version     int64    `json:"version"`
	UpdatedAt   string   `json:"updated_at"`
}

// CalendarList is GET /calendars.
type CalendarList struct {
	Calendars  []CalendarSummary `json:"calendars"`
	NextCursor *string           `json:"next_cursor"`
	HasMore    bool              `json:"has_more"`
}

// CalendarWrite is the body of POST /calendars (name required) and PATCH
// /calendars/{name} and POST /calendars/{name}/impact (no name; absent
// fields stay). Dates and Weekend are sent even when empty: [] is "none",
// null (a nil slice) "not given".
type CalendarWrite struct {
	Name        string   `json:"name,omitempty"`
	Description *string  `json:"description,omitempty"`
	Dates       []string `json:"dates"`
	Weekend     []string `json:"weekend"`
}

// Input is the service's form of the body.
func (w CalendarWrite) Input(name string) scheduling.CalendarInput {
	if name == "" {
		name = w.Name
	}
	return scheduling.CalendarInput{Name: name, Description: w.Description, Dates: w.Dates, Weekend: w.Weekend}
}

// Replanned is a schedule a calendar change re-planned.
type Replanned struct {
	ScheduleID string `json:"schedule_id"`
	From       *Time  `json:"from"`
	To         *Time  `json:"to"`
}

// CalendarChange answers PATCH /calendars/{name}: the calendar and the
// schedules whose next fire the change moved, in the same transaction.
type CalendarChange struct {
	Calendar  Calendar    `json:"calendar"`
	Replanned []Replanned `json:"replanned"`
}

// CalendarImpact answers POST /calendars/{name}/impact: what the proposed
// change would do to each live schedule using the calendar over the
// window, writing nothing.
type CalendarImpact struct {
	From      Time             `json:"from"`
	To        Time             `json:"to"`
	Schedules []ScheduleImpact `json:"schedules"`
}

// ScheduleImpact is one schedule's occurrences the change adds or removes.
type ScheduleImpact struct {
	ScheduleID string `json:"schedule_id"`
	Added      []Time `json:"added"`
	Removed    []Time `json:"removed"`
	Truncated  bool   `json:"truncated"`
}

// FromCalendar renders a calendar.
func FromCalendar(c *models.Calendar, usedBy []string) Calendar {
	return Calendar{Namespace: c.Namespace, Name: c.Name, Description: c.Description, Dates: c.Dates, Weekend: c.Weekend,
		Version: c.Version, CreatedAt: scheduling.FormatTime(c.CreatedAt), UpdatedAt: scheduling.FormatTime(c.UpdatedAt), UsedBy: usedBy}
}

// FromCalendarView renders a calendar as GET answers it: who uses it, and
// whether apply manages it.
func FromCalendarView(v *scheduling.CalendarView) Calendar {
	out := FromCalendar(v.Calendar, v.UsedBy)
	if v.ManagedByApply {
		out.ManagedBy = ManagedByApply
	}
	return out
}

// FromCalendarPage renders a page of calendars.
func FromCalendarPage(p *scheduling.CalendarPage) CalendarList {
	out := CalendarList{Calendars: make([]CalendarSummary, len(p.Calendars)), HasMore: p.HasMore}
	for i, c := range p.Calendars {
		s := CalendarSummary{Name: c.Name, Description: c.Description, DateCount: len(c.Dates), Weekend: c.Weekend,
			Version: c.Version, UpdatedAt: scheduling.FormatTime(c.UpdatedAt)}
		if n := len(c.Dates); n > 0 {
			s.FirstDate, s.LastDate = &c.Dates[0], &c.Dates[n-1]
		}
		out.Calendars[i] = s
	}
	if p.HasMore {
		out.NextCursor = &p.NextCursor
	}
	return out
}

// FromCalendarChange renders a calendar change.
func FromCalendarChange(ch *scheduling.CalendarChange) CalendarChange {
	out := CalendarChange{Calendar: FromCalendar(ch.Calendar, nil), Replanned: make([]Replanned, len(ch.Replanned))}
	for i, r := range ch.Replanned {
		out.Replanned[i] = Replanned{ScheduleID: r.ScheduleID, From: AtPtr(r.From), To: AtPtr(r.To)}
	}
	return out
}

// FromCalendarImpact renders an impact.
func FromCalendarImpact(im *scheduling.CalendarImpact) CalendarImpact {
	out := CalendarImpact{From: At(im.From), To: At(im.To), Schedules: make([]ScheduleImpact, len(im.Schedules))}
	for i, s := range im.Schedules {
		out.Schedules[i] = ScheduleImpact{ScheduleID: s.ScheduleID, Added: atAll(s.Added), Removed: atAll(s.Removed), Truncated: s.Truncated}
	}
	return out
}

func atAll(ts []time.Time) []Time {
	out := make([]Time, len(ts))
	for i, t := range ts {
		out[i] = At(t)
	}
	return out
}
