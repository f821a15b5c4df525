package durable

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListenConfig says what to do with what the listener hears.
type ListenConfig struct {
	// OnNotify receives each notification's payload. It must not block
	// for long: the listener reads the next notification after it returns.
	OnNotify func(payload string)
	// OnConnect runs after every (re)connection, once LISTEN is in place.
	// Notifications sent while the listener was away are lost to it, so on
	// a reconnection (reconnected=true) the caller must sweep the tables.
	OnConnect func(reconnected bool)
	// MaxBackoff bounds the wait between reconnection attempts; zero means
	// 5 seconds.
	MaxBackoff time.Duration
}

// Listener holds one connection that LISTENs on the store's channel and
// reconnects after it drops.
type Listener struct {
	store *Store
	cfg   ListenConfig
	pid   atomic.Uint32
}

// NewListener makes a listener; Run starts it.
func (s *Store) NewListener(cfg ListenConfig) *Listener {
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	return &Listener{store: s, cfg: cfg}
}

// BackendPID is the server process of the current connection, 0 when not
// connected. Tests use it to cut the connection.
func (l *Listener) BackendPID() uint32 { return l.pid.Load() }

// Run listens until ctx is done, reconnecting with backoff after errors.
// It returns nil when ctx ends it.
func (l *Listener) Run(ctx context.Context) error {
	backoff := 50 * time.Millisecond
	reconnected := false
	for ctx.Err() == nil {
		err := l.session(ctx, reconnected)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			backoff = 50 * time.Millisecond
		}
		reconnected = true
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, l.cfg.MaxBackoff)
	}
	return nil
}

// session is one connection's life: connect, LISTEN, deliver until error.
func (l *Listener) session(ctx context.Context, reconnected bool) error {
	cfg := l.store.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return translate(err)
	}
	defer func() {
		l.pid.Store(0)
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx) // the connection is being dropped either way
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.store.channel}.Sanitize()); err != nil {
		return translate(err)
	}
	l.pid.Store(conn.PgConn().PID())
	if l.cfg.OnConnect != nil {
		l.cfg.OnConnect(reconnected)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			return translate(err)
		}
		if l.cfg.OnNotify != nil {
			l.cfg.OnNotify(n.Payload)
		}
	}
}

// TerminateListenersForTest cuts every connection that is listening on the
// store's channel, as a network failure would. Tests use it.
func (t *Tx) TerminateListenersForTest(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query = $1`, "LISTEN "+pgx.Identifier{t.store.channel}.Sanitize())
	return translate(err)
}
