package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/cli"
	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/scheduling"
)

// fieldSample is how the round trip sets one field of the table on each
// surface: base is the value a schedule has without it (null for a
// nullable field), value another one; cli and form set value through the
// CLI's flags and the console's edit form (nil: the form has no input).
type fieldSample struct {
	base, value string
	cli         []string
	form        map[string]string
}

var fieldSamples = map[string]fieldSample{
	"spec": {base: `{"cron_expressions":["0 3 * * *"],"intervals":[],"timezone":"UTC"}`,
		value: `{"cron_expressions":["15 4 * * *"],"intervals":[{"every":"PT2H","offset":"PT5M"}],"timezone":"Europe/Zagreb"}`,
		cli:   []string{"--cron", "15 4 * * *", "--every", "PT2H offset PT5M", "--timezone", "Europe/Zagreb"},
		form:  map[string]string{"cron_expressions": "15 4 * * *", "intervals": "PT2H PT5M", "timezone": "Europe/Zagreb"}},
	"action": {base: `{"workflow_type":"base.Job","execution_timeout_seconds":null,"run_timeout_seconds":null,"retry_policy":null}`,
		value: `{"workflow_type":"etl.Load","workflow_class":"heavy","input":{"a":1},"execution_timeout_seconds":3600,"run_timeout_seconds":600,"retry_policy":null}`,
		cli:   []string{"--workflow-type", "etl.Load", "--workflow-class", "heavy", "--input", `{"a":1}`, "--execution-timeout", "3600", "--run-timeout", "600"},
		form: map[string]string{"workflow_type": "etl.Load", "workflow_class": "heavy", "input": `{"a":1}`,
			"execution_timeout_seconds": "3600", "run_timeout_seconds": "600"}},
	"overlap_policy": {base: `"skip"`, value: `"allow_all"`, cli: []string{"--overlap", "allow_all"},
		form: map[string]string{"overlap_policy": "allow_all"}},
	"jitter_seconds": {base: `0`, value: `30`, cli: []string{"--jitter", "30"}, form: map[string]string{"jitter_seconds": "30"}},
	"max_runs":       {base: `null`, value: `50`, cli: []string{"--max-runs", "50"}, form: map[string]string{"max_runs": "50"}},
	"pause_after_failures": {base: `null`, value: `3`, cli: []string{"--pause-after-failures", "3"},
		form: map[string]string{"pause_after_failures": "3"}},
	"catchup_window_seconds": {base: `null`, value: `600`, cli: []string{"--catchup-window", "600"},
		form: map[string]string{"catchup_window_seconds": "600"}},
	"start_deadline_seconds": {base: `null`, value: `120`, cli: []string{"--start-deadline", "120"},
		form: map[string]string{"start_deadline_seconds": "120"}},
	"connection":        {base: `null`, value: `"east"`, cli: []string{"--connection", "east"}, form: map[string]string{"connection": "east"}},
	"queue":             {base: `null`, value: `"q1"`, cli: []string{"--queue", "q1"}, form: map[string]string{"queue": "q1"}},
	"labels":            {base: `{}`, value: `{"team":"data"}`, cli: []string{"--label", "team=data"}, form: map[string]string{"labels": "team=data"}},
	"memo":              {base: `{}`, value: `{"owner":"ann"}`, cli: []string{"--memo", "owner=ann"}, form: map[string]string{"memo": "owner=ann"}},
	"search_attributes": {base: `{}`, value: `{"env":"prod"}`, cli: []string{"--search-attribute", "env=prod"}},
	"note":              {base: `""`, value: `"hello"`, cli: []string{"--note", "hello"}, form: map[string]string{"note": "hello"}},
}

// Every field of the table round-trips through every surface: API create
// and PATCH (null clearing a nullable field, refused for the others), the
// PATCH dry run's diff, the CLI's flags and --clear, the console's edit
// form, and export/apply. A field added to scheduling.Fields without a
// sample here fails, so no surface can be forgotten.
func TestEveryFieldRoundTripsThroughEverySurface(t *testing.T) {
	t.Parallel()
	for _, f := range scheduling.Fields {
		_, ok := fieldSamples[f.Key]
		require.True(t, ok, "field %q of scheduling.Fields has no round-trip sample", f.Key)
	}

	dir := t.TempDir()
	url := "sqlite:" + filepath.Join(dir, "x.db")
	env := map[string]string{"TIDELINE_DATABASE_URL": url, "TIDELINE_LOG_LEVEL": "warn", "USER": "alice"}
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		err := cli.Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
		require.NoError(t, err, "tideline %s\nstderr: %s", strings.Join(args, " "), errOut.String())
		return out.String()
	}
	run(t, "migrate")
	db, err := database.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	c := newConsole(t, db, "")
	api := c.api

	for _, f := range scheduling.Fields {
		s := fieldSamples[f.Key]
		id := "f-" + strings.ReplaceAll(f.Key, "_", "-")
		path := v2 + "/schedules/" + id
		// is asserts the schedule's field holds want (a JSON value; an
		// object is matched key by key, so served extras do not count).
		is := func(want, when string) {
			t.Helper()
			got := api.must(http.StatusOK, "GET", path, "")
			requireFieldValue(t, want, got[f.Key], "%s after %s", f.Key, when)
		}
		patch := func(value string) {
			t.Helper()
			api.must(http.StatusOK, "PATCH", path, `{"`+f.Key+`":`+value+`}`)
		}

		// API create with the field, then without it: its base.
		create := map[string]any{"schedule_id": id, "cron": "0 3 * * *", "action": json.RawMessage(`{"workflow_type":"base.Job"}`)}
		if f.Key == "spec" {
			delete(create, "cron")
		}
		create[f.Key] = json.RawMessage(s.value)
		body, err := json.Marshal(create)
		require.NoError(t, err)
		api.must(http.StatusCreated, "POST", v2+"/schedules", string(body))
		is(s.value, "create")

		// PATCH back to its base; null clears a nullable field only.
		patch(s.base)
		is(s.base, "PATCH to its base")
		if f.Nullable {
			patch(s.value)
			patch("null")
			is("null", "PATCH null")
		} else {
			r := api.do("PATCH", path, `{"`+f.Key+`":null}`)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: null is refused", f.Key)
			_, fields := errorOf(t, r.Body)
			require.Contains(t, fields, f.Key)
		}

		// The diff of a dry run names the field's parts and changes nothing.
		plan := api.must(http.StatusOK, "PATCH", path+"?dry_run=true", `{"`+f.Key+`":`+s.value+`}`)
		require.Equal(t, []any{f.Key}, plan["changed_fields"], f.Key)
		changes := plan["changes"].([]any)
		require.NotEmpty(t, changes, "%s: the diff shows the change", f.Key)
		for _, ch := range changes {
			require.Contains(t, f.Parts, ch.(map[string]any)["field"], "%s: a diff part of the field", f.Key)
		}
		is(s.base, "a dry run")

		// The CLI's flags, then --clear where the field has an empty value.
		run(t, append([]string{"schedule", "update", id}, s.cli...)...)
		is(s.value, "schedule update "+strings.Join(s.cli, " "))
		if f.Nullable || f.ClearJSON != "" {
			run(t, "schedule", "update", id, "--clear", f.Key)
			is(s.base, "--clear "+f.Key)
		} else {
			patch(s.base)
		}

		// The console's edit form.
		if s.form != nil {
			require.True(t, f.Console, "%s has console inputs in its sample but not in the table", f.Key)
			values := formValues(c.page200("/waterline/schedules/" + id + "/edit").Find(tid("schedule-form")))
			for name, v := range s.form {
				require.True(t, values.Has(name), "%s: the form has an input %q", f.Key, name)
				values.Set(name, v)
			}
			seeOther(t, c.post("/waterline/schedules/"+id+"/edit", values))
			is(s.value, "the console's edit form")
			patch(s.base)
		} else {
			require.False(t, f.Console, "%s: the table says the console has an input; give the sample its form values", f.Key)
		}

		// Export shows it; apply of the file without it restores the
		// base, and with it sets it again.
		patch(s.value)
		var docs []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(run(t, "schedule", "export", "--output", "json")), &docs))
		i := slices.IndexFunc(docs, func(d map[string]json.RawMessage) bool { return string(d["schedule_id"]) == `"`+id+`"` })
		require.GreaterOrEqual(t, i, 0, "%s exported", id)
		doc := docs[i]
		var exported any
		require.NoError(t, json.Unmarshal(doc[f.Key], &exported))
		requireFieldValue(t, s.value, exported, "%s in the export", f.Key)
		apply := func(doc map[string]json.RawMessage) {
			t.Helper()
			raw, err := json.Marshal([]any{doc})
			require.NoError(t, err)
			file := filepath.Join(dir, id+".json")
			require.NoError(t, os.WriteFile(file, raw, 0o600))
			run(t, "schedule", "apply", "-f", file)
		}
		if f.Key != "spec" && f.Key != "action" { // a document needs both
			value := doc[f.Key]
			delete(doc, f.Key)
			apply(doc)
			base := s.base
			if f.Key == "labels" { // apply marks what it manages
				base = `{"` + apijson.ManagedByLabel + `":"` + apijson.ManagedByApply + `"}`
			}
			is(base, "apply of a file without it")
			doc[f.Key] = value
		} else {
			patch(s.base)
		}
		apply(doc)
		is(s.value, "apply")
	}
}

// requireFieldValue asserts got (decoded JSON) holds want (JSON text): an
// object key by key, anything else whole; null matches an absent value.
func requireFieldValue(t *testing.T, want string, got any, msgAndArgs ...any) {
	t.Helper()
	var w any
	require.NoError(t, json.Unmarshal([]byte(want), &w))
	if wm, ok := w.(map[string]any); ok && len(wm) > 0 {
		gm, ok := got.(map[string]any)
		require.True(t, ok, append([]any{"want an object, got %v: "}, got)...)
		for k, v := range wm {
			require.Equal(t, v, gm[k], append([]any{"key " + k}, msgAndArgs...)...)
		}
		return
	}
	if wm, ok := w.(map[string]any); ok && len(wm) == 0 && got == nil {
		return // an empty map may be served as absent
	}
	require.Equal(t, w, got, msgAndArgs...)
}
