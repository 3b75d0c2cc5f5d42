package worker_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/worker"
)

// Issue 36, finding 5: the worker's client follows no redirect (the worker
// token would go along), with its own http.Client or the caller's.
func TestWorkerClientRefusesRedirects(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte(`{"runs": []}`))
	}))
	t.Cleanup(target.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	for _, hc := range []*http.Client{nil, {}} {
		c, err := worker.NewClient(worker.ClientOptions{BaseURL: redirector.URL, Token: "tl_worker", WorkerID: "w1", HTTPClient: hc})
		require.NoError(t, err)
		_, err = c.Poll(t.Context(), worker.PollRequest{WorkerID: "w1"})
		var apiErr *worker.APIError
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, http.StatusTemporaryRedirect, apiErr.StatusCode)
		if hc != nil {
			require.Nil(t, hc.CheckRedirect, "the caller's client is left as it is")
		}
	}
	require.Zero(t, reached.Load(), "the redirect's target received nothing")
}
