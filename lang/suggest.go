package lang

import (
	"cmp"
	"slices"

	"github.com/agnivade/levenshtein"
)

// maxSuggestions bounds how many close names a diagnostic offers.
const maxSuggestions = 3

// Suggest returns up to three candidates close to name by edit distance,
// closest first. A candidate is close when at most a third of its letters
// (at least one) would have to change; beyond that a suggestion misleads
// more than it helps.
func Suggest(name string, candidates []string) []string {
	type scored struct {
		name string
		dist int
	}
	var close []scored
	for _, c := range candidates {
		if c == name {
			continue
		}
		limit := max(1, max(len(c), len(name))/3)
		if d := levenshtein.ComputeDistance(name, c); d <= limit {
			close = append(close, scored{c, d})
		}
	}
	slices.SortFunc(close, func(a, b scored) int { return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.name, b.name)) })
	out := make([]string, 0, min(len(close), maxSuggestions))
	for i := 0; i < len(close) && i < maxSuggestions; i++ {
		out = append(out, close[i].name)
	}
	return out
}
