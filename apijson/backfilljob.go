package apijson

import (
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// BackfillJob is a backfill job (SPEC §18): the answer of a backfill that
// is not a dry run (202), GET /backfills/{id} and its actions, and a row
// of GET /backfills.
type BackfillJob struct {
	ID                string  `json:"id"`
	Namespace         string  `json:"namespace"`
	ScheduleID        string  `json:"schedule_id"`
	Status            string  `json:"status"` // running | paused | completed | cancelled | failed
	From              Time    `json:"from"`
	To                Time    `json:"to"`
	OverlapPolicy     *string `json:"overlap_policy"` // null: the schedule's (buffer policies act as allow_all)
	Selected          *int    `json:"selected"`       // only these occurrences of the range (the ledger's "missed ones"); null = all
	MaxPerMinute      *int    `json:"max_per_minute"`
	MaxConcurrentRuns *int    `json:"max_concurrent_runs"`
	Total             int64   `json:"total"`
	Started           int64   `json:"started"`
	Skipped           int64   `json:"skipped"`
	Buffered          int64   `json:"buffered"`
	Failed            int64   `json:"failed"`
	Remaining         int64   `json:"remaining"`
	Cursor            *Time   `json:"cursor"` // the last occurrence handled
	ETA               *Time   `json:"eta"`    // running jobs only; null when unknown
	Error             *string `json:"error"`
	CreatedBy         string  `json:"created_by"`
	Reason            string  `json:"reason"`
	CreatedAt         Time    `json:"created_at"`
	UpdatedAt         Time    `json:"updated_at"`
	FinishedAt        *Time   `json:"finished_at"`
}

// BackfillJobEnvelope is {"backfill": …}, the answer of every route that
// returns one job.
type BackfillJobEnvelope struct {
	Backfill BackfillJob `json:"backfill"`
}

// FromBackfillJob renders a job; now dates its ETA.
func FromBackfillJob(b *models.Backfill, now time.Time) BackfillJob {
	out := BackfillJob{
		ID: b.ID, Namespace: b.Namespace, ScheduleID: b.ScheduleID, Status: b.Status, From: At(b.From), To: At(b.To),
		OverlapPolicy: NilIfEmpty(b.OverlapPolicy), MaxPerMinute: b.MaxPerMinute, MaxConcurrentRuns: b.MaxConcurrentRuns,
		Total: b.Total, Started: b.Started, Skipped: b.Skipped, Buffered: b.Buffered, Failed: b.Failed, Remaining: b.Remaining(),
		Cursor: AtPtr(b.CursorAt), ETA: AtPtr(scheduling.BackfillETA(b, now)), Error: b.Error,
		CreatedBy: b.CreatedBy, Reason: b.Reason, CreatedAt: At(b.CreatedAt), UpdatedAt: At(b.UpdatedAt), FinishedAt: AtPtr(b.FinishedAt),
	}
	if b.OnlyTimes != nil {
		n := len(b.OnlyTimes)
		out.Selected = &n
	}
	return out
}

// BackfillJobPage is one page of GET /backfills, newest first.
type BackfillJobPage struct {
	Backfills  []BackfillJob `json:"backfills"`
	NextCursor *string       `json:"next_cursor"`
	HasMore    bool          `json:"has_more"`
}

// FromBackfillPage renders a page of jobs.
func FromBackfillPage(p *scheduling.BackfillPage, now time.Time) BackfillJobPage {
	out := BackfillJobPage{Backfills: make([]BackfillJob, 0, len(p.Backfills)), NextCursor: NilIfEmpty(p.NextCursor), HasMore: p.HasMore}
	for i := range p.Backfills {
		out.Backfills = append(out.Backfills, FromBackfillJob(&p.Backfills[i], now))
	}
	return out
}

// BackfillActionRequest is the optional body of POST
// /backfills/{id}/pause|resume|cancel.
type BackfillActionRequest struct {
	Reason string `json:"reason,omitempty"`
}
