package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/verbs"
)

// verbInfo describes one definition, with what tenant's policy does with
// it and the tenant's earned trust in it (trust, by verb).
func verbInfo(d *verbs.Definition, tenant *policy.Tenant, trust map[string]rbtype.TrustCount) apitype.VerbInfo {
	step := policy.VerbStep(d)
	step.Approvals = trust[d.FullName()].Approvals
	tv := apitype.TrustView{Approvals: step.Approvals}
	if rule, where, ok := tenant.Trust(d.FullName()); ok {
		tv.After, tv.Rule, tv.Earned = rule.After, where, step.Approvals >= rule.After
	}
	tags := d.Execution.PolicyTags
	if tags == nil {
		tags = []string{}
	}
	return apitype.VerbInfo{
		Name: d.FullName(), Description: strings.TrimSpace(d.Description), Kind: d.Execution.Kind,
		SideEffects: d.Execution.SideEffects, Risk: d.RiskOrDefault(), Level: d.Execution.Level.Effective(),
		Determinism: d.Execution.Determinism.Effective(), Gate: d.Gate(), Returns: d.Returns,
		InputSchema: schemaJSON(d.InputSchema), OutputSchema: schemaJSON(d.OutputSchema), Hash: d.Hash,
		PolicyTags: tags, Policy: verdict(tenant.Decide(step)), Trust: tv,
	}
}

// schemaJSON is a verb's schema as written, or nothing for none.
func schemaJSON(s *verbs.Schema) json.RawMessage {
	if s == nil {
		return nil
	}
	b, err := s.MarshalJSON()
	if err != nil {
		return nil
	}
	return b
}

// verdict is a policy decision as the API shows it.
func verdict(d policy.Decision) apitype.PolicyVerdict {
	return apitype.PolicyVerdict{Action: string(d.Action), Rule: d.Rule, Pattern: d.Pattern, Tag: d.Tag, Reason: d.Reason}
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
	out := apitype.VerbsResponse{Verbs: []apitype.VerbInfo{}}
	cat := s.cfg.Catalogue
	p := principalOf(r)
	tenant := s.engine.Policy().Tenant(p.Tenant)
	trust, err := s.engine.TrustCounts(r.Context(), tenant.Name)
	if err != nil {
		return err
	}
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
		out.Verbs = append(out.Verbs, verbInfo(d, tenant, trust))
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if cat != nil {
		for _, d := range cat.Definitions() {
			if p.mayUse(d) {
				out.Verbs = append(out.Verbs, verbInfo(d, tenant, trust))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
