package scheduling

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// Calendars (CONTRACT §16): namespace objects whose dates the schedules
// listing them in spec.exclude_calendars do not fire on. Every change is one
// transaction that writes the calendar, re-plans next_fire_at of every live
// schedule using it and appends the change to the object trail (kind
// "calendar").
const (
	ObjectKindCalendar = "calendar"

	EventCalendarCreated = "CalendarCreated"
	EventCalendarUpdated = "CalendarUpdated"
	EventCalendarDeleted = "CalendarDeleted"

	MaxCalendarsPerNamespace = 1000
	MaxCalendarDescription   = 4096
	MaxCalendarNameLength    = 128
)

var calendarNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

// DefaultWeekend is a new calendar's weekend when the request names none.
var DefaultWeekend = []string{"sat", "sun"}

// CalendarInput is a calendar to create, or (for an update) the fields to
// change: a nil Description, Dates or Weekend is left as it is. On create a
// nil Dates is none and a nil Weekend is DefaultWeekend.
type CalendarInput struct {
	Name        string
	Description *string
	Dates       []string
	Weekend     []string
}

// CalendarChange is what a calendar change did: the calendar after it and
// the schedules it re-planned, with their next fire before and after.
type CalendarChange struct {
	Calendar  *models.Calendar
	Replanned []Replanned
}

// Replanned is one schedule a calendar change re-planned.
type Replanned struct {
	ScheduleID string     `json:"schedule_id"`
	From       *time.Time `json:"from"`
	To         *time.Time `json:"to"`
}

// CalendarView is a calendar with the live schedules that use it.
type CalendarView struct {
	Calendar *models.Calendar
	UsedBy   []string
	// ManagedByApply: `schedule apply` made the calendar's last change (its
	// last CalendarCreated or CalendarUpdated has source apply) — what the
	// managed-by label says of a schedule, for a calendar, which has no
	// labels. Any change by hand (the console, calendar update, the API)
	// takes it over, so apply --prune never deletes a calendar someone else
	// edited since.
	ManagedByApply bool
}

func calendarNotFound(namespace, name string) error {
	return &NotFoundError{Code: CodeCalendarNotFound, Message: fmt.Sprintf("calendar %q not found in namespace %q", name, namespace)}
}

// checkCalendar validates a calendar's fields and compiles it.
func checkCalendar(c *models.Calendar) (*timespec.Calendar, error) {
	v := &ValidationError{Code: CodeValidationFailed}
	if !calendarNamePattern.MatchString(c.Name) {
		v.Add("name", fmt.Sprintf("must be 1-%d characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit", MaxCalendarNameLength))
	}
	if utf8.RuneCountInString(c.Description) > MaxCalendarDescription {
		v.Add("description", fmt.Sprintf("must be at most %d characters", MaxCalendarDescription))
	}
	compiled, err := timespec.NewCalendar(c.Name, c.Dates, c.Weekend)
	var se *timespec.Error
	if errors.As(err, &se) {
		for field, message := range se.Fields {
			v.Add(field, message)
		}
	} else if err != nil {
		return nil, err
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	// Stored as compiled: ascending, each date once, weekend in week order.
	c.Dates, c.Weekend = compiled.Dates(), compiled.Weekend()
	return compiled, nil
}

// CreateCalendar stores a new calendar. No schedule can use a calendar
// before it exists, so nothing is re-planned.
func (s *Service) CreateCalendar(ctx context.Context, namespace string, in CalendarInput, cc *CommandContext) (*models.Calendar, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	now := s.now()
	c, _, err := DefineCalendar(namespace, in)
	if err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = now, now
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, more, err := models.ListCalendars(ctx, tx, namespace, "", MaxCalendarsPerNamespace-1)
		if err != nil {
			return err
		}
		if more {
			return conflict(CodeTooManyCalendars, "namespace %q has %d calendars, the most allowed", namespace, MaxCalendarsPerNamespace)
		}
		err = models.InsertCalendar(ctx, tx, c)
		if err != nil && database.Of(tx).IsUniqueViolation(err) {
			return conflict(CodeCalendarAlreadyExists, "calendar %q already exists in namespace %q", c.Name, namespace)
		}
		if err != nil {
			return err
		}
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindCalendar, c.Name, EventCalendarCreated, cc, calendarState{
			Description: c.Description, Dates: len(c.Dates), Weekend: c.Weekend,
		})
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DefineCalendar is a new calendar as CreateCalendar stores it (defaults
// filled, validated, dates and weekend normalized) and compiled, writing
// nothing: `schedule apply` checks and compares a file's calendars with it
// before it writes anything.
func DefineCalendar(namespace string, in CalendarInput) (*models.Calendar, *timespec.Calendar, error) {
	c := &models.Calendar{Namespace: namespace, Name: in.Name, Dates: in.Dates, Weekend: in.Weekend, Version: 1}
	if in.Description != nil {
		c.Description = *in.Description
	}
	if c.Dates == nil {
		c.Dates = []string{}
	}
	if c.Weekend == nil {
		c.Weekend = DefaultWeekend
	}
	compiled, err := checkCalendar(c)
	if err != nil {
		return nil, nil, err
	}
	return c, compiled, nil
}

// calendarState is what a CalendarCreated records (the dates by count: a
// calendar holds up to 20,000).
type calendarState struct {
	Description string   `json:"description"`
	Dates       int      `json:"dates"`
	Weekend     []string `json:"weekend"`
}

// calendarEdit is what a CalendarUpdated records: the fields that changed,
// the dates added and removed, and the schedules re-planned.
type calendarEdit struct {
	Changed      []string          `json:"changed"`
	Description  *change[string]   `json:"description,omitempty"`
	Weekend      *change[[]string] `json:"weekend,omitempty"`
	DatesAdded   []string          `json:"dates_added,omitempty"`
	DatesRemoved []string          `json:"dates_removed,omitempty"`
	Replanned    []Replanned       `json:"replanned"`
}

// UpdateCalendar changes a calendar and, in the same transaction, re-plans
// next_fire_at of every live schedule that uses it. The calendar row is
// locked first, then the schedules (the order a schedule change that adds
// the calendar cannot cross: it reads the row FOR SHARE, see calendarsFor).
// A change that would leave a using schedule's spec invalid (a weekend of
// every day under a business-day move) is refused on the field.
func (s *Service) UpdateCalendar(ctx context.Context, namespace, name string, in CalendarInput, cc *CommandContext) (*CalendarChange, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	var out *CalendarChange
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := models.GetCalendar(ctx, tx, namespace, name, true)
		if errors.Is(err, sql.ErrNoRows) {
			return calendarNotFound(namespace, name)
		}
		if err != nil {
			return err
		}
		before := *c
		if in.Description != nil {
			c.Description = *in.Description
		}
		if in.Dates != nil {
			c.Dates = in.Dates
		}
		if in.Weekend != nil {
			c.Weekend = in.Weekend
		}
		compiled, err := checkCalendar(c)
		if err != nil {
			return err
		}
		edit := diffCalendar(&before, c)
		now := s.now()
		c.UpdatedAt, c.Version = now, before.Version+1
		if len(edit.Changed) > 0 {
			if err := models.UpdateCalendar(ctx, tx, c); err != nil {
				return err
			}
		}
		replanned, err := s.replan(ctx, tx, namespace, compiled, now)
		if err != nil {
			return err
		}
		edit.Replanned = replanned
		if len(edit.Changed) > 0 {
			if err := s.recordObjectChange(ctx, tx, namespace, ObjectKindCalendar, name, EventCalendarUpdated, cc, edit); err != nil {
				return err
			}
		}
		out = &CalendarChange{Calendar: c, Replanned: replanned}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.calendars.forget(namespace, name)
	return out, nil
}

func diffCalendar(a, b *models.Calendar) calendarEdit {
	e := calendarEdit{Changed: []string{}, Replanned: []Replanned{}}
	if a.Description != b.Description {
		e.Changed = append(e.Changed, "description")
		e.Description = &change[string]{From: a.Description, To: b.Description}
	}
	old := map[string]bool{}
	for _, d := range a.Dates {
		old[d] = true
	}
	now := map[string]bool{}
	for _, d := range b.Dates {
		now[d] = true
		if !old[d] {
			e.DatesAdded = append(e.DatesAdded, d)
		}
	}
	for _, d := range a.Dates {
		if !now[d] {
			e.DatesRemoved = append(e.DatesRemoved, d)
		}
	}
	if len(e.DatesAdded)+len(e.DatesRemoved) > 0 {
		e.Changed = append(e.Changed, "dates")
	}
	if !slices.Equal(a.Weekend, b.Weekend) {
		e.Changed = append(e.Changed, "weekend")
		e.Weekend = &change[[]string]{From: a.Weekend, To: b.Weekend}
	}
	return e
}

// replan recomputes next_fire_at of the live schedules using calendar (as
// it now is) from now on, locking each, in ID order.
func (s *Service) replan(ctx context.Context, tx bun.IDB, namespace string, calendar *timespec.Calendar, now time.Time) ([]Replanned, error) {
	users, err := models.SchedulesNamingCalendar(ctx, tx, namespace, calendar.Name(), true)
	if err != nil {
		return nil, err
	}
	out := []Replanned{}
	var changed []*models.Schedule
	v := &ValidationError{Code: CodeValidationFailed}
	for i := range users {
		sch := &users[i]
		if !slices.Contains(sch.Spec.ExcludeCalendars, calendar.Name()) {
			continue // the name appeared elsewhere in the spec's text
		}
		var others []*timespec.Calendar
		if len(sch.Spec.ExcludeCalendars) > 1 {
			if others, err = s.calendarsFor(ctx, tx, namespace, sch.Spec.ExcludeCalendars, nil); err != nil {
				return nil, err
			}
		}
		compiled, err := timespec.Compile(sch.Spec, append([]*timespec.Calendar{calendar}, others...)...)
		if err != nil {
			v.Add("weekend", fmt.Sprintf("schedule %q could not use the calendar any more: %v", sch.ScheduleID, err))
			continue
		}
		if sch.Status != models.StatusActive {
			continue // paused: resume computes the fire
		}
		from := sch.NextFireAt
		// A fire already due stays due when the calendar still allows it
		// (or yields to the next allowed one): a re-plan drops no fire.
		after := now
		if sch.NextNominalAt != nil && !sch.NextNominalAt.After(now) {
			after = sch.NextNominalAt.Add(-time.Second)
		}
		s.scheduleNext(sch, compiled, after)
		if timesEqual(from, sch.NextNominalAt) {
			// Unchanged canonical time: keep the jitter drawn before.
			continue
		}
		sch.UpdatedAt = now
		changed = append(changed, sch)
		out = append(out, Replanned{ScheduleID: sch.ScheduleID, From: from, To: sch.NextFireAt})
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	// PostgreSQL: one statement per 500, as the tick writes its batch (the
	// rows are locked, so their other fire columns are written back as
	// read); 1,000 single-row updates took 330 ms there. SQLite, in
	// process, is faster row by row, narrow.
	if !database.Of(tx).TypedArrays() {
		for _, sch := range changed {
			if err := models.UpdateScheduleNext(ctx, tx, sch); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for start := 0; start < len(changed); start += 500 {
		if err := models.UpdateSchedules(ctx, tx, changed[start:min(start+500, len(changed))]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func timesEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// DeleteCalendar removes a calendar no live schedule uses; one in use is
// 409 calendar_in_use naming the schedules.
func (s *Service) DeleteCalendar(ctx context.Context, namespace, name string, cc *CommandContext) error {
	if err := cc.validate(); err != nil {
		return err
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := models.GetCalendar(ctx, tx, namespace, name, true)
		if errors.Is(err, sql.ErrNoRows) {
			return calendarNotFound(namespace, name)
		}
		if err != nil {
			return err
		}
		users, err := s.calendarUsers(ctx, tx, namespace, name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return &ConflictError{Code: CodeCalendarInUse, Message: fmt.Sprintf("calendar %q is used by %s: %s; remove it from their spec.exclude_calendars first", name, schedulesWord(len(users)), strings.Join(users, ", ")), Schedules: users}
		}
		if err := models.DeleteCalendar(ctx, tx, namespace, name); err != nil {
			return err
		}
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindCalendar, name, EventCalendarDeleted, cc, calendarState{
			Description: c.Description, Dates: len(c.Dates), Weekend: c.Weekend,
		})
	})
	if err != nil {
		return err
	}
	s.calendars.forget(namespace, name)
	return nil
}

// calendarUsers are the IDs of the live schedules listing calendar.
func (s *Service) calendarUsers(ctx context.Context, db bun.IDB, namespace, name string) ([]string, error) {
	rows, err := models.SchedulesNamingCalendar(ctx, db, namespace, name, false)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, sch := range rows {
		if slices.Contains(sch.Spec.ExcludeCalendars, name) {
			out = append(out, sch.ScheduleID)
		}
	}
	return out, nil
}

// GetCalendar returns a calendar and the live schedules using it.
func (s *Service) GetCalendar(ctx context.Context, namespace, name string) (*CalendarView, error) {
	c, err := models.GetCalendar(ctx, s.db, namespace, name, false)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, calendarNotFound(namespace, name)
	}
	if err != nil {
		return nil, err
	}
	users, err := s.calendarUsers(ctx, s.db, namespace, name)
	if err != nil {
		return nil, err
	}
	source, err := models.LastObjectChangeSource(ctx, s.db, namespace, ObjectKindCalendar, name, []string{EventCalendarCreated, EventCalendarUpdated})
	if err != nil {
		return nil, err
	}
	return &CalendarView{Calendar: c, UsedBy: users, ManagedByApply: source == SourceApply}, nil
}

// CalendarPage is one page of a namespace's calendars, by name.
type CalendarPage struct {
	Calendars  []models.Calendar
	NextCursor string
	HasMore    bool
}

// ListCalendars pages a namespace's calendars by name.
func (s *Service) ListCalendars(ctx context.Context, namespace, cursor string, limit int) (*CalendarPage, error) {
	v := &ValidationError{Code: CodeValidationFailed}
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		v.Add("limit", fmt.Sprintf("must be between 1 and %d", MaxListLimit))
	}
	if cursor != "" && !calendarNamePattern.MatchString(cursor) {
		v.Add("cursor", "is not a cursor returned by this API")
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	rows, more, err := models.ListCalendars(ctx, s.db, namespace, cursor, limit)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []models.Calendar{}
	}
	page := &CalendarPage{Calendars: rows, HasMore: more}
	if more {
		page.NextCursor = rows[len(rows)-1].Name
	}
	return page, nil
}

// CalendarHistory returns a page of a calendar's trail (also after it was
// deleted).
func (s *Service) CalendarHistory(ctx context.Context, namespace, name, cursor string, limit int) (*ObjectHistoryPage, error) {
	return s.objectHistory(ctx, namespace, ObjectKindCalendar, name, cursor, limit, calendarNotFound(namespace, name))
}

// calendarCache keeps compiled calendars by namespace, name and version,
// so a spec that lists calendars compiles without reading 20,000 dates: a
// reader checks the versions of the calendars it needs (one narrow query)
// and loads only what changed. The tick checks once per batch
// (recorder.compile); schedules without calendars never look. At most
// maxCachedCalendars are kept (a full one drops an arbitrary entry, whose
// next reader loads it again), so a namespace of 1,000 calendars of 20,000
// dates cannot make the process hold them all.
type calendarCache struct {
	mu sync.Mutex
	ns map[string]map[string]cachedCalendar
	n  int
}

const maxCachedCalendars = 256

type cachedCalendar struct {
	version int64
	cal     *timespec.Calendar
}

func (c *calendarCache) forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ns[namespace][name]; ok {
		delete(c.ns[namespace], name)
		c.n--
	}
}

// put keeps cal; the caller holds mu.
func (c *calendarCache) put(namespace string, e cachedCalendar) {
	if c.ns == nil {
		c.ns = map[string]map[string]cachedCalendar{}
	}
	if c.ns[namespace] == nil {
		c.ns[namespace] = map[string]cachedCalendar{}
	}
	if _, ok := c.ns[namespace][e.cal.Name()]; !ok {
		if c.n >= maxCachedCalendars {
		evict:
			for ns, m := range c.ns {
				for name := range m {
					delete(c.ns[ns], name)
					c.n--
					break evict
				}
			}
		}
		c.n++
	}
	c.ns[namespace][e.cal.Name()] = e
}

// calendarsFor returns the named calendars of the namespace as of db (the
// ones that exist), from the cache where the version matches. share names
// calendars to read FOR SHARE: a schedule change that starts using a
// calendar holds it so an edit of the calendar either commits first (and
// the change sees it) or waits (and then re-plans the schedule).
func (s *Service) calendarsFor(ctx context.Context, db bun.IDB, namespace string, names, share []string) ([]*timespec.Calendar, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(share) > 0 {
		q := db.NewSelect().Table("calendars").Column("name").Where("namespace = ? AND name IN (?)", namespace, bun.In(share))
		var names []string
		if err := database.Lock(q, "SHARE").Scan(ctx, &names); err != nil {
			return nil, fmt.Errorf("lock calendars: %w", err)
		}
	}
	versions, err := models.CalendarVersions(ctx, db, namespace, names)
	if err != nil {
		return nil, err
	}
	s.calendars.mu.Lock()
	known := s.calendars.ns[namespace]
	var stale []string
	out := make([]*timespec.Calendar, 0, len(versions))
	for _, v := range versions {
		if e, ok := known[v.Name]; ok && e.version == v.Version {
			out = append(out, e.cal)
		} else {
			stale = append(stale, v.Name)
		}
	}
	s.calendars.mu.Unlock()
	if len(stale) == 0 {
		return out, nil
	}
	rows, err := models.GetCalendars(ctx, db, namespace, stale)
	if err != nil {
		return nil, err
	}
	s.calendars.mu.Lock()
	defer s.calendars.mu.Unlock()
	for _, row := range rows {
		cal, err := timespec.NewCalendar(row.Name, row.Dates, row.Weekend)
		if err != nil {
			return nil, fmt.Errorf("compile stored calendar %s: %w", row.Name, err)
		}
		s.calendars.put(namespace, cachedCalendar{version: row.Version, cal: cal})
		out = append(out, cal)
	}
	return out, nil
}

// calendarsForChange returns the namespace's calendars for a change of a
// spec from old (nil on create) to spec (nil when the change leaves it):
// nothing when neither lists one. The calendars the change starts using are
// read FOR SHARE (see calendarsFor).
func (s *Service) calendarsForChange(ctx context.Context, db bun.IDB, namespace string, spec, old *models.Spec) ([]*timespec.Calendar, error) {
	var added, names []string
	if old != nil {
		names = append(names, old.ExcludeCalendars...)
	}
	if spec != nil {
		for _, name := range spec.ExcludeCalendars {
			names = append(names, name)
			if old == nil || !slices.Contains(old.ExcludeCalendars, name) {
				added = append(added, name)
			}
		}
	}
	if len(names) > 2*timespec.MaxSpecCalendars {
		return nil, nil // refused by Compile on the field; nothing to read
	}
	return s.calendarsFor(ctx, db, namespace, names, added)
}

// compileSpec compiles a namespace's spec with the calendars it lists, read
// as of db; a spec that lists none reads nothing.
func (s *Service) compileSpec(ctx context.Context, db bun.IDB, namespace string, spec models.Spec) (*timespec.CompiledSpec, error) {
	if len(spec.ExcludeCalendars) == 0 {
		return timespec.Compile(spec)
	}
	if len(spec.ExcludeCalendars) > timespec.MaxSpecCalendars {
		return timespec.Compile(spec) // refused on the field
	}
	cals, err := s.calendarsFor(ctx, db, namespace, spec.ExcludeCalendars, nil)
	if err != nil {
		return nil, err
	}
	return timespec.Compile(spec, cals...)
}

// compile is compileSpec for the fires of one batch: a calendar is read
// (its version checked) once per batch, not per fire.
func (r *recorder) compile(ctx context.Context, s *Service, db bun.IDB, sch *models.Schedule) (*timespec.CompiledSpec, error) {
	if len(sch.Spec.ExcludeCalendars) == 0 || len(sch.Spec.ExcludeCalendars) > timespec.MaxSpecCalendars {
		return timespec.Compile(sch.Spec)
	}
	if r.calendars == nil {
		r.calendars = map[string][]*timespec.Calendar{}
	}
	var missing []string
	cals := make([]*timespec.Calendar, 0, len(sch.Spec.ExcludeCalendars))
	for _, name := range sch.Spec.ExcludeCalendars {
		key := sch.Namespace + "\x00" + name
		if got, ok := r.calendars[key]; ok {
			cals = append(cals, got...) // empty: read, and absent
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		read, err := s.calendarsFor(ctx, db, sch.Namespace, missing, nil)
		if err != nil {
			return nil, err
		}
		for _, name := range missing {
			r.calendars[sch.Namespace+"\x00"+name] = nil
		}
		for _, cal := range read {
			r.calendars[sch.Namespace+"\x00"+cal.Name()] = []*timespec.Calendar{cal}
		}
		cals = append(cals, read...)
	}
	return timespec.Compile(sch.Spec, cals...)
}

// The window and bound of an impact: a year of occurrences per schedule,
// at most MaxImpactChanges listed each way.
const (
	ImpactWindow     = 366 * 24 * time.Hour
	MaxImpactChanges = 100
)

// CalendarImpact is what a proposed calendar change would do to the live
// schedules using the calendar between From and To.
type CalendarImpact struct {
	From, To  time.Time
	Schedules []ScheduleImpact
}

// ScheduleImpact is one schedule's fires the change adds and removes.
type ScheduleImpact struct {
	ScheduleID     string
	Timezone       string // the schedule's spec timezone, to show its fires in
	Added, Removed []time.Time
	Truncated      bool // more than MaxImpactChanges either way
}

// CalendarImpact computes, writing nothing, the fires a proposed change of
// calendar name (fields as UpdateCalendar takes them) adds and removes for
// each live schedule using it over the next year: what the console shows
// before saving.
func (s *Service) CalendarImpact(ctx context.Context, namespace, name string, in CalendarInput) (*CalendarImpact, error) {
	c, err := models.GetCalendar(ctx, s.db, namespace, name, false)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, calendarNotFound(namespace, name)
	}
	if err != nil {
		return nil, err
	}
	proposed := *c
	if in.Description != nil {
		proposed.Description = *in.Description
	}
	if in.Dates != nil {
		proposed.Dates = in.Dates
	}
	if in.Weekend != nil {
		proposed.Weekend = in.Weekend
	}
	after, err := checkCalendar(&proposed)
	if err != nil {
		return nil, err
	}
	users, err := models.SchedulesNamingCalendar(ctx, s.db, namespace, name, false)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := &CalendarImpact{From: now, To: now.Add(ImpactWindow), Schedules: []ScheduleImpact{}}
	for i := range users {
		sch := &users[i]
		if !slices.Contains(sch.Spec.ExcludeCalendars, name) {
			continue
		}
		all, err := s.calendarsFor(ctx, s.db, namespace, sch.Spec.ExcludeCalendars, nil)
		if err != nil {
			return nil, err
		}
		was, err := timespec.Compile(sch.Spec, all...)
		if err != nil {
			continue
		}
		will, err := timespec.Compile(sch.Spec, append([]*timespec.Calendar{after}, all...)...)
		if err != nil {
			return nil, &ValidationError{Code: CodeValidationFailed, Fields: map[string]string{"weekend": fmt.Sprintf("schedule %q could not use the calendar any more: %v", sch.ScheduleID, err)}}
		}
		before, err1 := was.Between(out.From, out.To, MaxBackfillJobOccurrences)
		later, err2 := will.Between(out.From, out.To, MaxBackfillJobOccurrences)
		im := ScheduleImpact{ScheduleID: sch.ScheduleID, Timezone: sch.Spec.Timezone, Added: []time.Time{}, Removed: []time.Time{}, Truncated: err1 != nil || err2 != nil}
		old := map[int64]bool{}
		for _, t := range before {
			old[t.Unix()] = true
		}
		kept := map[int64]bool{}
		for _, t := range later {
			kept[t.Unix()] = true
			if !old[t.Unix()] {
				if len(im.Added) == MaxImpactChanges {
					im.Truncated = true
					continue
				}
				im.Added = append(im.Added, t)
			}
		}
		for _, t := range before {
			if !kept[t.Unix()] {
				if len(im.Removed) == MaxImpactChanges {
					im.Truncated = true
					continue
				}
				im.Removed = append(im.Removed, t)
			}
		}
		if len(im.Added)+len(im.Removed) > 0 || im.Truncated {
			out.Schedules = append(out.Schedules, im)
		}
	}
	return out, nil
}

// schedulesWord is "1 schedule" or "N schedules".
func schedulesWord(n int) string {
	if n == 1 {
		return "1 schedule"
	}
	return fmt.Sprintf("%d schedules", n)
}
