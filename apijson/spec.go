package apijson

import (
	"encoding/json"

	"github.com/tidelinehq/tideline/models"
)

// The wire forms of a schedule's spec and action. They mirror the stored
// ones (models) field for field today, but are their own types so that a
// column added to storage is not an API change by accident, and an API
// change is made here, with its translation (SpecOf, Spec.Model…).

// Spec is "when" (docs/CONTRACT.md; CONTRACT §3).
type Spec struct {
	CronExpressions []string   `json:"cron_expressions"`
	Intervals       []Interval `json:"intervals"`
	Timezone        string     `json:"timezone"`
	StartAt         string     `json:"start_at,omitempty"`
	EndAt           string     `json:"end_at,omitempty"`
	At              []string   `json:"at,omitempty"`
	// ExcludeCalendars names calendars of the namespace; OnExcluded is
	// skip (default), previous_business_day or next_business_day (§16).
	ExcludeCalendars []string `json:"exclude_calendars,omitempty"`
	OnExcluded       string   `json:"on_excluded,omitempty"`
}

// Interval is one fixed-length repetition: ISO-8601 durations.
type Interval struct {
	Every  string `json:"every"`
	Offset string `json:"offset,omitempty"`
}

// Action is "what": the workflow a fire starts.
type Action struct {
	WorkflowType            string          `json:"workflow_type"`
	WorkflowClass           string          `json:"workflow_class,omitempty"`
	Input                   json.RawMessage `json:"input,omitempty"`
	ExecutionTimeoutSeconds *int64          `json:"execution_timeout_seconds"`
	RunTimeoutSeconds       *int64          `json:"run_timeout_seconds"`
	RetryPolicy             *RetryPolicy    `json:"retry_policy"`
	// Target chooses who executes the runs (CONTRACT §15); absent on input
	// is a worker, and answers always name it.
	Target *Target `json:"target,omitempty"`
}

// Target is who executes a run: "worker" (the worker protocol) or "http"
// (the server calls url once per attempt).
type Target struct {
	Kind           string            `json:"kind"`
	URL            string            `json:"url,omitempty"`
	Method         string            `json:"method,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Auth           string            `json:"auth,omitempty"`
	TimeoutSeconds *int              `json:"timeout_seconds,omitempty"`
	// Secret is write-only: accepted, stored apart, never answered. Absent
	// on an update keeps the stored one; "" removes it.
	Secret *string `json:"secret,omitempty"`
	// SecretSet answers whether a secret is stored; ignored on input, so
	// that an exported schedule applies as it is.
	SecretSet bool `json:"secret_set,omitempty"`
}

// RetryPolicy says how a failed attempt is retried (CONTRACT §10); absent
// fields take their defaults.
type RetryPolicy struct {
	MaxAttempts            *int     `json:"max_attempts"`
	InitialIntervalSeconds *int64   `json:"initial_interval_seconds"`
	BackoffCoefficient     *float64 `json:"backoff_coefficient"`
	MaxIntervalSeconds     *int64   `json:"max_interval_seconds"`
	NonRetryableErrorTypes []string `json:"non_retryable_error_types"`
}

// SpecOf is the wire form of a stored spec.
func SpecOf(s models.Spec) Spec {
	out := Spec{CronExpressions: s.CronExpressions, Timezone: s.Timezone, StartAt: s.StartAt, EndAt: s.EndAt, At: s.At,
		ExcludeCalendars: s.ExcludeCalendars, OnExcluded: s.OnExcluded}
	if s.Intervals != nil {
		out.Intervals = make([]Interval, len(s.Intervals))
		for i, iv := range s.Intervals {
			out.Intervals[i] = Interval(iv)
		}
	}
	return out
}

// Model is the service's form of a wire spec.
func (s Spec) Model() models.Spec {
	out := models.Spec{CronExpressions: s.CronExpressions, Timezone: s.Timezone, StartAt: s.StartAt, EndAt: s.EndAt, At: s.At,
		ExcludeCalendars: s.ExcludeCalendars, OnExcluded: s.OnExcluded}
	if s.Intervals != nil {
		out.Intervals = make([]models.Interval, len(s.Intervals))
		for i, iv := range s.Intervals {
			out.Intervals[i] = models.Interval(iv)
		}
	}
	return out
}

// ActionOf is the wire form of a stored action.
func ActionOf(a models.Action) Action {
	return Action{WorkflowType: a.WorkflowType, WorkflowClass: a.WorkflowClass, Input: a.Input,
		ExecutionTimeoutSeconds: a.ExecutionTimeoutSeconds, RunTimeoutSeconds: a.RunTimeoutSeconds, RetryPolicy: RetryPolicyOf(a.RetryPolicy),
		Target: TargetOf(a.Target)}
}

// TargetOf is the wire form of a stored target: never the secret, only
// whether one is set.
func TargetOf(t *models.Target) *Target {
	if t == nil || t.Kind != models.TargetHTTP {
		return &Target{Kind: models.TargetWorker}
	}
	timeout := t.TimeoutSeconds
	return &Target{Kind: t.Kind, URL: t.URL, Method: t.Method, Headers: t.Headers, Auth: t.Auth, TimeoutSeconds: &timeout,
		SecretSet: t.SecretVersion > 0}
}

// Model is the service's form of a wire target; nil stays nil.
func (t *Target) Model() *models.Target {
	if t == nil {
		return nil
	}
	out := &models.Target{Kind: t.Kind, URL: t.URL, Method: t.Method, Headers: t.Headers, Auth: t.Auth, Secret: t.Secret}
	if t.TimeoutSeconds != nil {
		// The model's 0 means "the default": a given 0 must be refused.
		out.TimeoutSeconds = *t.TimeoutSeconds
		if out.TimeoutSeconds == 0 {
			out.TimeoutSeconds = -1
		}
	}
	return out
}

// Model is the service's form of a wire action.
func (a Action) Model() models.Action {
	return models.Action{WorkflowType: a.WorkflowType, WorkflowClass: a.WorkflowClass, Input: a.Input,
		ExecutionTimeoutSeconds: a.ExecutionTimeoutSeconds, RunTimeoutSeconds: a.RunTimeoutSeconds, RetryPolicy: a.RetryPolicy.Model(),
		Target: a.Target.Model()}
}

// RetryPolicyOf is the wire form of a stored retry policy; nil stays nil.
func RetryPolicyOf(p *models.RetryPolicy) *RetryPolicy {
	if p == nil {
		return nil
	}
	out := RetryPolicy(*p)
	return &out
}

// Model is the service's form of a wire retry policy; nil stays nil.
func (p *RetryPolicy) Model() *models.RetryPolicy {
	if p == nil {
		return nil
	}
	out := models.RetryPolicy(*p)
	return &out
}
