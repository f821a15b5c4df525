package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// mayDecide refuses a decision by a token outside the group a step's gate
// names (docs/design/language.md v1.4, :approvers and the verb's
// execution.approvers): "compliance officers, not any token with
// approve". An admin (AnyGroup) always may. The refusal names the group,
// so that the person asking knows whom to ask.
func (c *DecideGate) mayDecide(t *transition, s *rbtype.Step) error {
	group := t.approvers(s)
	if group == "" || c.AnyGroup || slices.Contains(c.Groups, group) {
		return nil
	}
	has := "no groups"
	if len(c.Groups) > 0 {
		has = "groups " + strings.Join(c.Groups, ", ")
	}
	return fmt.Errorf("%w: step %q is decided only by a token of group %q (a token line's groups=%s) or an admin; this token has %s",
		rbtype.ErrForbidden, s.Key, group, group, has)
}
