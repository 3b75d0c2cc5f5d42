package scheduling

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tidelinehq/tideline/models"
)

// Retry policy bounds (CONTRACT §10).
const (
	MaxRetryAttempts       = 100
	MaxRetryIntervalSecond = 86400
	maxNonRetryableTypes   = 64
)

// normalizeRetryPolicy fills in the defaults of a given policy, so that the
// stored policy is the one that applies: max_attempts 1 (no retry), initial
// 1 s, coefficient 2.0, cap 100 × initial (at most a day). Invalid values
// are kept for validateRetryPolicy to report.
func normalizeRetryPolicy(p *models.RetryPolicy) *models.RetryPolicy {
	if p == nil {
		return nil
	}
	out := *p
	if out.MaxAttempts == nil {
		out.MaxAttempts = ptr(1)
	}
	if out.InitialIntervalSeconds == nil {
		out.InitialIntervalSeconds = ptr[int64](1)
	}
	if out.BackoffCoefficient == nil {
		out.BackoffCoefficient = ptr(2.0)
	}
	if out.MaxIntervalSeconds == nil {
		out.MaxIntervalSeconds = ptr(min(100*max(*out.InitialIntervalSeconds, 1), MaxRetryIntervalSecond))
	}
	if out.NonRetryableErrorTypes == nil {
		out.NonRetryableErrorTypes = []string{}
	}
	return &out
}

func ptr[T any](v T) *T { return &v }

// validateRetryPolicy checks a normalized policy.
func validateRetryPolicy(v *ValidationError, p *models.RetryPolicy) {
	if p == nil {
		return
	}
	const f = "action.retry_policy."
	if n := *p.MaxAttempts; n < 1 || n > MaxRetryAttempts {
		v.Add(f+"max_attempts", fmt.Sprintf("must be between 1 and %d (1 = no retry)", MaxRetryAttempts))
	}
	initial := *p.InitialIntervalSeconds
	if initial < 1 || initial > MaxRetryIntervalSecond {
		v.Add(f+"initial_interval_seconds", fmt.Sprintf("must be between 1 and %d", MaxRetryIntervalSecond))
	}
	if c := *p.BackoffCoefficient; math.IsNaN(c) || c < 1 || c > 10 {
		v.Add(f+"backoff_coefficient", "must be between 1.0 and 10.0")
	}
	if m := *p.MaxIntervalSeconds; m < max(initial, 1) || m > MaxRetryIntervalSecond {
		v.Add(f+"max_interval_seconds", fmt.Sprintf("must be between initial_interval_seconds and %d", MaxRetryIntervalSecond))
	}
	if len(p.NonRetryableErrorTypes) > maxNonRetryableTypes {
		v.Add(f+"non_retryable_error_types", fmt.Sprintf("must list at most %d types", maxNonRetryableTypes))
	}
	for _, t := range p.NonRetryableErrorTypes {
		if t == "" || len(t) > MaxNameLength {
			v.Add(f+"non_retryable_error_types", fmt.Sprintf("each type must be 1-%d characters", MaxNameLength))
			break
		}
	}
}

// retryDelay is how long attempt (1-based, the one that just failed) waits
// before the next: initial × coefficient^(attempt−1), capped.
func retryDelay(p *models.RetryPolicy, attempt int) time.Duration {
	seconds := float64(*p.InitialIntervalSeconds) * math.Pow(*p.BackoffCoefficient, float64(attempt-1))
	seconds = min(seconds, float64(*p.MaxIntervalSeconds))
	return time.Duration(seconds * float64(time.Second))
}

// nextAttempt decides whether a failed attempt of run is retried and when.
// It is not when the policy has no attempts left, the error type is
// non-retryable, or the next attempt would start at or after the execution
// deadline (the whole execution would time out first).
func nextAttempt(run *models.Run, errorType string, now time.Time) (time.Time, bool) {
	p := run.RetryPolicy
	if p == nil || p.MaxAttempts == nil || run.Attempt >= *p.MaxAttempts || slices.Contains(p.NonRetryableErrorTypes, errorType) {
		return time.Time{}, false
	}
	at := utcMicro(now.Add(retryDelay(p, max(run.Attempt, 1))))
	if run.ExecutionDeadlineAt != nil && !at.Before(*run.ExecutionDeadlineAt) {
		return time.Time{}, false
	}
	return at, true
}
