package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
)

// catcher records every request that reaches it: where a redirect would
// have taken the token and the body.
type catcher struct {
	mu   sync.Mutex
	seen []string
}

func (c *catcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.seen = append(c.seen, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" body="+string(body))
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

// Issue 36, finding 5: a 307 to another port of the same host received the
// bearer token, and a 307 to another host the POST body with a notifier's
// secret. The client follows no redirect, whatever http.Client it is given,
// and says where the server pointed.
func TestClientRefusesRedirects(t *testing.T) {
	t.Parallel()
	elsewhere := &catcher{}
	target := httptest.NewServer(elsewhere) // 127.0.0.1, another port
	t.Cleanup(target.Close)
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+r.URL.Path, status)
		}))
		t.Cleanup(redirector.Close)
		for name, opts := range map[string][]client.Option{
			"default client": nil,
			"own client":     {client.WithHTTPClient(&http.Client{})},
		} {
			c, err := client.New(redirector.URL, append([]client.Option{client.WithToken("tl_secret-token")}, opts...)...)
			require.NoError(t, err)
			_, err = c.GetSchedule(t.Context(), "nightly")
			var redirect *client.RedirectError
			require.ErrorAs(t, err, &redirect, "%d %s", status, name)
			require.Equal(t, status, redirect.StatusCode)
			require.Equal(t, target.URL+"/waterline/api/v2/schedules/nightly", redirect.Location)
			require.Contains(t, err.Error(), "Location "+target.URL+"/waterline/api/v2/schedules/nightly")

			secret := "whsec-do-not-leak"
			url := "https://hooks.example.com/x"
			_, err = c.CreateNotifier(t.Context(), apijson.NotifierWrite{Name: "n", URL: &url, Events: []string{"run_failed"}, Secret: &secret})
			require.True(t, errors.As(err, &redirect), "%d %s: %v", status, name, err)
		}
	}
	elsewhere.mu.Lock()
	defer elsewhere.mu.Unlock()
	require.Empty(t, elsewhere.seen, "nothing reached the redirect's target: %s", strings.Join(elsewhere.seen, "\n"))
	// The caller's own client is left as it was given.
	own := &http.Client{}
	_, err := client.New(target.URL, client.WithHTTPClient(own))
	require.NoError(t, err)
	require.Nil(t, own.CheckRedirect)
}
