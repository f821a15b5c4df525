package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/runbookdev/runbook/rbtype"
)

// Whoami is GET /v1/whoami: who the client's token speaks for, and what
// it may do. Fields a later daemon adds are ignored.
type Whoami struct {
	Tenant string `json:"tenant"`
	Actor  string `json:"actor"`
	// ActorNamed says the token's line names its actor, whom the ledger
	// records as who acted; a request's by is then only a note.
	ActorNamed bool     `json:"actor_named"`
	Roles      []string `json:"roles"`
	// Verbs is the token's verb scope (globs); ["*"] for every verb.
	Verbs []string `json:"verbs"`
	// MaxRisk is the riskiest step the token may submit, and whose gate it
	// may decide.
	MaxRisk rbtype.Risk `json:"max_risk"`
	// MCPApprovals says gates may be decided through MCP on this daemon
	// (rbd serve --mcp-approvals).
	MCPApprovals bool `json:"mcp_approvals"`
}

// Whoami asks who the client's token speaks for. Any valid token may ask.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var out Whoami
	if _, err := c.call(ctx, http.MethodGet, "/v1/whoami", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Verb is one verb of the daemon's catalogue: what it takes and gives,
// and what it does to the world.
type Verb struct {
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Kind        rbtype.Kind        `json:"kind"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Risk        rbtype.Risk        `json:"risk"`
	Level       rbtype.Level       `json:"level"`
	Determinism rbtype.Determinism `json:"determinism"`
	// Gate is the gate every call of the verb has at least.
	Gate rbtype.Gate `json:"gate"`
	// Returns names the result's field a nested call stands for.
	Returns string `json:"returns,omitempty"`
	// InputSchema and OutputSchema are JSON Schemas, as the verb's file
	// writes them.
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Hash is the definition's hash, which plans compiled against it
	// record.
	Hash string `json:"hash"`
	// PolicyTags are the verb's policy tags; Policy what this tenant's
	// policy does with a step of it.
	PolicyTags []string   `json:"policy_tags"`
	Policy     VerbPolicy `json:"policy"`
}

// The actions a policy takes on a verb's steps.
const (
	PolicyDeny     = "deny"      // a plan calling it is refused (403 POLICY_DENIED)
	PolicyGate     = "gate"      // each step waits for a person
	PolicyAutoExec = "auto_exec" // its steps run unattended (a gate of its own still holds)
	PolicyNone     = "none"      // no rule speaks of it
)

// VerbPolicy is what a tenant's policy does with a verb's steps, and the
// rule that decides.
type VerbPolicy struct {
	Action  string `json:"action"`
	Rule    string `json:"rule,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	Tag     string `json:"tag,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// VerbsResponse is GET /v1/verbs.
type VerbsResponse struct {
	Verbs []Verb `json:"verbs"`
}

// Verbs returns the daemon's verb catalogue, or, when name is given, that
// one verb (an *Error with CodeNotFound, and a did-you-mean, when there is
// none).
func (c *Client) Verbs(ctx context.Context, name string) (*VerbsResponse, error) {
	var out VerbsResponse
	if _, err := c.call(ctx, http.MethodGet, withQuery("/v1/verbs", "name", name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
