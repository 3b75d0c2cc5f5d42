package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const versionsFile = `- schedule_id: nightly
  spec:
    cron_expressions: ["0 2 * * *"]
  action:
    workflow_type: sync.Nightly
  note: from the file
`

func TestScheduleVersionsRevertAndDiff(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		file := writeFile(t, "schedules.yaml", versionsFile)
		d.run(t, "schedule", "apply", "-f", file)
		inSync := "Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\nIn sync: the namespace matches the file.\n"
		require.Equal(t, inSync, d.run(t, "schedule", "diff", "-f", file))

		// An edit outside apply is drift: diff prints apply's plan, exits 2.
		d.run(t, "schedule", "update", "nightly", "--note", "hotfix", "--cron", "0 4 * * *")
		out, _, err := runCLI(t, d.environ, "schedule", "diff", "-f", file)
		requireExit(t, 2, err)
		drift := out
		require.Equal(t, "~ update nightly\n"+
			"    cron_expressions: 0 4 * * * → 0 2 * * *\n"+
			"    note: hotfix → from the file\n"+
			"Plan: 0 to create, 1 to update, 0 to delete, 0 unchanged.\n", out)

		out = d.run(t, "schedule", "versions", "nightly")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 3, out)
		require.Regexp(t, `^N +Recorded At +Source +Actor +Changed$`, lines[0])
		require.Regexp(t, `^1 +\S+ +apply +alice +\(created\)$`, lines[1])
		require.Regexp(t, `^2 +\S+ +cli +alice +spec, note$`, lines[2])

		// --show prints a file apply reads, identical to the one applied.
		shown := d.run(t, "schedule", "versions", "nightly", "--show", "1")
		require.Contains(t, shown, "# Version 1 of nightly, recorded ")
		require.Contains(t, shown, "by alice (apply).\n")
		docs, err := parseFile("v1.yaml", []byte(shown))
		require.NoError(t, err)
		require.Len(t, docs, 1)
		require.Equal(t, []string{"0 2 * * *"}, docs[0].req.Spec.CronExpressions)
		require.Equal(t, "from the file", docs[0].req.Note)
		out, _, err = runCLI(t, d.environ, "schedule", "diff", "-f", writeFile(t, "v1.yaml", shown))
		requireExit(t, 2, err)
		require.Equal(t, drift, out, "version 1 is what apply wrote")

		// Declined, then confirmed with --yes.
		d.environ["<stdin>"] = "n\n"
		out, _, err = runCLI(t, d.environ, "schedule", "revert", "nightly", "1")
		requireExit(t, 1, err)
		require.Contains(t, out, "~ revert nightly to version 1\n    cron_expressions: 0 4 * * * → 0 2 * * *\n    note: hotfix → from the file\n")
		require.Regexp(t, `Next fires now +After the revert\n\S+T04:00:00.000000Z +\S+T02:00:00.000000Z\n`, out)
		require.Contains(t, out, "Not reverted")
		delete(d.environ, "<stdin>")
		out = d.run(t, "schedule", "revert", "nightly", "1", "--yes", "--reason", "undo the hotfix")
		require.Regexp(t, `Reverted nightly to version 1; next fire \S+T02:00:00.000000Z\.\n$`, out)

		var list struct {
			Versions []struct {
				N          int64    `json:"n"`
				Source     string   `json:"source"`
				RevertedTo *int64   `json:"reverted_to"`
				Changed    []string `json:"changed_fields"`
				Context    struct {
					Source string `json:"source"`
					Reason string `json:"reason"`
				} `json:"command_context"`
			} `json:"versions"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "versions", "nightly", "--output", "json")), &list))
		require.Len(t, list.Versions, 3)
		last := list.Versions[2]
		require.Equal(t, "revert", last.Source)
		require.Equal(t, int64(1), *last.RevertedTo)
		require.Equal(t, []string{"spec", "note"}, last.Changed)
		require.Equal(t, "cli", last.Context.Source, "the revert's surface stays in its command context")
		require.Equal(t, "undo the hotfix", last.Context.Reason)
		// The content matches the file again, though not applied by apply.
		require.Equal(t, inSync, d.run(t, "schedule", "diff", "-f", file))

		_, err = d.fail(t, "schedule", "revert", "nightly", "3", "--yes")
		require.ErrorContains(t, explain(err), "no_change")
		_, err = d.fail(t, "schedule", "revert", "nightly", "9", "--yes")
		require.ErrorContains(t, explain(err), "version_not_found")
		_, _, err = runCLI(t, d.environ, "schedule", "revert", "nightly", "zero")
		requireExit(t, 2, err)

		// A new file is drift too (a schedule to create), and --prune counts strays.
		out, _, err = runCLI(t, d.environ, "schedule", "diff", "-f", writeFile(t, "empty.yaml", "[]\n"), "--prune")
		requireExit(t, 2, err)
		require.Equal(t, "- delete nightly (managed by apply, not in the file)\nPlan: 0 to create, 0 to update, 1 to delete, 0 unchanged.\n", out)
	})
}
