package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// healthz answers while the process can answer at all: liveness.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, apitype.Health{Status: "ok"})
	return nil
}

// readyz answers 200 when the daemon can do its work: the database
// answers and its migrations are current. A load balancer sends no
// traffic to a daemon that answers 503. It answers anyone, so it says
// only ready or not: the reason (a connection error names the database's
// user, name, host and port) goes to the log.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			s.readiness.notReady(s.log, err, time.Now())
			return errorf(http.StatusServiceUnavailable, CodeNotReady, "not ready")
		}
		s.readiness.ready(s.log)
	}
	writeJSON(w, http.StatusOK, apitype.Health{Status: "ready"})
	return nil
}

// readiness logs why the daemon is not ready when the reason changes and
// once a minute while it lasts, not at every probe: a load balancer asks
// every few seconds.
type readiness struct {
	mu         sync.Mutex
	reason     string
	lastLogged time.Time
}

func (r *readiness) notReady(log *slog.Logger, err error, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason := err.Error(); reason != r.reason || now.Sub(r.lastLogged) >= outageLogEvery {
		r.reason, r.lastLogged = reason, now
		log.Warn("not ready: /readyz answers 503", "reason", reason)
	}
}

func (r *readiness) ready(log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason != "" {
		r.reason = ""
		log.Info("ready again: /readyz answers 200")
	}
}
