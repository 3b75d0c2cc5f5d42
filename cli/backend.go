package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
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
//     recorded by the server with the token's name as actor.
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
	ScheduleHistoryPage(ctx context.Context, id string, opts client.HistoryOptions) (*apijson.History, error)
	ScheduleOccurrencesPage(ctx context.Context, id string, opts client.OccurrencesOptions) (*apijson.OccurrencePage, error)
	ListRunsPage(ctx context.Context, opts client.RunListOptions) (*apijson.RunPage, error)
	GetRun(ctx context.Context, runID string) (*apijson.RunDetail, error)
	CancelRun(ctx context.Context, runID, reason string) (*apijson.Run, error)
	TerminateRun(ctx context.Context, runID, reason string) (*apijson.Run, error)
	Tick(ctx context.Context, limit int) ([]apijson.TickRow, error)
	ListNotifiers(ctx context.Context) (*apijson.NotifierList, error)
	CreateNotifier(ctx context.Context, req apijson.NotifierWrite) (*apijson.Notifier, error)
	DeleteNotifier(ctx context.Context, name string) error
	TestNotifier(ctx context.Context, name string) (*apijson.Delivery, error)
	NotifierDeliveriesPage(ctx context.Context, name string, limit int, cursor string) (*apijson.DeliveryPage, error)

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
	sch, err := d.a.service.Create(ctx, req.Input(d.ns), d.cc)
	if err != nil {
		return nil, err
	}
	return d.GetSchedule(ctx, sch.ScheduleID)
}

func (d *direct) PlanCreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error) {
	sch, err := d.a.service.PlanCreate(ctx, req.Input(d.ns))
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
	if _, err := d.a.service.Update(ctx, d.ns, id, patch.Input(), d.cc); err != nil {
		return nil, err
	}
	return d.GetSchedule(ctx, id)
}

func (d *direct) PlanUpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.UpdatePlan, error) {
	plan, err := d.a.service.PlanUpdate(ctx, d.ns, id, patch.Input())
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

// remoteTimeout bounds one CLI request, so a black-holed server fails the
// command instead of hanging it.
const remoteTimeout = 60 * time.Second

func (d *direct) ListNotifiers(ctx context.Context) (*apijson.NotifierList, error) {
	list, err := d.a.service.ListNotifiers(ctx, d.ns)
	if err != nil {
		return nil, err
	}
	out := apijson.FromNotifiers(list)
	return &out, nil
}

func (d *direct) CreateNotifier(ctx context.Context, req apijson.NotifierWrite) (*apijson.Notifier, error) {
	res, err := d.a.service.CreateNotifier(ctx, d.ns, req.Input(""))
	if err != nil {
		return nil, err
	}
	out := apijson.FromNotifier(res.Notifier, res.Secret)
	return &out, nil
}

func (d *direct) DeleteNotifier(ctx context.Context, name string) error {
	return d.a.service.DeleteNotifier(ctx, d.ns, name)
}

func (d *direct) TestNotifier(ctx context.Context, name string) (*apijson.Delivery, error) {
	del, err := d.a.service.TestNotifier(ctx, d.ns, name, d.cc.Actor)
	if err != nil {
		return nil, err
	}
	out := apijson.FromDelivery(del, name)
	return &out, nil
}

func (d *direct) NotifierDeliveriesPage(ctx context.Context, name string, limit int, cursor string) (*apijson.DeliveryPage, error) {
	page, err := d.a.service.ListDeliveries(ctx, d.ns, name, cursor, limit)
	if err != nil {
		return nil, err
	}
	out := apijson.FromDeliveryPage(page, name)
	return &out, nil
}
