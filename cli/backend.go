package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// backend is what schedule, runs and tick commands work with. Both modes
// speak in the API's shapes (apijson), and every command prints from those,
// which is what makes direct and --server output byte-identical:
//   - direct: the service over the database (--database), changes recorded
//     with source cli and --actor;
//   - remote: the JSON API through package client (--server), changes
//     recorded by the server with the token's name as actor and source cli
//     (X-Tideline-Source; apply sends apply).
type backend interface {
	ListSchedules(ctx context.Context, opts client.ListSchedulesOptions) iter.Seq2[apijson.Schedule, error]
	CreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error)
	PlanCreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error)
	GetSchedule(ctx context.Context, id string) (*apijson.Schedule, error)
	UpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.Schedule, error)
	PlanUpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.UpdatePlan, error)
	DeleteSchedule(ctx context.Context, id string) (*apijson.Schedule, error)
	PauseSchedule(ctx context.Context, id string, opts client.PauseOptions) (*apijson.Schedule, error)
	ResumeSchedule(ctx context.Context, id string) (*apijson.Schedule, error)
	TriggerSchedule(ctx context.Context, id, overlapPolicy string) (*apijson.Trigger, error)
	BackfillSchedule(ctx context.Context, id string, opts client.BackfillOptions) (*apijson.Backfill, error)
	StartBackfill(ctx context.Context, id string, opts client.BackfillJobOptions) (*apijson.BackfillJob, error)
	ListBackfillsPage(ctx context.Context, opts client.BackfillListOptions) (*apijson.BackfillJobPage, error)
	GetBackfill(ctx context.Context, id string) (*apijson.BackfillJob, error)
	PauseBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error)
	ResumeBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error)
	CancelBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error)
	ScheduleHistoryPage(ctx context.Context, id string, opts client.HistoryOptions) (*apijson.History, error)
	ScheduleOccurrencesPage(ctx context.Context, id string, opts client.OccurrencesOptions) (*apijson.OccurrencePage, error)
	ScheduleVersions(ctx context.Context, id string) (*apijson.VersionList, error)
	ScheduleVersion(ctx context.Context, id string, n int64) (*apijson.VersionDetail, error)
	DiffScheduleVersions(ctx context.Context, id string, from, to int64) (*apijson.VersionDiff, error)
	RevertSchedule(ctx context.Context, id string, n int64, reason string) (*apijson.Schedule, error)
	PlanRevertSchedule(ctx context.Context, id string, n int64) (*apijson.RevertPlan, error)
	ListRunsPage(ctx context.Context, opts client.RunListOptions) (*apijson.RunPage, error)
	GetRun(ctx context.Context, runID string) (*apijson.RunDetail, error)
	CancelRun(ctx context.Context, runID, reason string) (*apijson.Run, error)
	TerminateRun(ctx context.Context, runID, reason string) (*apijson.Run, error)
	RetryRun(ctx context.Context, runID, reason string) (*apijson.Run, error)
	RunAgain(ctx context.Context, runID, reason string) (*apijson.Trigger, error)
	Tick(ctx context.Context, limit int) ([]apijson.TickRow, error)
	ListNotifiers(ctx context.Context) (*apijson.NotifierList, error)
	CreateNotifier(ctx context.Context, req apijson.NotifierWrite) (*apijson.Notifier, error)
	DeleteNotifier(ctx context.Context, name string) error
	TestNotifier(ctx context.Context, name string) (*apijson.Delivery, error)
	Redeliver(ctx context.Context, name, deliveryID, reason string) (*apijson.Delivery, error)
	RedeliverDead(ctx context.Context, name, reason string) (*apijson.RedeliverResult, error)
	NotifierDeliveriesPage(ctx context.Context, name string, limit int, cursor string) (*apijson.DeliveryPage, error)
	ListCalendarsPage(ctx context.Context, limit int, cursor string) (*apijson.CalendarList, error)
	CreateCalendar(ctx context.Context, req apijson.CalendarWrite) (*apijson.Calendar, error)
	GetCalendar(ctx context.Context, name string) (*apijson.Calendar, error)
	UpdateCalendar(ctx context.Context, name string, req apijson.CalendarWrite) (*apijson.CalendarChange, error)
	DeleteCalendar(ctx context.Context, name string) error
	CalendarImpact(ctx context.Context, name string, req apijson.CalendarWrite) (*apijson.CalendarImpact, error)

	// workBackfills works the running backfill jobs one pass, in direct
	// mode (schedule backfill --wait needs no server); the server does it
	// itself in remote mode.
	workBackfills(ctx context.Context) error
	// deleted reports whether id names a deleted schedule (remove says
	// "already removed" then; the API's GET treats deleted as absent).
	deleted(ctx context.Context, id string) (bool, error)
	Close() error
}

// remote is the --server backend.
type remote struct {
	*client.Client
}

func (r remote) Close() error { return nil }

func (r remote) workBackfills(context.Context) error { return nil }

func (r remote) deleted(ctx context.Context, id string) (bool, error) {
	for s, err := range r.ListSchedules(ctx, client.ListSchedulesOptions{Statuses: []string{models.StatusDeleted}, Query: id}) {
		if err != nil {
			return false, err
		}
		if s.ScheduleID == id {
			return true, nil
		}
	}
	return false, nil
}

// direct is the --database backend: the service, in one namespace.
type direct struct {
	a  *app
	ns string
	cc *scheduling.CommandContext
}

func (d *direct) Close() error { return d.a.Close() }

func (d *direct) withReason(reason string) *scheduling.CommandContext {
	cc := *d.cc
	cc.Reason = reason
	return &cc
}

func (d *direct) ListSchedules(ctx context.Context, opts client.ListSchedulesOptions) iter.Seq2[apijson.Schedule, error] {
	return func(yield func(apijson.Schedule, error) bool) {
		f := scheduling.ListFilter{Namespace: d.ns, Statuses: opts.Statuses, Text: opts.Query, WorkflowType: opts.WorkflowType,
			Label: opts.Label, Limit: opts.Limit, Cursor: opts.Cursor}
		for {
			page, err := d.a.service.List(ctx, f)
			if err != nil {
				yield(apijson.Schedule{}, err)
				return
			}
			for i := range page.Schedules {
				if !yield(apijson.FromSchedule(&page.Schedules[i]), nil) {
					return
				}
			}
			if !page.HasMore || page.NextCursor == "" {
				return
			}
			f.Cursor = page.NextCursor
		}
	}
}

func (d *direct) CreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error) {
	in, err := req.Input(d.ns)
	if err != nil {
		return nil, err
	}
	sch, err := d.a.service.Create(ctx, in, d.cc)
	if err != nil {
		return nil, err
	}
	return d.GetSchedule(ctx, sch.ScheduleID)
}

func (d *direct) PlanCreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error) {
	in, err := req.Input(d.ns)
	if err != nil {
		return nil, err
	}
	sch, err := d.a.service.PlanCreate(ctx, in)
	if err != nil {
		return nil, err
	}
	out := apijson.FromSchedule(sch)
	return &out, nil
}

func (d *direct) GetSchedule(ctx context.Context, id string) (*apijson.Schedule, error) {
	desc, err := d.a.service.Describe(ctx, d.ns, id)
	if err != nil {
		return nil, err
	}
	out := apijson.FromDescription(desc)
	return &out, nil
}

func (d *direct) deleted(ctx context.Context, id string) (bool, error) {
	sch, err := d.a.service.Get(ctx, d.ns, id)
	if errors.Is(err, scheduling.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sch.Status == models.StatusDeleted, nil
}

func (d *direct) UpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.Schedule, error) {
	in, err := patch.Input()
	if err != nil {
		return nil, err
	}
	if _, err := d.a.service.Update(ctx, d.ns, id, in, d.cc); err != nil {
		return nil, err
	}
	return d.GetSchedule(ctx, id)
}

func (d *direct) PlanUpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.UpdatePlan, error) {
	in, err := patch.Input()
	if err != nil {
		return nil, err
	}
	plan, err := d.a.service.PlanUpdate(ctx, d.ns, id, in)
	if err != nil {
		return nil, err
	}
	out := apijson.FromUpdatePlan(plan)
	return &out, nil
}

func (d *direct) DeleteSchedule(ctx context.Context, id string) (*apijson.Schedule, error) {
	return schedule(d.a.service.Delete(ctx, d.ns, id, d.cc))
}

func (d *direct) PauseSchedule(ctx context.Context, id string, opts client.PauseOptions) (*apijson.Schedule, error) {
	return schedule(d.a.service.Pause(ctx, d.ns, id, scheduling.PauseInput{Reason: opts.Reason, Until: opts.Until}, d.withReason(opts.Reason)))
}

func (d *direct) ResumeSchedule(ctx context.Context, id string) (*apijson.Schedule, error) {
	return schedule(d.a.service.Resume(ctx, d.ns, id, d.cc))
}

func schedule(s *models.Schedule, err error) (*apijson.Schedule, error) {
	if err != nil {
		return nil, err
	}
	out := apijson.FromSchedule(s)
	return &out, nil
}

func (d *direct) TriggerSchedule(ctx context.Context, id, overlapPolicy string) (*apijson.Trigger, error) {
	res, err := d.a.service.Trigger(ctx, d.ns, id, overlapPolicy, d.cc)
	if err != nil {
		return nil, err
	}
	out := apijson.FromTrigger(res)
	return &out, nil
}

func (d *direct) BackfillSchedule(ctx context.Context, id string, opts client.BackfillOptions) (*apijson.Backfill, error) {
	rep, err := d.a.service.Backfill(ctx, d.ns, id, scheduling.BackfillInput{From: opts.From, To: opts.To,
		OverlapPolicy: opts.OverlapPolicy, DryRun: opts.DryRun, CommandContext: d.cc})
	if err != nil {
		return nil, err
	}
	out := apijson.FromBackfill(rep)
	return &out, nil
}

func (d *direct) StartBackfill(ctx context.Context, id string, opts client.BackfillJobOptions) (*apijson.BackfillJob, error) {
	job, err := d.a.service.StartBackfill(ctx, d.ns, id, scheduling.BackfillJobInput{From: opts.From, To: opts.To,
		OverlapPolicy: opts.OverlapPolicy, MaxPerMinute: opts.MaxPerMinute, MaxConcurrentRuns: opts.MaxConcurrentRuns,
		CommandContext: d.withReason(opts.Reason)})
	return d.job(job, err)
}

func (d *direct) job(job *models.Backfill, err error) (*apijson.BackfillJob, error) {
	if err != nil {
		return nil, err
	}
	out := apijson.FromBackfillJob(job, d.a.service.Now())
	return &out, nil
}

func (d *direct) ListBackfillsPage(ctx context.Context, opts client.BackfillListOptions) (*apijson.BackfillJobPage, error) {
	page, err := d.a.service.ListBackfills(ctx, d.ns, scheduling.BackfillListQuery{ScheduleID: opts.ScheduleID, Status: opts.Status, Cursor: opts.Cursor, Limit: opts.Limit})
	if err != nil {
		return nil, err
	}
	out := apijson.FromBackfillPage(page, d.a.service.Now())
	return &out, nil
}

func (d *direct) GetBackfill(ctx context.Context, id string) (*apijson.BackfillJob, error) {
	return d.job(d.a.service.GetBackfill(ctx, d.ns, id))
}

func (d *direct) PauseBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error) {
	return d.job(d.a.service.PauseBackfill(ctx, d.ns, id, d.withReason(reason)))
}

func (d *direct) ResumeBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error) {
	return d.job(d.a.service.ResumeBackfill(ctx, d.ns, id, d.withReason(reason)))
}

func (d *direct) CancelBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error) {
	return d.job(d.a.service.CancelBackfill(ctx, d.ns, id, d.withReason(reason)))
}

func (d *direct) workBackfills(ctx context.Context) error {
	_, err := (&scheduling.BackfillWorker{Service: d.a.service}).Work(ctx)
	return err
}

func (d *direct) ScheduleHistoryPage(ctx context.Context, id string, opts client.HistoryOptions) (*apijson.History, error) {
	limit := opts.Limit
	if limit == 0 {
		limit = scheduling.DefaultHistoryLimit
	}
	page, err := d.a.service.History(ctx, d.ns, id, scheduling.HistoryQuery{AfterSequence: opts.AfterSequence, EventType: opts.EventType, Limit: int64(limit)})
	if err != nil {
		return nil, err
	}
	out := apijson.FromHistory(page)
	return &out, nil
}

func (d *direct) ScheduleVersions(ctx context.Context, id string) (*apijson.VersionList, error) {
	sch, err := d.a.service.Get(ctx, d.ns, id)
	if err != nil {
		return nil, err
	}
	versions, err := d.a.service.Versions(ctx, d.ns, id)
	if err != nil {
		return nil, err
	}
	out := apijson.FromVersions(sch, versions)
	return &out, nil
}

func (d *direct) ScheduleVersion(ctx context.Context, id string, n int64) (*apijson.VersionDetail, error) {
	v, err := d.a.service.Version(ctx, d.ns, id, n)
	if err != nil {
		return nil, err
	}
	out := apijson.FromVersionDetail(v)
	return &out, nil
}

func (d *direct) DiffScheduleVersions(ctx context.Context, id string, from, to int64) (*apijson.VersionDiff, error) {
	if from == 0 || to == 0 {
		versions, err := d.a.service.Versions(ctx, d.ns, id)
		if err != nil {
			return nil, err
		}
		if to == 0 {
			to = int64(len(versions))
		}
		if from == 0 {
			from = max(to-1, 1)
		}
	}
	diff, err := d.a.service.DiffVersions(ctx, d.ns, id, from, to)
	if err != nil {
		return nil, err
	}
	out := apijson.FromVersionDiff(id, diff)
	return &out, nil
}

func (d *direct) RevertSchedule(ctx context.Context, id string, n int64, reason string) (*apijson.Schedule, error) {
	if _, err := d.a.service.Revert(ctx, d.ns, id, n, d.withReason(reason)); err != nil {
		return nil, err
	}
	return d.GetSchedule(ctx, id)
}

func (d *direct) PlanRevertSchedule(ctx context.Context, id string, n int64) (*apijson.RevertPlan, error) {
	plan, err := d.a.service.PlanRevert(ctx, d.ns, id, n)
	if err != nil {
		return nil, err
	}
	out := apijson.FromRevertPlan(plan)
	return &out, nil
}

func (d *direct) ScheduleOccurrencesPage(ctx context.Context, id string, opts client.OccurrencesOptions) (*apijson.OccurrencePage, error) {
	q := scheduling.LedgerQuery{Cursor: opts.Cursor, Limit: opts.Limit}
	if !opts.From.IsZero() {
		q.From = &opts.From
	}
	if !opts.To.IsZero() {
		q.To = &opts.To
	}
	page, err := d.a.service.Ledger(ctx, d.ns, id, q)
	if err != nil {
		return nil, err
	}
	out := apijson.FromLedger(page)
	return &out, nil
}

func (d *direct) ListRunsPage(ctx context.Context, opts client.RunListOptions) (*apijson.RunPage, error) {
	page, err := d.a.service.ListRuns(ctx, scheduling.RunListFilter{Namespace: d.ns, ScheduleID: opts.ScheduleID,
		Statuses: opts.Statuses, Cursor: opts.Cursor, Limit: opts.Limit})
	if err != nil {
		return nil, err
	}
	out := apijson.FromRunPage(page)
	return &out, nil
}

func (d *direct) GetRun(ctx context.Context, runID string) (*apijson.RunDetail, error) {
	desc, err := d.a.service.DescribeRun(ctx, d.ns, runID)
	if err != nil {
		return nil, err
	}
	return &apijson.RunDetail{Run: apijson.FromRun(desc.Run), History: apijson.FromRunEvents(desc.Events)}, nil
}

func (d *direct) CancelRun(ctx context.Context, runID, reason string) (*apijson.Run, error) {
	return d.runAction(ctx, runID, reason, d.a.service.CancelRun)
}

func (d *direct) TerminateRun(ctx context.Context, runID, reason string) (*apijson.Run, error) {
	return d.runAction(ctx, runID, reason, d.a.service.TerminateRun)
}

func (d *direct) RetryRun(ctx context.Context, runID, reason string) (*apijson.Run, error) {
	return d.runAction(ctx, runID, reason, d.a.service.RetryRun)
}

func (d *direct) RunAgain(ctx context.Context, runID, reason string) (*apijson.Trigger, error) {
	res, err := d.a.service.RunAgain(ctx, d.ns, runID, d.withReason(reason))
	if err != nil {
		return nil, err
	}
	out := apijson.FromTrigger(res)
	return &out, nil
}

func (d *direct) runAction(ctx context.Context, runID, reason string,
	action func(ctx context.Context, ns, runID string, cc *scheduling.CommandContext) (*models.Run, error)) (*apijson.Run, error) {
	if _, err := action(ctx, d.ns, runID, d.withReason(reason)); err != nil {
		return nil, err
	}
	run, err := d.a.service.GetRun(ctx, d.ns, runID)
	if err != nil {
		return nil, err
	}
	out := apijson.FromRun(run)
	return &out, nil
}

func (d *direct) Tick(ctx context.Context, limit int) ([]apijson.TickRow, error) {
	rows, err := d.a.service.Tick(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("tick: %w", err)
	}
	return apijson.FromTickRows(rows), nil
}

// fromAPIError turns a remote error into what the direct mode would have
// returned (the service's typed errors print "code: message"), and says
// plainly what to do about authentication and connection failures.
func fromAPIError(err error) error {
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		switch apiErr.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("the server refused the request (401 unauthorized): pass a valid token with --token, --token-file or TIDELINE_TOKEN")
		case http.StatusForbidden:
			return fmt.Errorf("the server refused the request (403 forbidden): %s; ask for a token with the needed role (viewer reads, operator pauses, triggers and cancels, admin creates, updates, deletes and ticks) and namespace", apiErr.Message)
		case http.StatusNotFound:
			if apiErr.Code == scheduling.CodeNotFound && isNamespaceNotFound(apiErr.Message) {
				// The server answers a namespace the token may not see
				// exactly like one that does not exist (never 403).
				return &scheduling.NotFoundError{Code: apiErr.Code, Message: apiErr.Message +
					" (or this token may not see it): check --namespace / TIDELINE_NAMESPACE and the namespaces of the token"}
			}
			if apiErr.Code == scheduling.CodeNotFound {
				return fmt.Errorf("the server has no such API route (404 %s): is --server the Tideline server's root URL, e.g. https://tideline.example.com?", apiErr.Message)
			}
			return &scheduling.NotFoundError{Code: apiErr.Code, Message: apiErr.Message}
		case http.StatusConflict:
			return &scheduling.ConflictError{Code: apiErr.Code, Message: apiErr.Message}
		case http.StatusUnprocessableEntity:
			if len(apiErr.Fields) > 0 {
				return &scheduling.ValidationError{Code: apiErr.Code, Fields: apiErr.Fields}
			}
		}
		return apiErr
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot connect to the server (is 'tideline serve' running there, on that port?): %w", err)
	case client.IsTLSError(err):
		return fmt.Errorf("TLS with the server failed (check http:// vs https://, the server's certificate and this machine's trusted roots): %w", err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the server did not answer in time: %w", err)
	}
	return err
}

// isNamespaceNotFound tells the server's 404 for a namespace (its message
// is `namespace "x" not found`, handlers/principal.go) from a route the
// server does not have (a wrong --server path).
func isNamespaceNotFound(message string) bool {
	return strings.HasPrefix(message, `namespace "`) && strings.HasSuffix(message, `" not found`)
}

// remoteTimeout bounds one CLI request, so a black-holed server fails the
// command instead of hanging it.
const remoteTimeout = 60 * time.Second

func (d *direct) ListNotifiers(ctx context.Context) (*apijson.NotifierList, error) {
	list, err := d.a.service.ListNotifiers(ctx, d.ns)
	if err != nil {
		return nil, err
	}
	health, err := d.a.service.NotifierHealth(ctx, list)
	if err != nil {
		return nil, err
	}
	out := apijson.FromNotifiers(list, health)
	return &out, nil
}

func (d *direct) CreateNotifier(ctx context.Context, req apijson.NotifierWrite) (*apijson.Notifier, error) {
	res, err := d.a.service.CreateNotifier(ctx, d.ns, req.Input(""), d.cc)
	if err != nil {
		return nil, err
	}
	out := apijson.FromNotifier(res.Notifier, res.Secret)
	return &out, nil
}

func (d *direct) DeleteNotifier(ctx context.Context, name string) error {
	return d.a.service.DeleteNotifier(ctx, d.ns, name, d.cc)
}

func (d *direct) TestNotifier(ctx context.Context, name string) (*apijson.Delivery, error) {
	del, err := d.a.service.TestNotifier(ctx, d.ns, name, d.cc.Actor)
	if err != nil {
		return nil, err
	}
	out := apijson.FromDelivery(del, name)
	return &out, nil
}

func (d *direct) Redeliver(ctx context.Context, name, deliveryID, reason string) (*apijson.Delivery, error) {
	del, err := d.a.service.Redeliver(ctx, d.ns, name, deliveryID, d.withReason(reason))
	if err != nil {
		return nil, err
	}
	out := apijson.FromDelivery(del, name)
	return &out, nil
}

func (d *direct) RedeliverDead(ctx context.Context, name, reason string) (*apijson.RedeliverResult, error) {
	n, more, err := d.a.service.RedeliverDead(ctx, d.ns, name, d.withReason(reason))
	if err != nil {
		return nil, err
	}
	return &apijson.RedeliverResult{Redelivered: n, More: more}, nil
}

func (d *direct) NotifierDeliveriesPage(ctx context.Context, name string, limit int, cursor string) (*apijson.DeliveryPage, error) {
	page, err := d.a.service.ListDeliveries(ctx, d.ns, name, cursor, limit)
	if err != nil {
		return nil, err
	}
	out := apijson.FromDeliveryPage(page, name)
	return &out, nil
}

func (d *direct) ListCalendarsPage(ctx context.Context, limit int, cursor string) (*apijson.CalendarList, error) {
	page, err := d.a.service.ListCalendars(ctx, d.ns, cursor, limit)
	if err != nil {
		return nil, err
	}
	out := apijson.FromCalendarPage(page)
	return &out, nil
}

func (d *direct) CreateCalendar(ctx context.Context, req apijson.CalendarWrite) (*apijson.Calendar, error) {
	cal, err := d.a.service.CreateCalendar(ctx, d.ns, req.Input(""), d.cc)
	if err != nil {
		return nil, err
	}
	out := apijson.FromCalendar(cal, nil)
	return &out, nil
}

func (d *direct) GetCalendar(ctx context.Context, name string) (*apijson.Calendar, error) {
	v, err := d.a.service.GetCalendar(ctx, d.ns, name)
	if err != nil {
		return nil, err
	}
	out := apijson.FromCalendarView(v)
	return &out, nil
}

func (d *direct) UpdateCalendar(ctx context.Context, name string, req apijson.CalendarWrite) (*apijson.CalendarChange, error) {
	ch, err := d.a.service.UpdateCalendar(ctx, d.ns, name, req.Input(name), d.cc)
	if err != nil {
		return nil, err
	}
	out := apijson.FromCalendarChange(ch)
	return &out, nil
}

func (d *direct) CalendarImpact(ctx context.Context, name string, req apijson.CalendarWrite) (*apijson.CalendarImpact, error) {
	im, err := d.a.service.CalendarImpact(ctx, d.ns, name, req.Input(name))
	if err != nil {
		return nil, err
	}
	out := apijson.FromCalendarImpact(im)
	return &out, nil
}

func (d *direct) DeleteCalendar(ctx context.Context, name string) error {
	return d.a.service.DeleteCalendar(ctx, d.ns, name, d.cc)
}
