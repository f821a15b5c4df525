package verbs

import (
	"math"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
)

// Cost is what one attempt of a verb is declared to cost, before it runs
// (docs/verbs.md, cost): an attempt reserves it against the budgets in
// the transaction that starts it, so that steps starting together cannot
// pass a cap (docs/design/semantics.md, "Budgets hold under concurrency").
// What the attempt reports it used replaces the reservation.
type Cost struct {
	USD float64 `json:"usd"`
}

// MaxCostUSD bounds a declared cost: a reservation larger than any budget
// is a typo, not a plan.
const MaxCostUSD = 1e9

// cost reads a verb's cost: {usd: N}, N a number from 0 to MaxCostUSD.
func (d *decoder) cost(n *yaml.Node, path string, def *Definition) *Cost {
	c := &Cost{}
	ok := d.mapping(n, path, def, map[string]field{
		"usd": {true, func(p string, v *yaml.Node) {
			s, ok := d.scalar(v, p)
			if !ok {
				return
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > MaxCostUSD || v.Tag != "!!int" && v.Tag != "!!float" {
				d.diags.Errorf(lang.VBadValue, d.src.rangeOf(v), "%s must be a number of US dollars from 0 to %g, as in 0.02; got %q", p, float64(MaxCostUSD), s)
				return
			}
			c.USD = f
		}},
	})
	if !ok {
		return nil
	}
	return c
}
