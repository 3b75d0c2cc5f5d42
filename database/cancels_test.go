package database_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
)

// Closing the database waits for the CancelRequest that pgx sends when a
// statement's context ends mid-statement: a process that exits right after
// must not leave a cancel half-sent (PgBouncer 1.18 exits on that;
// cancels.go). A relay in front of the real server holds cancel requests
// until the test lets them go, so Close returning early is seen.
func TestCloseWaitsForCancelRequestsInFlight(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	relay := newCancelRelay(t, base)
	db, err := database.Open(t.Context(), relay.url(base))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = db.ExecContext(ctx, "SELECT pg_sleep(30)")
	require.Error(t, err, "the statement's context ended")

	// The cancel request reaches the relay from pgx's own goroutine.
	deadline := time.Now().Add(10 * time.Second)
	for relay.held.Load() == 0 {
		require.True(t, time.Now().Before(deadline), "no cancel request reached the relay")
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		close(relay.release)
	}()
	require.NoError(t, db.Close())
	require.True(t, relay.forwarded.Load(), "Close returned while a cancel request was still held by the relay")
}

// cancelRelay relays connections to a PostgreSQL server and holds every
// CancelRequest until release is closed.
type cancelRelay struct {
	ln        net.Listener
	target    string
	release   chan struct{}
	held      atomic.Int32
	forwarded atomic.Bool
}

func newCancelRelay(t *testing.T, rawURL string) *cancelRelay {
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &cancelRelay{ln: ln, target: u.Host, release: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *cancelRelay) url(rawURL string) string {
	u, _ := url.Parse(rawURL)
	u.Host = r.ln.Addr().String()
	return u.String()
}

func (r *cancelRelay) serve(client net.Conn) {
	defer client.Close()
	head := make([]byte, 8)
	if _, err := io.ReadFull(client, head); err != nil {
		return
	}
	if binary.BigEndian.Uint32(head[4:8]) == 80877102 {
		r.held.Add(1)
		<-r.release
		r.forwarded.Store(true)
	}
	server, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	defer server.Close()
	if _, err := server.Write(head); err != nil {
		return
	}
	go func() { _, _ = io.Copy(server, client) }()
	_, _ = io.Copy(client, server)
}
