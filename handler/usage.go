package handler

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/runbookdev/runbook/rbtype"
)

// maxModelLength bounds the model a notification's usage names: it is a
// label in the ledger and the costs report, not a document.
const maxModelLength = 200

// The most one report of usage may say: far beyond what any one piece of
// work uses (a trillion tokens, a billion dollars), far below what sums
// of them could overflow. A notification's tokens_in of 2^63-1 once made
// every costs report of its tenant fail.
const (
	MaxUsageTokens = 1_000_000_000_000
	MaxUsageCost   = 1_000_000_000 // cost_usd, and credits
)

// CheckUsage refuses a usage report no external work could have made: a
// negative or impossibly large count or cost, or a model name that is not
// a short printable label. The sender is not trusted, however it signed.
func CheckUsage(u rbtype.Usage) error {
	switch {
	case u.TokensIn < 0 || u.TokensOut < 0:
		return fmt.Errorf("%w: usage: tokens_in and tokens_out may not be negative", rbtype.ErrInvalid)
	case u.CostUSD < 0 || u.Credits < 0:
		return fmt.Errorf("%w: usage: cost_usd and credits may not be negative", rbtype.ErrInvalid)
	case u.TokensIn > MaxUsageTokens || u.TokensOut > MaxUsageTokens:
		return fmt.Errorf("%w: usage: tokens_in and tokens_out may be at most %d", rbtype.ErrInvalid, int64(MaxUsageTokens))
	case !(u.CostUSD <= MaxUsageCost) || !(u.Credits <= MaxUsageCost):
		return fmt.Errorf("%w: usage: cost_usd and credits may be at most %d", rbtype.ErrInvalid, MaxUsageCost)
	case len(u.Model) > maxModelLength:
		return fmt.Errorf("%w: usage: model is %d bytes long; at most %d are allowed", rbtype.ErrInvalid, len(u.Model), maxModelLength)
	case !utf8.ValidString(u.Model) || strings.IndexFunc(u.Model, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("%w: usage: model must be printable text", rbtype.ErrInvalid)
	case len(u.Parameters) > maxParameters:
		return fmt.Errorf("%w: usage: parameters are %d bytes long; at most %d are allowed", rbtype.ErrInvalid, len(u.Parameters), maxParameters)
	case len(u.Parameters) > 0 && !IsObject(u.Parameters):
		return fmt.Errorf("%w: usage: parameters must be a JSON object (the model's, such as {\"temperature\": 0.2})", rbtype.ErrInvalid)
	}
	return nil
}

// maxParameters bounds the model parameters a usage report carries: they
// are kept with an outcome, as provenance, not as a document.
const maxParameters = 4096

// IsObject reports whether b is a JSON object (and not null).
func IsObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(b) > 0 && json.Unmarshal(b, &m) == nil && m != nil
}

// BoundedUsage is what a handler reported, each count and cost held to the
// bounds: a Go handler is the operator's code, but what it reports comes
// from a provider, and one impossible figure must not stop the ledger's
// sums.
func BoundedUsage(u rbtype.Usage) rbtype.Usage {
	u.TokensIn = min(max(u.TokensIn, 0), MaxUsageTokens)
	u.TokensOut = min(max(u.TokensOut, 0), MaxUsageTokens)
	u.CostUSD = boundedAmount(u.CostUSD)
	u.Credits = boundedAmount(u.Credits)
	return u
}

func boundedAmount(v float64) float64 {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > MaxUsageCost:
		return MaxUsageCost
	}
	return v
}
