package runtime

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/runbookdev/runbook/driver"
)

// maxModelLength bounds the model a notification's usage names: it is a
// label in the ledger and the costs report, not a document.
const maxModelLength = 200

// checkUsage refuses a usage report no external work could have made: a
// negative count or cost, or a model name that is not a short printable
// label. The sender is not trusted, however it signed.
func checkUsage(u driver.Usage) error {
	switch {
	case u.TokensIn < 0 || u.TokensOut < 0:
		return fmt.Errorf("%w: usage: tokens_in and tokens_out may not be negative", ErrInvalid)
	case u.CostUSD < 0 || u.Credits < 0:
		return fmt.Errorf("%w: usage: cost_usd and credits may not be negative", ErrInvalid)
	case len(u.Model) > maxModelLength:
		return fmt.Errorf("%w: usage: model is %d bytes long; at most %d are allowed", ErrInvalid, len(u.Model), maxModelLength)
	case !utf8.ValidString(u.Model) || strings.IndexFunc(u.Model, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("%w: usage: model must be printable text", ErrInvalid)
	}
	return nil
}
