package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ConsoleSession is a row of console_sessions: one signed-in console user.
type ConsoleSession struct {
	bun.BaseModel `bun:"table:console_sessions,alias:cs"`

	IDHash      string    `bun:"id_hash,pk"`
	Principal   string    `bun:"principal,notnull"`
	TokenSHA256 string    `bun:"token_sha256,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	ExpiresAt   time.Time `bun:"expires_at,notnull"`
}

// InsertSession stores a new session.
func InsertSession(ctx context.Context, db bun.IDB, s *ConsoleSession) error {
	if _, err := db.NewInsert().Model(s).Exec(ctx); err != nil {
		return fmt.Errorf("insert session: %w", err)
	}
	return nil
}

// GetSession reads a session by its ID hash; found is false when absent.
func GetSession(ctx context.Context, db bun.IDB, idHash string) (*ConsoleSession, bool, error) {
	s := new(ConsoleSession)
	err := db.NewSelect().Model(s).Where("cs.id_hash = ?", idHash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get session: %w", err)
	}
	return s, true, nil
}

// DeleteSession removes a session; removing an absent one is no error.
func DeleteSession(ctx context.Context, db bun.IDB, idHash string) error {
	if _, err := db.NewDelete().Model((*ConsoleSession)(nil)).Where("id_hash = ?", idHash).Exec(ctx); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions removes sessions that ended before now, so the
// table holds only live ones.
func DeleteExpiredSessions(ctx context.Context, db bun.IDB, now time.Time) error {
	if _, err := db.NewDelete().Model((*ConsoleSession)(nil)).Where("expires_at <= ?", now.UTC()).Exec(ctx); err != nil {
		return fmt.Errorf("delete expired sessions: %w", err)
	}
	return nil
}

// writeProbe is the one row of tideline_write_probe.
type writeProbe struct {
	bun.BaseModel `bun:"table:tideline_write_probe"`

	ID       int       `bun:"id,pk"`
	ProbedAt time.Time `bun:"probed_at,notnull"`
}

// ProbeWrite commits a one-row write, to learn whether the database accepts
// writes at all (a full disk still answers reads and pings).
func ProbeWrite(ctx context.Context, db bun.IDB, now time.Time) error {
	_, err := db.NewInsert().Model(&writeProbe{ID: 1, ProbedAt: now.UTC()}).
		On("CONFLICT (id) DO UPDATE").Set("probed_at = EXCLUDED.probed_at").Exec(ctx)
	if err != nil {
		return fmt.Errorf("probe write: %w", err)
	}
	return nil
}
