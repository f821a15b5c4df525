package runtime

import (
	"context"

	"github.com/runbookdev/runbook/rbtype"
)

// submitterScope is what the token of ctx may do, as a runbook it submits
// keeps it (rbtype.Runbook.Scope): its compensations and escalations run
// on that token's behalf later, with no request to judge them by, and are
// held to it then (docs/design/semantics.md section 17; machine's
// verb_call_scope.go). Nil for a token that may use every verb at any
// risk: an admin, a token without verbs= or max_risk=, or no token.
func submitterScope(ctx context.Context) *rbtype.TokenScope {
	s, ok := scopeOf(ctx)
	if !ok || s.All || (s.Verbs == nil && s.maxRisk() == rbtype.RiskHigh) {
		return nil
	}
	out := &rbtype.TokenScope{Actor: s.Actor}
	if s.Verbs != nil {
		out.Verbs = append([]string{}, s.Verbs...)
	}
	if r := s.maxRisk(); r != rbtype.RiskHigh {
		out.MaxRisk = r
	}
	return out
}
