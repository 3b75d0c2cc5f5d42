package handlers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// What the console's pages need of the service, by area. *scheduling.Service
// provides all of them; each page uses only its area's interface, so a page
// can be built and tested with just what it reads or changes (see
// console_services_test.go), and what a page may do is visible in its type.

// ScheduleReader serves the registry, the schedule page, its history and
// its ledger.
type ScheduleReader interface {
	Get(ctx context.Context, namespace, scheduleID string) (*models.Schedule, error)
	Describe(ctx context.Context, namespace, scheduleID string) (*scheduling.Description, error)
	List(ctx context.Context, f scheduling.ListFilter) (*scheduling.SchedulePage, error)
	Counts(ctx context.Context, namespace string) (models.ScheduleCounts, error)
	MatchingIDs(ctx context.Context, f scheduling.ListFilter, limit int) ([]string, bool, error)
	History(ctx context.Context, namespace, scheduleID string, q scheduling.HistoryQuery) (*scheduling.HistoryPage, error)
	Ledger(ctx context.Context, namespace, scheduleID string, q scheduling.LedgerQuery) (*scheduling.LedgerPage, error)
	EarliestBackfilled(ctx context.Context, namespace, scheduleID string, from, to time.Time) (*time.Time, error)
}

// ScheduleWriter serves the create and edit forms and the schedule actions.
type ScheduleWriter interface {
	Create(ctx context.Context, in scheduling.CreateInput, cc *scheduling.CommandContext) (*models.Schedule, error)
	PlanCreate(ctx context.Context, in scheduling.CreateInput) (*models.Schedule, error)
	Update(ctx context.Context, namespace, scheduleID string, in scheduling.UpdateInput, cc *scheduling.CommandContext) (*models.Schedule, error)
	PlanUpdate(ctx context.Context, namespace, scheduleID string, in scheduling.UpdateInput) (*scheduling.UpdatePlan, error)
	Pause(ctx context.Context, namespace, scheduleID string, in scheduling.PauseInput, cc *scheduling.CommandContext) (*models.Schedule, error)
	Resume(ctx context.Context, namespace, scheduleID string, cc *scheduling.CommandContext) (*models.Schedule, error)
	Trigger(ctx context.Context, namespace, scheduleID, overridePolicy string, cc *scheduling.CommandContext) (scheduling.FireResult, error)
	Backfill(ctx context.Context, namespace, scheduleID string, in scheduling.BackfillInput) (*scheduling.BackfillReport, error)
	Delete(ctx context.Context, namespace, scheduleID string, cc *scheduling.CommandContext) (*models.Schedule, error)
	PreviewSpec(ctx context.Context, namespace string, spec models.Spec, after time.Time, count int) (*scheduling.SpecPreview, error)
}

// RunKeeper serves the runs list, the run page and its actions (and the
// schedule page's recent runs).
type RunKeeper interface {
	ListRuns(ctx context.Context, f scheduling.RunListFilter) (*scheduling.RunPage, error)
	GetRun(ctx context.Context, namespace, runID string) (*models.Run, error)
	DescribeRun(ctx context.Context, namespace, runID string) (*scheduling.RunDescription, error)
	CancelRun(ctx context.Context, namespace, runID string, cc *scheduling.CommandContext) (*models.Run, error)
	TerminateRun(ctx context.Context, namespace, runID string, cc *scheduling.CommandContext) (*models.Run, error)
	RetryRun(ctx context.Context, namespace, runID string, cc *scheduling.CommandContext) (*models.Run, error)
	RunAgain(ctx context.Context, namespace, runID string, cc *scheduling.CommandContext) (scheduling.FireResult, error)
	RetryMatching(ctx context.Context, f scheduling.RunListFilter, cc *scheduling.CommandContext) (int, bool, error)
}

// NotifierKeeper serves the notifiers pages.
type NotifierKeeper interface {
	ListNotifiers(ctx context.Context, namespace string) ([]models.Notifier, error)
	GetNotifier(ctx context.Context, namespace, name string) (*models.Notifier, error)
	CreateNotifier(ctx context.Context, namespace string, in scheduling.NotifierInput, cc *scheduling.CommandContext) (*scheduling.NotifierResult, error)
	UpdateNotifier(ctx context.Context, namespace string, in scheduling.NotifierInput, cc *scheduling.CommandContext) (*scheduling.NotifierResult, error)
	DeleteNotifier(ctx context.Context, namespace, name string, cc *scheduling.CommandContext) error
	TestNotifier(ctx context.Context, namespace, name, actor string) (*models.Delivery, error)
	ListDeliveries(ctx context.Context, namespace, name, cursor string, limit int) (*scheduling.DeliveryPage, error)
	NotifierHealth(ctx context.Context, list []models.Notifier) (map[string]models.NotifierHealth, error)
	FailingNotifiers(ctx context.Context, namespace string) ([]models.Notifier, map[string]models.NotifierHealth, error)
	Redeliver(ctx context.Context, namespace, name, deliveryID string, cc *scheduling.CommandContext) (*models.Delivery, error)
	RedeliverDead(ctx context.Context, namespace, name string, cc *scheduling.CommandContext) (int, bool, error)
}

// NamespaceDirectory answers which namespaces exist (the switcher) and which
// of some hold a schedule ID (a 404's hint).
type NamespaceDirectory interface {
	Namespaces(ctx context.Context) ([]string, error)
	NamespacesHolding(ctx context.Context, scheduleID string, namespaces []string) ([]string, error)
}

// ConsoleServices is everything the console uses, as *scheduling.Service
// provides it (checked here at compile time); NewConsole wires it into
// every area.
type ConsoleServices interface {
	ScheduleReader
	ScheduleWriter
	RunKeeper
	NotifierKeeper
	NamespaceDirectory
	VersionKeeper
	CalendarKeeper
}

// CalendarKeeper serves the Calendars pages.
type CalendarKeeper interface {
	ListCalendars(ctx context.Context, namespace, cursor string, limit int) (*scheduling.CalendarPage, error)
	GetCalendar(ctx context.Context, namespace, name string) (*scheduling.CalendarView, error)
	CreateCalendar(ctx context.Context, namespace string, in scheduling.CalendarInput, cc *scheduling.CommandContext) (*models.Calendar, error)
	UpdateCalendar(ctx context.Context, namespace, name string, in scheduling.CalendarInput, cc *scheduling.CommandContext) (*scheduling.CalendarChange, error)
	DeleteCalendar(ctx context.Context, namespace, name string, cc *scheduling.CommandContext) error
	CalendarImpact(ctx context.Context, namespace, name string, in scheduling.CalendarInput) (*scheduling.CalendarImpact, error)
	CalendarHistory(ctx context.Context, namespace, name, cursor string, limit int) (*scheduling.ObjectHistoryPage, error)
}

// APIServices is everything the JSON API uses: the console's areas, the
// backfill jobs, a version by number, a notifier's history, and the tick
// of POST /tick.
type APIServices interface {
	ConsoleServices
	BackfillKeeper
	Version(ctx context.Context, namespace, scheduleID string, n int64) (*scheduling.Version, error)
	NotifierHistory(ctx context.Context, namespace, name, cursor string, limit int) (*scheduling.ObjectHistoryPage, error)
	Tick(ctx context.Context, limit int) ([]scheduling.TickRow, error)
}

// RunQueue is the worker protocol's side of the run queue.
type RunQueue interface {
	Poll(ctx context.Context, req scheduling.PollRequest) ([]models.Run, error)
	Heartbeat(ctx context.Context, namespace, runID string, holder scheduling.LeaseHolder, leaseSeconds int) (*models.Run, error)
	CompleteRun(ctx context.Context, namespace, runID string, holder scheduling.LeaseHolder, output json.RawMessage) (*models.Run, error)
	FailRun(ctx context.Context, namespace, runID string, holder scheduling.LeaseHolder, f scheduling.Failure) (*models.Run, error)
}

var (
	_ ConsoleServices = (*scheduling.Service)(nil)
	_ APIServices     = (*scheduling.Service)(nil)
	_ RunQueue        = (*scheduling.Service)(nil)
)
