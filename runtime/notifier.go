package runtime

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// notifier sends the NOTIFYs that tell other daemons' workers there is
// work, after the commits that made it: at most one at a time, and one
// more after it for all the pokes that came while it was out, so that a
// burst of wake-ups costs two statements, not one per transaction (a
// NOTIFY inside a transaction makes its commit wait for every other
// notifying commit: PostgreSQL serializes them on one lock).
type notifier struct {
	send func(context.Context) error
	log  *slog.Logger
	// lines keeps an outage from writing a warning for each failure.
	lines *lineLimit

	mu             sync.Mutex
	sending, again bool
}

// notifyTimeout bounds one NOTIFY.
const notifyTimeout = 5 * time.Second

// poke asks for a NOTIFY soon; it never waits.
func (n *notifier) poke() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sending {
		n.again = true
		return
	}
	n.sending = true
	go n.run()
}

func (n *notifier) run() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		err := n.send(ctx)
		cancel()
		if err != nil {
			if write, held := n.lines.allow(); write {
				n.log.Warn("telling the workers that runbooks are due; they will find them by polling", "err", err, "held_back", held)
			}
		}
		n.mu.Lock()
		if !n.again {
			n.sending = false
			n.mu.Unlock()
			return
		}
		n.again = false
		n.mu.Unlock()
	}
}
