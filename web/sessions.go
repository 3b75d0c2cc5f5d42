package web

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/models"
)

// sessionStore keeps console sessions in the database every replica shares.
type sessionStore struct{ db bun.IDB }

func (s sessionStore) InsertSession(ctx context.Context, rec auth.SessionRecord) error {
	return models.InsertSession(ctx, s.db, &models.ConsoleSession{IDHash: rec.IDHash, Principal: rec.Principal,
		TokenSHA256: rec.TokenHash, CreatedAt: rec.CreatedAt.UTC(), ExpiresAt: rec.ExpiresAt.UTC()})
}

func (s sessionStore) GetSession(ctx context.Context, idHash string) (auth.SessionRecord, bool, error) {
	row, found, err := models.GetSession(ctx, s.db, idHash)
	if err != nil || !found {
		return auth.SessionRecord{}, false, err
	}
	return auth.SessionRecord{IDHash: row.IDHash, Principal: row.Principal, TokenHash: row.TokenSHA256,
		CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}, true, nil
}

func (s sessionStore) DeleteSession(ctx context.Context, idHash string) error {
	return models.DeleteSession(ctx, s.db, idHash)
}

func (s sessionStore) DeleteExpiredSessions(ctx context.Context, now time.Time) error {
	return models.DeleteExpiredSessions(ctx, s.db, now)
}
