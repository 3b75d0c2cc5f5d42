package scheduling_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// targetService is a service whose targets may reach this machine (the
// receivers of these tests listen on 127.0.0.1), as serve
// --allow-private-targets.
func targetService(db *bun.DB, clock scheduling.Clock, allowPrivate bool) *scheduling.Service {
	return scheduling.New(scheduling.Config{DB: db, Clock: clock, Rand: schedtest.Rand{},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Targets: scheduling.TargetConfig{AllowPrivate: allowPrivate, WatchEvery: 50 * time.Millisecond}})
}

func targetFixture(t *testing.T, db *bun.DB) *fixture {
	clock := schedtest.NewClock(t0)
	return &fixture{t: t, db: db, clock: clock, svc: targetService(db, clock, true), ctx: context.Background()}
}

func httpAction(url string, mutate ...func(*models.Target)) models.Action {
	tgt := &models.Target{Kind: models.TargetHTTP, URL: url}
	for _, m := range mutate {
		m(tgt)
	}
	return models.Action{WorkflowType: "invoice-sync", Input: json.RawMessage(`{"region":"eu"}`), Target: tgt}
}

// httpRun creates a manual-only schedule calling url and triggers it once.
func (f *fixture) httpRun(id, url string, policy *models.RetryPolicy, mutate ...func(*models.Target)) string {
	f.t.Helper()
	in := cronInput(id, "0 0 1 1 *")
	in.Action = httpAction(url, mutate...)
	in.Action.RetryPolicy = policy
	f.create(in)
	res, err := f.svc.Trigger(f.ctx, "default", id, "", nil)
	require.NoError(f.t, err)
	return res.RunID
}

func (f *fixture) execute() int {
	f.t.Helper()
	n, err := f.svc.ExecuteTargetsOnce(f.ctx)
	require.NoError(f.t, err)
	return n
}

func (f *fixture) described(id string) *scheduling.RunDescription {
	f.t.Helper()
	d, err := f.svc.DescribeRun(f.ctx, "default", id)
	require.NoError(f.t, err)
	return d
}

// One attempt is one signed request with the run's facts; a 2xx completes
// the run with the answer as output, and workers never see the run.
func TestHTTPTargetCompletesWithOneSignedRequest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := targetFixture(t, db)
		type seen struct {
			method string
			header http.Header
			body   []byte
		}
		got := make(chan seen, 4)
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got <- seen{r.Method, r.Header.Clone(), body}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok": true, "n": 12345678901234567890}`)
		}))
		t.Cleanup(rx.Close)
		secret := "whsec_0123456789abcdef"
		runID := f.httpRun("signed", rx.URL+"/hook", nil, func(tg *models.Target) {
			tg.Method, tg.Secret, tg.Auth = "put", &secret, "bearer"
			tg.Headers = map[string]string{"x-team": "billing"}
		})

		empty, err := f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: "default", Limit: 10, WorkerID: "w1"})
		require.NoError(t, err)
		require.Empty(t, empty, "a worker never receives a run of an HTTP target")
		_, err = f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: "default", Connection: scheduling.HTTPConnection, WorkerID: "w1"})
		require.ErrorContains(t, err, "HTTP targets")

		require.Equal(t, 1, f.execute())
		req := <-got
		require.Equal(t, http.MethodPut, req.method)
		d := f.described(runID)
		require.Equal(t, models.RunCompleted, d.Run.Status)
		require.Equal(t, d.Run.InstanceID, req.header.Get("Idempotency-Key"))
		require.Equal(t, runID, req.header.Get("Tideline-Run-Id"))
		require.Equal(t, "1", req.header.Get("Tideline-Attempt"))
		require.Equal(t, "billing", req.header.Get("X-Team"))
		require.Equal(t, "Bearer "+secret, req.header.Get("Authorization"))
		require.Equal(t, "application/json", req.header.Get("Content-Type"))

		sig := req.header.Get("Tideline-Signature")
		ts, mac, ok := strings.Cut(strings.TrimPrefix(sig, "t="), ",v1=")
		require.True(t, ok, sig)
		h := hmac.New(sha256.New, []byte(secret))
		h.Write([]byte(ts + "." + string(req.body)))
		require.Equal(t, hex.EncodeToString(h.Sum(nil)), mac, "signed like notifications: HMAC-SHA256 of t.body")

		var body map[string]any
		require.NoError(t, json.Unmarshal(req.body, &body))
		require.Equal(t, map[string]any{"run_id": runID, "instance_id": d.Run.InstanceID, "schedule_id": "signed", "namespace": "default",
			"workflow_type": "invoice-sync", "occurrence_time": scheduling.FormatTime(*d.Run.OccurrenceTime), "attempt": float64(1),
			"input": map[string]any{"region": "eu"}}, body)

		require.JSONEq(t, `{"status": 200, "body": {"ok": true, "n": 12345678901234567890}}`, string(d.Run.Output))
		require.Contains(t, string(d.Run.Output), "12345678901234567890", "the body is kept as JSON, not through float64")
		require.Len(t, d.Attempts, 1)
		require.Equal(t, 200, *d.Attempts[0].HTTPStatus)
		require.Equal(t, models.RunCompleted, d.Attempts[0].Outcome)
		require.Zero(t, f.execute(), "nothing left to do")
	})
}

// The status mapping of CONTRACT §15, each against a real receiver.
func TestHTTPTargetAnswersMapToAttempts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := targetFixture(t, db)
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("a redirect to another origin was followed: %s", r.URL)
		}))
		t.Cleanup(elsewhere.Close)
		release := make(chan struct{})
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read the body: only then does the server notice a client
			// that gave up (and cancel r.Context()).
			_, _ = io.Copy(io.Discard, r.Body)
			switch r.URL.Path {
			case "/500":
				http.Error(w, "database down", 500)
			case "/404":
				http.Error(w, "no such job", 404)
			case "/408":
				w.WriteHeader(408)
			case "/429":
				w.Header().Set("Retry-After", "120")
				w.WriteHeader(429)
			case "/text":
				_, _ = io.WriteString(w, "done, 3 rows")
			case "/moved":
				http.Redirect(w, r, "/text", http.StatusTemporaryRedirect)
			case "/away":
				http.Redirect(w, r, elsewhere.URL+"/x", http.StatusTemporaryRedirect)
			case "/slow":
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
		})
		retry := policy(3, 1, 2, 10)
		cases := []struct {
			path, status, errorType string
			attempt                 int
			httpStatus              int
			availableIn             time.Duration
		}{
			{"/500", models.RunPending, "http_500", 2, 500, time.Second},
			{"/408", models.RunPending, "http_408", 2, 408, time.Second},
			{"/429", models.RunPending, "http_429", 2, 429, 120 * time.Second},
			{"/404", models.RunFailed, "http_404", 1, 404, 0},
			{"/away", models.RunFailed, "redirect_refused", 1, 0, 0},
			{"/slow", models.RunPending, "timeout", 2, 0, time.Second},
			{"/text", models.RunCompleted, "", 1, 200, 0},
			{"/moved", models.RunCompleted, "", 1, 200, 0},
		}
		ids := map[string]string{}
		for _, c := range cases {
			// A receiver each: the failing ones would otherwise open the
			// breaker of their shared lane (TestHTTPTargetBreaker).
			rx := httptest.NewServer(handler)
			t.Cleanup(rx.Close)
			ids[c.path] = f.httpRun("s"+strings.ReplaceAll(c.path, "/", "-"), rx.URL+c.path, retry, func(tg *models.Target) { tg.TimeoutSeconds = 1 })
		}
		t.Cleanup(func() { close(release) }) // before the receivers close: Close waits for the handlers
		require.Equal(t, len(cases), f.execute())
		for _, c := range cases {
			d := f.described(ids[c.path])
			require.Equal(t, c.status, d.Run.Status, c.path)
			require.Equal(t, c.attempt, d.Run.Attempt, "%s: a run sent back names its next attempt", c.path)
			a := d.Attempts[0]
			require.Equal(t, c.errorType, a.ErrorType, c.path)
			if c.httpStatus == 0 {
				require.Nil(t, a.HTTPStatus, c.path)
			} else {
				require.Equal(t, c.httpStatus, *a.HTTPStatus, c.path)
			}
			if c.availableIn > 0 {
				require.True(t, f.clock.Now().Add(c.availableIn).Equal(*d.Run.AvailableAt), "%s: available at %v", c.path, d.Run.AvailableAt)
			}
		}
		require.JSONEq(t, `{"status": 200, "body": "done, 3 rows"}`, string(f.described(ids["/moved"]).Run.Output), "a same-origin redirect is followed")
		require.Contains(t, f.described(ids["/500"]).Attempts[0].Message, "database down")

		// After a second, the retries but the 429's are due; their second
		// attempt says 2 on the wire and in the history.
		f.clock.Advance(time.Second)
		require.Equal(t, 3, f.execute())
		d := f.described(ids["/500"])
		require.Len(t, d.Attempts, 2)
		require.Equal(t, 2, d.Attempts[1].Number)
		require.Equal(t, models.RunPending, d.Run.Status)
		require.Equal(t, 3, d.Run.Attempt)
		f.clock.Advance(118 * time.Second)
		require.Equal(t, 3, f.execute(), "the third attempts of the 500, 408 and timeout runs; the 429 waits out its Retry-After")
		require.Equal(t, models.RunFailed, f.described(ids["/500"]).Run.Status, "the third attempt was the last")
		f.clock.Advance(time.Second)
		require.Equal(t, 1, f.execute(), "Retry-After passed")
	})
}

// Without --allow-private-targets a loopback target is refused when saved,
// and — should one be stored — at dial time.
func TestHTTPTargetPrivateAddressRefusedWithoutFlag(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		hit := make(chan struct{}, 1)
		rx := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit <- struct{}{} }))
		t.Cleanup(rx.Close)
		clock := schedtest.NewClock(t0)
		strict := targetService(db, clock, false)
		in := cronInput("private", "0 0 1 1 *")
		in.Action = httpAction(rx.URL)
		_, err := strict.Create(context.Background(), in, nil)
		requireFieldError(t, err, "action.target.url", "--allow-private-targets")

		open := &fixture{t: t, db: db, clock: clock, svc: targetService(db, clock, true), ctx: context.Background()}
		runID := open.httpRun("private", rx.URL, nil)
		n, err := strict.ExecuteTargetsOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		d := open.described(runID)
		require.Equal(t, models.RunFailed, d.Run.Status)
		require.Equal(t, "target_refused", d.Attempts[0].ErrorType)
		require.Len(t, hit, 0, "nothing reached the receiver")
	})
}

func requireFieldError(t *testing.T, err error, field, contains string) {
	t.Helper()
	var v *scheduling.ValidationError
	require.ErrorAs(t, err, &v)
	require.Contains(t, v.Fields, field, "fields: %v", v.Fields)
	require.Contains(t, v.Fields[field], contains)
}

func TestHTTPTargetValidation(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	f := &fixture{t: t, db: db, clock: schedtest.NewClock(t0), ctx: context.Background()}
	f.svc = targetService(db, f.clock, false)
	long := strings.Repeat("x", 300)
	many := map[string]string{}
	for i := range 33 {
		many["X-H"+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	for _, c := range []struct {
		target       models.Target
		field, which string
	}{
		{models.Target{Kind: "ftp"}, "action.target.kind", "worker"},
		{models.Target{Kind: "worker", URL: "https://example.com"}, "action.target.kind", "no other fields"},
		{models.Target{Kind: "http"}, "action.target.url", "required"},
		{models.Target{Kind: "http", URL: "ftp://example.com"}, "action.target.url", "http"},
		{models.Target{Kind: "http", URL: "http://169.254.169.254/"}, "action.target.url", "link-local"},
		{models.Target{Kind: "http", URL: "https://example.com", Method: "GET"}, "action.target.method", "POST or PUT"},
		{models.Target{Kind: "http", URL: "https://example.com", TimeoutSeconds: 901}, "action.target.timeout_seconds", "900"},
		{models.Target{Kind: "http", URL: "https://example.com", TimeoutSeconds: -1}, "action.target.timeout_seconds", "between 1"},
		{models.Target{Kind: "http", URL: "https://example.com", Headers: map[string]string{"Authorization": "Bearer x"}}, "action.target.headers", "Authorization"},
		{models.Target{Kind: "http", URL: "https://example.com", Headers: map[string]string{"connection": "close"}}, "action.target.headers", "Connection"},
		{models.Target{Kind: "http", URL: "https://example.com", Headers: map[string]string{"Bad Name": "x"}}, "action.target.headers", "valid header name"},
		{models.Target{Kind: "http", URL: "https://example.com", Headers: map[string]string{"X-A": "a\r\nInjected: 1"}}, "action.target.headers", "one line"},
		{models.Target{Kind: "http", URL: "https://example.com", Headers: many}, "action.target.headers", "at most 32"},
		{models.Target{Kind: "http", URL: "https://example.com", Auth: "basic"}, "action.target.auth", "bearer"},
		{models.Target{Kind: "http", URL: "https://example.com", Auth: "bearer"}, "action.target.secret", "required"},
		{models.Target{Kind: "http", URL: "https://example.com", Secret: &long}, "action.target.secret", "characters"},
	} {
		in := cronInput("v", "0 0 1 1 *")
		tg := c.target
		in.Action.Target = &tg
		_, err := f.svc.Create(f.ctx, in, nil)
		require.Error(t, err, "%+v", c.target)
		requireFieldError(t, err, c.field, c.which)
	}
	in := cronInput("conn", "0 0 1 1 *")
	in.Connection = ptr(scheduling.HTTPConnection)
	_, err := f.svc.Create(f.ctx, in, nil)
	requireFieldError(t, err, "connection", "reserved")
}

// The secret is write-only: not in the action column, so not in the audit
// stream or any answer; an update without it keeps it, a new one rotates
// it (recorded as a change, without the value), "" removes it.
func TestHTTPTargetSecretIsNeverServed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := targetFixture(t, db)
		var sigs []string
		var mu sync.Mutex
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			sigs = append(sigs, r.Header.Get("Tideline-Signature"))
			mu.Unlock()
		}))
		t.Cleanup(rx.Close)
		first, second := "first-secret-0123456789", "second-secret-0123456789"
		in := cronInput("secret", "0 0 1 1 *")
		in.Action = httpAction(rx.URL, func(tg *models.Target) { tg.Secret = &first })
		sch := f.create(in)
		require.Equal(t, 1, sch.Action.Target.SecretVersion)

		// An update of the action that does not name the secret keeps it.
		action := httpAction(rx.URL, func(tg *models.Target) { tg.TimeoutSeconds = 5 })
		sch, err := f.svc.Update(f.ctx, "default", "secret", scheduling.UpdateInput{Action: &action}, nil)
		require.NoError(t, err)
		require.Equal(t, 1, sch.Action.Target.SecretVersion)
		rotate := httpAction(rx.URL, func(tg *models.Target) { tg.TimeoutSeconds = 5; tg.Secret = &second })
		sch, err = f.svc.Update(f.ctx, "default", "secret", scheduling.UpdateInput{Action: &rotate}, nil)
		require.NoError(t, err, "a rotation alone is a change")
		require.Equal(t, 2, sch.Action.Target.SecretVersion)

		var raw []string
		require.NoError(t, db.NewRaw("SELECT action FROM workflow_schedules").Scan(f.ctx, &raw))
		require.Len(t, raw, 1)
		var events []string
		require.NoError(t, db.NewRaw("SELECT payload FROM workflow_schedule_history_events").Scan(f.ctx, &events))
		require.NotEmpty(t, events)
		for _, text := range append(raw, events...) {
			require.NotContains(t, text, "first-secret")
			require.NotContains(t, text, "second-secret")
		}
		plan, err := f.svc.PlanUpdate(f.ctx, "default", "secret", scheduling.UpdateInput{Action: &rotate})
		require.NoError(t, err)
		for _, c := range plan.Changes {
			require.NotContains(t, c.From+c.To, "second-secret")
		}

		_, err = f.svc.Trigger(f.ctx, "default", "secret", "", nil)
		require.NoError(t, err)
		require.Equal(t, 1, f.execute())
		require.Len(t, sigs, 1)
		ts, _, _ := strings.Cut(strings.TrimPrefix(sigs[0], "t="), ",")
		require.NotEmpty(t, ts)

		clear := httpAction(rx.URL, func(tg *models.Target) { tg.TimeoutSeconds = 5; tg.Secret = ptr("") })
		sch, err = f.svc.Update(f.ctx, "default", "secret", scheduling.UpdateInput{Action: &clear}, nil)
		require.NoError(t, err)
		require.Zero(t, sch.Action.Target.SecretVersion)
		var left int
		require.NoError(t, db.NewRaw("SELECT count(*) FROM workflow_schedule_secrets").Scan(f.ctx, &left))
		require.Zero(t, left, "removed with the target's secret")
	})
}

// A cancel request stops the request in flight and ends the run cancelled.
func TestHTTPTargetCancelAbandonsTheRequest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		arrived, gone := make(chan struct{}, 1), make(chan struct{}, 1)
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			arrived <- struct{}{}
			<-r.Context().Done()
			gone <- struct{}{}
		}))
		t.Cleanup(rx.Close)
		svc := targetService(db, scheduling.SystemClock{}, true)
		f := &fixture{t: t, db: db, svc: svc, ctx: context.Background()}
		runID := f.httpRun("cancel", rx.URL, policy(5, 1, 2, 10), func(tg *models.Target) { tg.TimeoutSeconds = 600 })
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { svc.RunTargets(ctx, slog.New(slog.DiscardHandler)); close(done) }()
		t.Cleanup(func() { stop(); <-done })
		waitFor(t, arrived)
		_, err := svc.CancelRun(f.ctx, "default", runID, nil)
		require.NoError(t, err)
		waitFor(t, gone)
		require.Eventually(t, func() bool { return f.described(runID).Run.Status == models.RunCancelled }, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, 1, f.described(runID).Run.Attempt, "cancelled runs never retry")
	})
}

func waitFor(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting")
	}
}

// blackhole accepts connections and never answers.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// The executor's look for ready runs (models.ReadyLanes) also says when
// the earliest run that is not available yet becomes so — a retry's
// backoff — which is when an idle executor looks again; a lane with a
// ready run is listed whatever else it holds.
func TestReadyLanesSayWhenTheNextRetryIsDue(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := targetFixture(t, db)
		now := f.clock.Now()
		lanes, later, err := models.ReadyLanes(f.ctx, db, now, scheduling.HTTPConnection, 10)
		require.NoError(t, err)
		require.Empty(t, lanes)
		require.Nil(t, later, "nothing waits")

		first := f.httpRun("first", "http://127.0.0.1:1/x", nil)
		second := f.httpRun("second", "http://127.0.0.1:1/x", nil)
		retryAt := func(run string, at time.Time) {
			t.Helper()
			_, err := db.NewUpdate().Model((*models.Run)(nil)).Where("id = ?", run).Set("available_at = ?", at).Exec(f.ctx)
			require.NoError(t, err)
		}
		retryAt(first, now.Add(30*time.Second))
		retryAt(second, now.Add(10*time.Second))
		lanes, later, err = models.ReadyLanes(f.ctx, db, now, scheduling.HTTPConnection, 10)
		require.NoError(t, err)
		require.Empty(t, lanes, "both wait for their retry")
		require.NotNil(t, later)
		require.True(t, now.Add(10*time.Second).Equal(*later), "later %s", later)

		lanes, later, err = models.ReadyLanes(f.ctx, db, now.Add(10*time.Second), scheduling.HTTPConnection, 10)
		require.NoError(t, err)
		require.Equal(t, []models.Lane{{Namespace: "default", Queue: "127.0.0.1:1"}}, lanes, "the second's retry is due (a target's lane is its host)")
		require.NotNil(t, later)
		require.True(t, now.Add(30*time.Second).Equal(*later), "the first still waits: later %s", later)
	})
}
