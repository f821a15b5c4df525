package machine

import (
	"fmt"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// RetryRefusal says why a token of verb scope verbs may not retry step
// key (rbd retry --step key), or "" when its scope allows it. It is
// RetryRunbook's scope rule for one named step (retry.go): the step, what
// its failure left skipped or cancelled downstream, and the lists it
// reopens all run again, and each must call a verb the token's verbs=
// allows. The view uses it to offer a retry only to a token whose retry
// would be accepted.
func (p *PlanInfo) RetryRefusal(steps []*rbtype.Step, key string, verbs policy.VerbScope) string {
	if verbs == nil {
		return ""
	}
	pick := map[string]bool{key: true}
	addBlockedDescendants(p, steps, pick)
	reopenLists(p, steps, pick)
	for _, s := range steps {
		if pick[s.Key] && !verbs.Allows(s.Verb) {
			return fmt.Sprintf("step %q calls verb %s, which this token's scope (verbs=%s) does not allow", s.Key, s.Verb, verbs)
		}
	}
	return ""
}
