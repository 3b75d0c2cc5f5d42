package handlers

import (
	"strconv"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// Console ledger bounds: the pages one schedule page reads at most (a
// minutely schedule's 30 days are 44 pages), cells drawn one per
// occurrence up to a month of hourly ones, rows in the text table.
const (
	ledgerMaxPages = 50
	ledgerMaxCells = 31 * 24
	ledgerMaxRows  = 200
)

// fateRank orders fates for an hour's cell: the one an operator must see.
var fateRank = map[string]int{scheduling.FateMissed: 8, scheduling.FateSkipped: 7, scheduling.FatePaused: 6,
	scheduling.FateBuffered: 5, scheduling.FateBackfillPending: 4, scheduling.FateStarted: 3, scheduling.FateDue: 2, scheduling.FateMoved: 1, scheduling.FateExcluded: 1,
	scheduling.FateAfterDeleted: 1, scheduling.FateBeforeCreated: 0}

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

// ledgerView builds the schedule page's ledger for the last 7 or 30 days.
func (r *request) ledgerView(s *models.Schedule, window string) (*views.LedgerView, error) {
	days := 7
	if window == "30d" {
		days = 30
	}
	to := r.now
	from := to.Add(-time.Duration(days) * 24 * time.Hour)
	occ, truncated, err := r.readLedger(s, from, to)
	if err != nil {
		return nil, err
	}
	loc := scheduleZone(s)
	self := scheduleURL(s.ScheduleID)
	v := &views.LedgerView{Window: strconv.Itoa(days) + " days", Truncated: truncated, PerHour: len(occ) > ledgerMaxCells,
		WindowURLs: []views.Link{{Label: "7 days", URL: r.url(self, "ledger", "7d") + "#ledger-h"}, {Label: "30 days", URL: r.url(self, "ledger", "30d") + "#ledger-h"}}}
	counts := map[string]int{}
	var hour time.Time
	hourCounts := map[string]int{}
	flush := func() {
		if len(hourCounts) == 0 {
			return
		}
		worst := ""
		for f := range hourCounts {
			if worst == "" || fateRank[f] > fateRank[worst] {
				worst = f
			}
		}
		label := hour.In(loc).Format("2006-01-02 15:00 MST")
		for _, f := range scheduling.Fates {
			if n := hourCounts[f]; n > 0 {
				label += " · " + strconv.Itoa(n) + " " + f
			}
		}
		v.Cells = append(v.Cells, views.LedgerCell{Fate: worst, Label: label})
		clear(hourCounts)
	}
	var missed []scheduling.Occurrence
	for _, o := range occ {
		counts[o.Fate]++
		if missedFate(o.Fate) {
			missed = append(missed, o)
		}
		if v.PerHour {
			if h := o.Time.Truncate(time.Hour); !h.Equal(hour) {
				flush()
				hour = h
			}
			hourCounts[o.Fate]++
			continue
		}
		label := o.Time.In(loc).Format("2006-01-02 15:04 MST") + " · " + o.Fate
		cell := views.LedgerCell{Fate: o.Fate}
		switch {
		case o.RunID != "":
			label += " · run " + o.RunID + " " + o.RunStatus
			cell.URL = r.url(runURL(o.RunID))
		case o.Reason != "":
			label += " · " + o.Reason
		}
		cell.Label = label
		v.Cells = append(v.Cells, cell)
	}
	flush()
	for _, f := range scheduling.Fates {
		if n := counts[f]; n > 0 {
			v.Legend = append(v.Legend, views.LedgerCount{Fate: f, Count: n})
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
