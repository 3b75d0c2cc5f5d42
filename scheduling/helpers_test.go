package scheduling_test

import (
	"testing"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/migrations"
)

func migrationsApply(t *testing.T, url string) ([]string, error) {
	t.Helper()
	db, err := database.Open(t.Context(), url)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return migrations.Apply(t.Context(), db)
}
