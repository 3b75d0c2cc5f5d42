package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue 36, finding 8: a notifier's trail is readable through the API with
// the token that made each change, and every request's log line names its
// principal.
func TestNotifierHistoryAPIAndPrincipalInRequestLog(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	tn := newTenantsLogging(t, dbtest.SQLite(t), 0, slog.New(slog.NewTextHandler(logs, nil)))
	ctx := context.Background()
	rec := tn.request(ctx, "a-admin", http.MethodPost, "/waterline/api/v2/notifiers?namespace=team-a",
		`{"name": "ops", "url": "https://hooks.example.com/a/b", "events": ["run_failed"]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	rec = tn.request(ctx, "a-admin", http.MethodPatch, "/waterline/api/v2/notifiers/ops?namespace=team-a", `{"rotate_secret": true}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var rotated struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rotated))
	require.NotEmpty(t, rotated.Secret)
	rec = tn.request(ctx, "a-admin", http.MethodDelete, "/waterline/api/v2/notifiers/ops?namespace=team-a", "")
	require.Equal(t, http.StatusNoContent, rec.Code)

	rec = tn.request(ctx, "a-admin", http.MethodGet, "/waterline/api/v2/notifiers/ops/history?namespace=team-a&limit=2", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NotContains(t, rec.Body.String(), rotated.Secret)
	var page struct {
		Namespace, Kind, Name string
		Events                []struct {
			EventType string         `json:"event_type"`
			Actor     string         `json:"actor"`
			Source    string         `json:"source"`
			RequestID string         `json:"request_id"`
			Payload   map[string]any `json:"payload"`
		}
		NextCursor *string `json:"next_cursor"`
		HasMore    bool    `json:"has_more"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	require.Equal(t, []string{"team-a", "notifier", "ops"}, []string{page.Namespace, page.Kind, page.Name})
	require.True(t, page.HasMore)
	require.Len(t, page.Events, 2)
	require.Equal(t, "NotifierCreated", page.Events[0].EventType)
	require.Equal(t, "NotifierUpdated", page.Events[1].EventType)
	require.Equal(t, "rotated", page.Events[1].Payload["secret"])
	for _, e := range page.Events {
		require.Equal(t, "a-admin", e.Actor)
		require.Equal(t, "api", e.Source)
		require.NotEmpty(t, e.RequestID)
	}
	rec = tn.request(ctx, "a-admin", http.MethodGet, "/waterline/api/v2/notifiers/ops/history?namespace=team-a&cursor="+*page.NextCursor, "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"event_type":"NotifierDeleted"`)

	// Another team's admin sees no such notifier (namespaces hide, never 403).
	rec = tn.request(ctx, "b-admin", http.MethodGet, "/waterline/api/v2/notifiers/ops/history?namespace=team-b", "")
	require.Equal(t, http.StatusNotFound, rec.Code)

	var lines []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "msg=request") && strings.Contains(line, "/notifiers") {
			lines = append(lines, line)
		}
	}
	require.Len(t, lines, 6)
	for _, line := range lines[:5] {
		require.Contains(t, line, "principal=a-admin", line)
		require.Contains(t, line, "client=127.0.0.1", line)
	}
	require.Contains(t, lines[5], "principal=b-admin")
}
