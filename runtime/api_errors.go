package runtime

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// CompileError carries the diagnostics of a source that did not compile,
// or of a submitted plan that this daemon refuses.
type CompileError struct {
	Diagnostics lang.Diagnostics
}

func (e *CompileError) Error() string {
	n, _ := e.Diagnostics.Count()
	return fmt.Sprintf("the source has %d errors", n)
}

// noRunbook is ErrNotFound for a runbook id nobody stored, with the ids of
// the most recent runbooks that are close to it: a character mistyped or
// two swapped in a pasted id. Only the newest runbooks are compared, so a
// miss costs one small query.
func (e *Engine) noRunbook(ctx context.Context, id uuid.UUID) error {
	msg := fmt.Sprintf("no runbook %s", id)
	// Only the caller's tenant's: another's ids are not to be seen.
	if page, err := e.store.ListRunbooks(ctx, driver.RunbookQuery{Tenant: listTenant(ctx, ""), Limit: recentForSuggestions}); err == nil {
		ids := make([]string, len(page.Runbooks))
		for i, rb := range page.Runbooks {
			ids[i] = rb.ID.String()
		}
		if close := lang.Suggest(id.String(), ids); len(close) > 0 {
			msg += " (did you mean " + strings.Join(close, " or ") + "?)"
		}
	}
	return fmt.Errorf("%w: %s", rbtype.ErrNotFound, msg)
}

// recentForSuggestions is how many of the newest runbooks a mistyped id is
// compared with.
const recentForSuggestions = 200
