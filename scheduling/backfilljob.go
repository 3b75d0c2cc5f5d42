package scheduling

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
	"github.com/tidelinehq/tideline/timespec"
)

// Backfill job bounds (SPEC §18, docs/BACKFILLS.md). A job is not held to
// MaxBackfillOccurrences, the bound of one synchronous request: it is
// worked in slices, so its size only costs the count made when it is
// created (about 0.2 s and 13 MB for a million).
const (
	MaxBackfillJobOccurrences = 1_000_000
	// MaxUnfinishedBackfills bounds a namespace's running and paused jobs,
	// so one tenant cannot fill the worker's candidates.
	MaxUnfinishedBackfills = 20
	MaxBackfillPerMinute   = 1_000_000
	MaxBackfillConcurrent  = 10_000
	// BackfillAtOnce is how many occurrences a new job starts before its
	// answer (about 0.15 s of writes on SQLite), for at most
	// backfillAtOnceFor: small windows are done at once, larger ones go on
	// in the worker.
	BackfillAtOnce    = 500
	backfillAtOnceFor = 3 * time.Second
	// backfillRecheck is how soon a job held back by max_concurrent_runs is
	// looked at again (runs end whenever workers finish them).
	backfillRecheck = time.Second
)

// BackfillJobInput starts a backfill job over [From, To).
type BackfillJobInput struct {
	From, To      time.Time
	OverlapPolicy string // optional override
	// Only keeps just these occurrences (the ledger's "backfill the missed
	// ones"); at most MaxBackfillOccurrences.
	Only              []time.Time
	MaxPerMinute      *int
	MaxConcurrentRuns *int
	CommandContext    *CommandContext
}

// Validate checks the input as StartBackfill does; a dry run checks it too,
// so that the dry run refuses what the job would.
func (in BackfillJobInput) Validate() error {
	v := &ValidationError{Code: CodeValidationFailed}
	if in.From.IsZero() {
		v.Add("from", "is required (RFC 3339)")
	}
	if in.To.IsZero() {
		v.Add("to", "is required (RFC 3339)")
	}
	if err := v.OrNil(); err != nil {
		return err
	}
	if !in.From.Before(in.To) {
		return &ValidationError{Code: CodeInvalidTimeRange, Fields: map[string]string{"to": "must be after from"}}
	}
	if in.OverlapPolicy != "" && !validPolicy(in.OverlapPolicy) {
		v.Add("overlap_policy", policyMessage())
	}
	if in.MaxPerMinute != nil && (*in.MaxPerMinute < 1 || *in.MaxPerMinute > MaxBackfillPerMinute) {
		v.Add("max_per_minute", fmt.Sprintf("must be 1-%d", MaxBackfillPerMinute))
	}
	if in.MaxConcurrentRuns != nil && (*in.MaxConcurrentRuns < 1 || *in.MaxConcurrentRuns > MaxBackfillConcurrent) {
		v.Add("max_concurrent_runs", fmt.Sprintf("must be 1-%d", MaxBackfillConcurrent))
	}
	if err := v.OrNil(); err != nil {
		return err
	}
	if len(in.Only) > MaxBackfillOccurrences {
		return &ValidationError{Code: CodeBackfillTooLarge, Fields: map[string]string{"only": fmt.Sprintf("at most %d occurrences", MaxBackfillOccurrences)}}
	}
	return in.CommandContext.validate()
}

func backfillNotFound(namespace, id string) error {
	return &NotFoundError{Code: CodeBackfillNotFound, Message: fmt.Sprintf("backfill %q not found in namespace %q", id, namespace)}
}

// StartBackfill creates a backfill job and works its first slice at once,
// so a small window is often done when it returns. The occurrences are
// counted from the spec now (the job's total); the job is refused when an
// unfinished job of the schedule covers part of the range (its
// occurrences would be skipped already_started, and max_concurrent_runs
// could not tell the two apart) or the namespace has
// MaxUnfinishedBackfills already.
func (s *Service) StartBackfill(ctx context.Context, namespace, scheduleID string, in BackfillJobInput) (*models.Backfill, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	job := &models.Backfill{
		ID: s.ids.newAt(now), Namespace: namespace, ScheduleID: scheduleID,
		From: utcMicro(in.From), To: utcMicro(in.To), OverlapPolicy: in.OverlapPolicy,
		MaxPerMinute: in.MaxPerMinute, MaxConcurrentRuns: in.MaxConcurrentRuns,
		Status: models.BackfillRunning, PaceRecent: "[]", NextWorkAt: now, CreatedAt: now, UpdatedAt: now,
		Source: "api",
	}
	if cc := in.CommandContext; cc != nil {
		job.CreatedBy, job.Reason, job.RequestID = cc.Actor, cc.Reason, cc.RequestID
		if cc.Source != "" {
			job.Source = cc.Source
		}
	}
	if in.MaxPerMinute != nil {
		job.PaceTokens, job.PaceAt = paceCapacity(*in.MaxPerMinute), ptrTime(now)
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The schedule's lock serialises the job checks of one schedule.
		sch, err := models.LockSchedule(ctx, tx, namespace, scheduleID)
		if errors.Is(err, sql.ErrNoRows) {
			return scheduleNotFound(namespace, scheduleID)
		}
		if err != nil {
			return err
		}
		if sch.Status == models.StatusDeleted {
			return conflict(CodeScheduleDeleted, "schedule %q is deleted", scheduleID)
		}
		job.ScheduleULID = sch.ID
		compiled, err := s.compileSpec(ctx, tx, sch.Namespace, sch.Spec)
		if err != nil {
			return fmt.Errorf("compile stored spec: %w", err)
		}
		times, err := compiled.Between(in.From, in.To, MaxBackfillJobOccurrences)
		if errors.Is(err, timespec.ErrTooManyOccurrences) {
			return &ValidationError{Code: CodeBackfillTooLarge, Fields: map[string]string{
				"to": fmt.Sprintf("the window holds more than %d occurrences; split it", MaxBackfillJobOccurrences)}}
		}
		if err != nil {
			return err
		}
		job.Total = int64(len(times))
		if in.Only != nil {
			keep := make(map[int64]bool, len(in.Only))
			for _, t := range in.Only {
				keep[t.Unix()] = true
			}
			job.OnlyTimes = []int64{}
			for _, t := range times {
				if keep[t.Unix()] {
					job.OnlyTimes = append(job.OnlyTimes, t.Unix())
				}
			}
			job.Total = int64(len(job.OnlyTimes))
		}
		unfinished, err := models.UnfinishedBackfillsOf(ctx, tx, sch.ID)
		if err != nil {
			return err
		}
		for _, other := range unfinished {
			if other.From.Before(job.To) && job.From.Before(other.To) {
				return conflict(CodeBackfillOverlaps, "backfill %s of schedule %q (%s to %s) is %s and covers part of this range; cancel it or wait for it",
					other.ID, scheduleID, FormatTime(other.From), FormatTime(other.To), other.Status)
			}
		}
		n, err := models.CountUnfinishedBackfills(ctx, tx, namespace)
		if err != nil {
			return err
		}
		if n >= MaxUnfinishedBackfills {
			return conflict(CodeTooManyBackfills, "namespace %q has %d unfinished backfills, the most allowed; wait for one to end or cancel one", namespace, n)
		}
		return models.InsertBackfill(ctx, tx, job)
	})
	if err != nil {
		return nil, err
	}
	// The first slices before the answer, each its own transaction: a
	// window of up to BackfillAtOnce occurrences is done when the caller
	// reads the answer, as a synchronous backfill was.
	began := s.clock.Now()
	for done := 0; done < BackfillAtOnce && s.clock.Now().Sub(began) < backfillAtOnceFor; {
		want := min(s.backfillBatch, BackfillAtOnce-done)
		n, err := s.WorkBackfill(ctx, job.ID, want)
		if err != nil {
			// The job is stored: the worker takes it up; the caller gets it.
			s.logger.Warn("first slice of a backfill failed; the worker retries it", "backfill_id", job.ID, "err", err)
			break
		}
		if done += n; n < want {
			break
		}
	}
	return s.GetBackfill(ctx, namespace, job.ID)
}

// GetBackfill reads one job.
func (s *Service) GetBackfill(ctx context.Context, namespace, id string) (*models.Backfill, error) {
	b, err := models.GetBackfill(ctx, s.db, namespace, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, backfillNotFound(namespace, id)
	}
	return b, err
}

// Backfill list bounds (GET /backfills).
const (
	DefaultBackfillPage = 50
	MaxBackfillPage     = 200
)

// BackfillListQuery selects a page of a namespace's jobs, newest first.
type BackfillListQuery struct {
	ScheduleID string // optional
	Status     string // optional: one status
	Cursor     string // the next_cursor of the previous page
	Limit      int
}

// BackfillPage is one page of jobs.
type BackfillPage struct {
	Backfills  []models.Backfill
	NextCursor string
	HasMore    bool
}

// ListBackfills lists a namespace's jobs, newest first, keyset-paged by
// job ID (page 1,000 costs what page 1 costs).
func (s *Service) ListBackfills(ctx context.Context, namespace string, q BackfillListQuery) (*BackfillPage, error) {
	v := &ValidationError{Code: CodeValidationFailed}
	if q.Status != "" && !slices.Contains(BackfillStatuses, q.Status) {
		v.Add("status", "must be one of running, paused, completed, cancelled, failed")
	}
	if q.Cursor != "" && !validULID(q.Cursor) {
		return nil, &ValidationError{Code: CodeInvalidCursor, Fields: map[string]string{"cursor": "must be the next_cursor of a previous page"}}
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultBackfillPage
	}
	limit = min(limit, MaxBackfillPage)
	f := models.BackfillFilter{Namespace: namespace, Before: q.Cursor, Limit: limit + 1}
	if q.Status != "" {
		f.Statuses = []string{q.Status}
	}
	if q.ScheduleID != "" {
		sch, err := models.GetSchedule(ctx, s.db, namespace, q.ScheduleID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, scheduleNotFound(namespace, q.ScheduleID)
		}
		if err != nil {
			return nil, err
		}
		f.ScheduleULID = sch.ID
	}
	list, err := models.ListBackfills(ctx, s.db, f)
	if err != nil {
		return nil, err
	}
	page := &BackfillPage{Backfills: list}
	if len(list) > limit {
		page.Backfills, page.HasMore = list[:limit], true
		page.NextCursor = list[limit-1].ID
	}
	return page, nil
}

// BackfillStatuses lists every job status, in the order surfaces show them.
var BackfillStatuses = []string{models.BackfillRunning, models.BackfillPaused, models.BackfillCompleted, models.BackfillCancelled, models.BackfillFailed}

func validULID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// PauseBackfill stops a running job after its current slice; its cursor
// and counts are kept. The lock waits for a slice in progress, so no
// occurrence starts after the pause commits.
func (s *Service) PauseBackfill(ctx context.Context, namespace, id string, cc *CommandContext) (*models.Backfill, error) {
	return s.changeBackfill(ctx, namespace, id, cc, func(b *models.Backfill, now time.Time) (*notice, error) {
		if b.Status != models.BackfillRunning {
			return nil, conflict(CodeBackfillNotRunning, "backfill %s is %s, not running", id, b.Status)
		}
		b.Status = models.BackfillPaused
		return nil, nil
	})
}

// ResumeBackfill lets a paused job go on from its cursor.
func (s *Service) ResumeBackfill(ctx context.Context, namespace, id string, cc *CommandContext) (*models.Backfill, error) {
	return s.changeBackfill(ctx, namespace, id, cc, func(b *models.Backfill, now time.Time) (*notice, error) {
		if b.Status != models.BackfillPaused {
			return nil, conflict(CodeBackfillNotPaused, "backfill %s is %s, not paused", id, b.Status)
		}
		b.Status, b.NextWorkAt = models.BackfillRunning, now
		return nil, nil
	})
}

// CancelBackfill ends a running or paused job for good; the runs it
// started are left alone (cancel those with runs cancel).
func (s *Service) CancelBackfill(ctx context.Context, namespace, id string, cc *CommandContext) (*models.Backfill, error) {
	return s.changeBackfill(ctx, namespace, id, cc, func(b *models.Backfill, now time.Time) (*notice, error) {
		if !b.Unfinished() {
			return nil, conflict(CodeBackfillFinished, "backfill %s has already ended (%s)", id, b.Status)
		}
		by := "cancelled"
		if cc != nil && cc.Actor != "" {
			by = "cancelled by " + cc.Actor
		}
		if len(by) > MaxNameLength+16 {
			by = by[:MaxNameLength+16]
		}
		n := endBackfill(b, models.BackfillCancelled, by, now)
		return &n, nil
	})
}

func (s *Service) changeBackfill(ctx context.Context, namespace, id string, cc *CommandContext, fn func(b *models.Backfill, now time.Time) (*notice, error)) (*models.Backfill, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	var out *models.Backfill
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		b, err := models.LockBackfill(ctx, tx, namespace, id)
		if errors.Is(err, sql.ErrNoRows) {
			return backfillNotFound(namespace, id)
		}
		if err != nil {
			return err
		}
		now := s.now()
		n, err := fn(b, now)
		if err != nil {
			return err
		}
		b.UpdatedAt = now
		if err := models.UpdateBackfill(ctx, tx, b); err != nil {
			return err
		}
		out = b
		if n != nil {
			return enqueueNotices(ctx, tx, now, []notice{*n})
		}
		return nil
	})
	return out, err
}

// endBackfill moves a job to a final status and returns its
// backfill_finished notice, for the same transaction.
func endBackfill(b *models.Backfill, status, why string, now time.Time) notice {
	b.Status, b.FinishedAt, b.UpdatedAt = status, ptrTime(now), now
	if why != "" {
		b.Error = &why
	}
	if status == models.BackfillCompleted {
		// The spec may have changed since the count: the total is what was done.
		b.Total = b.Handled()
	}
	summary := fmt.Sprintf("Backfill %s of schedule %s from %s to %s %s: %d started, %d skipped, %d failed",
		b.ID, b.ScheduleID, FormatTime(b.From), FormatTime(b.To), status, b.Started, b.Skipped, b.Failed)
	if why != "" {
		summary += " (" + why + ")"
	}
	return notice{
		event: notify.EventBackfillFinished, namespace: b.Namespace, scheduleULID: b.ScheduleULID, scheduleID: b.ScheduleID,
		key: notify.EventBackfillFinished + "|" + b.ID, summary: summary,
		details: map[string]any{
			"backfill_id": b.ID, "from": FormatTime(b.From), "to": FormatTime(b.To), "outcome": status, "status": status,
			"occurrences": b.Total, "started": b.Started, "skipped": b.Skipped, "failed": b.Failed, "buffered": b.Buffered,
			"remaining": b.Remaining(), "error": why,
		},
	}
}

// WorkBackfill works one slice of a job: at most limit occurrences, fewer
// when pacing or max_concurrent_runs hold it back. It returns how many
// occurrences it handled; 0 when another replica holds the job, it is not
// running, or it is not due.
//
// One transaction: the job row (SKIP LOCKED: a slice another replica
// works is never worked twice), then the schedule's row (the lock order of
// every backfill: job, then schedule), the fires, the job's cursor and
// counts. A crash before the commit leaves the cursor where it was and no
// run behind; after it, both moved together.
func (s *Service) WorkBackfill(ctx context.Context, id string, limit int) (int, error) {
	handled := 0
	ctx, started := withStartedRuns(ctx)
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		handled = 0
		now := s.now()
		job, ok, err := models.ClaimBackfill(ctx, tx, id, now)
		if err != nil || !ok {
			return err
		}
		handled, err = s.backfillSlice(ctx, tx, job, now, limit)
		if err != nil {
			return err
		}
		job.LastWorkedAt, job.UpdatedAt = ptrTime(now), now
		return models.UpdateBackfill(ctx, tx, job)
	})
	if err != nil {
		return 0, fmt.Errorf("work backfill %s: %w", id, err)
	}
	s.wakeups.wake(started) // runs for the workers' long polls

	return handled, nil
}

// backfillSlice is WorkBackfill's body, on the claimed job.
func (s *Service) backfillSlice(ctx context.Context, tx bun.Tx, job *models.Backfill, now time.Time, limit int) (int, error) {
	sch, err := models.LockSchedule(ctx, tx, job.Namespace, job.ScheduleID)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && sch.ID != job.ScheduleULID) {
		n := endBackfill(job, models.BackfillFailed, "schedule_deleted", now)
		return 0, enqueueNotices(ctx, tx, now, []notice{n})
	}
	if err != nil {
		return 0, err
	}
	rec := &recorder{w: immediateWriter(tx), ids: s.ids, now: now, cc: &CommandContext{
		Source: job.Source, Actor: job.CreatedBy, RequestID: job.RequestID, Reason: job.Reason}}
	finish := func(status, why string) { rec.ended.note(endBackfill(job, status, why, now)) }
	if sch.Status == models.StatusDeleted {
		finish(models.BackfillFailed, "schedule_deleted")
		return 0, s.saveSlice(ctx, tx, rec, sch)
	}
	compiled, err := rec.compile(ctx, s, tx, &sch.Schedule)
	if err != nil {
		finish(models.BackfillFailed, "spec_invalid")
		return 0, s.saveSlice(ctx, tx, rec, sch)
	}

	allowed := limit
	var pace *backfillPace
	if job.MaxPerMinute != nil {
		pace = readPace(job, now)
		allowed = min(allowed, pace.allowed(now))
	}
	if job.MaxConcurrentRuns != nil && allowed > 0 {
		active, err := models.CountActiveBackfilledRuns(ctx, tx, job.Namespace, jobIDRange(job), *job.MaxConcurrentRuns)
		if err != nil {
			return 0, err
		}
		if room := *job.MaxConcurrentRuns - active; room < allowed {
			allowed = max(room, 0)
			if allowed == 0 {
				job.NextWorkAt = now.Add(backfillRecheck)
			}
		}
	}
	if allowed == 0 {
		if pace != nil {
			job.NextWorkAt = later(job.NextWorkAt, pace.nextAt(now))
			pace.save(job)
		}
		return 0, nil // nothing written to the schedule: its lock ends with the transaction
	}

	times := nextOccurrences(job, compiled, allowed+1)
	done := len(times) <= allowed
	times = times[:min(len(times), allowed)]
	policy := backfillPolicy(job.OverlapPolicy, sch.OverlapPolicy)
	handled := 0
	for _, t := range times {
		if err := ctx.Err(); err != nil {
			return 0, err // the transaction rolls back: nothing of the slice stays
		}
		if sch.Status == models.StatusDeleted { // max_runs ran out
			break
		}
		r := s.backfillOne(ctx, tx, rec, sch, t, policy)
		switch r.Outcome {
		case BackfillStarted:
			job.Started++
		case BackfillBuffered:
			job.Buffered++
		case BackfillSkipped:
			job.Skipped++
		default:
			job.Failed++
		}
		job.CursorAt = ptrTime(t)
		handled++
	}
	if pace != nil {
		pace.spend(now, handled)
		pace.save(job)
	}
	switch {
	case handled < len(times) || (sch.Status == models.StatusDeleted && !done):
		finish(models.BackfillFailed, "max_runs_exhausted")
	case done:
		finish(models.BackfillCompleted, "")
	}
	return handled, s.saveSlice(ctx, tx, rec, sch)
}

// saveSlice writes the schedule a slice changed, and the notices of the
// runs it ended and of the job's end, as mutate does.
func (s *Service) saveSlice(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
	sch.UpdatedAt = rec.now
	if err := models.UpdateSchedule(ctx, tx, &sch.Schedule); err != nil {
		return err
	}
	return rec.ended.flush(ctx, tx, rec.now)
}

// nextOccurrences lists up to n occurrences of the job after its cursor.
func nextOccurrences(job *models.Backfill, compiled *timespec.CompiledSpec, n int) []time.Time {
	if job.OnlyTimes != nil {
		i := 0
		if job.CursorAt != nil {
			c := job.CursorAt.Unix()
			i = sort.Search(len(job.OnlyTimes), func(k int) bool { return job.OnlyTimes[k] > c })
		}
		out := make([]time.Time, 0, min(n, len(job.OnlyTimes)-i))
		for _, u := range job.OnlyTimes[i:min(len(job.OnlyTimes), i+n)] {
			out = append(out, time.Unix(u, 0).UTC())
		}
		return out
	}
	// Occurrences are whole seconds: "at or after from" is "after from−1s".
	after := job.From.Truncate(time.Second)
	if after.Equal(job.From) {
		after = after.Add(-time.Second)
	}
	if job.CursorAt != nil {
		after = *job.CursorAt
	}
	out := compiled.Preview(after, n)
	for i, t := range out {
		if !t.Before(job.To) {
			return out[:i]
		}
	}
	return out
}

// jobWillStart reports whether an unfinished job will still handle the
// occurrence t: in its range, after its cursor, and selected.
func jobWillStart(job *models.Backfill, t time.Time) bool {
	if !job.Unfinished() || t.Before(job.From) || !t.Before(job.To) || (job.CursorAt != nil && !t.After(*job.CursorAt)) {
		return false
	}
	if job.OnlyTimes != nil {
		_, found := slices.BinarySearch(job.OnlyTimes, t.Unix())
		return found
	}
	return true
}

// jobIDRange is the instance IDs a job's occurrences can have: one index
// range (see idRange).
func jobIDRange(job *models.Backfill) models.IDRange {
	return idRange([]string{backfillInstanceID(job.ScheduleID, job.From), backfillInstanceID(job.ScheduleID, job.To)})
}

// BackfillETA estimates when a running job ends: its remaining occurrences
// at the rate it has kept since it was created, never faster than its
// max_per_minute. Nil when unknown (nothing done yet and no pace) or when
// the job is not running.
func BackfillETA(b *models.Backfill, now time.Time) *time.Time {
	if b.Status != models.BackfillRunning {
		return nil
	}
	remaining := b.Remaining()
	if remaining == 0 {
		return &now
	}
	rate := 0.0 // occurrences per second
	if elapsed := now.Sub(b.CreatedAt).Seconds(); b.Handled() > 0 && elapsed > 0 {
		rate = float64(b.Handled()) / elapsed
	}
	if b.MaxPerMinute != nil {
		if paced := float64(*b.MaxPerMinute) / 60; rate == 0 || rate > paced {
			rate = paced
		}
	}
	if rate == 0 {
		return nil
	}
	eta := now.Add(time.Duration(float64(remaining) / rate * float64(time.Second))).Truncate(time.Second)
	return &eta
}

// backfillPace is max_per_minute's pacing (SPEC §18: "never more than the
// rate in any 60 s window and never a burst above a tenth of it"): a token
// bucket of capacity max(1, rate/10), refilled continuously at rate/60 a
// second, spreads the starts evenly and caps a slice at a tenth of the
// rate; the slices of the last minute, kept beside it, cap any 60 s window
// at the rate exactly (a full bucket after a quiet spell, plus a minute of
// refill, would otherwise allow rate + rate/10). All starts of a slice
// share its transaction's instant, so the window is exact.
type backfillPace struct {
	rate   int
	tokens float64
	at     time.Time
	recent [][2]int64 // [unix ms of a slice, occurrences it handled]
}

func paceCapacity(rate int) float64 { return math.Max(1, math.Floor(float64(rate)/10)) }

func readPace(job *models.Backfill, now time.Time) *backfillPace {
	p := &backfillPace{rate: *job.MaxPerMinute, tokens: job.PaceTokens, at: now}
	if job.PaceAt != nil {
		p.at = *job.PaceAt
	}
	_ = json.Unmarshal([]byte(job.PaceRecent), &p.recent) // a damaged list only loses the window
	if elapsed := now.Sub(p.at); elapsed > 0 {
		p.tokens += elapsed.Seconds() * float64(p.rate) / 60
	}
	p.tokens, p.at = math.Min(p.tokens, paceCapacity(p.rate)), now
	cut := now.Add(-time.Minute).UnixMilli()
	p.recent = slices.DeleteFunc(p.recent, func(e [2]int64) bool { return e[0] <= cut })
	return p
}

func (p *backfillPace) inWindow() int64 {
	var n int64
	for _, e := range p.recent {
		n += e[1]
	}
	return n
}

func (p *backfillPace) allowed(now time.Time) int {
	return int(max(0, min(int64(math.Floor(p.tokens+1e-9)), int64(p.rate)-p.inWindow())))
}

func (p *backfillPace) spend(now time.Time, n int) {
	if n <= 0 {
		return
	}
	p.tokens -= float64(n)
	p.recent = append(p.recent, [2]int64{now.UnixMilli(), int64(n)})
}

// nextAt is when the pace allows the next start.
func (p *backfillPace) nextAt(now time.Time) time.Time {
	at := now
	if p.tokens < 1 {
		at = now.Add(time.Duration((1 - p.tokens) / (float64(p.rate) / 60) * float64(time.Second)))
	}
	if over := p.inWindow() - int64(p.rate) + 1; over > 0 {
		// The window frees once enough of its oldest slices are a minute old.
		for _, e := range p.recent {
			over -= e[1]
			if over <= 0 {
				at = later(at, time.UnixMilli(e[0]).Add(time.Minute))
				break
			}
		}
	}
	// Rounded: a claim a little early finds nothing allowed and waits again.
	return at.Round(time.Millisecond)
}

func (p *backfillPace) save(job *models.Backfill) {
	job.PaceTokens, job.PaceAt = p.tokens, ptrTime(p.at)
	if p.recent == nil {
		p.recent = [][2]int64{}
	}
	b, _ := json.Marshal(p.recent) // pairs of integers always encode
	job.PaceRecent = string(b)
}

// Now is the service's clock, for surfaces that date what they render
// (a job's ETA) by the same time the service works with.
func (s *Service) Now() time.Time { return s.now() }

// BackfillOutline is the console's dry run of a window too large to list
// (more than MaxBackfillOccurrences, at most MaxBackfillJobOccurrences):
// the count, how many a backfill already started, what the job would do
// with them all, and the first occurrences as a dry run lists them.
type BackfillOutline struct {
	Total, AlreadyStarted int
	// Started, Buffered and Skipped are what the job would do
	// (backfillSim), BeforeCreated how many fall before the schedule was
	// created. The already started are counted, not listed: Started is
	// exact, and the already started are among Skipped.
	Started, Buffered, Skipped, BeforeCreated int
	First                                     *BackfillReport
}

// OutlineBackfill outlines [from, to) for a job under the overlap policy
// (an override, or "" for the schedule's): one pass over the spec to count
// and play the policy forward, one index range count of the started ones,
// a dry run of the first listed occurrences.
func (s *Service) OutlineBackfill(ctx context.Context, namespace, scheduleID string, from, to time.Time, policy string, listed int) (*BackfillOutline, error) {
	if err := (BackfillJobInput{From: from, To: to, OverlapPolicy: policy}).Validate(); err != nil {
		return nil, err
	}
	sch, err := s.getWithLatestRun(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	compiled, err := s.compileSpec(ctx, s.db, sch.Namespace, sch.Spec)
	if err != nil {
		return nil, fmt.Errorf("compile stored spec: %w", err)
	}
	times, err := compiled.Between(from, to, MaxBackfillJobOccurrences)
	if errors.Is(err, timespec.ErrTooManyOccurrences) {
		return nil, &ValidationError{Code: CodeBackfillTooLarge, Fields: map[string]string{
			"to": fmt.Sprintf("the window holds more than %d occurrences; split it", MaxBackfillJobOccurrences)}}
	}
	if err != nil {
		return nil, err
	}
	out := &BackfillOutline{Total: len(times)}
	if len(times) == 0 {
		out.First = &BackfillReport{Outcome: BackfillDryRun, Results: []BackfillResult{}}
		return out, nil
	}
	ids := []string{backfillInstanceID(scheduleID, times[0]), backfillInstanceID(scheduleID, times[len(times)-1])}
	if out.AlreadyStarted, err = models.CountInstances(ctx, s.db, namespace, idRange(ids)); err != nil {
		return nil, err
	}
	policy = backfillPolicy(policy, sch.OverlapPolicy)
	// Played forward as if none had started; an occurrence already
	// started is a start the job cannot make, so at most Total −
	// AlreadyStarted start (exact for every policy: allow_all-like
	// policies start all the others, skip and the buffers one).
	sim := newBackfillSim(sch, policy)
	for _, t := range times {
		switch outcome, _ := sim.next(false); outcome {
		case BackfillPlanned:
			out.Started++
		case BackfillBuffered:
			out.Buffered++
		}
		if t.Before(sch.CreatedAt) {
			out.BeforeCreated++
		}
	}
	out.Started = min(out.Started, out.Total-out.AlreadyStarted)
	out.Skipped = out.Total - out.Started - out.Buffered
	out.First, err = s.backfillPlan(ctx, sch, times[:min(listed, len(times))], policy)
	if err != nil {
		return nil, err
	}
	out.First.Occurrences = len(times)
	return out, nil
}
