package scheduling

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// Overlap policies of CONTRACT §5.
const (
	OverlapSkip           = "skip"
	OverlapBufferOne      = "buffer_one"
	OverlapBufferAll      = "buffer_all"
	OverlapAllowAll       = "allow_all"
	OverlapCancelOther    = "cancel_other"
	OverlapTerminateOther = "terminate_other"
)

// OverlapPolicies lists every policy in the order the console offers them.
var OverlapPolicies = []string{OverlapSkip, OverlapBufferOne, OverlapBufferAll, OverlapAllowAll, OverlapCancelOther, OverlapTerminateOther}

// Limits on user input. They keep one schedule row small enough that
// listing and locking stay cheap.
const (
	MaxJitterSeconds = 3600
	MaxMemoBytes     = 64 << 10
	MaxLabels        = 64
	MaxNoteLength    = 4096
	MaxNameLength    = 255
	MaxBufferAll     = 1000
)

var (
	scheduleIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)
	namespacePattern  = regexp.MustCompile(`^[a-z0-9._-]{1,128}$`)
	labelKeyPattern   = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,63}$`)
)

// DefaultNamespace is the namespace of a request that names none.
const DefaultNamespace = "default"

// NamespaceRule says in words what ValidNamespace accepts; every surface
// reports a bad namespace with it.
const NamespaceRule = "must be 1-128 characters of a-z, 0-9, '.', '_' or '-'"

// ValidNamespace reports whether name follows CONTRACT §1's namespace rule.
func ValidNamespace(name string) bool { return namespacePattern.MatchString(name) }

// CheckNamespace is ValidNamespace as a field-level validation error.
func CheckNamespace(name string) error {
	if !ValidNamespace(name) {
		return NewValidationError("namespace", NamespaceRule)
	}
	return nil
}

// NamespaceOr is name, or DefaultNamespace when name is empty.
func NamespaceOr(name string) string {
	if name == "" {
		return DefaultNamespace
	}
	return name
}

// ValidScheduleID reports whether id follows CONTRACT §2's schedule ID rule.
// "." and ".." are refused: browsers and proxies resolve them out of URL
// paths, so such a schedule could never be addressed.
func ValidScheduleID(id string) bool {
	return scheduleIDPattern.MatchString(id) && id != "." && id != ".."
}

func validPolicy(p string) bool {
	for _, known := range OverlapPolicies {
		if p == known {
			return true
		}
	}
	return false
}

func policyMessage() string {
	return "must be one of skip, buffer_one, buffer_all, allow_all, cancel_other, terminate_other"
}

func validateAction(v *ValidationError, a models.Action) {
	switch {
	case a.WorkflowType == "":
		v.Add("action.workflow_type", "is required: the workflow type to start")
	case utf8.RuneCountInString(a.WorkflowType) > MaxNameLength:
		v.Add("action.workflow_type", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	if utf8.RuneCountInString(a.WorkflowClass) > MaxNameLength {
		v.Add("action.workflow_class", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	validateTimeout(v, "action.execution_timeout_seconds", a.ExecutionTimeoutSeconds)
	validateTimeout(v, "action.run_timeout_seconds", a.RunTimeoutSeconds)
	validateRetryPolicy(v, a.RetryPolicy)
}

// MaxPauseAfterFailures bounds pause_after_failures (CONTRACT §10).
const MaxPauseAfterFailures = 100

// MaxStartDeadlineSeconds bounds start_deadline_seconds: a week.
const MaxStartDeadlineSeconds = 7 * 24 * 3600

func validateStartDeadline(v *ValidationError, n *int64) {
	if n != nil && (*n < 1 || *n > MaxStartDeadlineSeconds) {
		v.Add("start_deadline_seconds", fmt.Sprintf("must be between 1 and %d, or null", MaxStartDeadlineSeconds))
	}
}

func validatePauseAfterFailures(v *ValidationError, n *int) {
	if n != nil && (*n < 1 || *n > MaxPauseAfterFailures) {
		v.Add("pause_after_failures", fmt.Sprintf("must be between 1 and %d, or null", MaxPauseAfterFailures))
	}
}

// MaxCatchupWindowSeconds bounds catchup_window_seconds at 7 days: the
// occurrence ledger's default window, and longer than any downtime worth
// catching up on by itself rather than by a deliberate backfill.
const MaxCatchupWindowSeconds = 7 * 24 * 60 * 60

func validateCatchupWindow(v *ValidationError, n *int) {
	if n != nil && (*n < 1 || *n > MaxCatchupWindowSeconds) {
		v.Add("catchup_window_seconds", fmt.Sprintf("must be between 1 and %d (7 days), or null", MaxCatchupWindowSeconds))
	}
}

// MaxTimeoutSeconds caps run deadlines at ten years (of 365 days): longer
// ones mean "never", which null says, and seconds near the int64 limit
// overflowed into a deadline before the run was created.
const MaxTimeoutSeconds = 10 * 365 * 24 * 60 * 60

func validateTimeout(v *ValidationError, field string, seconds *int64) {
	if seconds != nil && (*seconds <= 0 || *seconds > MaxTimeoutSeconds) {
		v.Add(field, fmt.Sprintf("must be a positive number of seconds up to %d (10 years), or null", MaxTimeoutSeconds))
	}
}

func validateRoute(v *ValidationError, field string, value *string) {
	if value == nil {
		return
	}
	if *value == "" {
		v.Add(field, "must not be empty; use null for the default")
	} else if field == "connection" && *value == HTTPConnection {
		v.Add(field, fmt.Sprintf("%q is reserved for the runs of HTTP targets", HTTPConnection))
	} else if utf8.RuneCountInString(*value) > MaxNameLength {
		v.Add(field, fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
}

func validateStringMap(v *ValidationError, field string, m map[string]string) {
	if len(m) > MaxLabels {
		v.Add(field, fmt.Sprintf("must have at most %d entries", MaxLabels))
		return
	}
	for k, val := range m {
		if !labelKeyPattern.MatchString(k) {
			v.Add(field, fmt.Sprintf("key %q must be 1-63 characters of letters, digits, '.', '_', '/' or '-'", k))
			return
		}
		if utf8.RuneCountInString(val) > MaxNameLength {
			v.Add(field, fmt.Sprintf("value of %q must be at most %d characters", k, MaxNameLength))
			return
		}
	}
}

func validateMemo(v *ValidationError, memo map[string]string) {
	body, _ := json.Marshal(memo) // a map of strings always encodes
	if len(body) > MaxMemoBytes {
		v.Add("memo", fmt.Sprintf("must be at most 64 KiB when encoded (is %d bytes)", len(body)))
	}
}

func validateJitter(v *ValidationError, j int) {
	if j < 0 || j > MaxJitterSeconds {
		v.Add("jitter_seconds", fmt.Sprintf("must be between 0 and %d", MaxJitterSeconds))
	}
}

func validateMaxRuns(v *ValidationError, m *int64) {
	if m != nil && *m < 1 {
		v.Add("max_runs", "must be at least 1, or null for no limit")
	}
}

func validateNote(v *ValidationError, note string) {
	if utf8.RuneCountInString(note) > MaxNoteLength {
		v.Add("note", fmt.Sprintf("must be at most %d characters", MaxNoteLength))
	}
}

// compileField compiles spec and files its errors under "spec.".
func compileField(v *ValidationError, spec models.Spec, cals ...*timespec.Calendar) *timespec.CompiledSpec {
	compiled, err := timespec.Compile(spec, cals...)
	if err != nil {
		var se *timespec.Error
		if !errors.As(err, &se) {
			v.Add("spec", err.Error())
			return nil
		}
		for field, message := range se.Fields {
			v.Add("spec."+field, message)
		}
		if se.NeverFires {
			v.Code = CodeSpecNeverFires
		}
		return nil
	}
	return compiled
}
