package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/fairshare"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
)

// Sender posts one delivery; notify.Sender in production.
type Sender interface {
	Send(ctx context.Context, r notify.Request) notify.Result
}

// NotifyConfig configures notifications. Zero values get defaults.
type NotifyConfig struct {
	// PublicURL is the console's address as receivers should link to it
	// (serve --public-url); links are relative when empty.
	PublicURL string
	// LateAfter is how late a fire may be before fire_late is reported;
	// DefaultLateAfter when zero, never when negative.
	LateAfter time.Duration
	// AllowPrivate lets notifiers target loopback, private and link-local
	// addresses (serve --allow-private-notifiers).
	AllowPrivate bool
	// Timeout bounds one post; DefaultDeliveryTimeout when zero.
	Timeout time.Duration
	// Sender posts deliveries; a notify.Sender honouring Timeout and
	// AllowPrivate when nil.
	Sender Sender
	// Concurrency bounds the posts in flight, shared fairly across
	// namespaces and receivers; DefaultDispatchConcurrency when zero.
	Concurrency int
	// OnAttempt, when set, observes every delivery attempt (metrics):
	// outcome is delivered, retry or dead.
	OnAttempt func(event, outcome string, took time.Duration)
}

// Delivery timing (docs/NOTIFICATIONS.md): a failed attempt is retried
// after 30 s, doubling up to an hour between attempts, until 24 h after the
// fact; then the delivery is dead. About 30 attempts in all.
const (
	DefaultDeliveryTimeout = 10 * time.Second
	firstRetryDelay        = 30 * time.Second
	maxRetryDelay          = time.Hour
	DeliveryGiveUpAfter    = 24 * time.Hour
	// DefaultDispatchConcurrency bounds the posts one replica has in
	// flight: at most half for one namespace, a quarter for one of its
	// receivers (fairshare.Limits), so a blackholed receiver holds a few
	// slots for its timeout, never another namespace's.
	DefaultDispatchConcurrency = 16
	// DefaultDispatchLimit is how many deliveries one pass claims.
	DefaultDispatchLimit = 64
	maxDeliveryError     = 1024
)

func (c NotifyConfig) withDefaults() NotifyConfig {
	if c.LateAfter == 0 {
		c.LateAfter = DefaultLateAfter
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultDeliveryTimeout
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultDispatchConcurrency
	}
	if c.Sender == nil {
		c.Sender = notify.NewSender(c.Timeout, c.AllowPrivate, "Tideline-Notifier/1")
	}
	return c
}

// ObserveNotifications sets the observer of delivery attempts (metrics).
// Call it before the loop starts: the dispatcher reads it unguarded.
func (s *Service) ObserveNotifications(fn func(event, outcome string, took time.Duration)) {
	s.notify.OnAttempt = fn
}

// lease is how long a claimed delivery belongs to its dispatcher. It is
// well above the post's timeout, so a replica only takes a delivery over
// from one that died, never from one still posting it: no delivery is
// ever sent twice at the same time.
func (c NotifyConfig) lease() time.Duration { return 2*c.Timeout + 30*time.Second }

// deliveryRetryDelay is the wait after the attempts-th failed attempt.
func deliveryRetryDelay(attempts int) time.Duration {
	d := firstRetryDelay
	for i := 1; i < attempts && d < maxRetryDelay; i++ {
		d *= 2
	}
	return min(d, maxRetryDelay)
}

// NotifyOnce is one pass of the notification dispatcher: report runs past
// their start deadline, then post the due deliveries. The loop runs it in
// its own goroutine, beside the scheduling passes, so a slow receiver
// never delays a fire.
func (s *Service) NotifyOnce(ctx context.Context, limit int) (sent int, err error) {
	if limit <= 0 {
		limit = DefaultDispatchLimit
	}
	if _, err := s.CheckStartDeadlines(ctx, limit); err != nil {
		return 0, err
	}
	return s.DispatchNotifications(ctx, limit)
}

// DispatchNotifications claims up to limit due deliveries that the
// dispatch pool has room for, posts them and waits for those posts. It
// returns how many it posted. The loop uses startDeliveries, which does
// not wait.
func (s *Service) DispatchNotifications(ctx context.Context, limit int) (int, error) {
	n, wg, err := s.startDeliveries(ctx, limit)
	wg.Wait()
	return n, err
}

// startDeliveries claims due deliveries and starts posting them, fairly
// across (namespace, receiver) lanes (fairshare): a lane gets only the
// slots the pool gives it now, one round of the lanes at a time from a
// moving start, and a delivery is claimed only with a slot to post it at
// once. So a claim's lease (NotifyConfig.lease, above the post's timeout)
// always outlives its post: no replica takes over a delivery still being
// posted. A lane whose receiver keeps failing is backed off by its breaker
// and holds no slot; its deliveries wait, claimable, in the outbox.
func (s *Service) startDeliveries(ctx context.Context, limit int) (int, *sync.WaitGroup, error) {
	var batch sync.WaitGroup
	pool := s.dispatch.pool
	if pool.Free() == 0 {
		return 0, &batch, nil
	}
	now := s.now()
	// Usually none is due: the period's reading of the loop's work says.
	if work, err := s.loopWork(ctx); err != nil || !work.DeliveryDue(now) {
		return 0, &batch, err
	}
	lanes, err := models.DueDeliveryLanes(ctx, s.db, now, laneScan)
	if err != nil || len(lanes) == 0 {
		return 0, &batch, err
	}
	ids := make([]string, len(lanes))
	for i := range lanes {
		ids[i] = lanes[i].NotifierID
	}
	notifiers, err := models.NotifiersByID(ctx, s.db, ids)
	if err != nil {
		return 0, &batch, err
	}
	host := func(l models.DeliveryLane) string {
		if nf, ok := notifiers[l.NotifierID]; ok {
			if u, err := url.Parse(nf.URL); err == nil {
				return strings.ToLower(u.Host)
			}
		}
		return "notifier:" + l.NotifierID // deleted: its deliveries are only marked dead
	}
	s.dispatch.cursor++
	start := s.dispatch.cursor % len(lanes)
	slots := make([][]*fairshare.Slot, len(lanes))
	total := 0
	for progress := true; progress && total < limit; {
		progress = false
		for i := 0; i < len(lanes) && total < limit; i++ {
			at := (start + i) % len(lanes)
			if slot, ok := pool.Acquire(lanes[at].Namespace, host(lanes[at])); ok {
				slots[at] = append(slots[at], slot)
				total++
				progress = true
			}
		}
	}
	type claim struct {
		d    models.Delivery
		slot *fairshare.Slot
	}
	var claimed []claim
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		claimed = claimed[:0]
		now = s.now()
		for at, l := range lanes {
			if len(slots[at]) == 0 {
				continue
			}
			got, err := models.ClaimDeliveries(ctx, tx, now, l.NotifierID, len(slots[at]))
			if err != nil {
				return err
			}
			for i := range got {
				d := &got[i]
				d.Status, d.Attempts, d.NextAttemptAt, d.UpdatedAt = models.DeliverySending, d.Attempts+1, ptrTime(now.Add(s.notify.lease())), now
				if err := models.UpdateDelivery(ctx, tx, d); err != nil {
					return err
				}
				claimed = append(claimed, claim{d: *d, slot: slots[at][i]})
			}
		}
		return nil
	})
	used := map[*fairshare.Slot]bool{}
	if err == nil {
		for _, c := range claimed {
			used[c.slot] = true
		}
	}
	for _, list := range slots {
		for _, slot := range list {
			if !used[slot] {
				slot.Return()
			}
		}
	}
	if err != nil {
		return 0, &batch, err
	}
	for _, c := range claimed {
		nf, ok := notifiers[c.d.NotifierID]
		batch.Add(1)
		s.dispatch.wg.Add(1)
		go func() {
			defer s.dispatch.wg.Done()
			defer batch.Done()
			var nfp *models.Notifier
			if ok {
				nfp = &nf
			}
			d := c.d
			healthy, err := s.attempt(ctx, &d, nfp)
			switch {
			case err == nil || ctx.Err() != nil:
			case database.Unavailable(err):
				// The delivery stays claimed and is sent again once its
				// claim lapses (at least once); the loop reports the outage.
				s.logger.Warn("record notification attempt: database unavailable; the delivery is sent again", "delivery", d.ID, "err", err)
			default:
				s.logger.Error("record notification attempt", "delivery", d.ID, "err", err)
			}
			c.slot.Release(healthy)
		}()
	}
	return len(claimed), &batch, nil
}

// RunNotifications is the dispatcher of the loop: it reports runs past
// their start deadline and starts the due deliveries the pool has room
// for, then waits for a slot to free or the period to pass. It returns when
// ctx ends, after the posts in flight have stopped.
func (s *Service) RunNotifications(ctx context.Context, period time.Duration, logger *slog.Logger) {
	defer s.dispatch.wg.Wait()
	for {
		if _, err := s.CheckStartDeadlines(ctx, DefaultDispatchLimit); err != nil && ctx.Err() == nil {
			logPassError(logger, "notification pass failed", err)
		}
		n, _, err := s.startDeliveries(ctx, DefaultDispatchLimit)
		if err != nil && ctx.Err() == nil {
			logPassError(logger, "notification pass failed", err)
		}
		wait := period
		if n >= DefaultDispatchLimit {
			wait = 0 // a full pass: more may be due
		}
		t := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.dispatch.pool.Freed():
		case <-t.C():
		}
		t.Stop()
	}
}

// DispatchPool exposes the dispatcher's slots (tests, metrics).
func (s *Service) DispatchPool() *fairshare.Pool { return s.dispatch.pool }

// dispatcher is the notification dispatcher's state.
type dispatcher struct {
	pool   *fairshare.Pool
	cursor int
	wg     sync.WaitGroup
}

// attempt posts one claimed delivery and records the outcome: delivered;
// failed and retried later; or dead (the retry window is over, the
// notifier is gone, or it was a test, which is tried once).
// It reports whether the receiver answered like a live one (for the lane's
// breaker: a timeout, no connection, 408, 429 or 5xx are not).
func (s *Service) attempt(ctx context.Context, d *models.Delivery, nf *models.Notifier) (bool, error) {
	claim := d.Attempts
	began := s.clock.Now()
	var res notify.Result
	if nf == nil {
		res.Err = errors.New("the notifier was deleted")
	} else {
		res = s.post(ctx, d, nf)
	}
	healthy := res.Status != 0 && res.Status != http.StatusRequestTimeout && res.Status != http.StatusTooManyRequests && res.Status < 500
	if nf == nil || res.Status == 0 && errors.Is(res.Err, notify.ErrPrivateTarget) {
		healthy = true // nothing wrong with a receiver: none was reached
	}
	if ctx.Err() != nil {
		return healthy, ctx.Err() // shutting down: the lease lapses and another pass retries
	}
	now := s.now()
	d.LastAttemptAt, d.UpdatedAt = &now, now
	d.LastStatusCode = nil
	if res.Status != 0 {
		d.LastStatusCode = &res.Status
	}
	outcome := "delivered"
	switch {
	case res.Err == nil:
		d.Status, d.DeliveredAt, d.NextAttemptAt, d.LastError = models.DeliveryDelivered, &now, nil, nil
	default:
		msg := res.Err.Error()
		if utf8.RuneCountInString(msg) > maxDeliveryError {
			msg = string([]rune(msg)[:maxDeliveryError-1]) + "…"
		}
		d.LastError = &msg
		next := now.Add(deliveryRetryDelay(d.Attempts))
		if nf == nil || d.EventType == notify.EventTest || next.After(retryWindowStart(d).Add(DeliveryGiveUpAfter)) {
			d.Status, d.NextAttemptAt, outcome = models.DeliveryDead, nil, "dead"
		} else {
			d.Status, d.NextAttemptAt, outcome = models.DeliveryPending, &next, "retry"
		}
	}
	wrote, err := models.FinishAttempt(ctx, s.db, d, claim)
	if err != nil {
		return healthy, err
	}
	if wrote && nf != nil {
		if err := noteNotifierHealth(ctx, s.db, nf.ID, d, now); err != nil {
			return healthy, err
		}
	}
	if s.notify.OnAttempt != nil {
		s.notify.OnAttempt(d.EventType, outcome, s.clock.Now().Sub(began))
	}
	return healthy, nil
}

// retryWindowStart is when a delivery's retry window began: its creation,
// or its last redelivery by an operator.
func retryWindowStart(d *models.Delivery) time.Time {
	if d.RedeliveredAt != nil {
		return *d.RedeliveredAt
	}
	return d.CreatedAt
}

// noteNotifierHealth records a finished attempt in the notifier's health
// (docs/NOTIFICATIONS.md "Notifier health").
func noteNotifierHealth(ctx context.Context, db bun.IDB, notifierID string, d *models.Delivery, now time.Time) error {
	if d.Status == models.DeliveryDelivered {
		return models.NoteDeliverySuccess(ctx, db, notifierID, now)
	}
	return models.NoteDeliveryFailure(ctx, db, notifierID, now, *d.LastError)
}

// post renders, signs and sends a delivery to its notifier's URL.
func (s *Service) post(ctx context.Context, d *models.Delivery, nf *models.Notifier) notify.Result {
	if err := notify.CheckURL(nf.URL, s.notify.AllowPrivate); err != nil {
		return notify.Result{Err: fmt.Errorf("url %w", err)}
	}
	var doc notify.Document
	if err := json.Unmarshal(d.Document, &doc); err != nil {
		return notify.Result{Err: fmt.Errorf("read stored document: %w", err)}
	}
	doc.Notifier = nf.Name
	doc.Links(s.notify.PublicURL)
	body, err := notify.Body(nf.Format, &doc)
	if err != nil {
		return notify.Result{Err: err}
	}
	return s.notify.Sender.Send(ctx, notify.Request{
		URL: nf.URL, Body: body, Signature: notify.Sign(nf.Secret, s.clock.Now(), body), DeliveryID: d.ID, Event: d.EventType,
	})
}

// logPassError logs a failed pass of a part beside the fire loop at ERROR,
// or at DEBUG when the database is unavailable: the fire loop reports an
// outage once, whichever part meets it (Loop.failed).
func logPassError(logger *slog.Logger, msg string, err error) {
	if database.Unavailable(err) {
		logger.Debug(msg+": database unavailable", "err", err)
		return
	}
	logger.Error(msg, "err", err)
}
