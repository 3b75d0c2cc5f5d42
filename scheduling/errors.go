package scheduling

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrNotFound is returned when a schedule, run or event does not exist in the
// caller's namespace. Other namespaces are indistinguishable from "absent".
var ErrNotFound = errors.New("not found")

// NotFoundError names what was missing; it matches ErrNotFound with errors.Is.
type NotFoundError struct {
	Code    string // e.g. schedule_not_found, run_not_found
	Message string
}

func (e *NotFoundError) Error() string { return e.Message }

// Is lets errors.Is(err, ErrNotFound) match every NotFoundError.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ValidationError carries field-level messages for input that cannot be
// accepted. Code is "validation_failed" unless a more specific code applies
// (spec_never_fires, invalid_time_range, backfill_too_large, invalid_limit…).
type ValidationError struct {
	Code   string
	Fields map[string]string
}

// NewValidationError builds a validation_failed error for one field.
func NewValidationError(field, message string) *ValidationError {
	return &ValidationError{Code: CodeValidationFailed, Fields: map[string]string{field: message}}
}

func (e *ValidationError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %s", k, e.Fields[k]))
	}
	code := e.Code
	if code == "" {
		code = CodeValidationFailed
	}
	return code + ": " + strings.Join(parts, "; ")
}

// Add records a message for field, keeping the first message per field.
func (e *ValidationError) Add(field, message string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, ok := e.Fields[field]; !ok {
		e.Fields[field] = message
	}
}

// Merge copies other's fields under prefix (e.g. "spec.").
func (e *ValidationError) Merge(prefix string, other *ValidationError) {
	for k, v := range other.Fields {
		e.Add(prefix+k, v)
	}
}

// OrNil returns e when it holds at least one field message, else nil; it lets
// validators accumulate messages and return a plain error at the end.
func (e *ValidationError) OrNil() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}

// ConflictError is a request that is well-formed but not allowed in the
// current state (schedule_already_exists, schedule_not_active, …).
type ConflictError struct {
	Code    string
	Message string
	// Schedules names the schedules in the way (calendar_in_use).
	Schedules []string
}

func (e *ConflictError) Error() string { return e.Message }
