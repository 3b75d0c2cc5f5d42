package cli

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

func TestScheduleLifecycle(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		start := time.Now()

		out := d.run(t, "schedule", "add", "daily-sync", "--workflow-type", "sync.Daily", "--cron", "0 2 * * *",
			"--timezone", "America/New_York", "--input", `{"full": true, "batch": 1234}`, "--max-runs", "10",
			"--queue", "sync", "--note", "nightly import")
		require.Regexp(t, `^Created schedule daily-sync \(active\) in namespace default\.\nNext fire at: \S+Z \(\d{4}-\d\d-\d\d 02:00 E[SD]T\)\n$`, out)
		d.run(t, "schedule", "add", "--workflow-type", "report.Hourly", "--every", "1 hour", "--every", "PT30M",
			"--overlap", "allow_all", "--jitter", "30s", "hourly-report")
		d.run(t, "schedule", "add", "archive", "--workflow-type", "archive.Run", "--cron", "@weekly", "--paused")

		golden(t, d, "schedule_list.golden", normalize(d.run(t, "schedule", "list"), start))

		describe := normalize(d.run(t, "schedule", "describe", "daily-sync"), start)
		golden(t, d, "schedule_describe.golden", describe)
		requireDailyFireTimes(t, d.run(t, "schedule", "describe", "daily-sync"), start)

		out = d.run(t, "schedule", "pause", "daily-sync", "--reason", "upstream outage")
		require.Equal(t, "Paused schedule daily-sync (reason: upstream outage).\n", out)
		_, err := d.fail(t, "schedule", "pause", "daily-sync")
		require.EqualError(t, err, `schedule_not_active: schedule "daily-sync" is already paused`)
		var conflict *scheduling.ConflictError
		require.ErrorAs(t, err, &conflict)

		out = d.run(t, "schedule", "resume", "daily-sync")
		require.Regexp(t, `^Resumed schedule daily-sync\. Next fire at: \S+Z \(\d{4}-\d\d-\d\d 02:00 E[SD]T\)\n$`, out)
		_, err = d.fail(t, "schedule", "resume", "daily-sync")
		require.EqualError(t, err, `schedule_not_paused: schedule "daily-sync" is not paused`)

		out = d.run(t, "schedule", "trigger", "daily-sync")
		require.Regexp(t, `^\[daily-sync\] triggered → schedule:daily-sync:manual:[0-9A-Z]{26} \(run [0-9A-Z]{26}\)\n$`, out)
		out = d.run(t, "schedule", "trigger", "daily-sync")
		require.Equal(t, "[daily-sync] skipped (overlap_policy_skip)\n", out, "the first run is still pending")
		out = d.run(t, "schedule", "trigger", "daily-sync", "--overlap", "allow_all", "--output", "json")
		var trig map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &trig))
		require.Equal(t, "triggered", trig["outcome"])
		require.Regexp(t, `^schedule:daily-sync:manual:[0-9A-Z]{26}$`, trig["instance_id"])
		require.Nil(t, trig["reason"])
		require.Contains(t, trig, "buffer_depth")

		out = d.run(t, "schedule", "remove", "daily-sync")
		require.Equal(t, "Removed schedule daily-sync. Its history stays readable: tideline schedule history daily-sync\n", out)
		out = d.run(t, "schedule", "remove", "daily-sync")
		require.Equal(t, "Schedule daily-sync was already removed.\n", out)
		_, err = d.fail(t, "schedule", "describe", "daily-sync")
		require.EqualError(t, err, `schedule_not_found: schedule "daily-sync" not found in namespace "default"`)
		require.ErrorIs(t, err, scheduling.ErrNotFound)
		_, err = d.fail(t, "schedule", "trigger", "daily-sync")
		require.EqualError(t, err, `schedule_deleted: schedule "daily-sync" is deleted and cannot be triggered`)

		golden(t, d, "schedule_list_all.golden", normalize(d.run(t, "schedule", "list", "--status", "all"), start))
		out = d.run(t, "schedule", "list", "--status", "deleted", "--output", "jsonl")
		require.Equal(t, 1, strings.Count(out, "\n"))
		require.Contains(t, out, `"schedule_id":"daily-sync"`)
		var listed struct {
			Action struct {
				Input json.RawMessage `json:"input"`
			} `json:"action"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &listed))
		require.JSONEq(t, `{"batch":1234,"full":true}`, string(listed.Action.Input))

		golden(t, d, "schedule_history_lifecycle.golden", normalize(d.run(t, "schedule", "history", "daily-sync"), start))
	})
}

// requireDailyFireTimes checks describe's "Next fire times" for 0 2 * * * in
// New York: five consecutive days at 02:00 local, the first within a day.
func requireDailyFireTimes(t *testing.T, out string, start time.Time) {
	t.Helper()
	_, block, ok := strings.Cut(out, "Next fire times:\n")
	require.True(t, ok, out)
	lines := strings.Split(strings.TrimSpace(block), "\n")
	require.Len(t, lines, 5, block)
	var prev time.Time
	for i, line := range lines {
		require.Regexp(t, `^\S+Z \(\d{4}-\d\d-\d\d 02:00 E[SD]T\)$`, strings.TrimSpace(line))
		ts, err := time.Parse(time.RFC3339Nano, strings.Fields(line)[0])
		require.NoError(t, err)
		if i == 0 {
			require.True(t, ts.After(start) && ts.Before(start.Add(25*time.Hour)), "first fire %s", ts)
		} else {
			gap := ts.Sub(prev)
			require.True(t, gap >= 23*time.Hour && gap <= 25*time.Hour, "gap %s", gap)
		}
		prev = ts
	}
}

func TestScheduleAdd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		start := time.Now()
		// <id> after the flags, and after "--" even when it looks like a flag.
		d.run(t, "schedule", "add", "--workflow-type", "w", "--every", "1 hour", "--every", "90 minutes", "--every", "P1D", "first")
		d.run(t, "schedule", "add", "--workflow-type", "w", "--cron", "*/5 * * * *", "--cron", "@daily", "--", "-dashed")

		var sch map[string]any
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "first", "--output", "json")), &sch))
		require.Equal(t, map[string]any{"cron_expressions": []any{}, "timezone": "UTC", "intervals": []any{
			map[string]any{"every": "PT1H"}, map[string]any{"every": "PT1H30M"}, map[string]any{"every": "P1D"},
		}}, sch["spec"], "--every is stored as ISO-8601")
		require.Equal(t, "Every hour; Every 1 hour and 30 minutes; Every day", sch["spec_description"])
		require.Nil(t, sch["queue"])
		require.Nil(t, sch["max_runs"])

		out := normalize(d.run(t, "schedule", "describe", "--", "-dashed"), start)
		require.Contains(t, out, "Cron:             */5 * * * *\nCron:             @daily\n")

		_, err := d.fail(t, "schedule", "add", "first", "--workflow-type", "w", "--cron", "@hourly")
		require.EqualError(t, err, `schedule_already_exists: schedule "first" already exists in namespace "default" (deleted schedules keep their ID)`)

		_, err = d.fail(t, "schedule", "add", "bad", "--workflow-type", "w", "--cron", "* * * * * *")
		var verr *scheduling.ValidationError
		require.ErrorAs(t, err, &verr)
		require.Equal(t, "validation_failed: spec.cron_expressions[0]: \"* * * * * *\" has 6 fields; Tideline accepts standard 5-field cron (minute hour day-of-month month day-of-week)", err.Error())

		_, err = d.fail(t, "schedule", "add", "never", "--workflow-type", "w", "--cron", "0 0 30 2 *")
		require.ErrorAs(t, err, &verr)
		require.Equal(t, "spec_never_fires", verr.Code)

		_, err = d.fail(t, "schedule", "add", "jit", "--workflow-type", "w", "--cron", "@daily", "--jitter", "7200", "--overlap", "sometimes")
		require.ErrorAs(t, err, &verr)
		require.Equal(t, []string{"jitter_seconds", "overlap_policy"}, sortedKeys(verr.Fields))

		_, err = d.fail(t, "schedule", "add", "zero", "--workflow-type", "w", "--cron", "@daily", "--max-runs", "0")
		require.ErrorAs(t, err, &verr)
		require.Contains(t, verr.Fields, "max_runs", "an explicit 0 is passed on, not taken as unset")

		out = d.run(t, "schedule", "list", "--output", "json")
		var list []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &list))
		require.Len(t, list, 2)
		require.Equal(t, "-dashed", list[0]["schedule_id"])
		require.Equal(t, "first", list[1]["schedule_id"])
	})
}

func TestScheduleNamespaceAndActor(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		d.run(t, "schedule", "add", "job", "--namespace", "ops", "--workflow-type", "w", "--cron", "@daily")
		require.Equal(t, "No schedules in namespace default.\n", d.run(t, "schedule", "list"))
		_, err := d.fail(t, "schedule", "describe", "job")
		require.ErrorIs(t, err, scheduling.ErrNotFound)

		ops := dialectEnv{name: d.name, mode: d.mode, url: d.url, environ: map[string]string{}}
		for k, v := range d.environ {
			ops.environ[k] = v
		}
		ops.environ["TIDELINE_NAMESPACE"] = "ops"
		actor := "bob"
		if d.mode == "remote" {
			// The server records the token's name; the CLI may not claim another.
			_, _, err := runCLI(t, ops.environ, "schedule", "pause", "job", "--actor", "bob")
			requireExit(t, 2, err)
			require.ErrorContains(t, err, "--actor cannot be used with --server")
			actor = "alice"
			ops.run(t, "schedule", "pause", "job", "--reason", "maintenance")
		} else {
			ops.run(t, "schedule", "pause", "job", "--reason", "maintenance", "--actor", "bob")
		}
		require.Regexp(t, `\njob +paused +w +@daily +UTC +skip +- +- +0\n$`, ops.run(t, "schedule", "list"))

		var page struct {
			Namespace string `json:"namespace"`
			Events    []struct {
				EventType string          `json:"event_type"`
				Payload   json.RawMessage `json:"payload"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal([]byte(ops.run(t, "schedule", "history", "job", "--output", "json")), &page))
		require.Equal(t, "ops", page.Namespace)
		require.Len(t, page.Events, 2)
		contexts := make([]map[string]any, 0, 2)
		for _, ev := range page.Events {
			var p struct {
				CommandContext map[string]any `json:"command_context"`
			}
			require.NoError(t, json.Unmarshal(ev.Payload, &p))
			contexts = append(contexts, p.CommandContext)
		}
		for _, cc := range contexts {
			if d.mode == "remote" {
				require.Regexp(t, `^\w{8,}$`, cc["request_id"], "the server's request ID")
				delete(cc, "request_id")
			}
		}
		require.Equal(t, []map[string]any{
			{"source": d.source(), "actor": "alice"},
			{"source": d.source(), "actor": actor, "reason": "maintenance"},
		}, contexts, "actor from $USER, or --actor (direct); the token's name (remote)")
	})
}

func TestScheduleBackfill(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		d.run(t, "schedule", "add", "nightly", "--workflow-type", "w", "--cron", "0 3 * * *", "--max-runs", "3")

		out := d.run(t, "schedule", "backfill", "nightly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-06T00:00:00Z", "--dry-run")
		golden(t, d, "schedule_backfill_dry_run.golden", out)

		_, err := d.fail(t, "schedule", "backfill", "nightly", "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z")
		require.EqualError(t, err, "invalid_time_range: to: must be after from")

		// A job that max_runs cuts short fails, saying why.
		out, err = d.fail(t, "schedule", "backfill", "nightly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-06T00:00:00Z", "--overlap", "allow_all", "--wait")
		require.ErrorIs(t, err, ErrSilentFailure)
		require.Regexp(t, `^Backfill [0-9A-Z]{26} of schedule nightly: failed, 60%: 3 started · 0 skipped · 2 remaining of 5 \(max_runs_exhausted\)\.\n$`, out)

		_, err = d.fail(t, "schedule", "backfill", "nightly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z")
		require.EqualError(t, err, `schedule_deleted: schedule "nightly" is deleted`)

		d.run(t, "schedule", "add", "again", "--workflow-type", "w", "--cron", "0 3 * * *")
		out = d.run(t, "schedule", "backfill", "again", "--from", "2026-01-01T00:00:00+02:00", "--to", "2026-01-03T00:00:00Z", "--output", "json", "--wait", "--reason", "replay")
		var job struct {
			Backfill struct {
				ID        string `json:"id"`
				Status    string `json:"status"`
				From      string `json:"from"`
				Total     int    `json:"total"`
				Started   int    `json:"started"`
				Skipped   int    `json:"skipped"`
				Remaining int    `json:"remaining"`
				Reason    string `json:"reason"`
			} `json:"backfill"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &job), out)
		require.Equal(t, "completed", job.Backfill.Status)
		require.Equal(t, "2025-12-31T22:00:00.000000Z", job.Backfill.From)
		require.Equal(t, 2, job.Backfill.Total)
		// The default policy skip sees the first backfilled run still pending.
		require.Equal(t, 1, job.Backfill.Started)
		require.Equal(t, 1, job.Backfill.Skipped)
		require.Equal(t, "replay", job.Backfill.Reason)

		out = d.run(t, "backfill", "list", "--schedule", "again")
		require.Contains(t, out, job.Backfill.ID+"  again     completed")
		out = d.run(t, "backfill", "describe", job.Backfill.ID)
		require.Contains(t, out, "Progress:             completed, 100%: 1 started · 1 skipped · 0 remaining of 2\n")
		_, err = d.fail(t, "backfill", "pause", job.Backfill.ID)
		require.EqualError(t, err, "backfill_not_running: backfill "+job.Backfill.ID+" is completed, not running")
	})
}

// A paced job in direct mode: started, paused, resumed and cancelled from
// the CLI.
func TestBackfillJobCommands(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		d.run(t, "schedule", "add", "minutely", "--workflow-type", "w", "--cron", "* * * * *", "--overlap", "allow_all")
		out := d.run(t, "schedule", "backfill", "minutely", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-08T00:00:00Z", "--max-per-minute", "1", "--max-concurrent", "50")
		m := regexp.MustCompile(`^Backfill ([0-9A-Z]{26}) of schedule minutely: running, 0%: 1 started · 0 skipped · 10079 remaining of 10080 · ETA \S+\.\nFollow it with 'tideline backfill describe ([0-9A-Z]{26})'\.\n$`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		id := m[1]
		out = d.run(t, "backfill", "pause", id, "--reason", "workers busy")
		require.Equal(t, "Paused backfill "+id+" of schedule minutely: paused, 0%: 1 started · 0 skipped · 10079 remaining of 10080.\n", out)
		out = d.run(t, "backfill", "resume", id)
		require.Contains(t, out, "Resumed backfill "+id+" of schedule minutely: running, 0%: 1 started")
		out = d.run(t, "backfill", "list", "--status", "running", "--output", "json")
		require.Contains(t, out, `"max_concurrent_runs": 50`)
		out = d.run(t, "backfill", "cancel", id)
		require.Regexp(t, "^Cancelled backfill "+id+` of schedule minutely: cancelled, 0%: 1 started · 0 skipped · 10079 remaining of 10080 \(cancelled by alice\)\.\n$`, out)
		_, err := d.fail(t, "backfill", "cancel", id)
		require.EqualError(t, err, "backfill_finished: backfill "+id+" has already ended (cancelled)")
		_, err = d.fail(t, "backfill", "describe", "01KXNR6R809X7XT0RFJDNTWDR2")
		require.ErrorContains(t, err, "backfill_not_found")
	})
}

func TestScheduleHistoryPaging(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		start := time.Now()
		d.run(t, "schedule", "add", "hourly", "--workflow-type", "w", "--every", "PT1H", "--overlap", "allow_all")
		// 150 hourly occurrences: 151 events with ScheduleCreated.
		out := d.run(t, "schedule", "backfill", "hourly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-07T06:00:00Z", "--wait")
		require.True(t, strings.HasSuffix(out, "completed, 100%: 150 started · 0 skipped · 0 remaining of 150.\n") ||
			strings.HasSuffix(out, "\ncompleted, 100%: 150 started · 0 skipped · 0 remaining of 150\n"), out)

		golden(t, d, "schedule_history_page.golden", normalize(d.run(t, "schedule", "history", "hourly", "--limit", "5"), start))

		// Default page: 100 rows and the hint.
		out = d.run(t, "schedule", "history", "hourly")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 102)
		require.Regexp(t, `^100 +ScheduleTriggered +`, lines[100])
		require.Equal(t, "More events available — use --after-sequence 100 or --all", lines[101])

		// The cursor continues where the hint says.
		out = d.run(t, "schedule", "history", "hourly", "--after-sequence", "100")
		lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 52)
		require.Regexp(t, `^101 +ScheduleTriggered +\S+ +schedule:hourly:backfill:1767582000 \(run [0-9A-Z]{26}\)$`, lines[1])
		require.Regexp(t, `^151 +ScheduleTriggered `, lines[51])

		// --all pages through everything, whatever the page size.
		for _, limit := range []string{"7", "100", "500"} {
			out = d.run(t, "schedule", "history", "hourly", "--all", "--limit", limit, "--output", "jsonl")
			lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			require.Len(t, lines, 151, "limit %s", limit)
			for i, line := range lines {
				var ev struct {
					Sequence  int64  `json:"sequence"`
					EventType string `json:"event_type"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
				require.Equal(t, int64(i+1), ev.Sequence)
				require.NotContains(t, line, "next_cursor", "jsonl has no envelope")
			}
		}
		out = d.run(t, "schedule", "history", "hourly", "--all", "--limit", "9")
		require.Equal(t, 152, strings.Count(out, "\n"))
		require.NotContains(t, out, "More events available")

		var page historyEnvelope
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "history", "hourly", "--output", "json", "--limit", "10", "--after-sequence", "20")), &page))
		require.Equal(t, "hourly", page.ScheduleID)
		require.Equal(t, "default", page.Namespace)
		require.Equal(t, sequences(21, 30), page.sequences())
		require.Equal(t, int64(30), *page.NextCursor)
		require.True(t, page.HasMore)

		page = historyEnvelope{}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "history", "hourly", "--output", "json", "--all", "--after-sequence", "40")), &page))
		require.Equal(t, sequences(41, 151), page.sequences())
		require.Nil(t, page.NextCursor)
		require.False(t, page.HasMore)

		// jsonl without --all says on stderr that the stream goes on.
		out, errOut, err := runCLI(t, d.environ, "schedule", "history", "hourly", "--output", "jsonl", "--limit", "3")
		require.NoError(t, err)
		require.Equal(t, 3, strings.Count(out, "\n"))
		require.Equal(t, "More events available — use --after-sequence 3 or --all\n", errOut)

		require.Equal(t, "No events after sequence 151.\n", d.run(t, "schedule", "history", "hourly", "--after-sequence", "151"))

		// A removed schedule's history stays readable.
		d.run(t, "schedule", "remove", "hourly")
		out = d.run(t, "schedule", "history", "hourly", "--after-sequence", "151")
		require.Regexp(t, `^Seq +Event +Recorded At +Workflow Refs\n152 +ScheduleDeleted +\S+ +-\n$`, out)
	})
}

type historyEnvelope struct {
	ScheduleID string `json:"schedule_id"`
	Namespace  string `json:"namespace"`
	Events     []struct {
		Sequence int64 `json:"sequence"`
	} `json:"events"`
	NextCursor *int64 `json:"next_cursor"`
	HasMore    bool   `json:"has_more"`
}

func (p historyEnvelope) sequences() []int64 {
	out := make([]int64, 0, len(p.Events))
	for _, e := range p.Events {
		out = append(out, e.Sequence)
	}
	return out
}

func sequences(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// TestJSONMatchesAPI keeps the CLI's JSON identical to the JSON API's, so
// the copies of the encoders in json.go cannot drift.
func TestJSONMatchesAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		// A yearly cron keeps future_fire_times equal between the two reads.
		d.run(t, "schedule", "add", "yearly", "--workflow-type", "w", "--cron", "0 0 1 1 *", "--input", `{"a":[1,2],"b":"<&>"}`,
			"--queue", "q", "--max-runs", "50", "--note", "n")
		d.run(t, "schedule", "trigger", "yearly")
		d.run(t, "schedule", "trigger", "yearly") // skipped: recent actions and skip bookkeeping
		d.run(t, "schedule", "backfill", "yearly", "--from", "2020-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z", "--overlap", "allow_all")
		d.run(t, "schedule", "add", "other", "--workflow-type", "w", "--every", "P1W", "--paused")

		require.JSONEq(t, apiGet(t, d, "/waterline/api/v2/schedules/yearly"), d.run(t, "schedule", "describe", "yearly", "--output", "json"))
		require.JSONEq(t, apiGet(t, d, "/waterline/api/v2/schedules/yearly/history"), d.run(t, "schedule", "history", "yearly", "--output", "json"))
		require.JSONEq(t, apiGet(t, d, "/waterline/api/v2/schedules/yearly/history?limit=3&after_sequence=2"),
			d.run(t, "schedule", "history", "yearly", "--output", "json", "--limit", "3", "--after-sequence", "2"))
		var list struct {
			Schedules json.RawMessage `json:"schedules"`
		}
		require.NoError(t, json.Unmarshal([]byte(apiGet(t, d, "/waterline/api/v2/schedules")), &list))
		require.JSONEq(t, string(list.Schedules), d.run(t, "schedule", "list", "--output", "json"))
	})
}

func apiGet(t *testing.T, d dialectEnv, path string) string {
	t.Helper()
	db := d.db(t)
	srv := web.NewServer(web.Deps{DB: db, Service: scheduling.New(scheduling.Config{DB: db}), Logger: discardLogger()})
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = "127.0.0.1:8080" // and addressed to this machine (no DNS rebinding)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return rec.Body.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
