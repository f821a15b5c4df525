package compiler

import "strconv"

// Loop is a for-each of the plan (docs/design/language.md v1.3): a list, the name its
// element is bound to in its body, and the step templates of the body
// (the steps whose Loop is Key). For a list written in the runbook the
// compiler expands the loop itself (ExpandAll), so a plan's loops are
// those whose list is known only at run time, and those nested in them.
//
// The runtime expands a loop instance once its list is known: when every
// step its templates depend on has ended, which for a list read from a
// step is when that step completes (its templates have a data edge from
// it), and for an input or a list written out is at once. It resolves the
// list to an array of n elements (a resolved list that is not an array
// fails the step that produced it with SCHEMA_VALIDATION_FAILED; more
// than --max-fanout elements, FANOUT_TOO_LARGE, and nothing is expanded)
// and calls Expand(Key, n), which returns the plan with the instances
// added; it writes them in the transaction that saw the list, with event
// MAP_EXPANDED and the count. See Expand for what instances are.
//
// The templates of the loop stand for the list of their instances'
// results, in list order: a step that reads a template (a $ref to its
// key) or runs :after it waits until every instance has ended, and reads
// null at the index of an instance that failed under isolate or continue,
// or was skipped. An empty list expands to nothing, and its templates end
// at once with the result [].
type Loop struct {
	// Key names the loop; steps name it in Loop, loops in Within. It is
	// the item's name, with the index of each instance around it
	// ("port[2]" is the instance of loop "port" for element 2 of its
	// enclosing loop).
	Key string `json:"key"`
	// Item is the binding the body reads the element through:
	// {"$item": "host.name"} reads field name of the element of the loop
	// whose Item is "host".
	Item string `json:"item"`
	// List is the list, a plan value: {"$ref": "hosts.items"},
	// {"$input": "hosts"}, {"$item": "host.ports"} (a loop within
	// another, reading its element), or an array (written out, in a loop
	// within one known only at run time: expanded as soon as it exists).
	List any `json:"list"`
	// Parallel bounds how many elements of one instance of the loop run
	// at once: an element runs from when the first of its steps starts
	// until all of them have ended. Zero (and left out) means no bound.
	Parallel int `json:"parallel,omitempty"`
	// Within is the key of the loop this one stands in, empty (and left
	// out) at the top level. The runtime never expands a loop that is
	// within another: Expand of the outer one makes its instances.
	Within string `json:"within,omitempty"`
}

// appendLoop appends a loop's canonical JSON, fields in struct order.
func appendLoop(b []byte, l *Loop) []byte {
	b = append(b, `{"key":`...)
	b = appendString(b, l.Key)
	b = append(b, `,"item":`...)
	b = appendString(b, l.Item)
	b = append(b, `,"list":`...)
	b = appendJSON(b, l.List)
	if l.Parallel != 0 {
		b = append(b, `,"parallel":`...)
		b = strconv.AppendInt(b, int64(l.Parallel), 10)
	}
	if l.Within != "" {
		b = append(b, `,"within":`...)
		b = appendString(b, l.Within)
	}
	return append(b, '}')
}

// appendLoops appends a list of loops' canonical JSON.
func appendLoops(b []byte, loops []*Loop) []byte {
	b = append(b, '[')
	for i, l := range loops {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLoop(b, l)
	}
	return append(b, ']')
}

// loop returns the loop with key, or nil. The index is built on first use
// and again whenever the number of loops has changed.
func (p *Plan) loop(key string) *Loop {
	if p.loops == nil || len(p.loops) != len(p.Loops) {
		p.loops = make(map[string]*Loop, len(p.Loops))
		for _, l := range p.Loops {
			if l != nil {
				if _, dup := p.loops[l.Key]; !dup {
					p.loops[l.Key] = l
				}
			}
		}
	}
	return p.loops[key]
}
