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
// it was away is lost to LISTEN.
func (e *Engine) listen(ctx context.Context, l driver.Listener) {
	backoff, connected := 50*time.Millisecond, false
	for ctx.Err() == nil {
		if err := l.Connect(ctx); err == nil {
			if connected {
				e.signal(e.sweepNow)
			}
			connected, backoff = true, 50*time.Millisecond
			for {
				if _, err := l.WaitForNotification(ctx); err != nil {
					break
				}
				e.signal(e.kick)
			}
		} else if ctx.Err() == nil {
			e.log.Warn("listening for wake-ups", "err", err, "retry_in", backoff.String())
		}
		_ = l.Close(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxListenBackoff)
	}
}
