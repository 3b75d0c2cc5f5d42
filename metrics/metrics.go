// Package metrics exposes Tideline's Prometheus metrics: what the loop fired
// and skipped, how late, how long passes and HTTP requests take, and how many
// runs are waiting or running.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/fairshare"
	"github.com/tidelinehq/tideline/maintenance"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// Metrics owns a registry of its own (no global default registry), so two
// servers in one test process don't collide.
type Metrics struct {
	registry     *prometheus.Registry
	fires        *prometheus.CounterVec
	skips        *prometheus.CounterVec
	fireLag      prometheus.Histogram
	tickDuration prometheus.Histogram
	passErrors   prometheus.Counter
	expiredRuns  prometheus.Counter
	notPrepared  prometheus.Counter
	retained     *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	deliveries   *prometheus.CounterVec
	deliveryTime prometheus.Histogram
	targetTries  *prometheus.CounterVec
	targetTime   prometheus.Histogram
	taskRuns     *prometheus.CounterVec
	taskErrors   *prometheus.CounterVec
	taskDuration *prometheus.HistogramVec
	dbLost       prometheus.Counter
}

// New registers every metric; db feeds the active-runs gauge at scrape time.
func New(db *bun.DB) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_schedule_fires_total", Help: "Schedules processed by the loop, by outcome (triggered, drained, buffered, skipped, failed).",
		}, []string{"outcome"}),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_schedule_skips_total", Help: "Skipped fires by reason.",
		}, []string{"reason"}),
		fireLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tideline_fire_lag_seconds", Help: "Actual start minus occurrence time of fires started by the loop.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
		tickDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tideline_loop_pass_duration_seconds", Help: "Duration of one fire pass of the scheduling loop (its ticks; housekeeping runs apart: tideline_maintenance_duration_seconds).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		passErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tideline_loop_pass_errors_total", Help: "Scheduling loop passes that ended with an error.",
		}),
		expiredRuns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tideline_runs_expired_total", Help: "Runs ended by the loop: lease lost, timed out, or cancellation grace elapsed.",
		}),
		retained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_retention_deleted_rows_total", Help: "Rows deleted by retention (--retain-runs, --purge-deleted-after), by table.",
		}, []string{"table"}),
		notPrepared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tideline_prepared_fires_rolled_back_total", Help: "Fires prepared ahead whose commit failed or came too late; they fired at the next pass instead.",
		}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tideline_http_request_duration_seconds", Help: "HTTP request durations by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "status"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_notification_attempts_total", Help: "Notification delivery attempts by event and outcome (delivered, retry, dead).",
		}, []string{"event", "outcome"}),
		deliveryTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tideline_notification_attempt_duration_seconds", Help: "Duration of one notification post, answered or not.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30},
		}),
		targetTries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_http_target_attempts_total", Help: "HTTP target attempts by outcome (completed, retry, failed, cancelled).",
		}, []string{"outcome"}),
		targetTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tideline_http_target_attempt_duration_seconds", Help: "Duration of one HTTP target request, answered or not.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900},
		}),
		taskRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_maintenance_runs_total", Help: "Runs of the loop's housekeeping tasks (scheduling.Task*), failed or not.",
		}, []string{"task"}),
		taskErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tideline_maintenance_errors_total", Help: "Failed runs of the loop's housekeeping tasks; each is retried on its own period and never delays a fire.",
		}, []string{"task"}),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tideline_maintenance_duration_seconds", Help: "Duration of one run of a housekeeping task.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"task"}),
		dbLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tideline_database_connection_lost_total", Help: "Times the scheduling loop found the database unavailable after reaching it (restart, failover, killed connections): once per outage.",
		}),
	}
	m.registry.MustRegister(m.fires, m.skips, m.fireLag, m.tickDuration, m.passErrors, m.expiredRuns, m.notPrepared, m.retained, m.httpDuration,
		m.deliveries, m.deliveryTime, m.targetTries, m.targetTime, m.taskRuns, m.taskErrors, m.taskDuration, m.dbLost,
		&activeRuns{db: db, desc: prometheus.NewDesc("tideline_runs", "Runs currently pending or running.", []string{"status"}, nil)},
		&outbox{db: db, desc: prometheus.NewDesc("tideline_notification_outbox", "Notification deliveries waiting to be sent (pending) or being sent (sending).", []string{"status"}, nil)},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObservePass records one loop pass; it matches scheduling.Loop.OnPass.
func (m *Metrics) ObservePass(res scheduling.LoopResult, took time.Duration, err error) {
	m.tickDuration.Observe(took.Seconds())
	if err != nil {
		m.passErrors.Inc()
	}
	m.observeHousekeeping(res)
	m.observeRows(res.Rows, nil)
}

// observeHousekeeping counts the runs a pass or task expired and the rows
// it deleted.
func (m *Metrics) observeHousekeeping(res scheduling.LoopResult) {
	m.expiredRuns.Add(float64(res.Expired))
	for table, n := range map[string]int{"workflow_runs": res.Deleted.Runs, "workflow_history_events": res.Deleted.RunEvents,
		"workflow_schedules":               res.Deleted.Schedules,
		"workflow_schedule_history_events": res.Deleted.ScheduleEvents, "notification_deliveries": res.Deleted.Deliveries} {
		if n > 0 {
			m.retained.WithLabelValues(table).Add(float64(n))
		}
	}
}

// ObserveTask records one run of a housekeeping task; it matches
// scheduling.Loop.OnTask. The runs it expired and the rows it deleted count
// as they did when the pass ran them.
func (m *Metrics) ObserveTask(rep maintenance.Report[scheduling.LoopResult]) {
	m.taskRuns.WithLabelValues(rep.Task).Inc()
	m.taskDuration.WithLabelValues(rep.Task).Observe(rep.Took.Seconds())
	if rep.Err != nil {
		m.taskErrors.WithLabelValues(rep.Task).Inc()
	}
	m.observeHousekeeping(rep.Result)
}

// ObserveConnectionLost counts an outage the loop met; it matches
// scheduling.Loop.OnConnectionLost.
func (m *Metrics) ObserveConnectionLost() { m.dbLost.Inc() }

// ObservePrepared records fires prepared ahead once their commit was tried;
// it matches scheduling.Loop.OnPrepared. Their lag is the commit's, not the
// instant they are stamped with.
func (m *Metrics) ObservePrepared(p *scheduling.Prepared, err error) {
	if err != nil {
		m.notPrepared.Add(float64(len(p.Rows)))
		return
	}
	m.observeRows(p.Rows, &p.CommittedAt)
}

// observeRows counts fires; startedAt, when given, is when they took effect.
func (m *Metrics) observeRows(rows []scheduling.TickRow, startedAt *time.Time) {
	for _, row := range rows {
		m.fires.WithLabelValues(row.Outcome).Inc()
		if row.Outcome == scheduling.OutcomeSkipped {
			m.skips.WithLabelValues(row.Reason).Inc()
		}
		started := row.LastFiredAt
		if startedAt != nil {
			started = startedAt
		}
		if (row.Outcome == scheduling.OutcomeTriggered || row.Outcome == scheduling.OutcomeDrained) && started != nil && row.OccurrenceTime != nil {
			m.fireLag.Observe(started.Sub(*row.OccurrenceTime).Seconds())
		}
	}
}

// ObserveHTTP records one request; route is the pattern, not the raw path,
// so schedule IDs don't explode the label set.
func (m *Metrics) ObserveHTTP(method, route, status string, took time.Duration) {
	m.httpDuration.WithLabelValues(method, route, status).Observe(took.Seconds())
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// activeRuns counts pending and running runs at scrape time. Only active
// statuses are counted: the (status, lease_expires_at) index makes that cheap
// however many finished runs the table holds.
type activeRuns struct {
	db   *bun.DB
	desc *prometheus.Desc
}

func (a *activeRuns) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

func (a *activeRuns) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := models.CountActiveRuns(ctx, a.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(a.desc, err)
		return
	}
	for _, status := range models.ActiveRunStatuses {
		ch <- prometheus.MustNewConstMetric(a.desc, prometheus.GaugeValue, float64(counts[status]), status)
	}
}

// ObserveDelivery records one notification attempt; it matches
// scheduling.Service.ObserveNotifications.
func (m *Metrics) ObserveDelivery(event, outcome string, took time.Duration) {
	m.deliveries.WithLabelValues(event, outcome).Inc()
	m.deliveryTime.Observe(took.Seconds())
}

// ObserveTargetAttempt records one HTTP target attempt; it matches
// scheduling.TargetConfig.OnAttempt. The namespace is not a label: the
// attempts of one namespace are in its runs, and a label per namespace
// would grow the series with the tenants.
func (m *Metrics) ObserveTargetAttempt(_, outcome string, took time.Duration) {
	m.targetTries.WithLabelValues(outcome).Inc()
	m.targetTime.Observe(took.Seconds())
}

// ObserveTargetPool reports the executor's slots at scrape time: in use
// and in all (serve --http-concurrency).
func (m *Metrics) ObserveTargetPool(p *fairshare.Pool) {
	total := p.Limits().Total
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tideline_http_target_requests_in_flight", Help: "HTTP target requests in flight on this replica.",
		}, func() float64 { return float64(total - p.Free()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tideline_http_target_slots", Help: "HTTP target requests this replica may have in flight (serve --http-concurrency).",
		}, func() float64 { return float64(total) }),
	)
}

// outbox reports the notification outbox depth at scrape time.
type outbox struct {
	db   *bun.DB
	desc *prometheus.Desc
}

func (o *outbox) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

func (o *outbox) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := models.CountOutbox(ctx, o.db)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(o.desc, err)
		return
	}
	for _, status := range []string{models.DeliveryPending, models.DeliverySending} {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, float64(counts[status]), status)
	}
}
