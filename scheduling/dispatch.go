package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

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
	// dispatchParallel bounds the posts one dispatcher has in flight, so
	// a blackholed receiver holds a few slots for its timeout, not all.
	dispatchParallel = 8
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

// DispatchNotifications claims up to limit due deliveries, posts them (a
// few at a time) and records each attempt. It returns how many it posted.
func (s *Service) DispatchNotifications(ctx context.Context, limit int) (int, error) {
	now := s.now()
	var claimed []models.Delivery
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		claimed, err = models.ClaimDeliveries(ctx, tx, now, limit)
		if err != nil {
			return err
		}
		for i := range claimed {
			d := &claimed[i]
			d.Status, d.Attempts, d.NextAttemptAt, d.UpdatedAt = models.DeliverySending, d.Attempts+1, ptrTime(now.Add(s.notify.lease())), now
			if err := models.UpdateDelivery(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	ids := make([]string, len(claimed))
	for i := range claimed {
		ids[i] = claimed[i].NotifierID
	}
	notifiers, err := models.NotifiersByID(ctx, s.db, ids)
	if err != nil {
		return 0, err // the claims lapse with their lease and are retried
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, dispatchParallel)
	for i := range claimed {
		d := &claimed[i]
		nf, ok := notifiers[d.NotifierID]
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			var nfp *models.Notifier
			if ok {
				nfp = &nf
			}
			if err := s.attempt(ctx, d, nfp); err != nil && ctx.Err() == nil {
				s.logger.Error("record notification attempt", "delivery", d.ID, "err", err)
			}
		})
	}
	wg.Wait()
	return len(claimed), nil
}

// attempt posts one claimed delivery and records the outcome: delivered;
// failed and retried later; or dead (the retry window is over, the
// notifier is gone, or it was a test, which is tried once).
func (s *Service) attempt(ctx context.Context, d *models.Delivery, nf *models.Notifier) error {
	claim := d.Attempts
	began := s.clock.Now()
	var res notify.Result
	if nf == nil {
		res.Err = errors.New("the notifier was deleted")
	} else {
		res = s.post(ctx, d, nf)
	}
	if ctx.Err() != nil {
		return ctx.Err() // shutting down: the lease lapses and another pass retries
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
		if nf == nil || d.EventType == notify.EventTest || next.After(d.CreatedAt.Add(DeliveryGiveUpAfter)) {
			d.Status, d.NextAttemptAt, outcome = models.DeliveryDead, nil, "dead"
		} else {
			d.Status, d.NextAttemptAt, outcome = models.DeliveryPending, &next, "retry"
		}
	}
	if _, err := models.FinishAttempt(ctx, s.db, d, claim); err != nil {
		return err
	}
	if s.notify.OnAttempt != nil {
		s.notify.OnAttempt(d.EventType, outcome, s.clock.Now().Sub(began))
	}
	return nil
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
