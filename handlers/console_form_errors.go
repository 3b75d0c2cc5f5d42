package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/scheduling"
)

// The form's errors: what it could not read, and the service's verdicts
// filed under the inputs they are about.

// addErr files msg under field; a field's messages are one per line (the
// form lists them, e.g. every bad cron line).
func (f *scheduleForm) addErr(field, msg string) {
	if prev, ok := f.errs[field]; ok {
		f.errs[field] = prev + "\n" + msg
		return
	}
	f.errs[field] = msg
}

var calendarFieldKey = regexp.MustCompile(`^spec\.exclude_calendars\[(\d+)\]$`)

var specFieldKey = regexp.MustCompile(`^spec\.(cron_expressions|intervals|at)\[(\d+)\](?:\.(every|offset))?$`)

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
		case strings.HasPrefix(key, "spec.exclude_calendars"):
			field = "exclude_calendars"
			if m := calendarFieldKey.FindStringSubmatch(key); m != nil {
				i, _ := strconv.Atoi(m[1])
				if i < len(f.spec.ExcludeCalendars) {
					msg = fmt.Sprintf("%s: %s", f.spec.ExcludeCalendars[i], msg)
				}
			}
		case key == "spec.on_excluded":
			field = "on_excluded"
		case specFieldKey.MatchString(key):
			m := specFieldKey.FindStringSubmatch(key)
			i, _ := strconv.Atoi(m[2])
			field = m[1]
			lines := f.cronLines
			switch field {
			case "intervals":
				lines = f.ivLines
			case "at":
				lines = f.atLines
			}
			if m[3] != "" {
				msg = m[3] + ": " + msg
			}
			if i < len(lines) {
				msg = fmt.Sprintf("line %d: %s", lines[i], msg)
			}
		case key == "spec.cron_expressions" || key == "spec.intervals" || key == "spec.timezone" ||
			key == "spec.at" || key == "spec.start_at" || key == "spec.end_at":
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

// alsoServiceErrors adds what the service's plan refused (err) to a form
// that already has errors of its own. A field the form could not read
// keeps the form's message: the service judged a blank in its place. So
// does the spec when unreadable intervals left it empty.
func (f *scheduleForm) alsoServiceErrors(err error) {
	if err == nil {
		return
	}
	more := &scheduleForm{errs: map[string]string{}, spec: f.spec, cronLines: f.cronLines, ivLines: f.ivLines}
	if _, handled := more.serviceError(err); !handled {
		return // not a verdict on the fields; the form's errors stand
	}
	for field, msg := range more.errs {
		if _, own := f.errs[field]; own {
			continue
		}
		if field == "cron_expressions" && len(f.spec.CronExpressions) == 0 && f.errs["intervals"] != "" {
			continue
		}
		f.errs[field] = msg
	}
}
