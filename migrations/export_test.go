package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// ApplyUpTo applies the migrations up to version upTo, for upgrade tests.
func ApplyUpTo(ctx context.Context, db *bun.DB, upTo int) ([]string, error) {
	return applyUpTo(ctx, db, upTo)
}
