package runtime

import (
	"encoding/json"
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
	case len(u.Parameters) > maxParameters:
		return fmt.Errorf("%w: usage: parameters are %d bytes long; at most %d are allowed", ErrInvalid, len(u.Parameters), maxParameters)
	case len(u.Parameters) > 0 && !isObject(u.Parameters):
		return fmt.Errorf("%w: usage: parameters must be a JSON object (the model's, such as {\"temperature\": 0.2})", ErrInvalid)
	}
	return nil
}

// maxParameters bounds the model parameters a usage report carries: they
// are kept with an outcome, as provenance, not as a document.
const maxParameters = 4096

// isObject reports whether b is a JSON object (and not null).
func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(b) > 0 && json.Unmarshal(b, &m) == nil && m != nil
}
