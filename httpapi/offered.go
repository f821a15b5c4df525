package httpapi

import (
	"fmt"

	"github.com/runbookdev/runbook/apitype"
)

// actionRoutes are the routes that take each kind of next action; the
// role each needs is routeRoles'. A notify is not here: `rbd notify`
// signs with the webhook secret (RBD_WEBHOOK_SECRET_FILE), not the API
// token, so the token asking says nothing about whether it is accepted.
var actionRoutes = map[string]string{
	apitype.ActionApprove: "POST /v1/runbooks/{id}/steps/{key}/approve",
	apitype.ActionResolve: "POST /v1/runbooks/{id}/steps/{key}/resolve",
	apitype.ActionRetry:   "POST /v1/runbooks/{id}/retry",
	apitype.ActionClose:   "POST /v1/runbooks/{id}/close",
}

// offerByRole moves out of next the actions whose route needs a role the
// caller's token lacks, onto unavailable, each with that reason
// (docs/reference/http-api.md, next_actions): a read-only token is told
// what would move the runbook, and offered none of it. The engine has
// already moved what the token's scope refuses (a gate's group or risk,
// a retry's verbs: runtime's offered.go); where the role is lacking too,
// the reason becomes the role's, which the route refuses first.
func offerByRole(p *Principal, next, unavailable []apitype.ActionView) ([]apitype.ActionView, []apitype.ActionView) {
	for i := range unavailable {
		if why := lacksRole(p, unavailable[i].Kind); why != "" {
			unavailable[i].Reason = why
		}
	}
	kept := next[:0]
	for _, a := range next {
		why := lacksRole(p, a.Kind)
		if why == "" {
			kept = append(kept, a)
			continue
		}
		a.Reason = why
		unavailable = append(unavailable, a)
	}
	return kept, unavailable
}

// lacksRole says, in the words of the route's refusal, that the token
// lacks the role an action of kind needs; "" when it has it.
func lacksRole(p *Principal, kind string) string {
	route, ok := actionRoutes[kind]
	if !ok || p.has(routeRoles[route]) {
		return ""
	}
	return fmt.Sprintf("this token (actor %s) lacks the %s role that %s needs", p.Actor, routeRoles[route], route)
}
