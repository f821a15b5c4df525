package durable

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// Listener holds one connection that LISTENs on the store's channel. It
// does not reconnect by itself: the runtime's listen loop closes it after
// an error and connects again, with a backoff, and sweeps for what was
// sent while it was away.
type Listener struct {
	store *Store
	conn  *pgx.Conn
	pid   atomic.Uint32
}

// NewListener makes a listener, not yet connected.
func (s *Store) NewListener() driver.Listener { return &Listener{store: s} }

// BackendPID is the server process of the current connection, 0 when not
// connected. Tests use it to cut the connection.
func (l *Listener) BackendPID() uint32 { return l.pid.Load() }

// Connect opens a connection of its own (a pooled one would be handed to
// others between notifications) and LISTENs on the store's channel.
func (l *Listener) Connect(ctx context.Context) error {
	if l.conn != nil {
		return errors.New("durable: the listener is connected already; close it first")
	}
	conn, err := pgx.ConnectConfig(ctx, l.store.pool.Config().ConnConfig.Copy())
	if err != nil {
		return translate(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.store.channel}.Sanitize()); err != nil {
		closeConn(ctx, conn)
		return translate(err)
	}
	l.conn = conn
	l.pid.Store(conn.PgConn().PID())
	return nil
}

// WaitForNotification blocks until a wake-up arrives and returns its
// payload. An error means the connection is lost, or ctx ended.
func (l *Listener) WaitForNotification(ctx context.Context) (string, error) {
	if l.conn == nil {
		return "", errors.New("durable: the listener is not connected")
	}
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", translate(err)
	}
	return n.Payload, nil
}

// Close closes the connection, if open.
func (l *Listener) Close(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	l.pid.Store(0)
	closeConn(ctx, l.conn)
	l.conn = nil
	return nil
}

// closeConn closes a connection that is being dropped either way, bounded
// by a second even when ctx has ended.
func closeConn(ctx context.Context, conn *pgx.Conn) {
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = conn.Close(closeCtx)
}
