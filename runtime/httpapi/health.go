package httpapi

import (
	"context"
	"net/http"
	"time"
)

// healthz answers while the process can answer at all: liveness.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
	return nil
}

// readyz answers 200 when the daemon can do its work: the database
// answers and its migrations are current. A load balancer sends no
// traffic to a daemon that answers 503.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			return errorf(http.StatusServiceUnavailable, CodeNotReady, "not ready: %v", err)
		}
	}
	writeJSON(w, http.StatusOK, Health{Status: "ready"})
	return nil
}
