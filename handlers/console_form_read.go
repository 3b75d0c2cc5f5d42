package handlers

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
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

	spec      models.Spec
	cronLines []int // the form line of each cron expression, for messages
	ivLines   []int // the form line of each interval
	atLines   []int // the form line of each at time
	action    models.Action
	// fields are the field table's fields with a text form, read from
	// their inputs (scheduling.ParseTexts).
	fields scheduling.UpdateInput
}

func readScheduleForm(c echo.Context) *scheduleForm {
	v := views.ScheduleFormValues{
		ScheduleID: strings.TrimSpace(c.FormValue("schedule_id")), CronExpressions: c.FormValue("cron_expressions"),
		Intervals: c.FormValue("intervals"), Timezone: strings.TrimSpace(c.FormValue("timezone")),
		At: c.FormValue("at"), StartAt: strings.TrimSpace(c.FormValue("start_at")), EndAt: strings.TrimSpace(c.FormValue("end_at")),
		ExcludeCalendars: strings.TrimSpace(c.FormValue("exclude_calendars")), OnExcluded: strings.TrimSpace(c.FormValue("on_excluded")),
		WorkflowType: strings.TrimSpace(c.FormValue("workflow_type")), WorkflowClass: strings.TrimSpace(c.FormValue("workflow_class")),
		Input: c.FormValue("input"), ExecutionTimeoutSeconds: strings.TrimSpace(c.FormValue("execution_timeout_seconds")),
		RunTimeoutSeconds: strings.TrimSpace(c.FormValue("run_timeout_seconds")),
		Paused:            c.FormValue("paused") == "1" || c.FormValue("paused") == "on", Fields: map[string]string{},
		MaxAttempts: strings.TrimSpace(c.FormValue("retry_policy.max_attempts")), RetryInitial: strings.TrimSpace(c.FormValue("retry_policy.initial_interval_seconds")),
		RetryCoefficient: strings.TrimSpace(c.FormValue("retry_policy.backoff_coefficient")), RetryMaxInterval: strings.TrimSpace(c.FormValue("retry_policy.max_interval_seconds")),
		NonRetryable: c.FormValue("retry_policy.non_retryable_error_types"),
		TargetKind:   strings.TrimSpace(c.FormValue("target.kind")), TargetURL: strings.TrimSpace(c.FormValue("target.url")),
		TargetMethod: strings.TrimSpace(c.FormValue("target.method")), TargetTimeout: strings.TrimSpace(c.FormValue("target.timeout_seconds")),
		TargetHeaders: c.FormValue("target.headers"), TargetBearer: c.FormValue("target.auth") == "bearer",
		TargetSecret: c.FormValue("target.secret"), TargetClearSecret: c.FormValue("target.clear_secret") == "1",
	}
	for _, f := range scheduling.Fields {
		if f.Console && f.HasText() {
			v.Fields[f.Key] = c.FormValue(f.Key)
		}
	}
	return parseScheduleForm(v)
}

func parseScheduleForm(v views.ScheduleFormValues) *scheduleForm {
	f := &scheduleForm{values: v, errs: map[string]string{}}
	f.spec = models.Spec{CronExpressions: []string{}, Intervals: []models.Interval{}, Timezone: v.Timezone, StartAt: v.StartAt, EndAt: v.EndAt}
	if f.spec.Timezone == "" {
		f.spec.Timezone = "UTC"
	}
	for _, name := range strings.FieldsFunc(v.ExcludeCalendars, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		f.spec.ExcludeCalendars = append(f.spec.ExcludeCalendars, name)
	}
	if v.OnExcluded != "" && v.OnExcluded != "skip" {
		f.spec.OnExcluded = v.OnExcluded
	}
	for _, l := range formLines(v.At) {
		f.spec.At = append(f.spec.At, l.text)
		f.atLines = append(f.atLines, l.n)
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
	f.action.RetryPolicy = f.retryPolicy(v)
	f.action.Target = f.target(v)
	var problems map[string][]string
	f.fields, problems = scheduling.ParseTexts(v.Fields)
	for key, msgs := range problems {
		for _, msg := range msgs {
			f.addErr(key, msg)
		}
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

// target reads the target fields; "worker" (or nothing) is no target.
// An empty secret keeps the stored one unless "remove" is ticked.
func (f *scheduleForm) target(v views.ScheduleFormValues) *models.Target {
	if v.TargetKind != models.TargetHTTP {
		if v.TargetKind != "" && v.TargetKind != models.TargetWorker {
			return &models.Target{Kind: v.TargetKind} // the service names what is wrong
		}
		return nil
	}
	t := &models.Target{Kind: models.TargetHTTP, URL: v.TargetURL, Method: v.TargetMethod}
	if n := f.optInt("target.timeout_seconds", v.TargetTimeout); n != nil {
		t.TimeoutSeconds = int(max(min(*n, 1<<31), -1)) // the service judges the range
		if t.TimeoutSeconds == 0 {
			t.TimeoutSeconds = -1 // a given 0 is refused, not the default
		}
	}
	if h := f.pairs("target.headers", v.TargetHeaders); len(h) > 0 {
		t.Headers = h
	}
	if v.TargetBearer {
		t.Auth = "bearer"
	}
	switch {
	case v.TargetSecret != "":
		t.Secret = &v.TargetSecret
	case v.TargetClearSecret:
		t.Secret = new(string)
	}
	return t
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
	m, problems := scheduling.ParsePairLines(raw)
	for _, msg := range problems {
		f.addErr(field, msg)
	}
	return m
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
	} else if _, err := timespec.ParseDuration(s); err == nil {
		every = s
	} else {
		fields := strings.Fields(s)
		every = s
		for k := 1; k < len(fields); k++ {
			e, o := strings.Join(fields[:k], " "), strings.Join(fields[k:], " ")
			_, errE := timespec.ParseDuration(e)
			_, errO := timespec.ParseDuration(o)
			if errE == nil && errO == nil || k == 1 && errE == nil && strings.HasPrefix(strings.ToUpper(e), "P") {
				every, offset = e, o
				break
			}
		}
	}
	d, err := timespec.ParseDuration(every)
	if err != nil {
		return models.Interval{}, fmt.Errorf("every: %w", err)
	}
	iv := models.Interval{Every: timespec.FormatISODuration(d)}
	if offset != "" {
		o, err := timespec.ParseDuration(offset)
		if err != nil {
			return models.Interval{}, fmt.Errorf("offset: %w", err)
		}
		if o > 0 {
			iv.Offset = timespec.FormatISODuration(o)
		}
	}
	return iv, nil
}

func (f *scheduleForm) createInput(namespace string) scheduling.CreateInput {
	return scheduling.CreateInput{Namespace: namespace, ScheduleID: f.values.ScheduleID, Spec: f.spec, Action: f.action,
		Paused: f.values.Paused, Fields: f.fields}
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
		Timezone: s.Spec.Timezone, At: strings.Join(s.Spec.At, "\n"), StartAt: s.Spec.StartAt, EndAt: s.Spec.EndAt,
		ExcludeCalendars: strings.Join(s.Spec.ExcludeCalendars, ", "), OnExcluded: s.Spec.OnExcluded, WorkflowType: s.Action.WorkflowType, WorkflowClass: s.Action.WorkflowClass,
		Input: prettyValue(s.Action.Input), ExecutionTimeoutSeconds: int64Text(s.Action.ExecutionTimeoutSeconds),
		RunTimeoutSeconds: int64Text(s.Action.RunTimeoutSeconds), Fields: scheduling.TextsOf(s),
	}
	if p := s.Action.RetryPolicy; p != nil {
		v.MaxAttempts, v.RetryInitial = intText(p.MaxAttempts), int64Text(p.InitialIntervalSeconds)
		v.RetryMaxInterval, v.NonRetryable = int64Text(p.MaxIntervalSeconds), strings.Join(p.NonRetryableErrorTypes, "\n")
		if p.BackoffCoefficient != nil {
			v.RetryCoefficient = strconv.FormatFloat(*p.BackoffCoefficient, 'f', -1, 64)
		}
	}
	v.TargetKind = models.TargetWorker
	if t := s.Action.Target; scheduling.IsHTTP(t) {
		v.TargetKind, v.TargetURL, v.TargetMethod = t.Kind, t.URL, t.Method
		v.TargetTimeout, v.TargetHeaders = strconv.Itoa(t.TimeoutSeconds), scheduling.PairLines(t.Headers)
		v.TargetBearer, v.TargetSecretSet = t.Auth == "bearer", t.SecretVersion > 0
	}
	if v.Timezone == "" {
		v.Timezone = "UTC"
	}
	return v
}
