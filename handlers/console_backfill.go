package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
	"github.com/tidelinehq/tideline/views"
)

// The backfill form's From and To: 24-hour wall times without a zone, read
// in the schedule's (with a T as well, as datetime-local and ISO 8601 write
// them).
var localLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

const localLayout = "2006-01-02 15:04"

// backfillListed caps the occurrences listed on the page; the count is
// always the full one.
const backfillListed = 500

func parseLocal(raw string, loc *time.Location) (time.Time, bool) {
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, raw, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// scheduleZone is where a schedule's wall times live.
func scheduleZone(s *models.Schedule) *time.Location {
	if compiled, err := timespec.CompileForText(s.Spec); err == nil {
		return compiled.Location()
	}
	return zoneOf(s.Spec.Timezone)
}

func (r *request) backfillView(s *models.Schedule) views.BackfillView {
	tz := s.Spec.Timezone
	if tz == "" {
		tz = "UTC"
	}
	return views.BackfillView{ScheduleID: s.ScheduleID, ScheduleURL: r.url(scheduleURL(s.ScheduleID)),
		Action: r.url(scheduleURL(s.ScheduleID) + "/backfill"), Timezone: tz, DefaultOverlapPolicy: s.OverlapPolicy,
		Errors: map[string]string{}}
}

func (r *request) renderBackfill(status int, v views.BackfillView) error {
	if isHX(r.c) {
		return Render(r.c, status, views.BackfillPanel(csrfToken(r.c), v))
	}
	return Render(r.c, status, views.BackfillPage(r.layout("Backfill "+v.ScheduleID, "schedules"), v))
}

func (r *request) backfillable(id string) (*models.Schedule, error) {
	s, err := r.h.Schedules.Get(r.c.Request().Context(), r.ns, id)
	if err != nil {
		return nil, err
	}
	if s.Status == models.StatusDeleted {
		return nil, &scheduling.ConflictError{Code: scheduling.CodeScheduleDeleted, Message: fmt.Sprintf("schedule %q is deleted", id)}
	}
	return s, nil
}

// BackfillForm answers GET /waterline/schedules/{id}/backfill, proposing
// the last 24 hours.
func (h *Console) BackfillForm(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := r.backfillable(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	v := r.backfillView(s)
	if c.QueryParam("missed") == "1" {
		return r.backfillMissed(s, v)
	}
	to := r.now.In(scheduleZone(s)).Truncate(time.Minute)
	v.From, v.To = to.Add(-24*time.Hour).Format(localLayout), to.Format(localLayout)
	return r.renderBackfill(http.StatusOK, v)
}

// backfillMissed answers the ledger's "Backfill the missed ones": the dry
// run of [from, to) (RFC 3339 in the query) with exactly its missed and
// paused occurrences selected, ready to confirm.
func (r *request) backfillMissed(s *models.Schedule, v views.BackfillView) error {
	from, errFrom := time.Parse(time.RFC3339, r.c.QueryParam("from"))
	to, errTo := time.Parse(time.RFC3339, r.c.QueryParam("to"))
	if errFrom != nil || errTo != nil || !from.Before(to) {
		return scheduling.NewValidationError("from", "from and to must be RFC 3339 times, from before to")
	}
	loc := scheduleZone(s)
	// The inputs have minutes; widen to whole minutes, the selection
	// keeps the range exact.
	v.From = from.In(loc).Truncate(time.Minute).Format(localLayout)
	v.To = to.In(loc).Add(time.Minute - time.Nanosecond).Truncate(time.Minute).Format(localLayout)
	missed, err := r.missedBetween(s, from, to)
	if err != nil {
		return err
	}
	v.Only = make([]string, 0, len(missed))
	for _, t := range missed {
		v.Only = append(v.Only, strconv.FormatInt(t.Unix(), 10))
	}
	start, _ := parseLocal(v.From, loc)
	end, _ := parseLocal(v.To, loc)
	rep, err := r.h.Changes.Backfill(r.c.Request().Context(), r.ns, s.ScheduleID, scheduling.BackfillInput{
		From: start, To: end, DryRun: true, Only: missed})
	if err != nil {
		return err
	}
	v.Result = r.backfillResult(rep, true, loc)
	return r.renderBackfill(http.StatusOK, v)
}

// backfillResult lists the first backfillListed occurrences of a report and
// counts every one by outcome (a dry run's "would start" are the planned).
func (r *request) backfillResult(rep *scheduling.BackfillReport, dryRun bool, loc *time.Location) *views.BackfillResultView {
	res := &views.BackfillResultView{DryRun: dryRun, Count: rep.Occurrences, BeforeCreated: rep.BeforeCreated}
	reasons := map[string]int{}
	if !dryRun {
		res.Count = len(rep.Results)
	}
	for i, o := range rep.Results {
		switch o.Outcome {
		case scheduling.BackfillStarted, scheduling.BackfillPlanned:
			res.Started++
		case scheduling.BackfillSkipped:
			res.Skipped++
			if reasons[o.Reason]++; reasons[o.Reason] == 1 {
				res.SkipReasons = append(res.SkipReasons, views.ReasonCount{Reason: o.Reason})
			}
		case scheduling.BackfillBuffered:
			res.Buffered++
		case scheduling.BackfillFailed:
			res.Failed++
		}
		if i >= backfillListed {
			res.NotListed++
			continue
		}
		ov := views.BackfillOccurrenceView{Time: absMoment(o.OccurrenceTime, loc), InstanceID: o.InstanceID,
			Outcome: o.Outcome, RunID: o.RunID, Reason: o.Reason}
		if o.RunID != "" {
			ov.RunURL = r.url(runURL(o.RunID))
		}
		res.Occurrences = append(res.Occurrences, ov)
	}
	for i := range res.SkipReasons {
		res.SkipReasons[i].Count = reasons[res.SkipReasons[i].Reason]
	}
	return res
}

// Backfill answers POST /waterline/schedules/{id}/backfill: with dry_run=1
// it lists the occurrences; the confirmation posts the same range without
// it and starts them.
func (h *Console) Backfill(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := r.backfillable(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	v := r.backfillView(s)
	v.From, v.To = strings.TrimSpace(c.FormValue("from")), strings.TrimSpace(c.FormValue("to"))
	v.OverlapPolicy = c.FormValue("overlap_policy")
	v.MaxPerMinute, v.MaxConcurrent = strings.TrimSpace(c.FormValue("max_per_minute")), strings.TrimSpace(c.FormValue("max_concurrent_runs"))
	v.Reason = strings.TrimSpace(c.FormValue("reason"))
	dryRun := c.FormValue("dry_run") == "1" || c.FormValue("dry_run") == "true"
	pace := map[string]*int{}
	for name, raw := range map[string]string{"max_per_minute": v.MaxPerMinute, "max_concurrent_runs": v.MaxConcurrent} {
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			v.Errors[name] = "must be a whole number"
			continue
		}
		pace[name] = &n
	}

	loc := scheduleZone(s)
	in := scheduling.BackfillInput{OverlapPolicy: v.OverlapPolicy, DryRun: dryRun, CommandContext: r.cc(v.Reason)}
	if ats := c.Request().Form["at"]; len(ats) > 0 {
		in.Only = []time.Time{}
		for _, raw := range ats {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				v.Errors[""] = "the selected occurrences are not Unix seconds"
				break
			}
			in.Only = append(in.Only, time.Unix(n, 0).UTC())
			v.Only = append(v.Only, raw)
		}
	}
	for _, field := range []struct {
		name, raw string
		dst       *time.Time
	}{{"from", v.From, &in.From}, {"to", v.To, &in.To}} {
		t, ok := parseLocal(field.raw, loc)
		switch {
		case field.raw == "":
			v.Errors[field.name] = "is required"
		case !ok:
			v.Errors[field.name] = "must be a date and time, 24-hour, e.g. 2026-07-01 00:00"
		default:
			*field.dst = t
		}
	}
	if len(v.Errors) > 0 {
		return r.renderBackfill(http.StatusUnprocessableEntity, v)
	}
	job := scheduling.BackfillJobInput{From: in.From, To: in.To, OverlapPolicy: in.OverlapPolicy, Only: in.Only,
		MaxPerMinute: pace["max_per_minute"], MaxConcurrentRuns: pace["max_concurrent_runs"], CommandContext: in.CommandContext}
	var rep *scheduling.BackfillReport
	err = job.Validate()
	switch {
	case err != nil:
	case dryRun:
		rep, err = h.Changes.Backfill(c.Request().Context(), r.ns, s.ScheduleID, in)
		var val *scheduling.ValidationError
		if errors.As(err, &val) && val.Code == scheduling.CodeBackfillTooLarge && in.Only == nil {
			// Too many to list: count them and list the first ones; the
			// job takes up to MaxBackfillJobOccurrences.
			var outline *scheduling.BackfillOutline
			if outline, err = h.BackfillStore.OutlineBackfill(c.Request().Context(), r.ns, s.ScheduleID, in.From, in.To, in.OverlapPolicy, backfillListed); err == nil {
				v.Result = r.backfillResult(outline.First, true, loc)
				v.Result.Count, v.Result.Started, v.Result.Buffered, v.Result.Skipped = outline.Total, outline.Started, outline.Buffered, outline.Skipped
				v.Result.SkipReasons = nil // counted, not told apart, over a window this large
				v.Result.BeforeCreated = outline.BeforeCreated
				v.Result.NotListed = outline.Total - len(outline.First.Results)
				return r.renderBackfill(http.StatusOK, v)
			}
		}
	default:
		var started *models.Backfill
		if started, err = h.BackfillStore.StartBackfill(c.Request().Context(), r.ns, s.ScheduleID, job); err == nil {
			jv := r.jobView(started, loc, r.url(scheduleURL(s.ScheduleID)))
			v.Job = &jv
			return r.renderBackfill(http.StatusOK, v)
		}
	}
	if err != nil {
		var val *scheduling.ValidationError
		var conf *scheduling.ConflictError
		switch {
		case errors.As(err, &val):
			for k, msg := range val.Fields {
				switch k {
				case "from", "to", "overlap_policy", "max_per_minute", "max_concurrent_runs", "reason":
					v.Errors[k] = msg
				default:
					v.Errors[""] = strings.TrimPrefix(v.Errors[""]+"; ", "; ") + k + ": " + msg
				}
			}
			return r.renderBackfill(http.StatusUnprocessableEntity, v)
		case errors.As(err, &conf):
			v.Errors[""] = conf.Message
			return r.renderBackfill(http.StatusConflict, v)
		}
		return err
	}
	v.Result = r.backfillResult(rep, dryRun, loc)
	return r.renderBackfill(http.StatusOK, v)
}
