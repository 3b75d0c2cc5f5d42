package scheduling

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// Fates of an occurrence in the ledger (CONTRACT §12).
const (
	FateStarted  = "started"  // a run exists for it (scheduled, drained or backfilled)
	FateSkipped  = "skipped"  // a fire was attempted and skipped (reason)
	FateBuffered = "buffered" // parked by the overlap policy, not drained yet
	FateMissed   = "missed"   // active, yet nothing fired: scheduler down or dropped by catch-up
	// FateCompacted: no evidence left, and none is expected — the
	// occurrence is at or before what audit compaction removed (SPEC §19),
	// and retention removed its run with it.
	FateCompacted     = "compacted"
	FatePaused        = "paused"         // the schedule was paused then
	FateBeforeCreated = "before_created" // the schedule did not exist yet
	FateAfterDeleted  = "after_deleted"  // the schedule was deleted by then
	FateDue           = "due"            // not yet fired: in the future, or the next fire now
	// FateBackfillPending: a running or paused backfill job will still
	// start it (docs/BACKFILLS.md).
	FateBackfillPending = "backfill_pending"
	// FateExcluded and FateMoved: a calendar the spec lists holds the
	// occurrence's local date (CONTRACT §19); it did not fire then, and a
	// moved one fired at MovedTo, listed there with its own fate.
	FateExcluded = "excluded"
	FateMoved    = "moved"
)

// Fates lists every fate, in the order surfaces show them.
var Fates = []string{FateStarted, FateSkipped, FateBuffered, FateBackfillPending, FateMissed, FateCompacted, FatePaused, FateBeforeCreated, FateAfterDeleted, FateDue, FateExcluded, FateMoved}

// Ledger bounds.
const (
	MaxLedgerPage       = 1000
	DefaultLedgerWindow = 7 * 24 * time.Hour
	// maxLedgerLifecycle caps the lifecycle events one page reads; a page
	// meeting more ends at the last one read (has_more), so a schedule paused
	// and resumed every minute still costs one bounded read per page.
	maxLedgerLifecycle = 1000
)

// Occurrence is one canonical occurrence of a schedule's spec and its fate.
type Occurrence struct {
	Time time.Time // the canonical instant (UTC)
	// Wall is the wall-clock time of the spec's zone it stands for (its
	// fields read as local time); Shift is how far a spring-forward gap
	// moved it; Repeated marks the second pass of a fall-back hour.
	Wall       time.Time
	Shift      time.Duration
	Repeated   bool
	Fate       string
	InstanceID string // the instance that ran or was skipped for it
	RunID      string
	RunStatus  string
	Trigger    string // scheduled | drained | backfilled
	FireLag    *time.Duration
	Reason     string // skip reason
	// Calendar, MovedFrom and MovedTo say what a calendar did: the
	// calendar of an excluded or moved occurrence, where a moved one went
	// (fate moved) and, on the fire it became, where it came from.
	Calendar  string
	MovedFrom *time.Time
	MovedTo   *time.Time
}

// LedgerQuery selects a page of the ledger: occurrences in [From, To)
// strictly after Cursor (the Unix second of the previous page's last).
type LedgerQuery struct {
	From, To *time.Time // default: the last 7 days up to now
	Cursor   string
	Limit    int // default and at most MaxLedgerPage
}

// LedgerPage is one page of a schedule's occurrence ledger.
type LedgerPage struct {
	ScheduleID  string
	Namespace   string
	Timezone    string
	From, To    time.Time
	Occurrences []Occurrence
	NextCursor  string // "" when HasMore is false
	HasMore     bool
}

// ledgerState is what a schedule does with its occurrences after one
// lifecycle event, until the next.
type ledgerState struct {
	after  time.Time // the event's time; the state applies to occurrences after it
	status string    // a fate for past occurrences with no evidence: missed (active), paused, before_created, after_deleted
	spec   *timespec.CompiledSpec
}

// Ledger lists the canonical occurrences of a schedule in a window with
// what became of each (CONTRACT §12). Nothing is stored per occurrence: the
// occurrences come from the spec in force at each moment (ScheduleCreated
// and ScheduleUpdated carry it), their fates from the deterministic
// instance IDs (runs and skips are looked up by ID range), the current
// buffer, and the lifecycle events (pauses, creation, deletion).
//
// The work of a page is bounded by its size, not by the schedule's age:
// ≤ limit+1 Next calls per lifecycle interval, three lifecycle reads (the
// states in force at the page's start and at most 1,000 events inside
// it), and four index range scans over the page's instance IDs.
func (s *Service) Ledger(ctx context.Context, namespace, scheduleID string, q LedgerQuery) (*LedgerPage, error) {
	now := s.now()
	to := now
	if q.To != nil {
		to = q.To.UTC()
	}
	from := to.Add(-DefaultLedgerWindow)
	if q.From != nil {
		from = q.From.UTC()
	}
	if !from.Before(to) {
		return nil, &ValidationError{Code: CodeInvalidTimeRange, Fields: map[string]string{"from": "must be before to"}}
	}
	limit := q.Limit
	if limit <= 0 || limit > MaxLedgerPage {
		limit = MaxLedgerPage
	}
	// Occurrences are whole seconds: "at or after from" is "after from−1s".
	cursor := from.Unix() - 1
	if from.Nanosecond() > 0 {
		cursor++
	}
	if q.Cursor != "" {
		c, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || c < timespec.MinUnix || c > timespec.MaxUnix {
			return nil, &ValidationError{Code: CodeInvalidCursor, Fields: map[string]string{"cursor": "must be the next_cursor of a previous page"}}
		}
		cursor = max(cursor, c)
	}

	sch, err := models.GetSchedule(ctx, s.db, namespace, scheduleID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, scheduleNotFound(namespace, scheduleID)
	}
	if err != nil {
		return nil, err
	}
	page := &LedgerPage{ScheduleID: sch.ScheduleID, Namespace: sch.Namespace, Timezone: sch.Spec.Timezone, From: from, To: to, Occurrences: []Occurrence{}}

	states, capped, err := s.ledgerStates(ctx, sch, time.Unix(cursor+1, 0).UTC(), to)
	if err != nil {
		return nil, err
	}
	if capped {
		to = states[len(states)-1].after
	}

	// Walk the spec of each state in turn, limit+1 occurrences at most.
	var occ []Occurrence
	stateOf := make([]int, 0, limit+1)
	at, i := cursor, 0
	for len(occ) <= limit {
		st := states[i]
		var t time.Time
		ok := st.spec != nil
		if ok {
			t, ok = st.spec.Next(time.Unix(at, 0))
		}
		if i+1 < len(states) && (!ok || t.After(states[i+1].after)) {
			at = max(at, states[i+1].after.Unix())
			i++
			continue
		}
		if !ok || !t.Before(to) {
			break
		}
		occ = append(occ, Occurrence{Time: t})
		stateOf = append(stateOf, i)
		at = t.Unix()
	}
	if len(occ) > limit {
		occ, stateOf = occ[:limit], stateOf[:limit]
		page.HasMore = true
		page.NextCursor = strconv.FormatInt(occ[limit-1].Time.Unix(), 10)
	} else if capped {
		page.HasMore = true
		page.NextCursor = strconv.FormatInt(to.Unix()-1, 10)
	}
	span := to
	if len(occ) > 0 && page.HasMore {
		span = occ[len(occ)-1].Time.Add(time.Second)
	}
	if len(occ) > 0 {
		if err := s.ledgerFates(ctx, sch, occ, stateOf, states, now); err != nil {
			return nil, err
		}
	}
	occ = append(occ, calendarFates(occ, stateOf, states, time.Unix(cursor+1, 0).UTC(), span, limit)...)
	slices.SortStableFunc(occ, func(a, b Occurrence) int { return a.Time.Compare(b.Time) })
	page.Occurrences = occ
	return page, nil
}

// calendarFates marks the fires a calendar moved with where they came from
// and lists, within [from, to), the occurrences calendars took away:
// excluded, or moved (with where to).
func calendarFates(occ []Occurrence, stateOf []int, states []ledgerState, from, to time.Time, limit int) []Occurrence {
	for j := range occ {
		if spec := states[stateOf[j]].spec; spec != nil {
			if src, cal, ok := spec.MovedFrom(occ[j].Time); ok {
				occ[j].Calendar, occ[j].MovedFrom = cal, &src
			}
		}
	}
	var out []Occurrence
	for i, st := range states {
		if st.spec == nil {
			continue
		}
		a, b := from, to
		if st.after.After(a) {
			a = st.after
		}
		if i+1 < len(states) && states[i+1].after.Before(b) {
			b = states[i+1].after
		}
		for _, e := range st.spec.ExcludedBetween(a, b, limit) {
			o := Occurrence{Time: e.At, Fate: FateExcluded, Calendar: e.Calendar}
			o.Wall, o.Shift, o.Repeated = st.spec.WallOf(e.At)
			if !e.MovedTo.IsZero() {
				to := e.MovedTo
				o.Fate, o.MovedTo = FateMoved, &to
			}
			out = append(out, o)
		}
	}
	return out
}

// ledgerStates reads the lifecycle of a schedule from start (the first
// occurrence instant a page may list) to `to`: the state in force at start,
// then one per lifecycle event. capped reports that the events were cut
// at maxLedgerLifecycle.
func (s *Service) ledgerStates(ctx context.Context, sch *models.Schedule, start, to time.Time) ([]ledgerState, bool, error) {
	statusEv, err := models.LastLifecycleBefore(ctx, s.db, sch.ID,
		[]string{EventScheduleCreated, EventSchedulePaused, EventScheduleResumed, EventScheduleDeleted}, start)
	if err != nil {
		return nil, false, err
	}
	specEv, err := models.LastLifecycleBefore(ctx, s.db, sch.ID, []string{EventScheduleCreated, EventScheduleUpdated}, start)
	if err != nil {
		return nil, false, err
	}
	events, err := models.LifecycleEvents(ctx, s.db, sch.ID, start, to, maxLedgerLifecycle)
	if err != nil {
		return nil, false, err
	}
	// Specs compile with the namespace's calendars as they are now: a
	// calendar's past contents are in its trail, not replayed here.
	compileWith := func(spec models.Spec) (*timespec.CompiledSpec, error) {
		return s.compileSpec(ctx, s.db, sch.Namespace, spec)
	}
	compiled := map[string]*timespec.CompiledSpec{}
	specOf := func(ev *models.ScheduleEvent) (*timespec.CompiledSpec, bool) {
		var p struct {
			Spec json.RawMessage `json:"spec"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil || len(p.Spec) == 0 {
			return nil, false
		}
		if c, ok := compiled[string(p.Spec)]; ok {
			return c, true
		}
		var spec models.Spec
		if json.Unmarshal(p.Spec, &spec) != nil {
			return nil, false
		}
		c, err := compileWith(spec)
		if err != nil {
			c = nil // a stored spec that no longer compiles never fired
		}
		compiled[string(p.Spec)] = c
		return c, true
	}

	first := ledgerState{after: time.Unix(timespec.MinUnix, 0).UTC(), status: FateBeforeCreated}
	if statusEv != nil {
		first.status = statusAfter(statusEv.EventType, first.status)
	}
	// The spec before the page: the last one recorded before it, else the
	// one the schedule was created with (the page starts before creation),
	// else the current one (an audit stream that predates spec payloads).
	found := false
	if specEv != nil {
		first.spec, found = specOf(specEv)
	}
	for i := 0; !found && i < len(events); i++ {
		if events[i].EventType == EventScheduleCreated {
			first.spec, found = specOf(&events[i])
		}
	}
	if !found {
		first.spec, _ = compileWith(sch.Spec)
	}
	states := []ledgerState{first}
	for i := range events {
		ev := &events[i]
		st := states[len(states)-1]
		st.after = ev.RecordedAt.UTC()
		st.status = statusAfter(ev.EventType, st.status)
		if ev.EventType == EventScheduleCreated || ev.EventType == EventScheduleUpdated {
			if c, ok := specOf(ev); ok {
				st.spec = c
			}
		}
		states = append(states, st)
	}
	return states, len(events) == maxLedgerLifecycle, nil
}

// statusAfter is the ledger status a lifecycle event leaves.
func statusAfter(eventType, before string) string {
	switch eventType {
	case EventScheduleCreated, EventScheduleResumed:
		return FateMissed // active: an occurrence without evidence was missed
	case EventSchedulePaused:
		return FatePaused
	case EventScheduleDeleted:
		return FateAfterDeleted
	}
	return before
}

// ledgerFates fills in the fate of each occurrence: evidence first (a
// run, the buffer, a skip), then what the schedule was doing at the time.
func (s *Service) ledgerFates(ctx context.Context, sch *models.Schedule, occ []Occurrence, stateOf []int, states []ledgerState, now time.Time) error {
	scheduled := make([]string, len(occ))
	backfill := make([]string, len(occ))
	for i := range occ {
		scheduled[i] = scheduledInstanceID(sch.ScheduleID, occ[i].Time)
		backfill[i] = backfillInstanceID(sch.ScheduleID, occ[i].Time)
	}
	runs := map[string]models.InstanceRun{}
	skips := map[string]string{}
	for _, ids := range [][]string{scheduled, backfill} {
		r := idRange(ids)
		found, err := models.InstanceRuns(ctx, s.db, sch.Namespace, r)
		if err != nil {
			return err
		}
		for _, f := range found {
			runs[f.InstanceID] = f
		}
		skipped, err := models.SkipEvents(ctx, s.db, sch.ID, r)
		if err != nil {
			return err
		}
		for _, e := range skipped {
			var p SkippedPayload
			_ = json.Unmarshal(e.Payload, &p)
			skips[*e.WorkflowInstanceID] = p.Reason // in sequence order: the last one wins
		}
	}
	jobs, err := models.UnfinishedBackfillsOf(ctx, s.db, sch.ID)
	if err != nil {
		return err
	}
	pending := func(t time.Time) bool {
		for i := range jobs {
			if jobWillStart(&jobs[i], t) {
				return true
			}
		}
		return false
	}
	comp, err := models.CompactionOf(ctx, s.db, sch.ID)
	if err != nil {
		return err
	}
	buffered := map[string]bool{}
	for _, b := range sch.BufferedActions {
		buffered[b.InstanceID] = true
	}

	for i := range occ {
		o := &occ[i]
		st := states[stateOf[i]]
		if st.spec != nil {
			o.Wall, o.Shift, o.Repeated = st.spec.WallOf(o.Time)
		} else {
			o.Wall = o.Time
		}
		run, ok := runs[scheduled[i]]
		if !ok {
			run, ok = runs[backfill[i]]
		}
		switch {
		case ok && run.RunID != nil:
			o.Fate, o.InstanceID, o.RunID = FateStarted, run.InstanceID, *run.RunID
			o.RunStatus, o.Trigger = derefText(run.RunStatus), derefText(run.Trigger)
			if run.RunCreatedAt != nil {
				lag := run.RunCreatedAt.Sub(o.Time)
				o.FireLag = &lag
			}
		case buffered[scheduled[i]]:
			o.Fate, o.InstanceID = FateBuffered, scheduled[i]
		case skips[scheduled[i]] != "":
			o.Fate, o.InstanceID, o.Reason = FateSkipped, scheduled[i], skips[scheduled[i]]
		case skips[backfill[i]] != "":
			o.Fate, o.InstanceID, o.Reason = FateSkipped, backfill[i], skips[backfill[i]]
		case len(jobs) > 0 && pending(o.Time):
			o.Fate, o.InstanceID = FateBackfillPending, backfill[i]
		case st.status == FateMissed && (o.Time.After(now) || (sch.NextNominalAt != nil && !o.Time.Before(*sch.NextNominalAt))):
			o.Fate = FateDue // future, or the overdue next fire the loop has yet to take
		case st.status == FateMissed && comp != nil && !o.Time.After(comp.ThroughAt):
			o.Fate = FateCompacted // its run and its fire or skip event are gone with age
		case st.status == FatePaused && o.Time.After(now) && sch.Status == models.StatusPaused && sch.PausedUntil != nil && o.Time.After(*sch.PausedUntil):
			o.Fate = FateDue // after the timed pause ends
		default:
			o.Fate = st.status
		}
	}
	return nil
}

// idRange turns the instance IDs of consecutive occurrences into one
// index range: the Unix seconds in them have the same number of digits
// from 2001 to 2286, so the strings sort as the times do, and no other ID
// of the schedule falls in between (manual and backfill IDs continue with
// a letter, schedule IDs have no ':'). Otherwise the exact IDs are used.
func idRange(ids []string) models.IDRange {
	first, last := ids[0], ids[len(ids)-1]
	if len(first) != len(last) {
		return models.IDRange{IDs: ids}
	}
	return models.IDRange{From: first, To: last}
}

// EarliestBackfilled returns the earliest occurrence in [from, to) that a
// backfill started a run for, or nil: the console's heatmap, which starts
// at the schedule's creation, starts there instead when a backfill reached
// further back. One step into the runs' (namespace, instance_id) index
// (backfill instance IDs embed the occurrence's Unix second; idRange).
func (s *Service) EarliestBackfilled(ctx context.Context, namespace, scheduleID string, from, to time.Time) (*time.Time, error) {
	last := to.Add(-time.Second)
	if last.Before(from) {
		return nil, nil
	}
	r := idRange([]string{backfillInstanceID(scheduleID, from), backfillInstanceID(scheduleID, last)})
	if len(r.IDs) > 0 {
		return nil, nil // the Unix seconds change width (before 2001 or after 2286)
	}
	id, err := models.FirstInstanceRun(ctx, s.db, namespace, r)
	if err != nil || id == "" {
		return nil, err
	}
	sec, err := strconv.ParseInt(id[strings.LastIndexByte(id, ':')+1:], 10, 64)
	if err != nil {
		return nil, nil
	}
	t := time.Unix(sec, 0).UTC()
	return &t, nil
}
