package httpapi

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// outageLogEvery is how often a database outage that goes on is logged
// again, with the number of requests answered 503 since.
const outageLogEvery = time.Minute

// outage logs the database's unavailability when it begins, once a minute
// while it lasts, and when it ends, rather than once per request: with
// the database down every request fails the same way, and a line each
// would bury the log (and fill its disk) at the rate clients retry.
type outage struct {
	down       atomic.Bool // read without the lock on every request
	mu         sync.Mutex
	since      time.Time
	lastLogged time.Time
	answered   int // 503s since lastLogged
}

// failed records a request answered 503 because the database is
// unavailable.
func (o *outage) failed(log *slog.Logger, err error, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.answered++
	switch {
	case !o.down.Load():
		o.down.Store(true)
		o.since, o.lastLogged, o.answered = now, now, 0
		log.Error("the database is unavailable; requests that need it are answered 503 until it is back", "err", err)
	case now.Sub(o.lastLogged) >= outageLogEvery:
		log.Error("the database is still unavailable", "since", o.since, "answered_503", o.answered, "err", err)
		o.lastLogged, o.answered = now, 0
	}
}

// succeeded records a request that reached the database, ending an
// outage if there was one.
func (o *outage) succeeded(log *slog.Logger, now time.Time) {
	if !o.down.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down.Load() {
		o.down.Store(false)
		log.Info("the database is available again", "down_for", now.Sub(o.since).Round(time.Millisecond))
	}
}
