package apitype

import (
	"github.com/runbookdev/runbook/rbtype"
)

// WhoamiResponse is GET /v1/whoami: who the caller's token speaks for,
// and what it may do here (docs/design/semantics.md section 10). A client
// ignores fields it does not know.
type WhoamiResponse struct {
	Tenant string `json:"tenant"`
	Actor  string `json:"actor"`
	// ActorNamed says the token's line names its actor, whom the ledger
	// records as who acted; a request's "by" is then only a note. A token
	// that names none (actor token-<n>) leaves "by" as the request says.
	ActorNamed bool          `json:"actor_named"`
	Roles      []rbtype.Role `json:"roles"`
	// Verbs is the token's verb scope, the globs of its line's verbs=;
	// ["*"] when it may use every verb.
	Verbs []string `json:"verbs"`
	// MaxRisk is the riskiest step it may submit, and whose gate it may
	// decide.
	MaxRisk rbtype.Risk `json:"max_risk"`
	// MCPApprovals says gates may be decided through the Model Context
	// Protocol here (rbd serve --mcp-approvals) by a token with the
	// approve role: the approve and reject tools exist.
	MCPApprovals bool `json:"mcp_approvals"`
	// Groups are the token's groups (its line's groups=): a gate whose
	// step names :approvers is decided only by a token of that group, or
	// an admin (docs/design/language.md v1.4). [] when it has none.
	Groups []string `json:"groups"`
}
