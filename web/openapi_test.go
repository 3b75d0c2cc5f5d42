package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
)

const openAPIPath = v2 + "/openapi.json"

var oapiMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPIFixture fetches the served document and the echo instance behind it.
func openAPIFixture(t *testing.T) (*apiFixture, *echo.Echo, map[string]any) {
	t.Helper()
	f := newAPI(t, dbtest.SQLite(t), "")
	e, ok := f.h.(*echo.Echo)
	require.True(t, ok, "web.NewServer returns *echo.Echo")
	res := f.do(http.MethodGet, openAPIPath, "")
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), res.Header.Get("Content-Type"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &doc), "the document is JSON")
	return f, e, doc
}

// oapiDocumentedPath turns a registered route path into the path the document
// uses for it: aliases map to their /waterline/api/v2 twins and echo's
// :param becomes {param}. ok is false for routes outside the JSON API.
func oapiDocumentedPath(path string) (string, bool) {
	switch {
	case path == "/healthz" || path == "/readyz":
	case strings.HasPrefix(path, v2+"/"):
	case strings.HasPrefix(path, "/api/v2/worker/"):
		path = v2 + "/worker/" + strings.TrimPrefix(path, "/api/v2/worker/")
	case strings.HasPrefix(path, "/api/"):
		path = v2 + "/" + strings.TrimPrefix(path, "/api/")
	default:
		return "", false
	}
	return oapiEchoParam.ReplaceAllString(path, "{$1}"), true
}

var (
	oapiEchoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	oapiPathParam = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)
)

// oapiOperations lists the document's "METHOD path" pairs.
func oapiOperations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	require.True(t, ok, "paths is an object")
	out := map[string]map[string]any{}
	for path, item := range paths {
		obj, ok := item.(map[string]any)
		require.True(t, ok, "path item %s is an object", path)
		for key, o := range obj {
			if !slices.Contains(oapiMethods, key) {
				continue
			}
			operation, ok := o.(map[string]any)
			require.True(t, ok, "%s %s is an object", key, path)
			out[strings.ToUpper(key)+" "+path] = operation
		}
	}
	return out
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	t.Parallel()
	_, _, doc := openAPIFixture(t)
	require.Equal(t, "3.0.3", doc["openapi"])
	info, ok := doc["info"].(map[string]any)
	require.True(t, ok, "info is an object")
	require.NotEmpty(t, info["title"])
	require.NotEmpty(t, info["version"])
	components, _ := doc["components"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	require.Contains(t, schemes, "bearerAuth")
}

// TestOpenAPICoversEveryRoute keeps the document and routes.go in step:
// every JSON API route (and its alias) is documented with its method, and
// every documented operation is a registered route.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	_, e, doc := openAPIFixture(t)
	documented := oapiOperations(t, doc)

	registered := map[string]bool{} // "METHOD path" as registered, {param} style
	var undocumented []string
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		registered[r.Method+" "+oapiEchoParam.ReplaceAllString(r.Path, "{$1}")] = true
		path, ok := oapiDocumentedPath(r.Path)
		if !ok || r.Path == openAPIPath {
			continue
		}
		if _, ok := documented[r.Method+" "+path]; !ok {
			undocumented = append(undocumented, r.Method+" "+r.Path+" (as "+path+")")
		}
	}
	sort.Strings(undocumented)
	require.Empty(t, undocumented, "routes missing from web/openapi.json")
	for _, must := range []string{"GET /healthz", "GET /readyz", "GET " + v2 + "/schedules", "POST " + v2 + "/worker/poll"} {
		require.True(t, registered[must], "sanity: %s is registered", must)
	}

	var stale []string
	for key := range documented {
		if !registered[key] {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	require.Empty(t, stale, "documented operations without a route")

	// The aliases the document promises exist for every v2 operation.
	for key := range documented {
		method, path, _ := strings.Cut(key, " ")
		var alias string
		switch {
		case path == openAPIPath || !strings.HasPrefix(path, v2+"/"):
			continue
		case strings.HasPrefix(path, v2+"/worker/"):
			alias = "/api/v2/worker/" + strings.TrimPrefix(path, v2+"/worker/")
		default:
			alias = "/api/" + strings.TrimPrefix(path, v2+"/")
		}
		require.True(t, registered[method+" "+alias], "alias %s %s of %s is not registered", method, alias, path)
	}
}

// TestOpenAPIOperationsAreWellFormed checks what a generator relies on:
// unique operation IDs, declared path parameters, and responses.
func TestOpenAPIOperationsAreWellFormed(t *testing.T) {
	t.Parallel()
	_, _, doc := openAPIFixture(t)
	paths := doc["paths"].(map[string]any)
	ids := map[string]string{}
	for key, operation := range oapiOperations(t, doc) {
		id, _ := operation["operationId"].(string)
		require.NotEmpty(t, id, "%s has an operationId", key)
		require.NotContains(t, ids, id, "operationId %s of %s is also used by %s", id, key, ids[id])
		ids[id] = key
		responses, _ := operation["responses"].(map[string]any)
		require.NotEmpty(t, responses, "%s has responses", key)

		method, path, _ := strings.Cut(key, " ")
		declared := map[string]bool{}
		for _, list := range []any{paths[path].(map[string]any)["parameters"], operation["parameters"]} {
			params, _ := list.([]any)
			for _, p := range params {
				param := oapiResolve(t, doc, p).(map[string]any)
				if param["in"] == "path" {
					require.Equal(t, true, param["required"], "path parameter %s of %s is required", param["name"], key)
					declared[param["name"].(string)] = true
				}
			}
		}
		var inPath []string
		for _, m := range oapiPathParam.FindAllStringSubmatch(path, -1) {
			inPath = append(inPath, m[1])
			require.True(t, declared[m[1]], "%s %s does not declare path parameter %s", method, path, m[1])
		}
		require.Len(t, declared, len(inPath), "%s declares path parameters not in its path", key)
	}
}

// oapiResolve follows a local $ref, if v is one.
func oapiResolve(t *testing.T, doc map[string]any, v any) any {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	ref, ok := obj["$ref"].(string)
	if !ok {
		return v
	}
	target, err := oapiPointer(doc, ref)
	require.NoError(t, err)
	return oapiResolve(t, doc, target)
}

type oapiRefError string

func (e oapiRefError) Error() string { return string(e) }

// oapiPointer resolves a local JSON reference such as #/components/schemas/Run.
func oapiPointer(doc map[string]any, ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, oapiRefError("$ref " + ref + " is not local")
	}
	var cur any = doc
	for _, token := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, oapiRefError("$ref " + ref + " goes through a non-object")
		}
		if cur, ok = obj[token]; !ok {
			return nil, oapiRefError("$ref " + ref + " does not resolve")
		}
	}
	return cur, nil
}

// TestOpenAPIReferencesResolve checks every $ref, and that every component
// is used (an unused one is usually a typo in a $ref elsewhere).
func TestOpenAPIReferencesResolve(t *testing.T) {
	t.Parallel()
	_, _, doc := openAPIFixture(t)
	used := map[string]bool{}
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"]; ok {
				s, isString := ref.(string)
				require.True(t, isString, "$ref at %s is a string", at)
				_, err := oapiPointer(doc, s)
				require.NoError(t, err, "at %s", at)
				used[s] = true
			}
			for k, child := range v {
				walk(at+"/"+k, child)
			}
		case []any:
			for _, child := range v {
				walk(at+"/[]", child)
			}
		}
	}
	walk("#", doc)
	require.NotEmpty(t, used)

	components, _ := doc["components"].(map[string]any)
	for _, kind := range []string{"schemas", "parameters", "responses"} {
		entries, _ := components[kind].(map[string]any)
		for name := range entries {
			require.True(t, used["#/components/"+kind+"/"+name], "components/%s/%s is never referenced", kind, name)
		}
	}
}

// oapiProperties collects the property names of a schema, following $ref and allOf.
func oapiProperties(t *testing.T, doc map[string]any, schema any) []string {
	t.Helper()
	obj := oapiResolve(t, doc, schema).(map[string]any)
	var out []string
	if parts, ok := obj["allOf"].([]any); ok {
		for _, part := range parts {
			out = append(out, oapiProperties(t, doc, part)...)
		}
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		for name := range props {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func oapiKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withKey adds an optional key the fixture's answer leaves out, so its
// presence in the document is still checked.
func withKey(body map[string]any, key string) map[string]any {
	out := map[string]any{key: nil}
	for k, v := range body {
		out[k] = v
	}
	return out
}

// TestOpenAPIResponseShapes compares documented field names with real
// answers, so a renamed or added JSON field cannot go unnoticed.
func TestOpenAPIResponseShapes(t *testing.T) {
	t.Parallel()
	f, _, doc := openAPIFixture(t)
	schema := func(name string) any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	same := func(name string, body map[string]any) {
		t.Helper()
		require.Equal(t, oapiProperties(t, doc, schema(name)), oapiKeys(body), "fields of %s", name)
	}

	created := f.must(201, "POST", v2+"/schedules", dailyBody)
	same("ScheduleDescription", created)
	// start_at, end_at and at are left out when unset: compare a spec that has them.
	f.must(201, "POST", v2+"/calendars", `{"name":"hol","dates":["2026-12-25"]}`)
	bounded := f.must(201, "POST", v2+"/schedules", `{"schedule_id":"bounded","spec":{"cron_expressions":["0 6 * * *"],"intervals":[],
		"timezone":"UTC","start_at":"2026-07-16T00:00:00Z","end_at":"2027-01-01T00:00:00Z","at":["2026-12-24T18:00:00Z"],
		"exclude_calendars":["hol"],"on_excluded":"next_business_day"},"action":{"workflow_type":"w"}}`)
	same("Spec", bounded["spec"].(map[string]any))
	// managed_by is left out unless apply made the last change
	// (TestCalendarManagedByApply).
	same("Calendar", withKey(f.must(200, "GET", v2+"/calendars/hol", ""), "managed_by"))
	same("CalendarChange", f.must(200, "PATCH", v2+"/calendars/hol", `{"description":"holidays"}`))
	f.must(200, "DELETE", v2+"/schedules/bounded", "")
	calendars := f.must(200, "GET", v2+"/calendars", "")
	same("CalendarList", calendars)
	same("CalendarSummary", calendars["calendars"].([]any)[0].(map[string]any))
	same("CalendarImpact", f.must(200, "POST", v2+"/calendars/hol/impact", `{"dates":[]}`))
	list := f.must(200, "GET", v2+"/schedules", "")
	same("ScheduleList", list)
	same("Schedule", list["schedules"].([]any)[0].(map[string]any))

	trigger := f.must(200, "POST", v2+"/schedules/daily-sync/trigger", "")
	same("TriggerResult", trigger)
	detail := f.must(200, "GET", v2+"/schedules/daily-sync", "")
	same("RecentAction", detail["recent_actions"].([]any)[0].(map[string]any))
	runs := f.must(200, "GET", v2+"/runs", "")
	// scanned is left out unless a workflow_type page stopped at its scan
	// bound (asserted in TestConsoleRunsTypeFilterIsBounded).
	same("RunList", withKey(runs, "scanned"))
	same("Run", runs["runs"].([]any)[0].(map[string]any))
	run := f.must(200, "GET", v2+"/runs/"+trigger["run_id"].(string), "")
	same("RunDetail", run)
	same("RunEvent", run["history"].([]any)[0].(map[string]any))

	history := f.must(200, "GET", v2+"/schedules/daily-sync/history", "")
	same("HistoryPage", history)
	same("AuditEvent", history["events"].([]any)[0].(map[string]any))
	ledger := f.must(200, "GET", v2+"/schedules/daily-sync/occurrences?from=2026-07-01T00:00:00Z&to=2026-07-20T00:00:00Z", "")
	same("OccurrencePage", ledger)
	same("Occurrence", ledger["occurrences"].([]any)[0].(map[string]any))
	backfill := f.must(200, "POST", v2+"/schedules/daily-sync/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-03T00:00:00Z","dry_run":true}`)
	same("BackfillReport", backfill)
	same("BackfillResult", backfill["results"].([]any)[0].(map[string]any))
	same("PreviewResult", f.must(200, "POST", v2+"/schedules/preview", `{"spec":{"cron_expressions":["0 2 * * *"]}}`))

	polled := f.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1"}`)
	same("PollResult", polled)
	same("ClaimedRun", polled["runs"].([]any)[0].(map[string]any))
	same("HeartbeatResult", f.must(200, "POST", v2+"/worker/runs/"+trigger["run_id"].(string)+"/heartbeat", `{"worker_id":"w1"}`))
	same("Run", f.must(200, "POST", v2+"/worker/runs/"+trigger["run_id"].(string)+"/complete", `{"output":{"ok":true},"worker_id":"w1"}`))

	f.clock.Advance(24 * time.Hour) // daily-sync is due
	tick := f.must(200, "POST", v2+"/tick", "")
	same("TickResult", tick)
	same("TickRow", tick["rows"].([]any)[0].(map[string]any))

	job := f.must(202, "POST", v2+"/schedules/daily-sync/backfill", `{"from":"2026-06-01T00:00:00Z","to":"2026-06-03T00:00:00Z","max_per_minute":60}`)
	same("BackfillJobEnvelope", job)
	same("BackfillJob", job["backfill"].(map[string]any))
	jobs := f.must(200, "GET", v2+"/backfills", "")
	same("BackfillJobList", jobs)
	same("BackfillJob", jobs["backfills"].([]any)[0].(map[string]any))

	res := f.do("GET", v2+"/schedules?limit=x", "")
	require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	same("Error", res.Body)
	errDetail := res.Body["error"].(map[string]any)
	require.NotContains(t, errDetail, "schedules", "schedules only in a calendar_in_use answer")
	errDetail["schedules"] = []any{}
	same("ErrorDetail", errDetail)
	f.must(201, "POST", v2+"/schedules", `{"schedule_id":"holiday-user","spec":{"cron_expressions":["0 6 * * *"],"exclude_calendars":["hol"]},"action":{"workflow_type":"w"}}`)
	res = f.do("DELETE", v2+"/calendars/hol", "")
	require.Equal(t, http.StatusConflict, res.Status)
	inUse := res.Body["error"].(map[string]any)
	require.Equal(t, "calendar_in_use", inUse["code"])
	require.Equal(t, []any{"holiday-user"}, inUse["schedules"])
}

// TestOpenAPIDocumentsEveryScheduleField: each field of the table is in
// the create and update requests and in the schedule, nullable exactly
// when null clears it, and described, so a new field is documented by
// its entry or fails here.
func TestOpenAPIDocumentsEveryScheduleField(t *testing.T) {
	t.Parallel()
	_, _, doc := openAPIFixture(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	required := schemas["Schedule"].(map[string]any)["required"].([]any)
	for _, f := range scheduling.Fields {
		if !f.Simple() {
			continue
		}
		require.NotNil(t, f.Schema, "the field %s has no schema in scheduling.Fields", f.Key)
		for _, name := range []string{"CreateScheduleRequest", "UpdateScheduleRequest", "Schedule"} {
			props := schemas[name].(map[string]any)["properties"].(map[string]any)
			p, ok := props[f.Key].(map[string]any)
			require.True(t, ok, "%s does not document %s", name, f.Key)
			require.Equal(t, f.Nullable, p["nullable"] == true, "%s.%s nullable", name, f.Key)
			if name != "CreateScheduleRequest" {
				require.NotContains(t, p, "default", "%s.%s: a default belongs to the create request", name, f.Key)
			}
		}
		require.Contains(t, required, f.Key, "Schedule always carries %s", f.Key)
	}
	update := schemas["UpdateScheduleRequest"].(map[string]any)["properties"].(map[string]any)
	require.Contains(t, update["pause_after_failures"].(map[string]any)["description"], "null clears it.")
	require.NotContains(t, update["jitter_seconds"].(map[string]any), "nullable")
}
