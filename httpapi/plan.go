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

// step is GET /v1/runbooks/{id}/steps/{key}: one step in detail, for the
// console's step page and anyone deciding on it: its state, its arguments
// as frozen and as resolved, its effect and target, and its gate and why.
func (s *Server) step(w http.ResponseWriter, r *http.Request) error {
	id, err := runbookID(r)
	if err != nil {
		return err
	}
	detail, err := s.engine.Step(r.Context(), id, r.PathValue("key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, detail)
	return nil
}
