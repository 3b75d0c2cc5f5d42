// Package demo is what `tideline serve --demo` adds so that a new user sees a
// living console within a minute: example schedules that fire often, and
// sample workflows that take a few seconds and sometimes fail.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// Workflow types of the sample workflows.
const (
	WorkflowInvoiceSync = "invoice-sync"
	WorkflowReport      = "report"
	WorkflowCleanup     = "cleanup"
)

// Seed creates the example schedules in namespace. It is idempotent: a
// schedule whose ID already exists is left alone, including one the user
// deleted (deleted schedules keep their ID), so a restart never undoes the
// user's edits.
func Seed(ctx context.Context, svc *scheduling.Service, namespace string) error {
	cc := &scheduling.CommandContext{Source: "cli", Actor: "tideline-demo", Reason: "example schedule for serve --demo"}
	for _, in := range schedules(namespace) {
		_, err := svc.Create(ctx, in, cc)
		var conflict *scheduling.ConflictError
		if errors.As(err, &conflict) && conflict.Code == "schedule_already_exists" {
			continue
		}
		if err != nil {
			return fmt.Errorf("seed demo schedule %s: %w", in.ScheduleID, err)
		}
	}
	return nil
}

// schedules covers cron and interval specs, a non-UTC timezone and every
// overlap policy. The report workflow sometimes outlasts the shorter
// intervals on purpose, so that skips, buffers, cancellations and
// terminations show up in the console too.
func schedules(namespace string) []scheduling.CreateInput {
	labels := func(team string) map[string]string { return map[string]string{"demo": "true", "team": team} }
	out := []scheduling.CreateInput{
		{
			ScheduleID:    "demo-invoice-sync-eu",
			Spec:          models.Spec{CronExpressions: []string{"* * * * *"}, Timezone: "UTC"},
			Action:        models.Action{WorkflowType: WorkflowInvoiceSync, Input: json.RawMessage(`{"region": "eu"}`), RunTimeoutSeconds: seconds(120)},
			OverlapPolicy: scheduling.OverlapSkip,
			Labels:        labels("billing"),
			Note:          "Every minute (cron). skip: a fire while the previous sync still runs is skipped.",
		},
		{
			ScheduleID:    "demo-invoice-sync-us",
			Spec:          models.Spec{CronExpressions: []string{"*/2 * * * *"}, Timezone: "America/New_York"},
			Action:        models.Action{WorkflowType: WorkflowInvoiceSync, Input: json.RawMessage(`{"region": "us"}`), RunTimeoutSeconds: seconds(120)},
			OverlapPolicy: scheduling.OverlapBufferOne,
			Labels:        labels("billing"),
			Note:          "Every two minutes, New York time (cron). buffer_one: one fire waits for the running sync.",
		},
		{
			ScheduleID:    "demo-usage-report",
			Spec:          models.Spec{Intervals: []models.Interval{{Every: "PT30S"}}, Timezone: "UTC"},
			Action:        models.Action{WorkflowType: WorkflowReport, Input: json.RawMessage(`{"report": "usage", "format": "csv"}`), ExecutionTimeoutSeconds: seconds(300)},
			OverlapPolicy: scheduling.OverlapBufferAll,
			Labels:        labels("analytics"),
			Memo:          map[string]string{"owner": "analytics@example.com"},
			Note:          "Every 30 seconds (interval). buffer_all: fires during a long report queue up and run in turn.",
		},
		{
			ScheduleID:    "demo-live-dashboard",
			Spec:          models.Spec{Intervals: []models.Interval{{Every: "PT20S", Offset: "PT5S"}}, Timezone: "UTC"},
			Action:        models.Action{WorkflowType: WorkflowReport, Input: json.RawMessage(`{"report": "dashboard", "format": "json"}`)},
			OverlapPolicy: scheduling.OverlapCancelOther,
			Labels:        labels("analytics"),
			Note:          "Every 20 seconds at :05/:25/:45 (interval with offset). cancel_other: a fresh fire asks the stale report to stop.",
		},
		{
			ScheduleID:    "demo-cache-cleanup",
			Spec:          models.Spec{Intervals: []models.Interval{{Every: "PT45S"}}, Timezone: "UTC"},
			Action:        models.Action{WorkflowType: WorkflowCleanup, Input: json.RawMessage(`{"target": "cache"}`)},
			OverlapPolicy: scheduling.OverlapAllowAll,
			JitterSeconds: 5,
			Queue:         ptr(CommandQueue),
			Labels:        labels("platform"),
			Note:          "Every 45 seconds with up to 5 s of jitter (interval). allow_all: cleanups may overlap. Runs a shell command through the command runner (tideline worker).",
		},
		{
			ScheduleID:    "demo-export-rollup",
			Spec:          models.Spec{Intervals: []models.Interval{{Every: "PT25S"}}, Timezone: "UTC"},
			Action:        models.Action{WorkflowType: WorkflowReport, Input: json.RawMessage(`{"report": "rollup", "format": "parquet"}`)},
			OverlapPolicy: scheduling.OverlapTerminateOther,
			Queue:         ptr(CommandQueue),
			Labels:        labels("platform"),
			Note:          "Every 25 seconds (interval). terminate_other: a fresh fire stops the previous export at once (its shell command gets SIGTERM).",
		},
	}
	for i := range out {
		out[i].Namespace = namespace
	}
	return out
}

func seconds(n int64) *int64 { return &n }

func ptr[T any](v T) *T { return &v }
