package runtime

import (
	"context"
	"time"

	"github.com/runbookdev/runbook/driver"
)

// maxListenBackoff bounds the wait between attempts to reconnect the
// listener.
const maxListenBackoff = 5 * time.Second

// listen hears wake-ups until ctx ends: each one kicks the claim loop.
// After the connection drops it reconnects, with a backoff that grows to
// maxListenBackoff, and has the tables swept at once: what was sent while
// it was away is lost to LISTEN. During a restart or failover of the
// database the reconnection fails for as long as there is no primary
// (docs/scaling.md, "Across a failover"): that is logged once when the
// connection is lost and once when it is back, not at every attempt.
func (e *Engine) listen(ctx context.Context, l driver.Listener) {
	backoff, connected := 50*time.Millisecond, false
	var lostAt time.Time // when the connection was lost; zero while it holds
	for ctx.Err() == nil {
		if err := l.Connect(ctx); err == nil {
			if connected {
				e.signal(e.sweepNow)
				e.metrics.listenerReconnected()
			}
			if !lostAt.IsZero() {
				e.log.Info("listening for wake-ups again; sweeping for what was missed", "down_for", time.Since(lostAt).Round(time.Millisecond).String())
			}
			connected, backoff, lostAt = true, 50*time.Millisecond, time.Time{}
			for {
				if _, err := l.WaitForNotification(ctx); err != nil {
					if ctx.Err() == nil {
						lostAt = time.Now()
						e.log.Warn("lost the connection that listens for wake-ups; reconnecting (polling meanwhile)", "err", err)
					}
					break
				}
				e.signal(e.kick)
			}
		} else if ctx.Err() == nil && lostAt.IsZero() {
			// The first connection failed: said once, then retried
			// quietly until it holds.
			lostAt = time.Now()
			e.log.Warn("listening for wake-ups: cannot connect; retrying (polling meanwhile)", "err", err)
		}
		_ = l.Close(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxListenBackoff)
	}
}
