package httpapi

import (
	"net/http"

	"github.com/google/uuid"
)

// outcome is GET /v1/outcomes/{id}: an outcome with its provenance chain
// (docs/design/semantics.md section 13).
func (s *Server) outcome(w http.ResponseWriter, r *http.Request) error {
	raw := r.PathValue("id")
	id, err := uuid.Parse(raw)
	if err != nil {
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "%q is not an outcome id (a UUID)", raw)
	}
	v, err := s.engine.Outcome(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
