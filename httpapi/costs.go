package httpapi

import (
	"net/http"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// costs is GET /v1/costs?group_by=tenant|actor|verb|day|month&from=&to=
// (docs/design/semantics.md section 3): the job ledger summed, for the caller's
// tenant (an admin's: ?tenant=, or every tenant). from and to are RFC 3339
// times or dates (UTC midnight); from is included, to is not.
func (s *Server) costs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	group := q.Get("group_by")
	if group == "" {
		group = "verb"
	}
	from, err := timeParam(q.Get("from"), "from")
	if err != nil {
		return err
	}
	to, err := timeParam(q.Get("to"), "to")
	if err != nil {
		return err
	}
	costs, err := s.engine.Costs(r.Context(), group, q.Get("tenant"), from, to)
	if err != nil {
		return err
	}
	if costs == nil {
		costs = []apitype.Cost{}
	}
	writeJSON(w, http.StatusOK, apitype.CostsResponse{GroupBy: group, Costs: costs})
	return nil
}

// timeParam reads an RFC 3339 time or a date; "" is none.
func timeParam(v, name string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, nil
		}
	}
	return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "%s %q is not an RFC 3339 time or a date (2026-11-01)", name, v)
}
