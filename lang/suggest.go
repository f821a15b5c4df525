package lang

import (
	"cmp"
	"slices"

	"github.com/hbollon/go-edlib"
)

// maxSuggestions bounds how many close names a diagnostic offers.
const maxSuggestions = 3

// Suggest returns up to three candidates close to name by edit distance,
// closest first. The distance is optimal string alignment, in which
// swapping two neighbouring letters is one edit, as it is when typing. A
// candidate is close when about a third of its letters (at least one, two
// from five letters up) would have to change; beyond that a suggestion
// misleads more than it helps.
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
		limit := max(1, (max(len(c), len(name))+1)/3)
		if d := edlib.OSADamerauLevenshteinDistance(name, c); d <= limit {
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
