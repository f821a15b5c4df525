package apitype

import (
	"encoding/json"

	"github.com/runbookdev/runbook/rbtype"
)

// VerbsResponse is GET /v1/verbs: the verbs the caller's token may use
// (its verbs= scope, its max_risk), by name, each with what the caller's
// tenant's policy does with it (docs/design/semantics.md section 10).
type VerbsResponse struct {
	Verbs []VerbInfo `json:"verbs"`
}

// VerbInfo is one verb's contract as a caller needs it: what it takes and
// gives, what it does to the world, its policy tags, and what the caller's
// tenant's policy does with its steps. The handler's static params are
// the operator's and stay out. A client ignores fields it does not know.
type VerbInfo struct {
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Kind        rbtype.Kind        `json:"kind"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Risk        rbtype.Risk        `json:"risk"`
	Level       rbtype.Level       `json:"level"`
	Determinism rbtype.Determinism `json:"determinism"`
	// Gate is the gate every call of the verb has at least: its own, or
	// human_confirm for a high-risk verb.
	Gate rbtype.Gate `json:"gate"`
	// Returns names the result's field a nested call stands for.
	Returns      string          `json:"returns,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Hash is the definition's hash, which plans compiled against it
	// record: a plan compiled elsewhere runs here only if they match.
	Hash string `json:"hash"`
	// PolicyTags are the verb's policy tags; Policy what this tenant's
	// policy does with a step of it: gate (waits for a person), deny (a
	// plan calling it is refused), auto_exec (runs unattended, but for a
	// gate of its own) or none, with the rule that decides.
	PolicyTags []string      `json:"policy_tags"`
	Policy     PolicyVerdict `json:"policy"`
	// Trust is the caller's tenant's earned trust in the verb
	// (docs/design/semantics.md section 17).
	Trust TrustView `json:"trust"`
}

// TrustView is a tenant's earned trust in a verb: the attempts of it its
// people approved at a gate with no rejection, and no failed attempt,
// since; and, when the policy has a trust rule for the verb, the
// approvals that earn running unattended and whether they are reached.
type TrustView struct {
	Approvals int `json:"approvals"`
	// After is the rule's threshold, 0 when no trust rule covers the
	// verb; Rule names the rule ("tenants.acme.trust").
	After  int    `json:"after,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Earned bool   `json:"earned"`
}

// PolicyVerdict is what a tenant's policy does with a step
// (docs/design/semantics.md section 10): its action (deny, gate,
// auto_exec, none), the rule that decided, the pattern and tag that
// matched, and why.
type PolicyVerdict struct {
	Action  string `json:"action"`
	Rule    string `json:"rule,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	Tag     string `json:"tag,omitempty"`
	Reason  string `json:"reason,omitempty"`
}
