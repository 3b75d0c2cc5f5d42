package metrics_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/scheduling"
)

// Fires prepared ahead are stamped with their instant; their lag is taken
// from the commit, and a set that was not committed is counted apart.
func TestObservePrepared(t *testing.T) {
	t.Parallel()
	m := metrics.New(dbtest.SQLite(t))
	at := time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC)
	row := scheduling.TickRow{Outcome: scheduling.OutcomeTriggered, OccurrenceTime: &at, LastFiredAt: &at}
	m.ObservePrepared(&scheduling.Prepared{At: at, Rows: []scheduling.TickRow{row, row}, CommittedAt: at.Add(300 * time.Millisecond)}, nil)
	m.ObservePrepared(&scheduling.Prepared{At: at, Rows: []scheduling.TickRow{row}}, errors.New("too late"))

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`tideline_schedule_fires_total{outcome="triggered"} 2`,
		`tideline_fire_lag_seconds_bucket{le="0.25"} 0`,
		`tideline_fire_lag_seconds_bucket{le="0.5"} 2`,
		`tideline_prepared_fires_rolled_back_total 1`,
	} {
		require.Contains(t, string(body), want)
	}
}
