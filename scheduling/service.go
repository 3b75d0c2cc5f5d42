package scheduling

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/fairshare"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// Route is where a started run is queued for workers.
type Route struct {
	Connection string
	Queue      string
}

// Routing resolves a run's route: the schedule's own connection/queue, then
// the workflow type's defaults, then the global default.
type Routing struct {
	Default        Route
	ByWorkflowType map[string]Route
}

// Config wires a Service. Zero values get production defaults.
type Config struct {
	DB      *bun.DB
	Clock   Clock
	Rand    timespec.Rand
	Logger  *slog.Logger
	Routing Routing
	// CancelGrace is how long a run may take to honour a cancellation
	// request before the loop marks it cancelled itself.
	CancelGrace time.Duration
	// BackfillBatch is how many occurrences one backfill transaction
	// starts at most; DefaultBackfillBatch if zero.
	BackfillBatch int
	// Notify configures notifications (CONTRACT §11).
	Notify NotifyConfig
	// Targets configures the HTTP target executor (CONTRACT §15).
	Targets TargetConfig
}

// Service is the one implementation of every schedule operation; the JSON
// API, the console and the CLI all call it.
type Service struct {
	db            *bun.DB
	clock         Clock
	rand          timespec.Rand
	logger        *slog.Logger
	routing       Routing
	cancelGrace   time.Duration
	backfillBatch int
	ids           *ids
	wakeups       wakeups
	draining      draining
	notify        NotifyConfig
	targets       TargetConfig
	executor      *executor
	turns         *writerTurns // the fire pass first on SQLite (turns.go)
	dispatch      dispatcher
	calendars     calendarCache
	lookout       lookout // one reading of the loop's work a period (lookout.go)
}

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{db: cfg.DB, clock: cfg.Clock, rand: cfg.Rand, logger: cfg.Logger, routing: cfg.Routing, cancelGrace: cfg.CancelGrace, backfillBatch: cfg.BackfillBatch, ids: newIDs(), notify: cfg.Notify.withDefaults(), targets: cfg.Targets.withDefaults()}
	if s.clock == nil {
		s.clock = SystemClock{}
	}
	if s.rand == nil {
		s.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.routing.Default == (Route{}) {
		s.routing.Default = Route{Connection: "default", Queue: "default"}
	}
	if s.backfillBatch <= 0 {
		s.backfillBatch = DefaultBackfillBatch
	}
	if s.cancelGrace == 0 {
		s.cancelGrace = 60 * time.Second
	}
	s.executor = newExecutor(s)
	s.turns = newWriterTurns(database.Of(s.db).SingleWriter())
	s.dispatch.pool = fairshare.New(fairshare.Limits{Total: s.notify.Concurrency}, s.clock.Now)
	return s
}

// DB exposes the database for health checks.
func (s *Service) DB() *bun.DB { return s.db }

func (s *Service) now() time.Time { return utcMicro(s.clock.Now()) }

func scheduleNotFound(namespace, scheduleID string) error {
	return &NotFoundError{Code: CodeScheduleNotFound, Message: fmt.Sprintf("schedule %q not found in namespace %q", scheduleID, namespace)}
}

func conflict(code, format string, args ...any) error {
	return &ConflictError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Create validates and stores a schedule, recording ScheduleCreated (and
// SchedulePaused when it starts paused). It is an update of the full
// definition onto a blank schedule (define), then the insert.
func (s *Service) Create(ctx context.Context, in CreateInput, cc *CommandContext) (*models.Schedule, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	now := s.now()
	in.Namespace = NamespaceOr(in.Namespace)
	if in.ScheduleID == "" {
		in.ScheduleID = "sch-" + strings.ToLower(s.ids.newAt(now))
	}
	paused := in.Paused
	in.Paused = false // paused below, with its event
	cals, err := s.calendarsForChange(ctx, s.db, in.Namespace, &in.Spec, nil)
	if err != nil {
		return nil, err
	}
	sch, err := s.define(in, now, cals)
	if err != nil {
		return nil, err
	}
	sch.ID = s.ids.newAt(now)

	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := models.GetSchedule(ctx, tx, sch.Namespace, sch.ScheduleID); err == nil {
			return conflict(CodeScheduleAlreadyExists, "schedule %q already exists in namespace %q (deleted schedules keep their ID)", sch.ScheduleID, sch.Namespace)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if len(sch.Spec.ExcludeCalendars) > 0 {
			// Again in the transaction, holding the calendars: an edit of
			// one either committed before (and is seen here) or waits
			// for this insert (and then re-plans it).
			cals, err := s.calendarsForChange(ctx, tx, sch.Namespace, &sch.Spec, nil)
			if err != nil {
				return err
			}
			compiled, err := timespec.Compile(sch.Spec, cals...)
			if err != nil {
				return &ValidationError{Code: CodeValidationFailed, Fields: map[string]string{"spec.exclude_calendars": err.Error()}}
			}
			s.scheduleNext(sch, compiled, now)
			if sch.NextFireAt == nil {
				return &ValidationError{Code: CodeSpecNeverFires, Fields: map[string]string{"spec": "has no future fire time"}}
			}
		}
		if err := models.InsertSchedule(ctx, tx, sch); err != nil {
			if database.Of(tx).IsUniqueViolation(err) {
				return conflict(CodeScheduleAlreadyExists, "schedule %q already exists in namespace %q", sch.ScheduleID, sch.Namespace)
			}
			return err
		}
		if err := saveTargetSecret(ctx, tx, sch.ID, sch.Action.Target, now); err != nil {
			return err
		}
		rec := &recorder{w: immediateWriter(tx), ids: s.ids, now: now, cc: cc}
		if err := rec.record(ctx, sch, &CreatedPayload{
			Spec: sch.Spec, Action: sch.Action, OverlapPolicy: sch.OverlapPolicy, NextFireAt: InstantOf(sch.NextFireAt),
			Settings: settingsOf(sch),
		}, "", ""); err != nil {
			return err
		}
		if paused {
			if err := s.pauseLocked(ctx, rec, sch, PauseInput{}); err != nil {
				return err
			}
		}
		return models.UpdateSchedule(ctx, tx, sch)
	})
	if err != nil {
		return nil, err
	}
	return sch, nil
}

// normalizeSpec stores empty lists as [] rather than null.
func normalizeSpec(spec models.Spec) models.Spec {
	if spec.CronExpressions == nil {
		spec.CronExpressions = []string{}
	}
	if spec.Intervals == nil {
		spec.Intervals = []models.Interval{}
	}
	return spec
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// scheduleNext computes the next canonical fire strictly after `after` and
// its jittered fire time; both become nil when the spec never fires again.
func (s *Service) scheduleNext(sch *models.Schedule, compiled *timespec.CompiledSpec, after time.Time) {
	sch.NextNominalAt, sch.NextFireAt = nil, nil
	if compiled == nil {
		return
	}
	nominal, ok := compiled.Next(after)
	if !ok {
		return
	}
	nominal = utcMicro(nominal)
	fire := nominal.Add(timespec.Jitter(s.rand, sch.JitterSeconds))
	sch.NextNominalAt, sch.NextFireAt = &nominal, &fire
}

// errUnchanged tells mutate that fn changed nothing: no write, no error.
var errUnchanged = errors.New("unchanged")

// mutate runs fn on one locked schedule in a transaction and saves it. It
// is the skeleton of every single-schedule change.
func (s *Service) mutate(ctx context.Context, namespace, scheduleID string, cc *CommandContext,
	fn func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error) (*models.Schedule, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	var out *models.Schedule
	txCtx, started := withStartedRuns(ctx)
	err := s.db.RunInTx(txCtx, nil, func(ctx context.Context, tx bun.Tx) error {
		sch, err := models.LockSchedule(ctx, tx, namespace, scheduleID)
		if errors.Is(err, sql.ErrNoRows) {
			return scheduleNotFound(namespace, scheduleID)
		}
		if err != nil {
			return err
		}
		rec := &recorder{w: immediateWriter(tx), ids: s.ids, now: s.now(), cc: cc}
		err = fn(ctx, tx, rec, sch)
		out = &sch.Schedule
		if errors.Is(err, errUnchanged) {
			return nil
		}
		if err != nil {
			return err
		}
		sch.UpdatedAt = rec.now
		if err := models.UpdateSchedule(ctx, tx, &sch.Schedule); err != nil {
			return err
		}
		return rec.ended.flush(ctx, tx, rec.now)
	})
	if err != nil {
		return nil, err
	}
	s.wakeups.wake(started) // a trigger or backfill may have started runs
	if err := s.attachRead(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// PauseInput is why a schedule is paused and, optionally, until when.
type PauseInput struct {
	Reason string
	// Until, when set, must be in the future; the loop resumes the schedule
	// then (CONTRACT §12).
	Until *time.Time
}

func (in PauseInput) validate(now time.Time) error {
	v := &ValidationError{Code: CodeValidationFailed}
	if utf8.RuneCountInString(in.Reason) > MaxReasonLength {
		v.Add("reason", fmt.Sprintf("must be at most %d characters", MaxReasonLength))
	}
	if in.Until != nil && !in.Until.After(now) {
		v.Add("paused_until", "must be in the future")
	}
	return v.OrNil()
}

// Pause stops a schedule from firing. The reason, author and end of the
// pause are kept in fields of their own; the note is never touched.
func (s *Service) Pause(ctx context.Context, namespace, scheduleID string, in PauseInput, cc *CommandContext) (*models.Schedule, error) {
	if err := in.validate(s.now()); err != nil {
		return nil, err
	}
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, _ bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		switch sch.Status {
		case models.StatusDeleted:
			return conflict(CodeScheduleDeleted, "schedule %q is deleted", scheduleID)
		case models.StatusPaused:
			return conflict(CodeScheduleNotActive, "schedule %q is already paused", scheduleID)
		}
		return s.pauseLocked(ctx, rec, &sch.Schedule, in)
	})
}

// pauseLocked pauses a locked schedule. Its next fire is cleared, so no
// surface shows one while it is paused; resume computes a fresh one.
func (s *Service) pauseLocked(ctx context.Context, rec *recorder, sch *models.Schedule, in PauseInput) error {
	sch.Status = models.StatusPaused
	sch.PausedAt = ptrTime(rec.now)
	sch.NextFireAt, sch.NextNominalAt = nil, nil
	sch.PauseReason, sch.PausedBy, sch.PausedUntil = nil, nil, nil
	payload := &PausedPayload{PausedAt: Instant(rec.now), Reason: in.Reason}
	if in.Reason != "" {
		sch.PauseReason = &in.Reason
	}
	if in.Until != nil {
		until := utcMicro(*in.Until)
		sch.PausedUntil = &until
		payload.PausedUntil = InstantOf(&until)
	}
	if by := rec.cc.author(); by != "" {
		sch.PausedBy = &by
	}
	return rec.record(ctx, sch, payload, "", "")
}

// Resume restarts a paused schedule from now: occurrences missed while it
// was paused are not caught up (use Backfill for that).
func (s *Service) Resume(ctx context.Context, namespace, scheduleID string, cc *CommandContext) (*models.Schedule, error) {
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, _ bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		switch sch.Status {
		case models.StatusDeleted:
			return conflict(CodeScheduleDeleted, "schedule %q is deleted", scheduleID)
		case models.StatusActive:
			return conflict(CodeScheduleNotPaused, "schedule %q is not paused", scheduleID)
		}
		return s.resumeLocked(ctx, rec, &sch.Schedule, nil)
	})
}

// resumeLocked resumes a locked paused schedule from now. until is the
// pause's end when the scheduler resumes it for that (ResumeDue).
func (s *Service) resumeLocked(ctx context.Context, rec *recorder, sch *models.Schedule, until *time.Time) error {
	compiled, err := rec.compile(ctx, s, rec.w.tx, sch)
	if err != nil {
		return fmt.Errorf("compile stored spec of %s: %w", sch.ScheduleID, err)
	}
	sch.Status = models.StatusActive
	sch.PausedAt, sch.PauseReason, sch.PausedBy, sch.PausedUntil = nil, nil, nil, nil
	s.scheduleNext(sch, compiled, rec.now)
	return rec.record(ctx, sch, &ResumedPayload{NextFireAt: InstantOf(sch.NextFireAt), PausedUntil: InstantOf(until)}, "", "")
}

// Delete soft-deletes a schedule. Deleting a deleted schedule changes
// nothing and records nothing.
func (s *Service) Delete(ctx context.Context, namespace, scheduleID string, cc *CommandContext) (*models.Schedule, error) {
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, _ bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		if sch.Status == models.StatusDeleted {
			return errUnchanged
		}
		return s.deleteLocked(ctx, rec, &sch.Schedule, DeleteByRequest)
	})
}

func (s *Service) deleteLocked(ctx context.Context, rec *recorder, sch *models.Schedule, reason string) error {
	sch.Status = models.StatusDeleted
	sch.DeletedAt = ptrTime(rec.now)
	sch.NextFireAt, sch.NextNominalAt = nil, nil
	sch.BufferedActions = []models.BufferedAction{}
	sch.BufferDepth = 0
	return rec.record(ctx, sch, &DeletedPayload{Reason: reason, DeletedAt: Instant(rec.now)}, "", "")
}

// Get returns a schedule in any status, including deleted ones.
func (s *Service) Get(ctx context.Context, namespace, scheduleID string) (*models.Schedule, error) {
	sch, err := models.GetSchedule(ctx, s.db, namespace, scheduleID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, scheduleNotFound(namespace, scheduleID)
	}
	if err != nil {
		return nil, err
	}
	return sch, s.attachRead(ctx, sch)
}

// Description is a schedule with what operators want to know about it.
type Description struct {
	Schedule        *models.Schedule
	FutureFireTimes []time.Time // next 5 canonical fire times
	SpecDescription string
	// timespec.SpecText is SpecDescription in parts, the zone apart.
	SpecText timespec.SpecText
}

// Describe returns a live (not deleted) schedule with its next fire times.
func (s *Service) Describe(ctx context.Context, namespace, scheduleID string) (*Description, error) {
	sch, err := s.Get(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	if sch.Status == models.StatusDeleted {
		return nil, scheduleNotFound(namespace, scheduleID)
	}
	return s.describe(ctx, sch), nil
}

func (s *Service) describe(ctx context.Context, sch *models.Schedule) *Description {
	d := &Description{Schedule: sch, FutureFireTimes: []time.Time{}}
	compiled, err := s.compileSpec(ctx, s.db, sch.Namespace, sch.Spec)
	if err != nil {
		d.SpecDescription = "invalid spec: " + err.Error()
		d.SpecText = timespec.SpecText{Parts: []timespec.SpecPart{{Text: d.SpecDescription}}, Zone: cmp.Or(sch.Spec.Timezone, "UTC")}
		return d
	}
	d.SpecDescription, d.SpecText = compiled.Description(), compiled.Text()
	if sch.Status != models.StatusDeleted {
		d.FutureFireTimes = compiled.Preview(s.now(), 5)
	}
	return d
}
