package runtime

import (
	"fmt"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// checkMode refuses a runbook in a mode the tenant's policy does not allow
// (docs/design/semantics.md section 17: modes: [draft_only, dry_run]):
// 403 POLICY_DENIED naming the rule and the modes it allows. Every way a
// runbook comes in passes here: a submission (the API's, MCP's, a
// schedule's at its creation and at each tick, through newRunbook) and a
// regeneration, which runs in its parent's mode under the policy of its
// day.
func checkMode(t *policy.Tenant, m rbtype.Mode) error {
	ok, rule := t.AllowsMode(m)
	if ok {
		return nil
	}
	modes, _ := t.Modes()
	names := make([]string, len(modes))
	for i, allowed := range modes {
		names[i] = string(allowed)
	}
	allowed := strings.Join(names, ", ")
	if allowed == "" {
		allowed = "none"
	}
	return fmt.Errorf("%w: mode %s is not allowed for tenant %s by %s (allowed: %s)", rbtype.ErrPolicyDenied, m, t.Name, rule, allowed)
}
