package handlers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// Console ledger bounds: the pages one schedule page reads at most (a
// minutely schedule's 30 days are 44 pages) and the rows in the text table.
const (
	ledgerMaxPages = 50
	ledgerMaxRows  = 200
)

// Heatmap keys: a cell is coloured by what became of its occurrences —
// the run's outcome for one that started (a run that failed or timed out
// is "failed"), else the ledger fate — and an hour by the worst of them.
// heatRank lists the keys worst first; the legend keeps that order.
var heatRank = []string{"failed", scheduling.FateMissed, scheduling.FateSkipped, "cancelled", scheduling.FatePaused,
	scheduling.FateBuffered, scheduling.FateBackfillPending, "pending", "running", scheduling.FateCompacted, "completed",
	scheduling.FateDue, scheduling.FateMoved, scheduling.FateExcluded, scheduling.FateAfterDeleted}

var heatOrder = func() map[string]int {
	m := map[string]int{}
	for i, k := range heatRank {
		m[k] = i
	}
	return m
}()

// heatKey is what one occurrence counts as on the heatmap.
func heatKey(o scheduling.Occurrence) string {
	if o.Fate != scheduling.FateStarted {
		return o.Fate
	}
	switch o.RunStatus {
	case models.RunFailed, models.RunTimedOut:
		return "failed"
	case models.RunCancelled, models.RunTerminated:
		return "cancelled"
	case models.RunCompleted, models.RunPending, models.RunRunning:
		return o.RunStatus
	}
	return "running"
}

// worse reports whether heat key a is worse than b ("" is nothing yet).
func worse(a, b string) bool {
	if b == "" {
		return true
	}
	ra, oka := heatOrder[a]
	rb, okb := heatOrder[b]
	return oka && (!okb || ra < rb)
}

// readLedger reads the whole window [from, to) page by page, at most
// ledgerMaxPages; truncated says it stopped early.
func (r *request) readLedger(s *models.Schedule, from, to time.Time) (occ []scheduling.Occurrence, truncated bool, err error) {
	q := scheduling.LedgerQuery{From: &from, To: &to}
	for range ledgerMaxPages {
		page, err := r.h.Schedules.Ledger(r.c.Request().Context(), r.ns, s.ScheduleID, q)
		if err != nil {
			return nil, false, err
		}
		occ = append(occ, page.Occurrences...)
		if !page.HasMore {
			return occ, false, nil
		}
		q.Cursor = page.NextCursor
	}
	return occ, true, nil
}

// missedFates are what "Backfill the missed ones" selects.
func missedFate(f string) bool { return f == scheduling.FateMissed || f == scheduling.FatePaused }

// ledgerView builds the schedule page's ledger for the last 7 or 30 days:
// a heatmap of days (down the side, newest first) by hours (across) in the
// zone of the viewer's time setting, from the hour the schedule was created
// — nothing before it is read or drawn, unless a backfill ran occurrences
// from before it: then from the first of those.
func (r *request) ledgerView(s *models.Schedule, window string) (*views.LedgerView, error) {
	days := 7
	if window == "30d" {
		days = 30
	}
	to := r.now
	from := to.Add(-time.Duration(days) * 24 * time.Hour)
	// The grid starts at the creation, or earlier where a backfill ran
	// occurrences from before it.
	created, backfilledBefore := s.CreatedAt.After(from), false
	if created {
		first, err := r.h.Schedules.EarliestBackfilled(r.c.Request().Context(), r.ns, s.ScheduleID, from, s.CreatedAt)
		if err != nil {
			return nil, err
		}
		from = s.CreatedAt
		if first != nil {
			from = *first
		}
		backfilledBefore = first != nil
	}
	if !from.Before(to) {
		from = to.Add(-time.Second)
	}
	occ, truncated, err := r.readLedger(s, from, to)
	if err != nil {
		return nil, err
	}
	loc := r.zone(s.Spec.Timezone)
	self := scheduleURL(s.ScheduleID)
	v := &views.LedgerView{Window: strconv.Itoa(days) + " days", Truncated: truncated, Zone: loc.String(),
		WindowURLs: []views.Link{{Label: "7 days", URL: r.url(self, "ledger", "7d") + "#ledger-h"}, {Label: "30 days", URL: r.url(self, "ledger", "30d") + "#ledger-h"}}}
	if created {
		v.Since, v.BackfilledBefore = absMoment(s.CreatedAt, loc), backfilledBefore
	}
	if r.timePref == "local" {
		v.Zone = "UTC (the server does not know your browser's zone)"
	}
	for h := range 24 {
		v.Hours = append(v.Hours, fmt.Sprintf("%02d", h))
	}

	// One bucket per local (day, hour): a fall-back day's repeated hour
	// shares its cell.
	type hourKey struct {
		day  string
		hour int
	}
	type bucket struct {
		counts map[string]int
		worst  string
		runURL string
	}
	buckets := map[hourKey]*bucket{}
	counts := map[string]int{}
	var missed []scheduling.Occurrence
	var lastRead time.Time
	for _, o := range occ {
		if o.Fate == scheduling.FateBeforeCreated {
			continue
		}
		if missedFate(o.Fate) {
			missed = append(missed, o)
		}
		lastRead = o.Time
		k := heatKey(o)
		counts[k]++
		lt := o.Time.In(loc)
		hk := hourKey{lt.Format(time.DateOnly), lt.Hour()}
		b := buckets[hk]
		if b == nil {
			b = &bucket{counts: map[string]int{}}
			buckets[hk] = b
		}
		b.counts[k]++
		if worse(k, b.worst) {
			b.worst, b.runURL = k, ""
		}
		if k == b.worst && b.runURL == "" && o.RunID != "" {
			b.runURL = r.url(runURL(o.RunID))
		}
	}
	for _, k := range heatRank {
		if n := counts[k]; n > 0 {
			v.Legend = append(v.Legend, views.LedgerCount{Fate: k, Count: n})
		}
	}

	keys := map[string]bool{}
	fl, tl := from.In(loc), to.In(loc)
	firstDay := time.Date(fl.Year(), fl.Month(), fl.Day(), 12, 0, 0, 0, loc)
	for day := time.Date(tl.Year(), tl.Month(), tl.Day(), 12, 0, 0, 0, loc); !day.Before(firstDay); day = day.AddDate(0, 0, -1) {
		row := views.LedgerDay{Weekday: day.Format("Mon"), Day: day.Format("2 Jan"), Date: day.Format(time.DateOnly)}
		for h := range 24 {
			at := time.Date(day.Year(), day.Month(), day.Day(), h, 0, 0, 0, loc)
			cell := views.LedgerCell{At: at.UTC().Format(time.RFC3339)}
			switch {
			case at.Hour() != h:
				cell.Fate = "" // a spring-forward gap: no such hour
			case !at.Add(time.Hour).After(from) || at.After(to):
				cell.Fate = "" // before the schedule existed, or to come
			default:
				name := day.Format("Mon 2 Jan ") + fmt.Sprintf("%02d:00", h) + at.Format(" MST")
				b := buckets[hourKey{row.Date, h}]
				switch {
				case b != nil:
					cell.Fate, cell.URL = b.worst, b.runURL
					var parts []string
					for _, k := range heatRank {
						if n := b.counts[k]; n > 0 {
							parts = append(parts, strconv.Itoa(n)+" "+humanFate(k))
						}
					}
					cell.Label = name + ": " + strings.Join(parts, ", ")
				case !at.Add(time.Hour).After(s.CreatedAt):
					cell.Fate, cell.Label = scheduling.FateBeforeCreated, name+": before the schedule was created"
				case truncated && !lastRead.IsZero() && at.After(lastRead):
					cell.Fate, cell.Label = "unread", name+": not read (the window holds more occurrences than a page reads)"
				default:
					cell.Fate, cell.Label = "none", name+": no occurrence"
				}
			}
			row.Cells = append(row.Cells, cell)
			if cell.Fate == "none" || cell.Fate == "unread" || cell.Fate == scheduling.FateBeforeCreated {
				keys[cell.Fate] = true
			}
		}
		v.Days = append(v.Days, row)
	}
	for _, k := range []string{"none", scheduling.FateBeforeCreated, "unread"} {
		if keys[k] {
			v.Keys = append(v.Keys, k)
		}
	}

	for i := len(occ) - 1; i >= 0; i-- {
		o := occ[i]
		if o.Fate == scheduling.FateStarted || o.Fate == scheduling.FateBeforeCreated {
			continue
		}
		if len(v.Rows) == ledgerMaxRows {
			v.RowsHidden++
			continue
		}
		wall := o.Wall.Format("2006-01-02 15:04")
		if o.Shift != 0 {
			wall += " (DST +" + o.Shift.String() + ")"
		} else if o.Repeated {
			wall += " (repeated hour)"
		}
		v.Rows = append(v.Rows, views.LedgerRow{Time: absMoment(o.Time, loc), Wall: wall, Fate: o.Fate, Reason: o.Reason})
	}
	if len(missed) > 0 && r.canOperate() && s.Status != models.StatusDeleted {
		v.MissedCount = len(missed)
		v.BackfillMissedURL = r.url(self+"/backfill", "missed", "1", "from", missed[0].Time.Format(time.RFC3339),
			"to", missed[len(missed)-1].Time.Add(time.Second).Format(time.RFC3339))
	}
	return v, nil
}

// humanFate is a heat key in words.
func humanFate(k string) string { return strings.ReplaceAll(k, "_", " ") }

// missedBetween lists the missed and paused occurrences of [from, to):
// what "Backfill the missed ones" selects.
func (r *request) missedBetween(s *models.Schedule, from, to time.Time) ([]time.Time, error) {
	occ, _, err := r.readLedger(s, from, to)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, o := range occ {
		if missedFate(o.Fate) {
			out = append(out, o.Time)
		}
	}
	return out, nil
}
