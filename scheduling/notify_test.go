package scheduling_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// receiver is a real HTTP server standing in for a webhook endpoint. It
// records every post and answers with status (200 unless set).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	posts  []post
	status int
	// inFlight and overlap detect a delivery posted twice at once.
	inFlight map[string]int
	overlap  []string
	hold     chan struct{} // when set, handlers wait on it (a blackhole)
	arrived  chan struct{}
}

type post struct {
	header http.Header
	body   []byte
	doc    map[string]any
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK, inFlight: map[string]int{}, arrived: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("Tideline-Delivery")
		r.mu.Lock()
		r.inFlight[id]++
		if r.inFlight[id] > 1 {
			r.overlap = append(r.overlap, id)
		}
		var doc map[string]any
		_ = json.Unmarshal(body, &doc)
		r.posts = append(r.posts, post{header: req.Header.Clone(), body: body, doc: doc})
		status, hold := r.status, r.hold
		r.mu.Unlock()
		r.arrived <- struct{}{}
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
			}
		}
		r.mu.Lock()
		r.inFlight[id]--
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) all() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.posts...)
}

func (r *receiver) setStatus(s int) {
	r.mu.Lock()
	r.status = s
	r.mu.Unlock()
}

// verifySignature checks Tideline-Signature the way a receiver would,
// written from the documented format, not with the package that signs.
func verifySignature(t *testing.T, secret string, p post) time.Time {
	t.Helper()
	header := p.header.Get("Tideline-Signature")
	var ts, v1 string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	require.NotEmpty(t, ts, "signature %q has t=", header)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(p.body)))
	want := hex.EncodeToString(mac.Sum(nil))
	require.True(t, hmac.Equal([]byte(want), []byte(v1)), "signature %q does not verify", header)
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	return time.Unix(sec, 0)
}

// notifyService is a service whose notifiers may target the 127.0.0.1
// receivers of these tests.
func notifyService(db *bun.DB, clock scheduling.Clock, cfg scheduling.NotifyConfig) *scheduling.Service {
	cfg.AllowPrivate = true
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://tideline.example.com"
	}
	return scheduling.New(scheduling.Config{DB: db, Clock: clock, Rand: schedtest.Rand{},
		Logger: slog.New(slog.DiscardHandler), Notify: cfg})
}

func newNotifyFixture(t *testing.T, db *bun.DB) *fixture {
	f := newFixture(t, db)
	f.svc = notifyService(db, f.clock, scheduling.NotifyConfig{})
	return f
}

func (f *fixture) notifier(name, url string, events []string, selector map[string]string) string {
	f.t.Helper()
	res, err := f.svc.CreateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: name, URL: &url, Events: events, LabelSelector: selector}, nil)
	require.NoError(f.t, err)
	require.NotEmpty(f.t, res.Secret, "the secret is shown on create")
	return res.Secret
}

func (f *fixture) dispatch() int {
	f.t.Helper()
	n, err := f.svc.NotifyOnce(f.ctx, 100)
	require.NoError(f.t, err)
	return n
}

func (f *fixture) deliveries(name string) []models.Delivery {
	f.t.Helper()
	page, err := f.svc.ListDeliveries(f.ctx, "default", name, "", 200)
	require.NoError(f.t, err)
	return page.Deliveries
}

// A worker failing the last attempt produces run_failed for the notifiers
// whose selector matches the schedule's labels, signed, with the schedule,
// occurrence, run, attempt, error and console links.
func TestRunFailedIsDeliveredSignedAndRouted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		billing, other := newReceiver(t), newReceiver(t)
		secret := f.notifier("billing", billing.URL, []string{"run_failed"}, map[string]string{"team": "billing"})
		f.notifier("other", other.URL, []string{"run_failed"}, map[string]string{"team": "other"})

		runID := f.retrying("invoices", policy(2, 1, 2, 10), func(in *scheduling.CreateInput) { in.Labels = map[string]string{"team": "billing", "tier": "1"} })
		f.failOnce(runID, "io")
		require.Zero(t, f.dispatch(), "a retried attempt is not final")
		f.clock.Advance(time.Second)
		f.failOnce(runID, "io")
		require.Equal(t, 1, f.dispatch())

		require.Empty(t, other.all(), "the selector routes away from other")
		posts := billing.all()
		require.Len(t, posts, 1)
		p := posts[0]
		signedAt := verifySignature(t, secret, p)
		require.True(t, signedAt.Equal(f.clock.Now().Truncate(time.Second)))
		doc := p.doc
		require.EqualValues(t, 1, doc["version"])
		require.Equal(t, "run_failed", doc["event"])
		require.Equal(t, "billing", doc["notifier"])
		require.Equal(t, p.header.Get("Tideline-Delivery"), doc["id"])
		require.Equal(t, "run_failed", p.header.Get("Tideline-Event"))
		require.Equal(t, map[string]any{"schedule_id": "invoices", "labels": map[string]any{"team": "billing", "tier": "1"},
			"url": "https://tideline.example.com/waterline/schedules/invoices?namespace=default"}, doc["schedule"])
		run := doc["run"].(map[string]any)
		require.Equal(t, runID, run["run_id"])
		require.Equal(t, "failed", run["status"])
		require.EqualValues(t, 2, run["attempt"])
		require.Equal(t, "https://tideline.example.com/waterline/runs/"+runID+"?namespace=default", run["url"])
		require.Equal(t, run["url"], doc["console_url"])
		require.Equal(t, map[string]any{"type": "io", "message": "boom 2"}, doc["error"])
		require.NotNil(t, doc["occurrence_time"])
		require.Contains(t, doc["summary"], "failed after 2 attempt(s): boom 2")

		list := f.deliveries("billing")
		require.Len(t, list, 1)
		d := list[0]
		require.Equal(t, doc["id"], d.ID)
		require.Equal(t, models.DeliveryDelivered, d.Status)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, 200, *d.LastStatusCode)
		require.Zero(t, f.dispatch(), "delivered rows are not sent again")
	})
}

// A lease that expires (worker_lost) and an execution timeout end runs
// through the deadline sweep: run_failed and run_timed_out.
func TestDeadlineSweepNotifies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("all", r.URL, []string{"run_failed", "run_timed_out"}, nil)
		lost := f.retrying("lost", nil)
		require.Len(t, f.poll(1, 30), 1)
		timeout := int64(60)
		slow := f.retrying("slow", nil, func(in *scheduling.CreateInput) { in.Action.ExecutionTimeoutSeconds = &timeout })
		f.clock.Advance(61 * time.Second)
		n, err := f.svc.EnforceDeadlines(f.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, 2, f.dispatch())
		byRun := map[string]map[string]any{}
		for _, p := range r.all() {
			byRun[p.doc["run"].(map[string]any)["run_id"].(string)] = p.doc
		}
		require.Equal(t, "run_failed", byRun[lost]["event"])
		require.Equal(t, "worker_lost", byRun[lost]["error"].(map[string]any)["type"])
		require.Equal(t, "run_timed_out", byRun[slow]["event"])
		require.Equal(t, "timed_out", byRun[slow]["run"].(map[string]any)["status"])
	})
}

// Pause on failure reports schedule_paused_on_failure with the reason.
func TestPauseOnFailureNotifies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("pauses", r.URL, []string{"schedule_paused_on_failure"}, nil)
		runID := f.retrying("fragile", nil, func(in *scheduling.CreateInput) { in.PauseAfterFailures = ptr(1) })
		f.failOnce(runID, "io")
		paused, err := f.svc.PauseFailing(f.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"default/fragile"}, paused)
		require.Equal(t, 1, f.dispatch())
		doc := r.all()[0].doc
		require.Equal(t, "schedule_paused_on_failure", doc["event"])
		require.Equal(t, "fragile", doc["schedule"].(map[string]any)["schedule_id"])
		require.EqualValues(t, 1, doc["details"].(map[string]any)["consecutive_failures"])
		require.Contains(t, doc["summary"], "paused after 1 consecutive failed runs; last error: boom 1")
		require.Equal(t, runID, doc["run"].(map[string]any)["run_id"])
	})
}

// The fake clock passing a run's start deadline reports run_not_started
// once; a run a worker claimed in time is never reported.
func TestStartDeadlineReportsRunNotStarted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("deadman", r.URL, []string{"run_not_started"}, nil)
		in := cronInput("stuck", "* * * * *")
		in.StartDeadlineSeconds = ptr(int64(120))
		in.Queue = ptr("nobody-polls-this") // no worker drains it
		f.create(in)
		in = cronInput("served", "0 0 1 1 *")
		in.StartDeadlineSeconds = ptr(int64(120))
		f.create(in)
		f.clock.Set(t0.Add(time.Minute))
		rows, err := f.svc.Tick(f.ctx, 10)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		stuck := rows[0].RunID
		served, err := f.svc.Trigger(f.ctx, "default", "served", "", nil)
		require.NoError(t, err)
		claimed := f.poll(10, 600)
		require.Len(t, claimed, 1)
		require.Equal(t, served.RunID, claimed[0].ID)

		f.clock.Set(t0.Add(3*time.Minute - time.Millisecond))
		require.Zero(t, f.dispatch(), "not before the deadline")
		f.clock.Set(t0.Add(3 * time.Minute))
		require.Equal(t, 1, f.dispatch())
		f.clock.Set(t0.Add(10 * time.Minute))
		require.Zero(t, f.dispatch(), "reported once; the claimed run never")
		posts := r.all()
		require.Len(t, posts, 1)
		doc := posts[0].doc
		require.Equal(t, "run_not_started", doc["event"])
		require.Equal(t, stuck, doc["run"].(map[string]any)["run_id"])
		require.Equal(t, "pending", doc["run"].(map[string]any)["status"])
		require.Equal(t, "nobody-polls-this", doc["details"].(map[string]any)["queue"])
	})
}

// A run is reported when nothing claims it by occurrence + deadline.
func TestStartDeadlineFromOccurrence(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("deadman", r.URL, []string{"run_not_started"}, nil)
		in := cronInput("nightly", "* * * * *")
		in.StartDeadlineSeconds = ptr(int64(300))
		f.create(in)
		f.clock.Set(t0.Add(time.Minute + 10*time.Second)) // fires 10 s after its occurrence
		rows, err := f.svc.Tick(f.ctx, 10)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.True(t, f.run(rows[0].RunID).StartDeadlineAt.Equal(t0.Add(6*time.Minute)), "occurrence + 300 s")
		f.clock.Set(t0.Add(6 * time.Minute))
		require.Equal(t, 1, f.dispatch())
		require.Equal(t, "run_not_started", r.all()[0].doc["event"])
	})
}

// A fire more than --late-after after its occurrence reports fire_late;
// one on time does not.
func TestLateFireNotifies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("late", r.URL, []string{"fire_late"}, nil)
		for id, cron := range map[string]string{"hourly": "0 * * * *", "minutely": "* * * * *"} {
			in := cronInput(id, cron)
			in.OverlapPolicy = scheduling.OverlapAllowAll
			f.create(in)
		}
		f.clock.Set(t0.Add(time.Minute + 30*time.Second)) // minutely is 30 s late: on time enough
		_, err := f.svc.Tick(f.ctx, 10)
		require.NoError(t, err)
		require.Zero(t, f.dispatch())
		f.clock.Set(t0.Add(time.Hour + 5*time.Minute)) // both 5 min late (scheduler was down)
		rows, err := f.svc.Tick(f.ctx, 10)
		require.NoError(t, err)
		require.Len(t, rows, 2)
		require.Equal(t, 2, f.dispatch())
		got := map[string]map[string]any{}
		for _, p := range r.all() {
			require.Equal(t, "fire_late", p.doc["event"])
			got[p.doc["schedule"].(map[string]any)["schedule_id"].(string)] = p.doc
		}
		require.EqualValues(t, 5*60*1000, got["hourly"]["details"].(map[string]any)["fire_lag_ms"])
		require.EqualValues(t, 60, got["hourly"]["details"].(map[string]any)["late_after_seconds"])
		require.Equal(t, "2026-07-16T13:00:00Z", got["hourly"]["occurrence_time"])
	})
}

// A backfill reports backfill_finished once, from its last batch, with
// the counts of the whole backfill.
func TestBackfillFinishedNotifies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		f.svc = scheduling.New(scheduling.Config{DB: db, Clock: f.clock, Rand: schedtest.Rand{}, BackfillBatch: 2,
			Logger: slog.New(slog.DiscardHandler), Notify: scheduling.NotifyConfig{AllowPrivate: true}})
		r := newReceiver(t)
		f.notifier("backfills", r.URL, []string{"backfill_finished"}, nil)
		in := cronInput("daily", "0 0 * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		report, err := f.svc.Backfill(f.ctx, "default", "daily", scheduling.BackfillInput{From: t0.AddDate(0, 0, -5), To: t0})
		require.NoError(t, err)
		require.Len(t, report.Results, 5)
		require.Equal(t, 1, f.dispatch())
		doc := r.all()[0].doc
		require.Equal(t, "backfill_finished", doc["event"])
		details := doc["details"].(map[string]any)
		require.EqualValues(t, 5, details["started"])
		require.EqualValues(t, 5, details["occurrences"])
		require.Equal(t, "completed", details["outcome"])
		require.Equal(t, "/waterline/schedules/daily?namespace=default", doc["schedule"].(map[string]any)["url"], "no public URL: links relative to the console")
	})
}

// A failing receiver is retried with exponential backoff driven by the
// clock until 24 h after the fact, then the delivery is dead.
func TestDeliveryBackoffThenDead(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		r.setStatus(http.StatusServiceUnavailable)
		f.notifier("flaky", r.URL, []string{"run_failed"}, nil)
		runID := f.retrying("job", nil)
		f.failOnce(runID, "io")
		created := f.clock.Now()

		require.Equal(t, 1, f.dispatch())
		d := f.deliveries("flaky")[0]
		require.Equal(t, models.DeliveryPending, d.Status)
		require.Equal(t, 503, *d.LastStatusCode)
		require.Equal(t, "receiver answered 503", *d.LastError)
		require.True(t, d.NextAttemptAt.Equal(f.clock.Now().Add(30*time.Second)))

		wantDelays := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute}
		for i, delay := range wantDelays {
			f.clock.Advance(delay - time.Millisecond)
			require.Zero(t, f.dispatch(), "attempt %d: not before its backoff", i+2)
			f.clock.Advance(time.Millisecond)
			require.Equal(t, 1, f.dispatch(), "attempt %d", i+2)
		}
		attempts := 1 + len(wantDelays)
		for {
			d = f.deliveries("flaky")[0]
			if d.Status != models.DeliveryPending {
				break
			}
			require.LessOrEqual(t, d.NextAttemptAt.Sub(*d.LastAttemptAt), time.Hour, "the backoff is capped at an hour")
			f.clock.Set(*d.NextAttemptAt)
			require.Equal(t, 1, f.dispatch())
			attempts++
		}
		require.Equal(t, models.DeliveryDead, d.Status)
		require.Equal(t, attempts, d.Attempts)
		require.Len(t, r.all(), attempts, "every attempt reached the receiver")
		require.False(t, d.LastAttemptAt.After(created.Add(24*time.Hour)))
		require.True(t, d.LastAttemptAt.After(created.Add(23*time.Hour)), "retried for about 24 h (last at %v)", d.LastAttemptAt.Sub(created))

		// Every attempt carried the same delivery ID (receivers dedupe on it).
		for _, p := range r.all() {
			require.Equal(t, d.ID, p.header.Get("Tideline-Delivery"))
		}
		f.clock.Advance(48 * time.Hour)
		require.Zero(t, f.dispatch(), "dead deliveries stay dead")
	})
}

// "Send test" posts at once and reports the result; a failing test is
// dead at once rather than retried for a day.
func TestSendTest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		secret := f.notifier("ops", r.URL, []string{"run_failed"}, nil)
		d, err := f.svc.TestNotifier(f.ctx, "default", "ops", "alice")
		require.NoError(t, err)
		require.Equal(t, models.DeliveryDelivered, d.Status)
		require.Equal(t, "test", d.EventType)
		verifySignature(t, secret, r.all()[0])
		require.Equal(t, "test", r.all()[0].doc["event"])

		r.setStatus(http.StatusNotFound)
		d, err = f.svc.TestNotifier(f.ctx, "default", "ops", "alice")
		require.NoError(t, err)
		require.Equal(t, models.DeliveryDead, d.Status)
		require.Equal(t, 404, *d.LastStatusCode)
		require.Len(t, f.deliveries("ops"), 2)
		require.Zero(t, f.dispatch())

		_, err = f.svc.TestNotifier(f.ctx, "default", "nope", "alice")
		require.ErrorIs(t, err, scheduling.ErrNotFound)
	})
}

// Notifier input is validated field by field and bounded.
func TestNotifierValidation(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	clock := schedtest.NewClock(t0)
	strict := schedtest.Service(db, clock) // private targets refused
	url := func(s string) *string { return &s }
	cases := []struct {
		in     scheduling.NotifierInput
		fields []string
	}{
		{scheduling.NotifierInput{Name: "Bad Name", URL: url("https://hooks.example.com/x"), Events: []string{"run_failed"}}, []string{"name"}},
		{scheduling.NotifierInput{Name: "a", URL: url("ftp://x"), Events: []string{"run_failed"}}, []string{"url"}},
		{scheduling.NotifierInput{Name: "a", URL: url("http://127.0.0.1:9/x"), Events: []string{"run_failed"}}, []string{"url"}},
		{scheduling.NotifierInput{Name: "a", URL: url("http://169.254.169.254/latest"), Events: []string{"run_failed"}}, []string{"url"}},
		{scheduling.NotifierInput{Name: "a", URL: url("http://localhost/x"), Events: []string{"run_failed"}}, []string{"url"}},
		{scheduling.NotifierInput{Name: "a", URL: url("https://hooks.example.com/" + strings.Repeat("x", 2048)), Events: []string{"run_failed"}}, []string{"url"}},
		{scheduling.NotifierInput{Name: "a", URL: url("https://hooks.example.com/x"), Events: []string{"nope"}, Format: url("xml")}, []string{"events", "format"}},
		{scheduling.NotifierInput{Name: "a", URL: url("https://hooks.example.com/x")}, []string{"events"}},
		{scheduling.NotifierInput{Name: "a", URL: url("https://hooks.example.com/x"), Events: []string{"run_failed"}, Secret: url("short")}, []string{"secret"}},
	}
	for _, c := range cases {
		_, err := strict.CreateNotifier(t.Context(), "default", c.in, nil)
		requireFields(t, err, c.fields...)
	}
	res, err := strict.CreateNotifier(t.Context(), "default", scheduling.NotifierInput{Name: "ok", URL: url("https://hooks.example.com/x"), Events: []string{"run_failed"}}, nil)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Secret, "whsec_"))
	_, err = strict.CreateNotifier(t.Context(), "default", scheduling.NotifierInput{Name: "ok", URL: url("https://hooks.example.com/x"), Events: []string{"run_failed"}}, nil)
	var conflict *scheduling.ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "notifier_already_exists", conflict.Code)
}

// Several dispatchers on one PostgreSQL database never post one delivery
// at the same time, and between them post every delivery exactly once.
func TestDispatchersShareDeliveriesOnPostgres(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 4, clock)
	for i, s := range services {
		services[i] = notifyService(s.DB(), clock, scheduling.NotifyConfig{})
	}
	ctx := t.Context()
	r := newReceiver(t)
	url := r.URL
	_, err := services[0].CreateNotifier(ctx, "default", scheduling.NotifierInput{Name: "n", URL: &url, Events: []string{"backfill_finished", "fire_late"}}, nil)
	require.NoError(t, err)
	in := cronInput("often", "* * * * *")
	in.OverlapPolicy = scheduling.OverlapAllowAll
	_, err = services[0].Create(ctx, in, nil)
	require.NoError(t, err)
	// 120 facts: late fires, one tick each.
	const facts = 120
	for i := range facts {
		clock.Set(t0.Add(time.Duration(3*i+3) * time.Minute)) // each fire two minutes late
		_, err := services[0].Tick(ctx, 10)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Go(func() {
			for {
				n, err := s.DispatchNotifications(ctx, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	posts := r.all()
	seen := map[string]int{}
	for _, p := range posts {
		seen[p.header.Get("Tideline-Delivery")]++
	}
	require.Len(t, seen, facts, "every delivery was posted")
	for id, n := range seen {
		require.Equal(t, 1, n, "delivery %s posted %d times", id, n)
	}
	require.Empty(t, r.overlap)
}

// A blackholed receiver holds only the dispatcher: the loop keeps firing
// on time while a post waits for an answer that never comes.
func TestBlackholedReceiverDoesNotDelayFires(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		r.hold = make(chan struct{})
		t.Cleanup(func() { close(r.hold) })
		f.notifier("hole", r.URL, []string{"fire_late"}, nil)
		in := cronInput("every-minute", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		f.clock.Set(t0.Add(5 * time.Minute)) // late: a delivery is due
		loop := &scheduling.Loop{Service: f.svc, Limit: 10}
		_, err := loop.RunOnce(f.ctx)
		require.NoError(t, err)
		done := make(chan struct{})
		go func() { defer close(done); _, _ = f.svc.NotifyOnce(f.ctx, 10) }()
		<-r.arrived // the dispatcher is now stuck in the post
		for i := 1; i <= 5; i++ {
			f.clock.Set(t0.Add(time.Duration(5+i) * time.Minute))
			res, err := loop.RunOnce(f.ctx)
			require.NoError(t, err)
			require.Len(t, res.Rows, 1, "minute %d fired while the receiver hangs", i)
			require.Equal(t, scheduling.OutcomeTriggered, res.Rows[0].Outcome)
		}
		select {
		case <-done:
			t.Fatal("the post should still be waiting")
		default:
		}
		require.Len(t, r.all(), 1)
	})
}

// Occurrences the missed-fire policy drops after downtime are reported
// once per tick as occurrences_missed, with the count and the range.
func TestMissedOccurrencesNotify(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("missed", r.URL, []string{"occurrences_missed"}, nil)
		in := cronInput("quarter", "*/15 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		f.clock.Set(t0.Add(time.Hour + time.Minute)) // down since t0: 12:15, 12:30, 12:45 and 13:00 were due
		_, err := f.svc.Tick(f.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, 1, f.dispatch())
		doc := r.all()[0].doc
		require.Equal(t, "occurrences_missed", doc["event"])
		details := doc["details"].(map[string]any)
		require.EqualValues(t, 3, details["missed"], "the overdue 12:15 fires; 12:30, 12:45 and 13:00 are dropped")
		require.Equal(t, "2026-07-16T12:30:00.000000Z", details["first_missed"])
		require.Equal(t, "2026-07-16T13:00:00.000000Z", details["last_missed"])
	})
}

// Retention deletes settled deliveries with the runs they report on; a
// delivery still waiting to be sent stays.
func TestRetentionDeletesSettledDeliveries(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		ok, down := newReceiver(t), newReceiver(t)
		down.status = http.StatusServiceUnavailable
		f.notifier("ok", ok.URL, []string{"run_failed"}, nil)
		f.notifier("down", down.URL, []string{"run_failed"}, nil)
		runID := f.retrying("failing", nil)
		f.failOnce(runID, "io")
		f.dispatch()
		require.Equal(t, models.DeliveryDelivered, f.deliveries("ok")[0].Status)
		require.NotEqual(t, models.DeliveryDelivered, f.deliveries("down")[0].Status, "the down receiver's delivery waits to retry")

		f.clock.Advance(72 * time.Hour)
		deleted, err := retention.New(f.db, f.clock.Now).Retain(f.ctx, retention.Policy{KeepRuns: 48 * time.Hour})
		require.NoError(t, err)
		require.Equal(t, 1, deleted.Deliveries)
		require.Empty(t, f.deliveries("ok"))
		require.Len(t, f.deliveries("down"), 1, "not settled: kept")
	})
}
