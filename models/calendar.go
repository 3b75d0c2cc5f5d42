package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// Calendar is a row of calendars (migration 0023): a namespace's named set
// of dates (YYYY-MM-DD) and weekend days (CONTRACT §16).
type Calendar struct {
	bun.BaseModel `bun:"table:calendars,alias:cal"`

	Namespace   string    `bun:"namespace,pk"`
	Name        string    `bun:"name,pk"`
	Description string    `bun:"description,notnull"`
	Dates       []string  `bun:"dates,type:jsonb,notnull"`
	Weekend     []string  `bun:"weekend,type:jsonb,notnull"`
	Version     int64     `bun:"version,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

// CalendarVersion is a calendar's name and version: what a process checks
// its compiled calendars against.
type CalendarVersion struct {
	Name    string `bun:"name"`
	Version int64  `bun:"version"`
}

// InsertCalendar stores a new calendar.
func InsertCalendar(ctx context.Context, db bun.IDB, c *Calendar) error {
	if _, err := db.NewInsert().Model(c).Exec(ctx); err != nil {
		return fmt.Errorf("insert calendar: %w", err)
	}
	return nil
}

// UpdateCalendar writes every column of c back to its row.
func UpdateCalendar(ctx context.Context, db bun.IDB, c *Calendar) error {
	if _, err := db.NewUpdate().Model(c).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update calendar: %w", err)
	}
	return nil
}

// DeleteCalendar removes one calendar.
func DeleteCalendar(ctx context.Context, db bun.IDB, namespace, name string) error {
	if _, err := db.NewDelete().Model((*Calendar)(nil)).Where("namespace = ? AND name = ?", namespace, name).Exec(ctx); err != nil {
		return fmt.Errorf("delete calendar: %w", err)
	}
	return nil
}

// GetCalendar reads one calendar; lock takes its row lock (on PostgreSQL)
// for a change. It returns an error matching sql.ErrNoRows when there is none.
func GetCalendar(ctx context.Context, db bun.IDB, namespace, name string, lock bool) (*Calendar, error) {
	c := new(Calendar)
	q := db.NewSelect().Model(c).Where("cal.namespace = ? AND cal.name = ?", namespace, name)
	if lock {
		q = database.Lock(q, "UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("get calendar: %w", err)
	}
	return c, nil
}

// ListCalendars returns a namespace's calendars by name, up to limit after
// the cursor (a name; "" from the start), and whether more follow.
func ListCalendars(ctx context.Context, db bun.IDB, namespace, after string, limit int) ([]Calendar, bool, error) {
	var out []Calendar
	err := db.NewSelect().Model(&out).Where("cal.namespace = ? AND cal.name > ?", namespace, after).
		OrderExpr("cal.name ASC").Limit(int64(limit + 1)).Scan(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("list calendars: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// GetCalendars reads the named calendars of a namespace (missing names are
// left out).
func GetCalendars(ctx context.Context, db bun.IDB, namespace string, names []string) ([]Calendar, error) {
	var out []Calendar
	if len(names) == 0 {
		return out, nil
	}
	if err := db.NewSelect().Model(&out).Where("cal.namespace = ? AND cal.name IN (?)", namespace, bun.In(names)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get calendars: %w", err)
	}
	return out, nil
}

// CalendarVersions lists the names and versions of the named calendars of
// a namespace that exist: a narrow read by primary key.
func CalendarVersions(ctx context.Context, db bun.IDB, namespace string, names []string) ([]CalendarVersion, error) {
	var out []CalendarVersion
	if len(names) == 0 {
		return out, nil
	}
	if err := db.NewSelect().Table("calendars").Column("name", "version").Where("namespace = ? AND name IN (?)", namespace, bun.In(names)).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("list calendar versions: %w", err)
	}
	return out, nil
}

// UpdateScheduleNext writes a re-planned schedule's next fire.
func UpdateScheduleNext(ctx context.Context, db bun.IDB, s *Schedule) error {
	if _, err := db.NewUpdate().Model(s).Column("next_fire_at", "next_nominal_at", "updated_at").WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update schedule next fire: %w", err)
	}
	return nil
}

// SchedulesNamingCalendar returns the live (not deleted) schedules of a
// namespace whose spec text names calendar, locked for update when lock is
// set, in ID order (the lock order of every multi-schedule change). The
// match is on the spec's JSON text ("name" in quotes; the spacing of
// PostgreSQL's jsonb text and SQLite's stored text differ, the quotes do
// not), so it can over-match: the caller checks spec.exclude_calendars.
func SchedulesNamingCalendar(ctx context.Context, db bun.IDB, namespace, calendar string, lock bool) ([]Schedule, error) {
	var out []Schedule
	q := db.NewSelect().Model(&out).
		Where("s.namespace = ? AND s.status <> ? AND CAST(s.spec AS text) LIKE ?", namespace, StatusDeleted, `%"`+calendar+`"%`).
		OrderExpr("s.id ASC")
	if lock {
		q = database.Lock(q, "UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list schedules naming calendar: %w", err)
	}
	return out, nil
}
