package durable

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// Listener holds one connection that LISTENs on the store's channel and
// reconnects after it drops.
type Listener struct {
	store *Store
	cfg   driver.ListenConfig
	pid   atomic.Uint32
}

// NewListener makes a listener; Run starts it.
func (s *Store) NewListener(cfg driver.ListenConfig) driver.Listener {
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
