package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/cli"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// definitionNow is the schedule's definition as export writes it.
func definitionNow(t *testing.T, f *apiFixture, id string) apijson.CreateSchedule {
	t.Helper()
	res := f.do("GET", v2+"/schedules/"+id, "")
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var s apijson.Schedule
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &s))
	return apijson.ExportOf(&s)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func versionDetail(t *testing.T, f *apiFixture, id string, n int) apijson.VersionDetail {
	t.Helper()
	res := f.do("GET", v2+"/schedules/"+id+"/versions/"+strconv.Itoa(n), "")
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var v apijson.VersionDetail
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &v))
	return v
}

// A schedule changed through every surface — the API, the console's form,
// the CLI, apply, and a revert — has a version per change whose definition
// is exactly what the change left.
func TestVersionsThroughEverySurface(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		f := c.api
		srv := httptest.NewServer(f.h)
		t.Cleanup(srv.Close)
		var want []apijson.CreateSchedule
		step := func() { want = append(want, definitionNow(t, f, "daily-sync")) }

		f.must(201, "POST", v2+"/schedules", dailyBody) // API
		step()
		f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"jitter_seconds": 30, "max_runs": 50, "pause_after_failures": 3}`)
		step()

		form := formValues(c.page200("/waterline/schedules/daily-sync/edit").Find(tid("schedule-form"))) // console
		form.Set("cron_expressions", "15 4 * * *")
		form.Set("labels", "team=billing\ntier=1")
		seeOther(t, c.post("/waterline/schedules/daily-sync/edit", form))
		step()

		run := func(args ...string) string { // the CLI, through the API
			t.Helper()
			var out, errOut bytes.Buffer
			env := map[string]string{"TIDELINE_SERVER": srv.URL, "TIDELINE_LOG_LEVEL": "warn"}
			err := cli.Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
			require.NoError(t, err, "tideline %s: %s", strings.Join(args, " "), errOut.String())
			return out.String()
		}
		run("schedule", "update", "daily-sync", "--note", "from the cli", "--queue", "fast")
		step()
		exported := run("schedule", "export")
		exported = strings.Replace(exported, "15 4 * * *", "45 5 * * *", 1)
		file := filepath.Join(t.TempDir(), "s.yaml")
		require.NoError(t, os.WriteFile(file, []byte(exported), 0o644))
		run("schedule", "apply", "-f", file)
		step()
		run("schedule", "revert", "daily-sync", "2", "--yes")
		step()
		require.JSONEq(t, jsonOf(t, want[1]), jsonOf(t, want[5]), "the revert brought version 2 back")
		f.must(200, "POST", v2+"/schedules/daily-sync/versions/4/revert", `{"reason":"back to the cli's"}`) // a revert through the API
		step()

		list := f.must(200, "GET", v2+"/schedules/daily-sync/versions", "")
		versions := list["versions"].([]any)
		require.Len(t, versions, len(want))
		var sources []string
		for i, raw := range versions {
			v := raw.(map[string]any)
			sources = append(sources, v["source"].(string))
			require.JSONEq(t, jsonOf(t, want[i]), jsonOf(t, versionDetail(t, f, "daily-sync", i+1).Definition), "version %d", i+1)
			require.Empty(t, v["unrecorded_fields"])
		}
		require.Equal(t, []string{"api", "api", "console", "cli", "apply", "revert", "revert"}, sources)
		last := versions[6].(map[string]any)
		require.EqualValues(t, 4, last["reverted_to"])
		cc := last["command_context"].(map[string]any)
		require.Equal(t, []any{"api", "back to the cli's"}, []any{cc["source"], cc["reason"]})
		require.Equal(t, "cli", versions[5].(map[string]any)["command_context"].(map[string]any)["source"])
	})
}

func TestVersionsAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", dailyBody)
		f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"note":"edited","spec":{"cron_expressions":["0 6 * * *"],"timezone":"America/New_York"}}`)

		diff := f.must(200, "GET", v2+"/schedules/daily-sync/versions/diff", "")
		require.EqualValues(t, 1, diff["from"])
		require.EqualValues(t, 2, diff["to"])
		require.Equal(t, []any{
			map[string]any{"field": "cron_expressions", "from": "30 2 * * *", "to": "0 6 * * *"},
			map[string]any{"field": "note", "from": "nightly", "to": "edited"},
		}, diff["changes"])

		plan := f.must(200, "POST", v2+"/schedules/daily-sync/versions/1/revert?dry_run=true", "")
		require.Equal(t, []any{"spec", "note"}, plan["changed_fields"])
		require.Equal(t, "2026-07-17T10:00:00.000000Z", plan["fire_times_before"].([]any)[0])
		require.Equal(t, "2026-07-17T06:30:00.000000Z", plan["fire_times_after"].([]any)[0])
		require.Len(t, f.must(200, "GET", v2+"/schedules/daily-sync/versions", "")["versions"], 2, "a dry run writes nothing")

		reverted := f.must(200, "POST", v2+"/schedules/daily-sync/versions/1/revert", "")
		require.Equal(t, "nightly", reverted["note"])
		require.Equal(t, "2026-07-17T06:30:00.000000Z", reverted["next_fire_at"])

		for _, tc := range []struct {
			method, path, body string
			status             int
			code               string
		}{
			{"POST", "/versions/3/revert", "", http.StatusConflict, "no_change"},
			{"POST", "/versions/1/revert", "", http.StatusConflict, "no_change"},
			{"GET", "/versions/4", "", http.StatusNotFound, "version_not_found"},
			{"GET", "/versions/0", "", http.StatusUnprocessableEntity, "validation_failed"},
			{"GET", "/versions/x", "", http.StatusUnprocessableEntity, "validation_failed"},
			{"GET", "/versions/diff?from=1&to=9", "", http.StatusNotFound, "version_not_found"},
			{"GET", "/versions/diff?from=-1", "", http.StatusUnprocessableEntity, "validation_failed"},
			{"POST", "/versions/2/revert", `{"reasn":"typo"}`, http.StatusBadRequest, "invalid_json"},
		} {
			res := f.do(tc.method, v2+"/schedules/daily-sync"+tc.path, tc.body)
			require.Equal(t, tc.status, res.Status, "%s %s: %s", tc.method, tc.path, res.Raw)
			code, _ := errorOf(t, res.Body)
			require.Equal(t, tc.code, code, tc.path)
		}
		require.Equal(t, http.StatusNotFound, f.do("GET", v2+"/schedules/nope/versions", "").Status)

		// The source header of Tideline's own tools; anything else is refused.
		f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"note":"a"}`, "X-Tideline-Source", "apply")
		f.must(422, "PATCH", v2+"/schedules/daily-sync", `{"note":"x"}`, "X-Tideline-Source", "scheduler")
		f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"note":"b"}`)
		vs := f.must(200, "GET", v2+"/schedules/daily-sync/versions", "")["versions"].([]any)
		require.Equal(t, "apply", vs[3].(map[string]any)["source"])
		require.Equal(t, "api", vs[4].(map[string]any)["source"])

		// Shapes as web/openapi.json documents them.
		_, _, doc := openAPIFixture(t)
		same := func(name string, body map[string]any) {
			t.Helper()
			require.Equal(t, oapiProperties(t, doc, map[string]any{"$ref": "#/components/schemas/" + name}), oapiKeys(body), "fields of %s", name)
		}
		same("VersionList", f.must(200, "GET", v2+"/schedules/daily-sync/versions", ""))
		same("Version", vs[0].(map[string]any))
		same("VersionDetail", f.must(200, "GET", v2+"/schedules/daily-sync/versions/2", ""))
		same("VersionDiff", diff)
		same("FieldComparison", diff["fields"].([]any)[0].(map[string]any))
		same("RevertPlan", plan)
	})
}

// The console's Versions tab, comparison and revert work as plain links
// and forms.
func TestConsoleVersionsWithoutJavaScript(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)
		c.api.must(200, "PATCH", v2+"/schedules/daily-sync", `{"note":"edited","spec":{"cron_expressions":["0 6 * * *"],"timezone":"America/New_York"}}`)

		detail := c.page200("/waterline/schedules/daily-sync")
		require.Equal(t, "/waterline/schedules/daily-sync/versions", attrOf(t, detail.Find(tid("tab-versions")), "href"))

		doc := c.page200("/waterline/schedules/daily-sync/versions")
		rows := doc.Find(tid("version-row"))
		require.Equal(t, 2, rows.Length())
		require.Equal(t, "2", rows.First().AttrOr("data-n", ""), "newest first")
		require.Equal(t, "spec, note", textOf(rows.First().Find(tid("version-changed"))))
		require.Equal(t, "api", textOf(rows.First().Find(tid("version-source"))))
		require.Equal(t, 1, rows.First().Find(tid("version-current")).Length())
		require.Zero(t, rows.First().Find(tid("version-revert")).Length(), "the current version has nothing to revert to")
		form := doc.Find(tid("versions-form"))
		require.Equal(t, "get", attrOf(t, form, "method"))
		require.Equal(t, "/waterline/schedules/daily-sync/versions/diff", attrOf(t, form, "action"))
		values := formValues(form)
		require.Equal(t, "1", values.Get("from"))
		require.Equal(t, "2", values.Get("to"))

		diff := c.page200("/waterline/schedules/daily-sync/versions/diff?" + values.Encode())
		changed := diff.Find(`[data-testid="diff-row"][data-changed="true"]`)
		require.Equal(t, 2, changed.Length())
		note := diff.Find(`[data-testid="diff-row"][data-field="note"]`)
		require.Equal(t, "nightly", textOf(note.Find("del")))
		require.Equal(t, "edited", textOf(note.Find("ins")))
		require.Equal(t, "2 fields differ.", textOf(diff.Find(tid("diff-summary"))))

		confirmURL := attrOf(t, rows.Last().Find(tid("version-revert")), "href")
		require.Equal(t, "/waterline/schedules/daily-sync/versions/1/revert", confirmURL)
		confirm := c.page200(confirmURL)
		before, after := confirm.Find(tid("fire-before")), confirm.Find(tid("fire-after"))
		require.Equal(t, 5, before.Length())
		require.Equal(t, 5, after.Length())
		require.Contains(t, before.First().Find("time").AttrOr("datetime", ""), "T10:00:00")
		require.Contains(t, after.First().Find("time").AttrOr("datetime", ""), "T06:30:00")
		require.Equal(t, 2, confirm.Find(`[data-testid="revert-changes"] [data-testid="change"]`).Length())
		post := confirm.Find(tid("revert-form"))
		require.Equal(t, "post", attrOf(t, post, "method"))
		require.Len(t, c.api.must(200, "GET", v2+"/schedules/daily-sync/versions", "")["versions"], 2, "the confirm page writes nothing")

		p := c.post(attrOf(t, post, "action"), url.Values{"reason": {"undo"}})
		require.Equal(t, "/waterline/schedules/daily-sync", seeOther(t, p))
		require.Contains(t, textOf(c.page200("/waterline/schedules/daily-sync").Find(tid("flash"))), "Reverted daily-sync to version 1.")
		vs := c.api.must(200, "GET", v2+"/schedules/daily-sync/versions", "")["versions"].([]any)
		require.Len(t, vs, 3)
		cc := vs[2].(map[string]any)["command_context"].(map[string]any)
		require.Equal(t, []any{"ui", "undo"}, []any{cc["source"], cc["reason"]})

		// Reverting again changes nothing: the confirm says so, a post is refused.
		require.Equal(t, 1, c.page200(confirmURL).Find(tid("revert-no-change")).Length())
		p = c.post(confirmURL, url.Values{})
		require.Equal(t, "/waterline/schedules/daily-sync/versions", seeOther(t, p))
		require.Contains(t, textOf(c.page200("/waterline/schedules/daily-sync/versions").Find(tid("flash"))), "already matches version 1")
		require.Equal(t, http.StatusNotFound, c.get("/waterline/schedules/daily-sync/versions/9/revert").Status)
	})
}

// Schedules kept by apply and edited outside it are marked and listed.
func TestConsoleDrift(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		managed := `,"labels":{"tideline.dev/managed-by":"apply"}}`
		for _, id := range []string{"kept", "edited"} {
			c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"`+id+`","cron":"0 * * * *","action":{"workflow_type":"w"}`+managed, "X-Tideline-Source", "apply")
		}
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"handmade","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		c.api.must(200, "PATCH", v2+"/schedules/edited", `{"note":"hotfix"}`)

		doc := c.page200("/waterline/schedules")
		require.Equal(t, 1, rowOf(doc, "edited").Find(tid("drifted")).Length())
		require.Zero(t, rowOf(doc, "kept").Find(tid("drifted")).Length())
		require.Zero(t, rowOf(doc, "handmade").Find(tid("drifted")).Length())
		list := c.page200(attrOf(t, doc.Find(tid("drift-chip")), "href"))
		require.Equal(t, []string{"edited"}, rowIDs(list))
		require.Equal(t, "true", list.Find(tid("drift-chip")).AttrOr("aria-current", ""))

		detail := c.page200("/waterline/schedules/edited")
		notice := detail.Find(tid("drift-notice"))
		require.Contains(t, textOf(notice), "since its last apply (version 1)")
		require.Equal(t, "/waterline/schedules/edited/versions/diff?from=1&to=2", attrOf(t, notice.Find(tid("drift-diff")), "href"))
		require.Zero(t, c.page200("/waterline/schedules/kept").Find(tid("drift-notice")).Length())
	})
}
