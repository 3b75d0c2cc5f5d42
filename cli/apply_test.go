package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const applyFile = `# two schedules
- schedule_id: nightly
  spec:
    cron_expressions: ["0 2 * * *"]
    timezone: America/New_York
  action:
    workflow_type: sync.Nightly
    input: {full: true, batch: 1234}
    run_timeout_seconds: 600
  labels: {team: data}
- schedule_id: hourly
  spec:
    intervals: [{every: PT1H, offset: PT5M}]
  action: {workflow_type: report.Hourly}
  overlap_policy: allow_all
  max_runs: 100
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func historyLen(t *testing.T, d dialectEnv, id string) int {
	t.Helper()
	var page struct {
		Events []struct {
			EventType string          `json:"event_type"`
			Payload   json.RawMessage `json:"payload"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "history", id, "--output", "json")), &page))
	return len(page.Events)
}

func TestApply(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		file := writeFile(t, "schedules.yaml", applyFile)
		plan := "+ create nightly\n" +
			"    cron_expressions: (none) → 0 2 * * *\n" +
			"    timezone: UTC → America/New_York\n" +
			"    workflow_type: (none) → sync.Nightly\n" +
			"    input: (none) → {\"batch\":1234,\"full\":true}\n" +
			"    run_timeout_seconds: (none) → 600\n" +
			"    overlap_policy: (none) → skip\n" +
			"    labels: (none) → team=data, tideline.dev/managed-by=apply\n" +
			"+ create hourly\n" +
			"    intervals: (none) → PT1H PT5M\n" +
			"    workflow_type: (none) → report.Hourly\n" +
			"    overlap_policy: (none) → allow_all\n" +
			"    max_runs: (none) → 100\n" +
			"    labels: (none) → tideline.dev/managed-by=apply\n" +
			"Plan: 2 to create, 0 to update, 0 to delete, 0 unchanged.\n"
		require.Equal(t, plan+"Dry run: nothing changed.\n", d.run(t, "schedule", "apply", "-f", file, "--dry-run"))
		require.Equal(t, "No schedules in namespace default.\n", d.run(t, "schedule", "list"), "a dry run creates nothing")

		require.Equal(t, plan+"Applied: 2 created, 0 updated, 0 deleted.\n", d.run(t, "schedule", "apply", "-f", file))
		require.Regexp(t, `\nManaged by: +schedule apply \(label tideline.dev/managed-by=apply`, d.run(t, "schedule", "describe", "nightly"))

		again := "Plan: 0 to create, 0 to update, 0 to delete, 2 unchanged.\n"
		require.Equal(t, again, d.run(t, "schedule", "apply", "-f", file), "idempotent")
		require.Equal(t, 1, historyLen(t, d, "nightly"), "a second apply records nothing")

		// Export round-trips: applying it changes nothing.
		exported := d.run(t, "schedule", "export")
		require.True(t, strings.HasPrefix(exported, "# Schedules of namespace default"), exported)
		require.Contains(t, exported, "- schedule_id: hourly\n  spec:\n    cron_expressions: []\n    intervals:\n      - every: PT1H\n        offset: PT5M\n")
		require.Equal(t, again, d.run(t, "schedule", "apply", "-f", writeFile(t, "export.yaml", exported)))
		asJSON := d.run(t, "schedule", "export", "--output", "json")
		require.Equal(t, again, d.run(t, "schedule", "apply", "-f", writeFile(t, "export.json", asJSON)), "JSON is YAML too")
		onlyData := d.run(t, "schedule", "export", "--label", "team=data", "--output", "json")
		var docs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(onlyData), &docs))
		require.Len(t, docs, 1)
		require.Equal(t, "nightly", docs[0]["schedule_id"])

		// An edit: the diff first, and only the changed fields recorded.
		edited := strings.Replace(applyFile, `"0 2 * * *"`, `"30 3 * * *"`, 1)
		edited = strings.Replace(edited, "  max_runs: 100\n", "", 1)
		out := d.run(t, "schedule", "apply", "-f", writeFile(t, "edited.yaml", edited))
		require.Equal(t, "~ update nightly\n"+
			"    cron_expressions: 0 2 * * * → 30 3 * * *\n"+
			"~ update hourly\n"+
			"    max_runs: 100 → (none)\n"+
			"Plan: 0 to create, 2 to update, 0 to delete, 0 unchanged.\n"+
			"Applied: 0 created, 2 updated, 0 deleted.\n", out)
		var page struct {
			Events []struct {
				EventType string `json:"event_type"`
				Payload   struct {
					ChangedFields []string `json:"changed_fields"`
				} `json:"payload"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "history", "nightly", "--output", "json")), &page))
		require.Len(t, page.Events, 2)
		require.Equal(t, "ScheduleUpdated", page.Events[1].EventType)
		require.Equal(t, []string{"spec"}, page.Events[1].Payload.ChangedFields)

		// Prune deletes only what apply manages.
		d.run(t, "schedule", "add", "hand-made", "--workflow-type", "w", "--cron", "@daily")
		onlyNightly := edited[:strings.Index(edited, "- schedule_id: hourly")]
		path := writeFile(t, "nightly.yaml", onlyNightly)
		out = d.run(t, "schedule", "apply", "-f", path)
		require.Equal(t, "Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n"+
			"Not in the file but managed by apply (kept; --prune deletes them): hourly\n", out)
		out = d.run(t, "schedule", "apply", "-f", path, "--prune")
		require.Equal(t, "- delete hourly (managed by apply, not in the file)\n"+
			"Plan: 0 to create, 0 to update, 1 to delete, 1 unchanged.\n"+
			"Applied: 0 created, 0 updated, 1 deleted.\n", out)
		list := d.run(t, "schedule", "list")
		require.Contains(t, list, "hand-made")
		require.Contains(t, list, "nightly")
		require.NotContains(t, list, "hourly")

		// A deleted schedule's ID cannot come back.
		_, err := d.fail(t, "schedule", "apply", "-f", file)
		require.Contains(t, err.Error(), `schedules.yaml:11: schedule "hourly" was deleted`)

		// Standard input.
		env := map[string]string{"<stdin>": onlyNightly}
		for k, v := range d.environ {
			env[k] = v
		}
		stdout, _, err := runCLI(t, env, "schedule", "apply", "-f", "-")
		require.NoError(t, err)
		require.Equal(t, "Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n", stdout)
	})
}

func TestApplyRefusesInvalidFiles(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		cases := []struct {
			name, file string
			want       []string
		}{
			{"not yaml", "- schedule_id: a\n  spec: [\n", []string{"bad.yaml: 1 error, nothing changed:", "bad.yaml:2: not valid YAML: did not find expected node content"}},
			{"not a list", "schedule_id: a\n", []string{"bad.yaml:1: the file must be a list of schedules"}},
			{"unknown fields and types", "- schedule_id: a\n  spec: {cron_expressions: ['@daily'], tz: UTC}\n  action: {workflow_type: w}\n  colour: blue\n" +
				"- schedule_id: b\n  spec: {cron_expressions: ['@daily']}\n  action: {workflow_type: w}\n  jitter_seconds: soon\n",
				[]string{"bad.yaml: 3 errors", `bad.yaml:2: unknown field "spec.tz"`, `bad.yaml:4: unknown field "colour"`,
					"bad.yaml:8: jitter_seconds must be a number, not string"}},
			{"duplicate and missing IDs", "- schedule_id: a\n  action: {workflow_type: w}\n- schedule_id: a\n- action: {workflow_type: w}\n",
				[]string{`bad.yaml:3: schedule_id "a" appears twice (first at line 1)`, "bad.yaml:4: schedule_id is required"}},
			{"service validation, all or nothing", "- schedule_id: good\n  spec: {cron_expressions: ['@daily']}\n  action: {workflow_type: w}\n" +
				"- schedule_id: never\n  spec:\n    cron_expressions:\n      - '0 0 30 2 *'\n  action: {workflow_type: w}\n  overlap_policy: sometimes\n",
				[]string{"bad.yaml: 2 errors", `bad.yaml:7: never: spec_never_fires: spec.cron_expressions[0]: "0 0 30 2 *" never fires`,
					"\n  " /* sorted by line */, "bad.yaml:9: never: spec_never_fires: overlap_policy: must be one of"}},
			{"field errors on their lines", "- schedule_id: x\n  spec: {cron_expressions: ['@daily']}\n  action:\n    workflow_type: w\n    run_timeout_seconds: -5\n  overlap_policy: sometimes\n",
				[]string{"bad.yaml: 2 errors", "bad.yaml:5: x: validation_failed: action.run_timeout_seconds: must be a positive number",
					"bad.yaml:6: x: validation_failed: overlap_policy: must be one of"}},
		}
		for _, tc := range cases {
			_, err := d.fail(t, "schedule", "apply", "-f", writeFile(t, "bad.yaml", tc.file))
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w, tc.name)
			}
		}
		require.Equal(t, "No schedules in namespace default.\n", d.run(t, "schedule", "list"), "no document was written")
	})
}

func TestScheduleUpdate(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		d.run(t, "schedule", "add", "job", "--workflow-type", "w", "--cron", "0 2 * * *", "--max-runs", "10", "--queue", "q",
			"--label", "team=data", "--memo", "owner=ana", "--run-timeout", "10m", "--execution-timeout", "3600", "--note", "n")
		describe := d.run(t, "schedule", "describe", "job")
		require.Regexp(t, `\nExecution timeout: +3600s\nRun timeout: +600s\n`, describe)
		require.Regexp(t, `\nLabels: +team=data\nMemo: +owner=ana\n`, describe)

		out := d.run(t, "schedule", "update", "job", "--cron", "0 3 * * *", "--timezone", "Europe/Kyiv", "--dry-run")
		require.Equal(t, "~ job\n    cron_expressions: 0 2 * * * → 0 3 * * *\n    timezone: UTC → Europe/Kyiv\nDry run: nothing changed.\n", out)

		out = d.run(t, "schedule", "update", "job", "--cron", "0 3 * * *", "--clear", "max_runs", "--clear", "queue",
			"--clear", "run_timeout_seconds", "--label", "team=ops", "--overlap", "allow_all")
		require.Equal(t, "~ job\n"+
			"    cron_expressions: 0 2 * * * → 0 3 * * *\n"+
			"    run_timeout_seconds: 600 → (none)\n"+
			"    overlap_policy: skip → allow_all\n"+
			"    max_runs: 10 → (none)\n"+
			"    queue: q → (none)\n"+
			"    labels: team=data → team=ops\n"+
			"Updated schedule job: changed spec, action, overlap_policy, max_runs, queue, labels.\n", out)
		require.Equal(t, "No changes: schedule job already matches.\n", d.run(t, "schedule", "update", "job", "--overlap", "allow_all"))

		var sch map[string]any
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "job", "--output", "json")), &sch))
		require.Nil(t, sch["max_runs"])
		require.Nil(t, sch["queue"])
		require.Equal(t, map[string]any{"owner": "ana"}, sch["memo"], "untouched fields stay")
		require.Equal(t, map[string]any{"workflow_type": "w", "execution_timeout_seconds": 3600.0, "run_timeout_seconds": nil, "retry_policy": nil,
			"target": map[string]any{"kind": "worker"}}, sch["action"])

		_, err := d.fail(t, "schedule", "update", "job", "--max-runs", "0")
		require.Contains(t, err.Error(), "validation_failed: max_runs:")
		_, _, err = runCLI(t, d.environ, "schedule", "update", "job")
		requireExit(t, 2, err)
		require.ErrorContains(t, err, "nothing to update")
		_, _, err = runCLI(t, d.environ, "schedule", "update", "job", "--clear", "spec")
		requireExit(t, 2, err)
		_, err = d.fail(t, "schedule", "update", "absent", "--note", "x")
		require.EqualError(t, err, `schedule_not_found: schedule "absent" not found in namespace "default"`)
	})
}

func TestRuns(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		require.Equal(t, "No runs.\n", d.run(t, "runs", "list"))
		d.run(t, "schedule", "add", "job", "--workflow-type", "w", "--cron", "@daily", "--overlap", "allow_all")
		var trig struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "trigger", "job", "--output", "json")), &trig))
		var second struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "trigger", "job", "--output", "json")), &second))

		list := d.run(t, "runs", "list", "--schedule", "job")
		lines := strings.Split(strings.TrimSpace(list), "\n")
		require.Len(t, lines, 3, list)
		require.Regexp(t, `^Run ID +Schedule +Workflow Type +Status +Attempt +Occurrence +Created At +Finished At$`, lines[0])
		require.Regexp(t, `^`+second.RunID+` +job +w +pending +1 +\S+Z +\S+Z +-$`, lines[1], "newest first")

		require.Equal(t, "Cancel requested for run "+trig.RunID+"; its status is now cancelled (a pending run stops at once).\n",
			d.run(t, "runs", "cancel", trig.RunID, "--reason", "test"))
		require.Equal(t, "Terminated run "+second.RunID+"; its status is now terminated.\n", d.run(t, "runs", "terminate", second.RunID))
		out := d.run(t, "runs", "list", "--status", "terminated", "--output", "json")
		var runs []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &runs))
		require.Len(t, runs, 1)
		require.Equal(t, second.RunID, runs[0]["run_id"])

		describe := d.run(t, "runs", "describe", trig.RunID)
		require.Regexp(t, `^Run: +`+trig.RunID+`\nInstance: +schedule:job:manual:`, describe)
		require.Regexp(t, `\nStatus: +cancelled\n`, describe)
		require.Contains(t, describe, "\nHistory:\n")
		_, err := d.fail(t, "runs", "describe", "01KP2M3N4Q5R6S7T8V9W0XYZAB")
		require.Contains(t, err.Error(), "run_not_found")
	})
}

// The run-outcome fields have flags on add and update, in both modes: the
// retry policy (defaults filled in by the server) and pause on failure.
func TestOutcomeFlags(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		d.run(t, "schedule", "add", "job", "--workflow-type", "w", "--cron", "0 2 * * *",
			"--max-attempts", "4", "--retry-initial", "30s", "--non-retryable", "bad_input", "--pause-after-failures", "3")
		describe := d.run(t, "schedule", "describe", "job")
		require.Regexp(t, `\nRetries: +4 attempts, 30s × 2 up to 3000s; never retried: bad_input\n`, describe)
		require.Regexp(t, `\nPause after: +3 consecutive failures\n`, describe)

		out := d.run(t, "schedule", "update", "job", "--retry-coefficient", "3", "--pause-after-failures", "5")
		require.Equal(t, "~ job\n"+
			"    retry_policy: max_attempts=4 initial=30s coefficient=2 max=3000s non_retryable=bad_input → max_attempts=4 initial=30s coefficient=3 max=3000s non_retryable=bad_input\n"+
			"    pause_after_failures: 3 → 5\n"+
			"Updated schedule job: changed action, pause_after_failures.\n", out)
		var sch map[string]any
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "job", "--output", "json")), &sch))
		require.Equal(t, map[string]any{"max_attempts": 4.0, "initial_interval_seconds": 30.0, "backoff_coefficient": 3.0,
			"max_interval_seconds": 3000.0, "non_retryable_error_types": []any{"bad_input"}}, sch["action"].(map[string]any)["retry_policy"])
		require.EqualValues(t, 5, sch["pause_after_failures"])

		d.run(t, "schedule", "update", "job", "--clear", "retry_policy", "--clear", "pause_after_failures")
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "job", "--output", "json")), &sch))
		require.Nil(t, sch["action"].(map[string]any)["retry_policy"])
		require.Nil(t, sch["pause_after_failures"])

		_, err := d.fail(t, "schedule", "update", "job", "--max-attempts", "101")
		require.Contains(t, err.Error(), "action.retry_policy.max_attempts")

		d.run(t, "schedule", "update", "job", "--start-deadline", "15m")
		require.Regexp(t, `\nStart deadline: +15m0s after the occurrence \(run_not_started\)\n`, d.run(t, "schedule", "describe", "job"))
		d.run(t, "schedule", "update", "job", "--clear", "start_deadline_seconds")
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "job", "--output", "json")), &sch))
		require.Nil(t, sch["start_deadline_seconds"])
	})
}
