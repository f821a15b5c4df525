package httpapi

import (
	"net/http"
	"slices"

	"github.com/runbookdev/runbook/apitype"
)

// whoami is GET /v1/whoami. Any valid token may ask: a token must be able
// to find out what it may do, whatever its roles.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r)
	verbs := []string(p.Verbs)
	if verbs == nil {
		verbs = []string{"*"}
	}
	writeJSON(w, http.StatusOK, apitype.WhoamiResponse{
		Tenant: p.Tenant, Actor: p.Actor, ActorNamed: p.NamedActor, Roles: slices.Clone(p.Roles),
		Verbs: slices.Clone(verbs), MaxRisk: p.maxRisk(), MCPApprovals: s.cfg.MCPApprovals, Groups: append([]string{}, p.Groups...),
	})
	return nil
}
