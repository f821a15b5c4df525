package runtime

import (
	"context"
	"slices"

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
