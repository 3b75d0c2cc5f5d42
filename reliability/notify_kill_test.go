package reliability

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
)

// receiver is a notification endpoint that records every request by its
// Tideline-Delivery ID. The first request it gets hangs, unanswered, until
// its client goes away (or the test ends): the sender is "mid-post". Every
// later request is answered 204.
type receiver struct {
	t       testing.TB
	release chan struct{}

	mu       sync.Mutex
	secret   string
	requests []receivedPost
	hung     chan struct{} // closed when the first request arrived
}

type receivedPost struct {
	delivery, event, docID string
	answered               bool
	badSignature           bool
}

func newReceiver(t testing.TB) (*receiver, *httptest.Server) {
	rc := &receiver{t: t, release: make(chan struct{}), hung: make(chan struct{})}
	srv := httptest.NewServer(rc) // 127.0.0.1
	t.Cleanup(func() {
		close(rc.release)
		srv.Close()
	})
	return rc, srv
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var doc struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &doc)
	rc.mu.Lock()
	post := receivedPost{delivery: r.Header.Get("Tideline-Delivery"), event: r.Header.Get("Tideline-Event"), docID: doc.ID,
		badSignature: !signedBy(rc.secret, r.Header.Get(notify.SignatureHeader), body)}
	first := len(rc.requests) == 0
	if !first {
		post.answered = true
	}
	rc.requests = append(rc.requests, post)
	rc.mu.Unlock()
	if first {
		close(rc.hung)
		select {
		case <-r.Context().Done(): // the sender died
		case <-rc.release:
		}
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// signedBy checks a Tideline-Signature header (docs/NOTIFICATIONS.md).
func signedBy(secret, header string, body []byte) bool {
	var ts string
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			ts = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	return err == nil && secret != "" && notify.Sign(secret, time.Unix(sec, 0), body) == header
}

func (rc *receiver) posts() []receivedPost {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

// answered reports whether a post of the delivery was answered 2xx.
func (rc *receiver) answered(id string) bool {
	return slices.ContainsFunc(rc.posts(), func(p receivedPost) bool { return p.delivery == id && p.answered })
}

// TestNotifyKillStillDelivers is issue 19's acceptance: a SIGKILL between a
// fact's commit and its delivery still delivers. One kill covers both
// windows, deterministically:
//
//  1. Replica A (`serve --allow-private-notifiers`, PostgreSQL) gets a
//     notifier for backfill_finished pointing at a local receiver.
//  2. Backfill #1 commits its fact and its outbox row; A's dispatcher
//     claims the row (sending, attempt 1) and posts it. The receiver holds
//     that first post unanswered: A is mid-post.
//  3. Backfill #2 commits its fact and outbox row. A's dispatcher is still
//     waiting on the hung post (a pass ends when all its posts did), so
//     the row stays pending: committed, never sent.
//  4. A is SIGKILLed. Row #1 is `sending` under the dead replica's lease,
//     row #2 `pending` with 0 attempts; the receiver has answered nothing.
//  5. Replica B starts on the same database. It posts #2 at once, and #1
//     once A's lease is over. The test does not wait the lease out (2 ×
//     10 s + 30 s): it moves that row's next_attempt_at back by an hour,
//     as if the time had passed — nothing else of the row or of B changes.
//  6. Both rows end `delivered` (the delivery log API says so too); the
//     receiver answered both IDs; every post carried the delivery ID as
//     header and document id and a valid signature; #1 was posted twice
//     under the same ID (at least once, dedupable) and #2 once; no other
//     delivery exists or was posted.
func TestNotifyKillStillDelivers(t *testing.T) {
	t.Parallel()
	began := time.Now()
	url := dbtest.PostgresURL(t)
	db := openDB(t, url)
	ctx := ctxTimeout(t)
	rc, srv := newReceiver(t)

	a := newReplica(t, "a", url, "--loop-period", "100ms", "--allow-private-notifiers")
	a.start()
	var created struct {
		Secret string `json:"secret"`
	}
	if _, err := a.do(http.MethodPost, "/waterline/api/v2/notifiers", map[string]any{
		"name": "kill", "url": srv.URL + "/hook", "format": "json", "events": []string{notify.EventBackfillFinished},
	}, &created); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = created.Secret
	rc.mu.Unlock()
	schedule := createIntervalSchedules(t, a, "nk", 1, "PT1H")[0]
	backfill := func(day string) {
		t.Helper()
		body := map[string]any{"from": day + "T00:00:00Z", "to": day + "T03:00:00Z"}
		if _, err := a.do(http.MethodPost, "/waterline/api/v2/schedules/"+schedule+"/backfill", body, nil); err != nil {
			t.Fatal(err)
		}
	}
	deliveries := func() ([]models.Delivery, error) {
		var out []models.Delivery
		err := db.NewSelect().Model(&out).OrderExpr("d.created_at, d.id").Scan(ctx)
		return out, err
	}

	// 2. Fact #1; A posts it and hangs.
	backfill("2026-07-01")
	select {
	case <-rc.hung:
	case <-time.After(10 * time.Second):
		t.Fatal("replica A never posted the first delivery")
	}
	// 3. Fact #2, committed while A's dispatcher is stuck. A backfill is a
	// job (202): its fact commits when the job has worked its range, so
	// wait for the outbox row rather than expect it with the answer.
	backfill("2026-07-02")
	var rows []models.Delivery
	waitFor(t, 10*time.Second, 20*time.Millisecond, "the second backfill's outbox row", func() (bool, error) {
		var err error
		rows, err = deliveries()
		return len(rows) >= 2, err
	})
	if len(rows) != 2 {
		t.Fatalf("%d outbox rows after two backfills, want 2", len(rows))
	}
	midPost, unsent := rows[0].ID, rows[1].ID
	if p := rc.posts(); len(p) != 1 || p[0].delivery != midPost {
		t.Fatalf("receiver got %+v before the kill, want one post of %s", p, midPost)
	}

	// 4. The crash.
	a.kill()
	rows, err := deliveries()
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Status != models.DeliverySending || r.Attempts != 1 {
		t.Fatalf("mid-post delivery after the kill: %s, %d attempts; want sending, 1", r.Status, r.Attempts)
	}
	if r := rows[1]; r.Status != models.DeliveryPending || r.Attempts != 0 {
		t.Fatalf("committed-but-unsent delivery after the kill: %s, %d attempts; want pending, 0", r.Status, r.Attempts)
	}
	if rc.answered(midPost) || rc.answered(unsent) {
		t.Fatal("the receiver answered a post before the kill")
	}
	// 5. A's lease on the mid-post row, over.
	if _, err := db.NewUpdate().Model((*models.Delivery)(nil)).
		Set("next_attempt_at = next_attempt_at - interval '1 hour'").
		Where("id = ? AND status = ?", midPost, models.DeliverySending).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	b := newReplica(t, "b", url, "--loop-period", "100ms", "--allow-private-notifiers")
	b.start()
	waitFor(t, 15*time.Second, 20*time.Millisecond, "both deliveries delivered", func() (bool, error) {
		rows, err := deliveries()
		if err != nil {
			return false, err
		}
		for _, r := range rows {
			if r.Status != models.DeliveryDelivered {
				return false, fmt.Errorf("%s is %s", r.ID, r.Status)
			}
		}
		return len(rows) == 2, nil
	})

	// 6. Nothing lost, nothing invented.
	rows, err = deliveries()
	if err != nil {
		t.Fatal(err)
	}
	wantAttempts := map[string]int{midPost: 2, unsent: 1}
	for _, r := range rows {
		if r.Attempts != wantAttempts[r.ID] || r.LastStatusCode == nil || *r.LastStatusCode != http.StatusNoContent || r.DeliveredAt == nil {
			t.Errorf("delivery %s: %d attempts, last status %v, delivered at %v; want %d attempts ending 204",
				r.ID, r.Attempts, r.LastStatusCode, r.DeliveredAt, wantAttempts[r.ID])
		}
	}
	posted := map[string]int{}
	for _, p := range rc.posts() {
		posted[p.delivery]++
		if p.docID != p.delivery || p.event != notify.EventBackfillFinished || p.badSignature {
			t.Errorf("post %+v: want the delivery ID as header and document id, event backfill_finished, a valid signature", p)
		}
	}
	if len(posted) != 2 || posted[midPost] != 2 || posted[unsent] != 1 {
		t.Errorf("receiver got posts %v; want %s twice (the killed post and its retry) and %s once", posted, midPost, unsent)
	}
	if !rc.answered(midPost) || !rc.answered(unsent) {
		t.Errorf("receiver answered %s: %v, %s: %v; want both", midPost, rc.answered(midPost), unsent, rc.answered(unsent))
	}
	var page struct {
		Deliveries []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"deliveries"`
	}
	if _, err := b.do(http.MethodGet, "/waterline/api/v2/notifiers/kill/deliveries", nil, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Deliveries) != 2 {
		t.Fatalf("delivery log %+v, want 2 rows", page.Deliveries)
	}
	for _, d := range page.Deliveries {
		if d.Status != models.DeliveryDelivered {
			t.Errorf("delivery log: %s is %s, want delivered", d.ID, d.Status)
		}
	}
	// The dispatcher counts an attempt once its outcome is written (and the
	// notifier's health noted), so the count may follow the rows a moment.
	waitFor(t, 5*time.Second, 10*time.Millisecond, "replica B counts 2 delivered attempts", func() (bool, error) {
		n, err := b.metric(`tideline_notification_attempts_total{event="backfill_finished",outcome="delivered"}`)
		if err != nil || n > 2 {
			return false, fmt.Errorf("replica B's delivered attempts: %v (err %v), want 2", n, err)
		}
		return n == 2, nil
	})
	if n := strings.Count(tail(b.log.Name(), 1000), "level=ERROR"); n > 0 {
		t.Errorf("replica B logged %d errors:\n%s", n, tail(b.log.Name(), 20))
	}
	t.Logf("kill-and-deliver took %s", time.Since(began).Round(time.Millisecond))
}
