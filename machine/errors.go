package machine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// NoStep is rbtype.ErrNotFound for a step key a runbook lacks, with the keys
// closest to it, as rbc suggests names: `rbd approve ID aproval` asks
// whether `approval` was meant.
func NoStep(runbookID uuid.UUID, key string, steps []*rbtype.Step) error {
	keys := make([]string, len(steps))
	for i, s := range steps {
		keys[i] = s.Key
	}
	msg := fmt.Sprintf("runbook %s has no step %q", runbookID, key)
	if close := lang.Suggest(key, keys); len(close) > 0 {
		quoted := make([]string, len(close))
		for i, c := range close {
			quoted[i] = strconv.Quote(c)
		}
		msg += " (did you mean " + strings.Join(quoted, " or ") + "?)"
	}
	return fmt.Errorf("%w: %s", rbtype.ErrNotFound, msg)
}
