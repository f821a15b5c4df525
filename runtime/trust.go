package runtime

import (
	"context"
	"slices"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// trustCounts reads the tenant's earned-trust counts of the verbs of
// steps that a trust rule of its policy covers (docs/design/semantics.md
// section 17), by verb; nothing is read when no rule covers any, which is
// every admission under a policy without trust:.
func (e *Engine) trustCounts(ctx context.Context, t *policy.Tenant, steps []*compiler.Step) (map[string]rbtype.TrustCount, error) {
	var verbs []string
	for _, s := range steps {
		if _, _, ok := t.Trust(s.Verb); ok && !slices.Contains(verbs, s.Verb) {
			verbs = append(verbs, s.Verb)
		}
	}
	if len(verbs) == 0 {
		return nil, nil
	}
	return e.store.TrustCounts(ctx, t.Name, verbs)
}

// TrustCounts is a tenant's earned-trust counts of every verb it has one
// for, by verb: GET /v1/verbs shows them.
func (e *Engine) TrustCounts(ctx context.Context, tenant string) (map[string]rbtype.TrustCount, error) {
	if tenant == "" {
		tenant = DefaultTenant
	}
	return e.store.TrustCounts(ctx, tenant, nil)
}

// gateTrust is the trust view of a gated step's verb, when the tenant's
// policy has a trust rule for it; nil otherwise.
func (e *Engine) gateTrust(ctx context.Context, tenant, verb string) (*apitype.TrustView, error) {
	rule, where, ok := e.Policy().Tenant(tenant).Trust(verb)
	if !ok {
		return nil, nil
	}
	counts, err := e.store.TrustCounts(ctx, tenant, []string{verb})
	if err != nil {
		return nil, err
	}
	n := counts[verb].Approvals
	return &apitype.TrustView{Approvals: n, After: rule.After, Rule: where, Earned: n >= rule.After}, nil
}
