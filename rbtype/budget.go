package rbtype

import (
	"math"
	"strconv"
)

// Budget caps what may be spent (docs/design/semantics.md section 11):
// cost in US dollars, tokens (in and out together) and credits. A nil
// measure caps nothing; a budget with none caps nothing at all.
type Budget struct {
	CostUSD *float64 `json:"cost_usd,omitempty"`
	Tokens  *int64   `json:"tokens,omitempty"`
	Credits *float64 `json:"credits,omitempty"`
}

// Spend is what was spent, in the measures of a Budget.
type Spend struct {
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
	Credits float64 `json:"credits"`
}

// Add sums two spends.
func (s Spend) Add(o Spend) Spend {
	return Spend{CostUSD: s.CostUSD + o.CostUSD, Tokens: s.Tokens + o.Tokens, Credits: s.Credits + o.Credits}
}

// BudgetScope is what a budget is for: one runbook, or a tenant's day or
// month (UTC).
type BudgetScope string

// The scopes of a budget.
const (
	BudgetRunbook BudgetScope = "runbook"
	BudgetDay     BudgetScope = "day"
	BudgetMonth   BudgetScope = "month"
)

// BudgetScopes lists the scopes, narrowest first.
var BudgetScopes = []BudgetScope{BudgetRunbook, BudgetDay, BudgetMonth}

// The measures of a budget, as JSON and the policy file spell them.
const (
	MeasureCostUSD = "cost_usd"
	MeasureTokens  = "tokens"
	MeasureCredits = "credits"
)

// Empty reports whether the budget caps nothing.
func (b Budget) Empty() bool { return b.CostUSD == nil && b.Tokens == nil && b.Credits == nil }

// Min is the tighter of two budgets, measure by measure.
func (b Budget) Min(o Budget) Budget {
	return Budget{CostUSD: minOf(b.CostUSD, o.CostUSD), Tokens: minOf(b.Tokens, o.Tokens), Credits: minOf(b.Credits, o.Credits)}
}

// Over is the measures b caps above o's cap: what a budget meant only to
// lower o would raise. A measure b leaves out keeps o's, and one o leaves
// out b may cap at anything.
func (b Budget) Over(o Budget) []string {
	var out []string
	if above(b.CostUSD, o.CostUSD) {
		out = append(out, MeasureCostUSD)
	}
	if above(b.Tokens, o.Tokens) {
		out = append(out, MeasureTokens)
	}
	if above(b.Credits, o.Credits) {
		out = append(out, MeasureCredits)
	}
	return out
}

// Reached is the first measure whose spend is at or over its cap, with
// the cap and the spend as text; ok is false when none is.
func (b Budget) Reached(s Spend) (measure, limit, spent string, ok bool) {
	switch {
	case b.CostUSD != nil && s.CostUSD >= *b.CostUSD:
		return MeasureCostUSD, formatFloat(*b.CostUSD), formatFloat(s.CostUSD), true
	case b.Tokens != nil && s.Tokens >= *b.Tokens:
		return MeasureTokens, strconv.FormatInt(*b.Tokens, 10), strconv.FormatInt(s.Tokens, 10), true
	case b.Credits != nil && s.Credits >= *b.Credits:
		return MeasureCredits, formatFloat(*b.Credits), formatFloat(s.Credits), true
	}
	return "", "", "", false
}

// Left is what remains of each capped measure after s, never below zero;
// nil measures stay nil.
func (b Budget) Left(s Spend) Budget {
	var out Budget
	if b.CostUSD != nil {
		v := Money(max(*b.CostUSD-s.CostUSD, 0))
		out.CostUSD = &v
	}
	if b.Tokens != nil {
		v := max(*b.Tokens-s.Tokens, 0)
		out.Tokens = &v
	}
	if b.Credits != nil {
		v := Money(max(*b.Credits-s.Credits, 0))
		out.Credits = &v
	}
	return out
}

// Money rounds an amount of money or credits (a sum or a difference of
// decimal fractions, such as 0.3 - 0.29) to 9 decimal places, far below
// any price, so that the float noise of binary arithmetic
// (0.010000000000000009) is not shown as if it were money: 0.01.
func Money(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return math.Round(v*1e9) / 1e9
}

// Invalid names the first measure that is not a number at or above zero
// (negative, infinite, NaN), or "".
func (b Budget) Invalid() string {
	bad := func(f *float64) bool { return f != nil && (*f < 0 || math.IsInf(*f, 0) || math.IsNaN(*f)) }
	switch {
	case bad(b.CostUSD):
		return MeasureCostUSD
	case b.Tokens != nil && *b.Tokens < 0:
		return MeasureTokens
	case bad(b.Credits):
		return MeasureCredits
	}
	return ""
}

func minOf[T int64 | float64](a, b *T) *T {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *b < *a:
		return b
	}
	return a
}

// above reports whether both cap and a caps higher.
func above[T int64 | float64](a, b *T) bool {
	return a != nil && b != nil && *a > *b
}

func formatFloat(f float64) string { return strconv.FormatFloat(Money(f), 'f', -1, 64) }

// FormatMoney writes an amount as budgets show it: rounded as Money is,
// with no trailing zeros.
func FormatMoney(f float64) string { return formatFloat(f) }
