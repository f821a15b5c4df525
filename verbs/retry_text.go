package verbs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// Describe says a retry block as its verb is run (docs/design/semantics.md
// section 12): the attempts every retryable code gets, then each code
// with a policy of its own, or "none" when no failure is tried again. A
// verb that declares no max_attempts still retries the default table's
// codes (DefaultByCode), and says so.
func (r Retry) Describe() string {
	var parts []string
	if r.MaxAttempts > 1 {
		parts = append(parts, fmt.Sprintf("%d attempts, %s backoff from %s to %s", r.MaxAttempts, r.Backoff, r.BaseDelay, r.MaxDelay))
	}
	codes := make([]rbtype.ErrorCode, 0, len(r.ByCode))
	for code := range r.ByCode {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		c := r.ByCode[code]
		switch {
		case c.MaxAttempts > 1:
			parts = append(parts, fmt.Sprintf("%s %d attempts from %s to %s", code, c.MaxAttempts, c.Base, c.Cap))
		case r.MaxAttempts > 1:
			// An exception to the block's attempts: said, since the
			// block's line would otherwise cover it.
			parts = append(parts, string(code)+" not retried")
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
