package verbs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
)

// jsonObject converts a mapping to JSON values; index, when not nil,
// receives the node behind each JSON pointer.
func (d *decoder) jsonObject(n *yaml.Node, path string, index map[string]*yaml.Node) (map[string]any, bool) {
	if n.Kind != yaml.MappingNode {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s must be a mapping", path)
		return nil, false
	}
	v, ok := d.toJSON(n, "", index, 0)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

// maxYAMLDepth bounds recursion through nested (or aliased) YAML.
const maxYAMLDepth = 64

// toJSON converts a node to the values encoding/json produces with
// UseNumber: maps, slices, strings, json.Number, bools and nil.
func (d *decoder) toJSON(n *yaml.Node, ptr string, index map[string]*yaml.Node, depth int) (any, bool) {
	n = resolveAlias(n)
	if index != nil {
		index[ptr] = n
	}
	if depth > maxYAMLDepth {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "nested more than %d levels deep", maxYAMLDepth)
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if _, dup := out[key]; dup {
				d.diags.Errorf(lang.VBadYAML, d.src.rangeOf(n.Content[i]), "key %q is given twice", key)
				ok = false
				continue
			}
			v, good := d.toJSON(n.Content[i+1], ptr+"/"+escapePointer(key), index, depth+1)
			ok = ok && good
			out[key] = v
		}
		return out, ok
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		ok := true
		for i, item := range n.Content {
			v, good := d.toJSON(item, ptr+"/"+strconv.Itoa(i), index, depth+1)
			ok = ok && good
			out[i] = v
		}
		return out, ok
	case yaml.ScalarNode:
		return d.scalarJSON(n)
	}
	d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "unsupported YAML node")
	return nil, false
}

func (d *decoder) scalarJSON(n *yaml.Node) (any, bool) {
	switch n.Tag {
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, d.badScalar(n, err)
		}
		return b, true
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, d.badScalar(n, err)
		}
		return json.Number(strconv.FormatInt(i, 10)), true
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, d.badScalar(n, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, d.badScalar(n, errors.New("infinity and NaN are not JSON numbers"))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, true
	}
	return nil, d.badScalar(n, fmt.Errorf("unsupported YAML tag %s", n.Tag))
}

func (d *decoder) badScalar(n *yaml.Node, err error) bool {
	d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "bad value %q: %v", n.Value, err)
	return false
}
