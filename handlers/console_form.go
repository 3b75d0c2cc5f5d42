package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// The create/edit form posts url-encoded fields named as in
// views.ScheduleFormValues. scheduleForm reads them into the service's
// types; what cannot even be read (a number that is not one, JSON that is
// not JSON, a "key=value" line without "=") becomes a field error here,
// everything else is the service's to judge.

type scheduleForm struct {
	values views.ScheduleFormValues
	errs   map[string]string

	spec          models.Spec
	cronLines     []int // the form line of each cron expression, for messages
	ivLines       []int // the form line of each interval
	action        models.Action
	overlap       string
	jitter        int
	maxRuns       *int64
	catchup       *int
	startDeadline *int64
	connection    *string
	queue         *string
	labels        map[string]string
	memo          map[string]string
	note          string
	pauseAfter    *int
}

func readScheduleForm(c echo.Context) *scheduleForm {
	v := views.ScheduleFormValues{
		ScheduleID: strings.TrimSpace(c.FormValue("schedule_id")), CronExpressions: c.FormValue("cron_expressions"),
		Intervals: c.FormValue("intervals"), Timezone: strings.TrimSpace(c.FormValue("timezone")),
		WorkflowType: strings.TrimSpace(c.FormValue("workflow_type")), WorkflowClass: strings.TrimSpace(c.FormValue("workflow_class")),
		Input: c.FormValue("input"), ExecutionTimeoutSeconds: strings.TrimSpace(c.FormValue("execution_timeout_seconds")),
		RunTimeoutSeconds: strings.TrimSpace(c.FormValue("run_timeout_seconds")), OverlapPolicy: strings.TrimSpace(c.FormValue("overlap_policy")),
		JitterSeconds: strings.TrimSpace(c.FormValue("jitter_seconds")), MaxRuns: strings.TrimSpace(c.FormValue("max_runs")),
		CatchupWindowSeconds: strings.TrimSpace(c.FormValue("catchup_window_seconds")),
		StartDeadlineSeconds: strings.TrimSpace(c.FormValue("start_deadline_seconds")),
		Connection:           strings.TrimSpace(c.FormValue("connection")), Queue: strings.TrimSpace(c.FormValue("queue")),
		Labels: c.FormValue("labels"), Memo: c.FormValue("memo"), Note: strings.TrimSpace(c.FormValue("note")),
		Paused:      c.FormValue("paused") == "1" || c.FormValue("paused") == "on",
		MaxAttempts: strings.TrimSpace(c.FormValue("retry_policy.max_attempts")), RetryInitial: strings.TrimSpace(c.FormValue("retry_policy.initial_interval_seconds")),
		RetryCoefficient: strings.TrimSpace(c.FormValue("retry_policy.backoff_coefficient")), RetryMaxInterval: strings.TrimSpace(c.FormValue("retry_policy.max_interval_seconds")),
		NonRetryable: c.FormValue("retry_policy.non_retryable_error_types"), PauseAfterFailures: strings.TrimSpace(c.FormValue("pause_after_failures")),
	}
	return parseScheduleForm(v)
}

func parseScheduleForm(v views.ScheduleFormValues) *scheduleForm {
	f := &scheduleForm{values: v, errs: map[string]string{}}
	f.spec = models.Spec{CronExpressions: []string{}, Intervals: []models.Interval{}, Timezone: v.Timezone}
	if f.spec.Timezone == "" {
		f.spec.Timezone = "UTC"
	}
	for _, l := range formLines(v.CronExpressions) {
		f.spec.CronExpressions = append(f.spec.CronExpressions, strings.Join(strings.Fields(l.text), " "))
		f.cronLines = append(f.cronLines, l.n)
	}
	for _, l := range formLines(v.Intervals) {
		iv, err := parseIntervalLine(l.text)
		if err != nil {
			f.addErr("intervals", fmt.Sprintf("line %d: %v", l.n, err))
			continue
		}
		f.spec.Intervals = append(f.spec.Intervals, iv)
		f.ivLines = append(f.ivLines, l.n)
	}

	f.action = models.Action{WorkflowType: v.WorkflowType, WorkflowClass: v.WorkflowClass}
	if in := strings.TrimSpace(v.Input); in != "" {
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber() // keeps big integers exact
		var doc any
		if err := dec.Decode(&doc); err != nil {
			f.addErr("input", "must be valid JSON: "+describeJSONError(err))
		} else if dec.More() {
			f.addErr("input", "must be one JSON value; there is more after it")
		} else {
			f.action.Input = json.RawMessage(in)
		}
	}
	f.action.ExecutionTimeoutSeconds = f.optInt("execution_timeout_seconds", v.ExecutionTimeoutSeconds)
	f.action.RunTimeoutSeconds = f.optInt("run_timeout_seconds", v.RunTimeoutSeconds)
	f.overlap = v.OverlapPolicy
	if f.overlap == "" {
		f.overlap = scheduling.OverlapSkip
	}
	if j := f.optInt("jitter_seconds", v.JitterSeconds); j != nil {
		f.jitter = int(max(min(*j, 1<<31), -1<<31)) // the service judges the range
	}
	f.maxRuns = f.optInt("max_runs", v.MaxRuns)
	f.startDeadline = f.optInt("start_deadline_seconds", v.StartDeadlineSeconds)
	if w := f.optInt("catchup_window_seconds", v.CatchupWindowSeconds); w != nil {
		n := int(max(min(*w, 1<<31), -1<<31)) // the service judges the range
		f.catchup = &n
	}
	if v.Connection != "" {
		f.connection = &v.Connection
	}
	if v.Queue != "" {
		f.queue = &v.Queue
	}
	f.labels = f.pairs("labels", v.Labels)
	f.memo = f.pairs("memo", v.Memo)
	f.note = v.Note
	f.action.RetryPolicy = f.retryPolicy(v)
	if n := f.optInt("pause_after_failures", v.PauseAfterFailures); n != nil {
		p := int(max(min(*n, 1<<31), -1<<31)) // the service judges the range
		f.pauseAfter = &p
	}
	return f
}

// retryPolicy reads the retry fields; all empty is no policy (run once),
// and fields left empty take the service's defaults.
func (f *scheduleForm) retryPolicy(v views.ScheduleFormValues) *models.RetryPolicy {
	types := []string{}
	for _, l := range formLines(v.NonRetryable) {
		types = append(types, strings.TrimSpace(l.text))
	}
	if v.MaxAttempts == "" && v.RetryInitial == "" && v.RetryCoefficient == "" && v.RetryMaxInterval == "" && len(types) == 0 {
		return nil
	}
	p := &models.RetryPolicy{NonRetryableErrorTypes: types}
	if n := f.optInt("retry_policy.max_attempts", v.MaxAttempts); n != nil {
		attempts := int(max(min(*n, 1<<31), -1<<31))
		p.MaxAttempts = &attempts
	}
	p.InitialIntervalSeconds = f.optInt("retry_policy.initial_interval_seconds", v.RetryInitial)
	p.MaxIntervalSeconds = f.optInt("retry_policy.max_interval_seconds", v.RetryMaxInterval)
	if v.RetryCoefficient != "" {
		c, err := strconv.ParseFloat(v.RetryCoefficient, 64)
		if err != nil {
			f.addErr("retry_policy.backoff_coefficient", "must be a number, e.g. 2.0")
		} else {
			p.BackoffCoefficient = &c
		}
	}
	return p
}

func (f *scheduleForm) addErr(field, msg string) {
	if prev, ok := f.errs[field]; ok {
		f.errs[field] = prev + "; " + msg
		return
	}
	f.errs[field] = msg
}

func (f *scheduleForm) optInt(field, raw string) *int64 {
	if raw == "" {
		return nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		f.addErr(field, "must be a whole number")
		return nil
	}
	return &n
}

// pairs reads "key=value" lines.
func (f *scheduleForm) pairs(field, raw string) map[string]string {
	m := map[string]string{}
	for _, l := range formLines(raw) {
		k, val, ok := strings.Cut(l.text, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok || k == "":
			f.addErr(field, fmt.Sprintf("line %d: write key=value", l.n))
			continue
		case hasKey(m, k):
			f.addErr(field, fmt.Sprintf("line %d: key %q appears twice", l.n, k))
			continue
		}
		m[k] = strings.TrimSpace(val)
	}
	return m
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

type formLine struct {
	n    int
	text string
}

// formLines are a textarea's non-blank lines with their 1-based numbers.
func formLines(raw string) []formLine {
	var out []formLine
	for i, line := range strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, formLine{n: i + 1, text: line})
		}
	}
	return out
}

var offsetWord = regexp.MustCompile(`(?i)^(.*?),?\s+offset\s+(.*)$`)

// parseIntervalLine reads "every [offset]": ISO-8601 ("PT1H PT5M"), human
// ("1 hour", "1 hour offset 5 minutes") or as the detail page prints it
// ("every PT1H, offset PT5M"). Values are stored in canonical ISO form.
func parseIntervalLine(line string) (models.Interval, error) {
	s := strings.TrimSpace(line)
	if len(s) > 6 && strings.EqualFold(s[:6], "every ") {
		s = strings.TrimSpace(s[6:])
	}
	var every, offset string
	if m := offsetWord.FindStringSubmatch(s); m != nil {
		every, offset = m[1], m[2]
	} else if _, err := scheduling.ParseDuration(s); err == nil {
		every = s
	} else {
		fields := strings.Fields(s)
		every = s
		for k := 1; k < len(fields); k++ {
			e, o := strings.Join(fields[:k], " "), strings.Join(fields[k:], " ")
			_, errE := scheduling.ParseDuration(e)
			_, errO := scheduling.ParseDuration(o)
			if errE == nil && errO == nil || k == 1 && errE == nil && strings.HasPrefix(strings.ToUpper(e), "P") {
				every, offset = e, o
				break
			}
		}
	}
	d, err := scheduling.ParseDuration(every)
	if err != nil {
		return models.Interval{}, fmt.Errorf("every: %w", err)
	}
	iv := models.Interval{Every: scheduling.FormatISODuration(d)}
	if offset != "" {
		o, err := scheduling.ParseDuration(offset)
		if err != nil {
			return models.Interval{}, fmt.Errorf("offset: %w", err)
		}
		if o > 0 {
			iv.Offset = scheduling.FormatISODuration(o)
		}
	}
	return iv, nil
}

var specFieldKey = regexp.MustCompile(`^spec\.(cron_expressions|intervals)\[(\d+)\](?:\.(every|offset))?$`)

// mapErrors files the service's field errors under the form's inputs
// ("spec.cron_expressions[1]" → cron_expressions, naming the line), so each
// message shows next to what it is about. Keys the form has no input for
// stay as they are and are listed at the top.
func (f *scheduleForm) mapErrors(v *scheduling.ValidationError) {
	keys := make([]string, 0, len(v.Fields))
	for k := range v.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		msg := v.Fields[key]
		field := key
		switch {
		case specFieldKey.MatchString(key):
			m := specFieldKey.FindStringSubmatch(key)
			i, _ := strconv.Atoi(m[2])
			field = m[1]
			lines := f.cronLines
			if field == "intervals" {
				lines = f.ivLines
			}
			if m[3] != "" {
				msg = m[3] + ": " + msg
			}
			if i < len(lines) {
				msg = fmt.Sprintf("line %d: %s", lines[i], msg)
			}
		case key == "spec.cron_expressions" || key == "spec.intervals" || key == "spec.timezone":
			field = strings.TrimPrefix(key, "spec.")
		case key == "spec":
			field = "cron_expressions"
			if len(f.spec.CronExpressions) == 0 && len(f.spec.Intervals) > 0 {
				field = "intervals"
			}
		case strings.HasPrefix(key, "action."):
			field = strings.TrimPrefix(key, "action.")
		case key == "namespace":
			field, msg = "", "namespace "+msg
		}
		f.addErr(field, msg)
	}
}

// valuesOf is a schedule as the form shows it (edit prefill); the same
// spelling is what changes are compared in.
func valuesOf(s *models.Schedule) views.ScheduleFormValues {
	var ivs []string
	for _, iv := range s.Spec.Intervals {
		ivs = append(ivs, strings.TrimSpace(iv.Every+" "+iv.Offset))
	}
	v := views.ScheduleFormValues{
		ScheduleID: s.ScheduleID, CronExpressions: strings.Join(s.Spec.CronExpressions, "\n"), Intervals: strings.Join(ivs, "\n"),
		Timezone: s.Spec.Timezone, WorkflowType: s.Action.WorkflowType, WorkflowClass: s.Action.WorkflowClass,
		Input: prettyValue(s.Action.Input), ExecutionTimeoutSeconds: int64Text(s.Action.ExecutionTimeoutSeconds),
		RunTimeoutSeconds: int64Text(s.Action.RunTimeoutSeconds), OverlapPolicy: s.OverlapPolicy,
		JitterSeconds: strconv.Itoa(s.JitterSeconds), MaxRuns: int64Text(s.MaxRuns),
		CatchupWindowSeconds: intText(s.CatchupWindowSeconds), StartDeadlineSeconds: int64Text(s.StartDeadlineSeconds),
		Connection: deref(s.Connection), Queue: deref(s.Queue),
		Labels: pairLines(s.Labels), Memo: pairLines(s.Memo), Note: s.Note,
	}
	if p := s.Action.RetryPolicy; p != nil {
		v.MaxAttempts, v.RetryInitial = intText(p.MaxAttempts), int64Text(p.InitialIntervalSeconds)
		v.RetryMaxInterval, v.NonRetryable = int64Text(p.MaxIntervalSeconds), strings.Join(p.NonRetryableErrorTypes, "\n")
		if p.BackoffCoefficient != nil {
			v.RetryCoefficient = strconv.FormatFloat(*p.BackoffCoefficient, 'f', -1, 64)
		}
	}
	v.PauseAfterFailures = intText(s.PauseAfterFailures)
	if v.Timezone == "" {
		v.Timezone = "UTC"
	}
	return v
}

func pairLines(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for _, kv := range sortedPairs(m) {
		lines = append(lines, kv.Key+"="+kv.Value)
	}
	return strings.Join(lines, "\n")
}

// editFields are the form's editable inputs, in form order, with the
// UpdateInput group each belongs to.
var editFields = []struct{ field, group string }{
	{"cron_expressions", "spec"}, {"intervals", "spec"}, {"timezone", "spec"},
	{"workflow_type", "action"}, {"workflow_class", "action"}, {"input", "action"},
	{"execution_timeout_seconds", "action"}, {"run_timeout_seconds", "action"}, {"retry_policy", "action"},
	{"overlap_policy", "overlap_policy"}, {"jitter_seconds", "jitter_seconds"}, {"max_runs", "max_runs"},
	{"pause_after_failures", "pause_after_failures"}, {"catchup_window_seconds", "catchup_window_seconds"},
	{"start_deadline_seconds", "start_deadline_seconds"},
	{"connection", "connection"}, {"queue", "queue"}, {"labels", "labels"}, {"memo", "memo"}, {"note", "note"},
}

// canonical spells each editable field of a parsed form in one way, so
// that "1 hour" and "PT1H", or {"a":1} and { "a": 1 }, compare equal.
func (f *scheduleForm) canonical() map[string]string {
	s := &models.Schedule{Spec: f.spec, Action: f.action, OverlapPolicy: f.overlap, JitterSeconds: f.jitter, MaxRuns: f.maxRuns,
		CatchupWindowSeconds: f.catchup, StartDeadlineSeconds: f.startDeadline, Connection: f.connection, Queue: f.queue, Labels: f.labels, Memo: f.memo, Note: f.note,
		PauseAfterFailures: f.pauseAfter}
	out := canonicalOf(s)
	// A field that could not be read compares by what was typed.
	raw := map[string]string{"intervals": f.values.Intervals, "input": f.values.Input, "labels": f.values.Labels, "memo": f.values.Memo,
		"execution_timeout_seconds": f.values.ExecutionTimeoutSeconds, "run_timeout_seconds": f.values.RunTimeoutSeconds,
		"jitter_seconds": f.values.JitterSeconds, "max_runs": f.values.MaxRuns, "pause_after_failures": f.values.PauseAfterFailures,
		"catchup_window_seconds": f.values.CatchupWindowSeconds, "start_deadline_seconds": f.values.StartDeadlineSeconds}
	for field := range f.errs {
		if v, ok := raw[field]; ok {
			out[field] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// canonicalOf is the service's spelling of each field, so the form's
// "what will change" list is the diff `schedule apply` prints.
func canonicalOf(s *models.Schedule) map[string]string { return scheduling.FieldValues(s) }

// changes lists what saving the form would change on s.
func (f *scheduleForm) changes(s *models.Schedule) []views.FieldChange {
	from, to := canonicalOf(s), f.canonical()
	var out []views.FieldChange
	for _, ef := range editFields {
		if from[ef.field] != to[ef.field] {
			out = append(out, views.FieldChange{Field: ef.field, From: from[ef.field], To: to[ef.field]})
		}
	}
	return out
}

// update is the partial update for the changed fields only: the service
// then records exactly those (its own comparison has the last word).
func (f *scheduleForm) update(changes []views.FieldChange) scheduling.UpdateInput {
	groups := map[string]bool{}
	for _, ch := range changes {
		for _, ef := range editFields {
			if ef.field == ch.Field {
				groups[ef.group] = true
			}
		}
	}
	var in scheduling.UpdateInput
	if groups["spec"] {
		in.Spec = &f.spec
	}
	if groups["action"] {
		in.Action = &f.action
	}
	if groups["overlap_policy"] {
		in.OverlapPolicy = &f.overlap
	}
	if groups["jitter_seconds"] {
		in.JitterSeconds = &f.jitter
	}
	if groups["max_runs"] {
		in.MaxRuns = scheduling.Nullable[int64]{Set: true, Value: f.maxRuns}
	}
	if groups["start_deadline_seconds"] {
		in.StartDeadlineSeconds = scheduling.Nullable[int64]{Set: true, Value: f.startDeadline}
	}
	if groups["catchup_window_seconds"] {
		in.CatchupWindowSeconds = scheduling.Nullable[int]{Set: true, Value: f.catchup}
	}
	if groups["connection"] {
		in.Connection = scheduling.Nullable[string]{Set: true, Value: f.connection}
	}
	if groups["queue"] {
		in.Queue = scheduling.Nullable[string]{Set: true, Value: f.queue}
	}
	if groups["pause_after_failures"] {
		in.PauseAfterFailures = scheduling.Nullable[int]{Set: true, Value: f.pauseAfter}
	}
	if groups["labels"] {
		in.Labels = &f.labels
	}
	if groups["memo"] {
		in.Memo = &f.memo
	}
	if groups["note"] {
		in.Note = &f.note
	}
	return in
}

// preview is the live preview of the form's spec.
func (r *request) preview(f *scheduleForm) (views.SpecPreviewView, bool) {
	if len(f.spec.CronExpressions) == 0 && len(f.spec.Intervals) == 0 {
		if msg := f.errs["intervals"]; msg != "" {
			return views.SpecPreviewView{FieldErrors: map[string]string{"intervals": msg}}, false
		}
		return views.SpecPreviewView{}, true
	}
	p, err := scheduling.PreviewSpec(f.spec, r.now, 10)
	if err != nil {
		var val *scheduling.ValidationError
		if !errors.As(err, &val) {
			return views.SpecPreviewView{Error: "cannot preview this spec"}, false
		}
		mapped := &scheduleForm{errs: map[string]string{}, spec: f.spec, cronLines: f.cronLines, ivLines: f.ivLines}
		mapped.mapErrors(val)
		if msg := f.errs["intervals"]; msg != "" {
			mapped.addErr("intervals", msg)
		}
		return views.SpecPreviewView{FieldErrors: mapped.errs}, false
	}
	desc, tz := p.Text.Sentence(), p.Text.Zone
	v := views.SpecPreviewView{Description: desc, Timezone: tz}
	loc := r.zone(tz)
	for _, t := range p.FireTimes {
		v.FireTimes = append(v.FireTimes, moment(t, loc, r.now))
	}
	if msg := f.errs["intervals"]; msg != "" {
		v.FieldErrors = map[string]string{"intervals": msg}
		return v, false
	}
	return v, true
}

// Preview answers POST /waterline/schedules/preview with the SpecPreview
// fragment (422 when the spec has errors). With ?schedule_id= (the edit
// form) it also lists what saving would change.
func (h *Console) Preview(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	f := readScheduleForm(c)
	v, valid := r.preview(f)
	if id := c.QueryParam("schedule_id"); id != "" {
		if s, err := h.Service.Get(c.Request().Context(), r.ns, id); err == nil {
			v.Changes = f.changes(s)
		}
	}
	status := http.StatusOK
	if !valid {
		status = http.StatusUnprocessableEntity
	}
	return Render(c, status, views.SpecPreview(v))
}

func (r *request) newFormView(values views.ScheduleFormValues) views.ScheduleFormView {
	return views.ScheduleFormView{Action: r.url(registryPath), PreviewURL: r.url(registryPath + "/preview"),
		CancelURL: r.url(registryPath), Values: values, Errors: map[string]string{}}
}

// NewSchedule answers GET /waterline/schedules/new.
func (h *Console) NewSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	v := r.newFormView(views.ScheduleFormValues{Timezone: "UTC", OverlapPolicy: scheduling.OverlapSkip, JitterSeconds: "0"})
	return ok(c, views.ScheduleFormPage(r.layout("New schedule", "schedules"), v))
}

// CreateSchedule answers POST /waterline/schedules.
func (h *Console) CreateSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	f := readScheduleForm(c)
	v := r.newFormView(f.values)
	if len(f.errs) > 0 {
		// The spec is checked as well, so one round trip shows every
		// problem the form can know about.
		if len(f.spec.CronExpressions) == 0 && len(f.spec.Intervals) == 0 {
			// Nothing to compile (or only unreadable intervals).
		} else if _, err := scheduling.Compile(f.spec); err != nil {
			var val *scheduling.ValidationError
			if errors.As(err, &val) {
				f.mapErrors(&scheduling.ValidationError{Fields: prefixed("spec.", val.Fields)})
			}
		}
		return r.formAgain(http.StatusUnprocessableEntity, v, f)
	}
	sch, err := h.Service.Create(c.Request().Context(), scheduling.CreateInput{
		Namespace: r.ns, ScheduleID: f.values.ScheduleID, Spec: f.spec, Action: f.action, OverlapPolicy: f.overlap,
		JitterSeconds: f.jitter, MaxRuns: f.maxRuns, CatchupWindowSeconds: f.catchup, StartDeadlineSeconds: f.startDeadline,
		Connection: f.connection, Queue: f.queue,
		Labels: f.labels, Memo: f.memo, Note: f.note, Paused: f.values.Paused, PauseAfterFailures: f.pauseAfter,
	}, r.cc(""))
	if status, handled := f.serviceError(err); handled {
		return r.formAgain(status, v, f)
	} else if err != nil {
		return err
	}
	msg := "Created " + sch.ScheduleID + "."
	if sch.Status == models.StatusPaused {
		msg = "Created " + sch.ScheduleID + " (paused)."
	}
	return r.redirect(r.url(scheduleURL(sch.ScheduleID)), views.Flash{Kind: "ok", Message: msg})
}

func prefixed(prefix string, m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}

// serviceError turns a refusal of create/update into form errors.
func (f *scheduleForm) serviceError(err error) (int, bool) {
	var val *scheduling.ValidationError
	var conf *scheduling.ConflictError
	switch {
	case errors.As(err, &val):
		f.mapErrors(val)
		return http.StatusUnprocessableEntity, true
	case errors.As(err, &conf) && conf.Code == scheduling.CodeScheduleAlreadyExists:
		f.addErr("schedule_id", conf.Message)
		return http.StatusConflict, true
	case errors.As(err, &conf):
		f.addErr("", conf.Message)
		return http.StatusConflict, true
	}
	return 0, false
}

// formAgain re-renders the form with what was posted and the errors.
func (r *request) formAgain(status int, v views.ScheduleFormView, f *scheduleForm) error {
	v.Errors = f.errs
	if p, _ := r.preview(f); p.Description != "" || len(p.FieldErrors) > 0 || p.Error != "" {
		v.Preview = &p
	}
	title := "New schedule"
	if v.Editing {
		title = "Edit " + v.Values.ScheduleID
	}
	return Render(r.c, status, views.ScheduleFormPage(r.layout(title, "schedules"), v))
}

// editable loads a schedule the edit form may change.
func (r *request) editable(id string) (*models.Schedule, error) {
	s, err := r.h.Service.Get(r.c.Request().Context(), r.ns, id)
	if err != nil {
		return nil, err
	}
	if s.Status == models.StatusDeleted {
		return nil, &scheduling.ConflictError{Code: scheduling.CodeScheduleDeleted, Message: fmt.Sprintf("schedule %q is deleted and cannot be updated", id)}
	}
	return s, nil
}

func (r *request) editFormView(s *models.Schedule, values views.ScheduleFormValues) views.ScheduleFormView {
	base := scheduleURL(s.ScheduleID)
	values.ScheduleID = s.ScheduleID // read-only in the form; never taken from the post
	return views.ScheduleFormView{Editing: true, Action: r.url(base + "/edit"),
		PreviewURL: r.url(registryPath+"/preview", "schedule_id", s.ScheduleID),
		CancelURL:  r.url(base), Values: values, Errors: map[string]string{}}
}

// EditSchedule answers GET /waterline/schedules/{id}/edit.
func (h *Console) EditSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := r.editable(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	v := r.editFormView(s, valuesOf(s))
	if p, valid := r.preview(parseScheduleForm(v.Values)); valid {
		v.Preview = &p
	}
	layout := r.layout("Edit "+s.ScheduleID, "schedules")
	if managedByApply(s) && layout.Flash == nil {
		// The next `schedule apply` of its file would undo an edit made here.
		layout.Flash = &views.Flash{Kind: "error", Message: "Managed by apply: " + s.ScheduleID +
			" is kept in a schedules file (label " + apijson.ManagedByLabel + "=" + apijson.ManagedByApply +
			"); the next 'tideline schedule apply' undoes edits made here. Change the file instead."}
	}
	return ok(c, views.ScheduleFormPage(layout, v))
}

// UpdateSchedule answers POST /waterline/schedules/{id}/edit: it saves the
// fields that differ from the schedule and says which.
func (h *Console) UpdateSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := r.editable(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	f := readScheduleForm(c)
	f.values.ScheduleID = s.ScheduleID
	v := r.editFormView(s, f.values)
	v.Changes = f.changes(s)
	if len(f.errs) > 0 {
		return r.formAgain(http.StatusUnprocessableEntity, v, f)
	}
	detail := r.url(scheduleURL(s.ScheduleID))
	if len(v.Changes) == 0 {
		return r.redirect(detail, views.Flash{Kind: "ok", Message: "Nothing to save: the form matches " + s.ScheduleID + "."})
	}
	_, err = h.Service.Update(c.Request().Context(), r.ns, s.ScheduleID, f.update(v.Changes), r.cc(""))
	if status, handled := f.serviceError(err); handled {
		return r.formAgain(status, v, f)
	} else if err != nil {
		return err
	}
	fields := make([]string, 0, len(v.Changes))
	for _, ch := range v.Changes {
		fields = append(fields, ch.Field)
	}
	return r.redirect(detail, views.Flash{Kind: "ok", Message: fmt.Sprintf("Saved %s: changed %s.", s.ScheduleID, strings.Join(fields, ", "))})
}
