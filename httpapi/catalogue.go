package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/verbs"
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
	Returns      string        `json:"returns,omitempty"`
	InputSchema  *verbs.Schema `json:"input_schema,omitempty"`
	OutputSchema *verbs.Schema `json:"output_schema,omitempty"`
	// Hash is the definition's hash, which plans compiled against it
	// record: a plan compiled elsewhere runs here only if they match.
	Hash string `json:"hash"`
	// PolicyTags are the verb's policy tags; Policy what this tenant's
	// policy does with a step of it: gate (waits for a person), deny (a
	// plan calling it is refused), auto_exec (runs unattended, but for a
	// gate of its own) or none, with the rule that decides.
	PolicyTags []string        `json:"policy_tags"`
	Policy     policy.Decision `json:"policy"`
}

// verbInfo describes one definition, with what tenant's policy does with
// it.
func verbInfo(d *verbs.Definition, tenant *policy.Tenant) VerbInfo {
	tags := d.Execution.PolicyTags
	if tags == nil {
		tags = []string{}
	}
	return VerbInfo{
		Name: d.FullName(), Description: strings.TrimSpace(d.Description), Kind: d.Execution.Kind,
		SideEffects: d.Execution.SideEffects, Risk: d.RiskOrDefault(), Level: d.Execution.Level.Effective(),
		Determinism: d.Execution.Determinism.Effective(), Gate: d.Gate(), Returns: d.Returns,
		InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Hash: d.Hash,
		PolicyTags: tags, Policy: tenant.Decide(policy.VerbStep(d)),
	}
}

// mayUse reports whether the principal's token may use a verb: its scope
// allows the name and its risk ceiling the verb's risk.
func (p *Principal) mayUse(d *verbs.Definition) bool {
	return p.Verbs.Allows(d.FullName()) && d.RiskOrDefault().Within(p.maxRisk())
}

// listVerbs is GET /v1/verbs[?name=]: the verbs of the catalogue the
// daemon compiles submitted sources with (rbd serve --verbs) that the
// caller's token may use, or the one verb named; one it may not use is
// not found, as one the catalogue lacks.
func (s *Server) listVerbs(w http.ResponseWriter, r *http.Request) error {
	out := VerbsResponse{Verbs: []VerbInfo{}}
	cat := s.cfg.Catalogue
	p := principalOf(r)
	tenant := s.engine.Policy().Tenant(p.Tenant)
	if name := r.URL.Query().Get("name"); name != "" {
		if cat == nil {
			return errorf(http.StatusNotFound, CodeNotFound, "no verb %q: this daemon has no verbs (rbd serve --verbs)", name)
		}
		// A verb outside the token's scope is answered exactly as a
		// missing one, suggestions included: a scoped token cannot tell
		// which verbs exist.
		d, ok := cat.Lookup(name)
		if !ok || !p.mayUse(d) {
			msg := fmt.Sprintf("no verb %q this token may use", name)
			if near := cat.Suggest(name); len(near) > 0 {
				if d, _ := cat.Lookup(near[0]); p.mayUse(d) {
					msg += fmt.Sprintf(" (did you mean %q?)", near[0])
				}
			}
			return errorf(http.StatusNotFound, CodeNotFound, "%s", msg)
		}
		out.Verbs = append(out.Verbs, verbInfo(d, tenant))
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if cat != nil {
		for _, d := range cat.Definitions() {
			if p.mayUse(d) {
				out.Verbs = append(out.Verbs, verbInfo(d, tenant))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
