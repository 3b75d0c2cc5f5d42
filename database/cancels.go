package database

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// cancelCode is the protocol's CancelRequest code: the second 32-bit word
// of the 16-byte message a client writes on a connection of its own to
// stop a statement that runs on another one.
const cancelCode = 80877102

// cancelDrainTimeout bounds how long closing the database waits for cancel
// requests still on their way (pgx gives each one 15 s; a healthy server or
// PgBouncer answers in milliseconds).
const cancelDrainTimeout = 5 * time.Second

// cancels counts the cancel requests in flight, so that closing the
// database waits for them before the process exits.
//
// Why: pgx sends a CancelRequest whenever a statement's connection breaks
// off mid-statement (its context ended — a worker hung up on a long poll —
// or a read timed out), from a goroutine of its own, and waits for the
// server to hang up. PgBouncer 1.18 (Debian 12's) exits with FATAL "bad
// client state: 0" when such a cancel client disconnects before PgBouncer
// has forwarded the request (pgbouncer/pgbouncer#801, fixed in 1.19): a
// replica that exits right after a worker hung up took PgBouncer, and every
// other replica's connections, down with it
// (reliability/pgbouncer_test.go). Waiting at Close lets the cancel finish.
type cancels struct {
	wg sync.WaitGroup
}

// wrap returns a dial function that watches what each new connection
// writes first; a connection that begins with a CancelRequest is counted
// until it is closed.
func (c *cancels) wrap(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn, cancels: c}, nil
	}
}

// drain waits until no cancel request is in flight, or cancelDrainTimeout.
func (c *cancels) drain() {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cancelDrainTimeout):
	}
}

// watchedConn is a connection whose first write tells whether it carries
// a cancel request.
type watchedConn struct {
	net.Conn
	cancels *cancels
	first   sync.Once
	counted bool
	closed  sync.Once
}

func (w *watchedConn) Write(b []byte) (int, error) {
	w.first.Do(func() {
		if len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == cancelCode {
			w.counted = true
			w.cancels.wg.Add(1)
		}
	})
	return w.Conn.Write(b)
}

func (w *watchedConn) Close() error {
	err := w.Conn.Close()
	w.closed.Do(func() {
		// first.Do has run, or never will (Close without a write):
		// running it here settles counted either way.
		w.first.Do(func() {})
		if w.counted {
			w.cancels.wg.Done()
		}
	})
	return err
}

// drainingConnector is pgx's connector whose Close — which database/sql
// calls from DB.Close, after closing its own connections — waits for the
// cancel requests in flight.
type drainingConnector struct {
	driver.Connector
	cancels *cancels
}

func (d drainingConnector) Close() error {
	d.cancels.drain()
	return nil
}
