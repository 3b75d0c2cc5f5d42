package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const calendarFile = `# a calendar and the schedule that lists it, in one file
- kind: calendar
  name: hol
  description: Holidays
  dates: [2099-12-26, 2099-12-25]
- schedule_id: payroll
  spec:
    cron_expressions: ["0 9 * * 1-5"]
    timezone: America/New_York
    exclude_calendars: [hol]
    on_excluded: next_business_day
  action: {workflow_type: payroll.Run}
`

// Calendars in apply files, on both dialects and in both modes: a file
// holding a calendar and a schedule that lists it applies in one go on an
// empty namespace, re-applying changes nothing, a changed date shows in
// the plan and in diff (exit 2) and applies, a calendar added beside a
// schedule that starts listing it, and export | apply round-trips.
func TestApplyCalendars(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		file := writeFile(t, "schedules.yaml", calendarFile)
		plan := "+ create calendar hol\n" +
			"    description: Holidays\n" +
			"    weekend: sun,sat\n" +
			"    dates: 2099-12-25, 2099-12-26\n" +
			"+ create payroll\n" +
			"    cron_expressions: (none) → 0 9 * * 1-5\n" +
			"    timezone: UTC → America/New_York\n" +
			"    exclude_calendars: (none) → hol\n" +
			"    on_excluded: (none) → next_business_day\n" +
			"    workflow_type: (none) → payroll.Run\n" +
			"    overlap_policy: (none) → skip\n" +
			"    labels: (none) → tideline.dev/managed-by=apply\n" +
			"Calendars: 1 to create, 0 to update, 0 unchanged.\n" +
			"Plan: 1 to create, 0 to update, 0 to delete, 0 unchanged.\n"
		require.Equal(t, plan+"Dry run: nothing changed.\n", d.run(t, "schedule", "apply", "-f", file, "--dry-run"))
		require.Equal(t, "No calendars.\n", d.run(t, "calendar", "list"), "a dry run creates nothing")
		_, _, err := runCLI(t, d.environ, "schedule", "diff", "-f", file)
		requireExit(t, 2, err)

		require.Equal(t, plan+"Applied calendars: 1 created, 0 updated.\nApplied: 1 created, 0 updated, 0 deleted.\n",
			d.run(t, "schedule", "apply", "-f", file))
		require.Contains(t, d.run(t, "calendar", "describe", "hol"), "Used by:     payroll")
		require.Contains(t, d.run(t, "calendar", "describe", "hol"), "Managed by:  apply (change the schedules file, not the calendar)\n")
		require.Contains(t, d.run(t, "schedule", "describe", "payroll"), "except days in hol (moved to the next business day)")

		again := "Calendars: 0 to create, 0 to update, 1 unchanged.\nPlan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n"
		require.Equal(t, again, d.run(t, "schedule", "apply", "-f", file), "re-applying changes nothing")
		require.Equal(t, again+"In sync: the namespace matches the file.\n", d.run(t, "schedule", "diff", "-f", file))

		// A changed date: in the plan, in diff (exit 2), then applied.
		moved := writeFile(t, "moved.yaml", strings.Replace(calendarFile, "2099-12-26", "2099-12-24", 1))
		changed := "~ update calendar hol\n" +
			"    dates added: 2099-12-24\n" +
			"    dates removed: 2099-12-26\n" +
			"Calendars: 0 to create, 1 to update, 0 unchanged.\n" +
			"Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n"
		out, _, err := runCLI(t, d.environ, "schedule", "diff", "-f", moved)
		requireExit(t, 2, err)
		require.Equal(t, changed, out)
		require.Equal(t, changed+"Applied calendars: 0 created, 1 updated.\n", d.run(t, "schedule", "apply", "-f", moved))
		var cal struct {
			Dates []string `json:"dates"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "calendar", "describe", "hol", "--output", "json")), &cal))
		require.Equal(t, []string{"2099-12-24", "2099-12-25"}, cal.Dates)

		// A new calendar and an existing schedule that starts listing it.
		more := strings.Replace(strings.Replace(calendarFile, "2099-12-26", "2099-12-24", 1), "exclude_calendars: [hol]", "exclude_calendars: [hol, closures]", 1) +
			"- kind: calendar\n  name: closures\n  weekend: [fri, sat]\n  dates: [\"2099-07-01\"]\n"
		require.Equal(t, "+ create calendar closures\n"+
			"    weekend: fri,sat\n"+
			"    dates: 2099-07-01\n"+
			"~ update payroll\n"+
			"    exclude_calendars: hol → hol, closures\n"+
			"Calendars: 1 to create, 0 to update, 1 unchanged.\n"+
			"Plan: 0 to create, 1 to update, 0 to delete, 0 unchanged.\n"+
			"Applied calendars: 1 created, 0 updated.\n"+
			"Applied: 0 created, 1 updated, 0 deleted.\n", d.run(t, "schedule", "apply", "-f", writeFile(t, "more.yaml", more)))

		// Export writes the calendars the schedules list, first; applying
		// it changes nothing, in YAML and in JSON.
		exported := d.run(t, "schedule", "export")
		require.Contains(t, exported, "- kind: calendar\n  name: closures\n  description: \"\"\n  weekend:\n    - fri\n    - sat\n  dates:\n    - \"2099-07-01\"\n")
		require.Less(t, strings.Index(exported, "name: hol"), strings.Index(exported, "schedule_id: payroll"))
		unchanged := "Calendars: 0 to create, 0 to update, 2 unchanged.\nPlan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n"
		require.Equal(t, unchanged, d.run(t, "schedule", "apply", "-f", writeFile(t, "export.yaml", exported)))
		require.Equal(t, unchanged, d.run(t, "schedule", "apply", "-f", writeFile(t, "export.json", d.run(t, "schedule", "export", "--output", "json"))))

		// Prune mirrors schedules: a calendar apply wrote last and the file
		// no longer lists is kept (and named) without --prune, deleted with
		// it once no schedule lists it; calendars made or edited by hand stay.
		d.run(t, "calendar", "add", "by-hand")
		d.run(t, "schedule", "apply", "-f", writeFile(t, "taken.yaml", "- kind: calendar\n  name: taken\n"))
		d.run(t, "calendar", "update", "taken", "--description", "ours now")
		require.NotContains(t, d.run(t, "calendar", "describe", "taken"), "Managed by", "a change by hand takes it over")
		d.run(t, "schedule", "apply", "-f", writeFile(t, "lone.yaml", "- kind: calendar\n  name: lone\n"))
		lessFile := writeFile(t, "less.yaml", strings.Replace(calendarFile, "2099-12-26", "2099-12-24", 1))
		require.Equal(t, "~ update payroll\n"+
			"    exclude_calendars: hol, closures → hol\n"+
			"Calendars: 0 to create, 0 to update, 1 unchanged.\n"+
			"Plan: 0 to create, 1 to update, 0 to delete, 0 unchanged.\n"+
			"Calendars not in the file but managed by apply (kept; --prune deletes them): closures, lone\n"+
			"Dry run: nothing changed.\n", d.run(t, "schedule", "apply", "-f", lessFile, "--dry-run"))
		require.Equal(t, "~ update payroll\n"+
			"    exclude_calendars: hol, closures → hol\n"+
			"- delete calendar closures (managed by apply, not in the file)\n"+
			"- delete calendar lone (managed by apply, not in the file)\n"+
			"Calendars: 0 to create, 0 to update, 1 unchanged, 2 to delete.\n"+
			"Plan: 0 to create, 1 to update, 0 to delete, 0 unchanged.\n"+
			"Applied calendars: 0 created, 0 updated, 2 deleted.\n"+
			"Applied: 0 created, 1 updated, 0 deleted.\n", d.run(t, "schedule", "apply", "-f", lessFile, "--prune"))
		list := d.run(t, "calendar", "list")
		require.Contains(t, list, "by-hand")
		require.Contains(t, list, "taken")
		require.NotContains(t, list, "closures")
		require.NotContains(t, list, "lone")
		// Still listed by a schedule the file does not delete: kept.
		only := writeFile(t, "only.yaml", "- kind: calendar\n  name: other\n")
		require.Equal(t, "+ create calendar other\n    weekend: sun,sat\n    dates: (none)\n"+
			"Calendars: 1 to create, 0 to update, 0 unchanged.\n"+
			"Plan: 0 to create, 0 to update, 0 to delete, 0 unchanged.\n"+
			"Not in the file but managed by apply (kept; --prune deletes them): payroll\n"+
			"Calendars not in the file but managed by apply, kept while schedules list them: hol (used by payroll)\n"+
			"Dry run: nothing changed.\n", d.run(t, "schedule", "apply", "-f", only, "--dry-run"))
	})
}

// A file's calendars are validated with its schedules before anything is
// written, and errors name their lines.
func TestApplyCalendarErrors(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		cases := []struct {
			name, file string
			want       []string
		}{
			{"unknown calendar field", "- kind: calendar\n  name: a\n  colour: red\n",
				[]string{`bad.yaml:3: unknown field "colour"; fields are kind, name, description, weekend, dates`}},
			{"bad calendar fields", "- kind: calendar\n  name: Bad Name\n  dates: [tomorrow]\n",
				[]string{"bad.yaml: 2 errors", `bad.yaml:2: calendar Bad Name: validation_failed: name: must be`,
					"bad.yaml:3: calendar Bad Name: validation_failed: dates[0]:"}},
			{"unknown kind, no name, twice", "- kind: holiday\n- kind: calendar\n- kind: calendar\n  name: a\n- kind: calendar\n  name: a\n",
				[]string{`bad.yaml:1: kind must be calendar or schedule (the default), not "holiday"`, "bad.yaml:2: a calendar needs a name",
					`bad.yaml:6: calendar "a" appears twice (first at line 4)`}},
			{"a calendar neither in the file nor the namespace", "- kind: calendar\n  name: a\n- schedule_id: s\n  spec:\n    cron_expressions: ['@daily']\n    exclude_calendars: [a, b]\n  action: {workflow_type: w}\n",
				[]string{"bad.yaml:6: s: validation_failed: spec.exclude_calendars[1]: unknown calendar \"b\"", "or add it to the file as a kind: calendar item"}},
			{"a file calendar that leaves no business day", "- kind: calendar\n  name: a\n  weekend: [mon, tue, wed, thu, fri, sat, sun]\n" +
				"- schedule_id: s\n  spec:\n    cron_expressions: ['@daily']\n    exclude_calendars: [a]\n    on_excluded: next_business_day\n  action: {workflow_type: w}\n",
				[]string{"bad.yaml:8: s: validation_failed: spec.on_excluded: the listed calendars' weekends cover every day"}},
		}
		for _, tc := range cases {
			_, err := d.fail(t, "schedule", "apply", "-f", writeFile(t, "bad.yaml", tc.file))
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w, tc.name)
			}
		}
		require.Equal(t, "No calendars.\n", d.run(t, "calendar", "list"), "nothing was written")
	})
}
