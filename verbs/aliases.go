package verbs

import (
	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
)

// maxAliasNodes bounds the YAML nodes one document may reach through
// aliases. The decoder walks yaml.Node itself, following aliases, so
// yaml.v3's own limit on alias expansion never applies: without this
// bound a few hundred bytes of nested aliases (the "billion laughs")
// expand to a billion nodes. Sharing a schema or an execution block by
// alias, the use aliases have in a verb file, stays far below it.
const maxAliasNodes = 10_000

// checkAliases reports, as V001 at the alias, a document whose aliases
// expand past maxAliasNodes, before anything expands them. It counts
// without expanding: each node's expanded size is computed once.
func (d *decoder) checkAliases(root *yaml.Node) bool {
	sizes := map[*yaml.Node]int{}
	total := 0
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n.Kind == yaml.AliasNode {
			total += expandedSize(n.Alias, sizes)
			if total > maxAliasNodes {
				d.diags.Errorf(lang.VBadYAML, d.src.rangeOf(n),
					"alias *%s takes the document past %d YAML nodes reached through aliases; an alias may share a definition, not multiply one",
					n.Value, maxAliasNodes)
				return false
			}
			return true
		}
		for _, c := range n.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	return walk(root)
}

// expandedSize is how many nodes n stands for with its aliases expanded,
// saturating just past maxAliasNodes. A node that contains an alias to
// itself expands forever, and counts as too many.
func expandedSize(n *yaml.Node, sizes map[*yaml.Node]int) int {
	const tooMany = maxAliasNodes + 1
	if n == nil {
		return 1
	}
	if size, seen := sizes[n]; seen {
		if size < 0 {
			return tooMany // n is being counted: an alias inside n names n
		}
		return size
	}
	sizes[n] = -1
	size := 1
	if n.Kind == yaml.AliasNode {
		size = expandedSize(n.Alias, sizes)
	}
	for _, c := range n.Content {
		size = min(size+expandedSize(c, sizes), tooMany)
	}
	sizes[n] = size
	return size
}
