package httpapi

import (
	"net/http"
)

// plan is GET /v1/runbooks/{id}/plan: the runbook's frozen plan, as rbc
// compile writes it (steps with arguments and execution blocks, edges with
// kinds). It is its own endpoint so that GET /v1/runbooks/{id}, which
// clients poll, stays small.
func (s *Server) plan(w http.ResponseWriter, r *http.Request) error {
	id, err := runbookID(r)
	if err != nil {
		return err
	}
	raw, err := s.engine.Plan(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(raw, '\n'))
	return nil
}
