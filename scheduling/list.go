package scheduling

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

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
	Label        string // "key=value" (also "key:value"; see ParseLabelFilter)
	Cursor       string // opaque, from a previous SchedulePage
	Limit        int
	Health       string // "" (any), or a state of healthstate.go: "failing", "stuck", "overdue" or "skipping"
	Sort         string // "" or "schedule_id" (default), "health": by HealthRank (failing, stuck, overdue, skipping, the rest), or "next_fire": soonest first
	// Counts are the namespace's counts (Service.Counts) when the caller
	// read them for the same view: the health order then does not read
	// the states they count none of (each a statement of its own, most
	// of a page's cost in planning when the namespace is healthy). A
	// schedule that enters such a state between the two reads leads the
	// next page load instead of this one, as with any live order.
	Counts *models.ScheduleCounts
}

// SchedulePage is one page of schedules ordered by schedule ID.
type SchedulePage struct {
	Schedules  []models.Schedule
	NextCursor string
	HasMore    bool
}

// List returns one keyset page of schedules.
func (s *Service) List(ctx context.Context, f ListFilter) (*SchedulePage, error) {
	v := &ValidationError{Code: CodeValidationFailed}
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
	now := s.clock.Now()
	filter := models.ScheduleFilter{Namespace: f.Namespace, Statuses: statuses, Text: f.Text, WorkflowType: f.WorkflowType, Limit: limit,
		Conditions: healthConditions(now)}
	if f.Health != "" {
		rank, ok := healthRankOf(f.Health)
		if !ok {
			v.Add("health", "must be failing, stuck, overdue or skipping (or left out)")
		}
		filter.HealthRank = &rank
	}
	switch f.Sort {
	case "", "schedule_id":
	case "health":
		filter.ByHealthRank = true
		filter.EmptyRanks = emptyRanks(f.Counts, statuses)
	case "next_fire":
		filter.ByNextFire = true
	default:
		v.Add("sort", "must be schedule_id, health or next_fire")
	}
	if f.Cursor != "" {
		var ok bool
		if filter.ByNextFire {
			filter.AfterNextFire, filter.AfterID, ok = decodeNextFireCursor(f.Cursor)
		} else {
			filter.AfterRank, filter.AfterID, ok = decodeListCursor(f.Cursor, filter.ByHealthRank)
		}
		if !ok {
			v.Add("cursor", "is not a cursor returned by this API (for this sort)")
		}
	}
	if f.Label != "" {
		key, value, ok := ParseLabelFilter(f.Label)
		if !ok {
			v.Add("label", "must be key=value, e.g. team=billing")
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
	if err := s.attachRecentActions(ctx, list...); err != nil {
		return nil, err
	}
	setHealthState(now, list...)
	page := &SchedulePage{Schedules: rows, HasMore: more}
	switch {
	case more && filter.ByNextFire:
		page.NextCursor = encodeNextFireCursor(&rows[len(rows)-1])
	case more:
		page.NextCursor = encodeListCursor(&rows[len(rows)-1], filter.ByHealthRank)
	}
	return page, nil
}

// emptyRanks are the health ranks that counts (nil: not read) say hold
// none of the namespace's live schedules, when the list is of live
// schedules only: a deleted schedule is in no count.
func emptyRanks(counts *models.ScheduleCounts, statuses []string) []int {
	if counts == nil || slices.Contains(statuses, models.StatusDeleted) {
		return nil
	}
	var out []int
	for rank, rule := range healthRules {
		if n, _ := countOf(counts, rule.State); n != nil && *n == 0 {
			out = append(out, rank)
		}
	}
	return out
}

// countOf is the count c keeps of a health state, and whether it is one
// of those counted per view up to HealthCountCap (with its Capped flag).
func countOf(c *models.ScheduleCounts, state string) (n *int64, capped *bool) {
	switch state {
	case HealthFailing:
		return &c.Failing, nil
	case HealthStuck:
		return &c.Stuck, &c.StuckCapped
	case HealthOverdue:
		return &c.Overdue, &c.OverdueCapped
	case HealthSkipping:
		return &c.Skipping, &c.SkippingCapped
	}
	return nil, nil
}

// encodeListCursor names the last row of a page: its schedule ID, and for
// the health order its rank first ("1:nightly"). The rank moves with time
// (a run becomes stuck), so a schedule whose state changed between two
// pages may show on both or neither, as with any order by a live value.
func encodeListCursor(last *models.Schedule, byHealth bool) string {
	key := last.ScheduleID
	if byHealth {
		key = strconv.FormatInt(last.HealthRank, 10) + ":" + key
	}
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

func decodeListCursor(cursor string, byHealth bool) (rank int64, scheduleID string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, "", false
	}
	key := string(raw)
	if byHealth {
		count, id, found := strings.Cut(key, ":")
		n, err := strconv.ParseInt(count, 10, 64)
		if !found || err != nil || n < 0 {
			return 0, "", false
		}
		rank, key = n, id
	}
	return rank, key, ValidScheduleID(key)
}

// encodeNextFireCursor names the last row of a next-fire page: its next
// fire in Unix nanoseconds and its ID ("1786000000000000000:nightly"), or
// "-:nightly" once the page reached the schedules that never fire.
func encodeNextFireCursor(last *models.Schedule) string {
	at := "-"
	if last.NextFireAt != nil {
		at = strconv.FormatInt(last.NextFireAt.UnixNano(), 10)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(at + ":" + last.ScheduleID))
}

func decodeNextFireCursor(cursor string) (*time.Time, string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, "", false
	}
	at, id, found := strings.Cut(string(raw), ":")
	if !found || !ValidScheduleID(id) {
		return nil, "", false
	}
	if at == "-" {
		return nil, id, true
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return nil, "", false
	}
	t := time.Unix(0, n).UTC()
	return &t, id, true
}

// LoopGrace is how far past its fire time an active schedule may be before
// the console says no scheduling loop seems to be running: a loop ticks
// every few seconds, so a minute late means none is (or it is stuck).
const LoopGrace = time.Minute

// HealthCountCap bounds the health counts that change with the time alone
// (stuck, overdue, skipping, stale): each is counted per view from its
// state's index, up to this many; beyond, the chip says "1,000+". A count
// then costs at most this many rows in the state whatever their number
// (failing is kept per namespace and exact).
const HealthCountCap = 1000

// Counts are a namespace's live schedules by status and health state (the
// registry's chips): each state counted as its filter lists it. Status
// and failing are kept per namespace (CountSchedules); the states that
// change with the time alone are counted up to HealthCountCap.
func (s *Service) Counts(ctx context.Context, namespace string) (models.ScheduleCounts, error) {
	now := s.clock.Now()
	c, err := models.CountSchedules(ctx, s.db, namespace)
	if err != nil {
		return c, err
	}
	cond := healthConditions(now)
	for rank, rule := range healthRules {
		n, capped := countOf(&c, rule.State)
		if capped == nil {
			continue // kept (failing)
		}
		if *n, *capped, err = models.CountHealthRank(ctx, s.db, namespace, cond, rank, HealthCountCap, ""); err != nil {
			return c, err
		}
	}
	if c.Overdue == 0 {
		return c, nil // the stale are overdue ones
	}
	overdue, _ := healthRankOf(HealthOverdue)
	c.Stale, c.StaleCapped, err = models.CountHealthRank(ctx, s.db, namespace, cond, overdue, HealthCountCap, "s.next_fire_at < ?", now.Add(-LoopGrace))
	return c, err
}

// ParseLabelFilter reads a label filter. Labels are written key=value
// everywhere (forms, display, the CLI's --label); key:value, the filter's
// first spelling, is still read. A key holds neither '=' nor ':', so the
// first of them ends it and the value may contain either.
func ParseLabelFilter(raw string) (key, value string, ok bool) {
	i := strings.IndexAny(raw, "=:")
	if i < 0 {
		return "", "", false
	}
	key, value = raw[:i], raw[i+1:]
	return key, value, labelKeyPattern.MatchString(key)
}

// MaxBulkMatching bounds the console's "select all N matching": one bulk
// pause or resume changes at most this many schedules (each in a
// transaction of its own, as "Pause selected" does), as "retry all
// matching" retries at most MaxRetryMatching runs, so one request stays a
// few seconds long; an operator repeats it for the rest.
const MaxBulkMatching = 500

// MatchingIDs lists the IDs of the schedules f selects, in f's order from
// the first page (f.Cursor and f.Limit are ignored), at most limit of them
// (≤ MaxBulkMatching); more says further schedules match.
func (s *Service) MatchingIDs(ctx context.Context, f ListFilter, limit int) (ids []string, more bool, err error) {
	limit = min(max(limit, 0), MaxBulkMatching)
	f.Cursor = ""
	for {
		f.Limit = min(MaxListLimit, limit-len(ids)+1)
		page, err := s.List(ctx, f)
		if err != nil {
			return nil, false, err
		}
		for _, sch := range page.Schedules {
			if len(ids) == limit {
				return ids, true, nil
			}
			ids = append(ids, sch.ScheduleID)
		}
		if !page.HasMore {
			return ids, false, nil
		}
		f.Cursor = page.NextCursor
	}
}
