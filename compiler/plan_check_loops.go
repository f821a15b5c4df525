package compiler

import (
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// checkLoops checks the plan's loops and templates (docs/design/language.md v1.3), so
// that the runtime can expand every loop:
//   - a loop's key is unique and names no step; its item is a binding
//     name; Parallel is not negative; Within names a loop, without a
//     cycle, at most lang.MaxForEachDepth deep;
//   - its list is a $ref of a step (not a hook, not inside the loop) with
//     a data edge into every template inside the loop, a $input of the
//     plan, an $item of a loop it stands within, or an array;
//   - a step's Loop names a loop; a hook is in none;
//   - an $item names the item of the step's loop or one it stands within
//     (in a loop's list: one the loop stands within).
func (c *planCheck) checkLoops() {
	p := c.p
	keys := map[string]*Step{}
	for _, s := range p.Steps {
		keys[s.Key] = s
	}
	loops := map[string]*Loop{}
	for _, l := range p.Loops {
		switch {
		case l == nil:
			c.report(lang.EPlanUnreadable, c.spans.member("loops"), "", 0, "a loop is null")
			return
		case loops[l.Key] != nil || keys[l.Key] != nil || l.Key == "":
			c.report(lang.EPlanUnreadable, c.spans.member("loops"), "", 0, "loop key %q is empty or used twice", l.Key)
		case !bindingName(l.Item):
			c.report(lang.EPlanUnreadable, c.spans.member("loops"), "", 0, "loop %q has item %q, which is not a binding name", l.Key, l.Item)
		case l.Parallel < 0:
			c.report(lang.EBadOption, c.spans.member("loops"), "", 0, "loop %q has parallel %d", l.Key, l.Parallel)
		}
		loops[l.Key] = l
	}
	// The chain of loops each loop stands in, innermost first.
	chain := func(key string) ([]*Loop, bool) {
		var out []*Loop
		for at := key; at != ""; {
			l := loops[at]
			if l == nil || len(out) >= lang.MaxForEachDepth {
				return out, false
			}
			out = append(out, l)
			at = l.Within
		}
		return out, true
	}
	for _, l := range p.Loops {
		if _, ok := chain(l.Key); !ok {
			c.report(lang.EPlanUnreadable, c.spans.member("loops"), "", 0,
				"loop %q stands within a loop the plan does not have, or more than %d deep", l.Key, lang.MaxForEachDepth)
		}
	}
	data := map[[2]string]bool{}
	for _, e := range p.Edges {
		if e.Kind == EdgeData {
			data[[2]string{e.From, e.To}] = true
		}
	}
	for i, s := range p.Steps {
		if s.Loop == "" {
			c.checkItems(i, s, s.Args, nil)
			continue
		}
		around, ok := chain(s.Loop)
		switch {
		case s.Kind == KindHook:
			c.report(lang.EPlanUnreadable, c.spans.step(i), "", 0, "step %q is a hook in loop %q: hooks run once, after the runbook", s.Key, s.Loop)
		case !ok:
			c.report(lang.EPlanUnreadable, c.spans.step(i), "", 0, "step %q is in loop %q, which the plan does not have", s.Key, s.Loop)
		default:
			c.checkItems(i, s, s.Args, around)
			if s.When != nil {
				_, _ = mapCond(s.When, func(v any) (any, error) { c.checkItems(i, s, v, around); return v, nil })
			}
		}
	}
	// The steps inside each loop, its own templates and those of the loops
	// within it.
	inside := map[string][]*Step{}
	for _, s := range p.Steps {
		around, _ := chain(s.Loop)
		for _, l := range around {
			inside[l.Key] = append(inside[l.Key], s)
		}
	}
	for _, l := range p.Loops {
		around, _ := chain(l.Within)
		c.checkList(l, around, keys, data, inside[l.Key])
	}
}

// checkList checks a loop's list.
func (c *planCheck) checkList(l *Loop, around []*Loop, keys map[string]*Step, data map[[2]string]bool, inside []*Step) {
	bad := func(format string, args ...any) {
		c.report(lang.EPlanUnreadable, c.spans.member("loops"), "", 0, "loop %q "+format, append([]any{l.Key}, args...)...)
	}
	if _, written := l.List.([]any); written {
		c.checkItemsIn(l.List, around, func(format string, args ...any) { bad(format, args...) })
		return
	}
	m, _ := l.List.(map[string]any)
	if len(m) != 1 {
		bad("has a list that is neither a reference, an input, an element nor a list")
		return
	}
	for k, x := range m {
		value, _ := x.(string)
		switch k {
		case FilterKey:
			// A (filter ...) of a list (docs/design/language.md v1.4):
			// each reference in it is read as a reference list is.
			spec, _ := x.(map[string]any)
			if name, _ := spec["as"].(string); len(spec) != 3 || name == "" || spec["where"] == nil {
				bad("has a $filter that is not {\"list\", \"as\", \"where\"}")
				return
			}
			if _, err := condOf(spec["where"]); err != nil {
				bad("has a $filter whose where is not a condition: %v", err)
				return
			}
			if holdsMarker(x, StatusKey) || holdsMarker(x, FailureKey) || holdsMarker(x, LitKey) || holdsMarker(x, missingKey) {
				bad("has a $filter that reads a status, a failure or a value only the runtime writes")
				return
			}
			refs := []any{}
			ValueRefs(x, func(ref string) { refs = append(refs, map[string]any{RefKey: ref}) })
			_, _ = mapMarkers(x, func(k, v string) (any, bool, error) {
				if k == InputKey {
					refs = append(refs, map[string]any{InputKey: v})
				}
				return nil, false, nil
			})
			for _, ref := range refs {
				c.checkList(&Loop{Key: l.Key, Item: l.Item, Within: l.Within, List: ref}, around, keys, data, inside)
			}
			c.checkItemsIn(x, around, func(format string, args ...any) { bad(format, args...) })
		case RefKey:
			key, _, ok := SplitRef(value, func(k string) bool { return keys[k] != nil })
			if !ok {
				bad("reads %q, which names no step of the plan", value)
				return
			}
			src := keys[key]
			if src.Kind == KindHook || c.p.inLoop(src, l.Key) {
				bad("reads step %q, which is a hook or inside the loop", key)
				return
			}
			for _, s := range inside {
				if !data[[2]string{key, s.Key}] {
					bad("reads step %q, but template %q has no data edge from it: the loop would be expanded before its list is known", key, s.Key)
					return
				}
			}
		case InputKey:
			name, _ := splitName(value)
			if !c.hasInput(name) {
				bad("reads input %q, which the plan's inputs do not list", name)
			}
		case ItemKey:
			c.checkItemsIn(l.List, around, func(format string, args ...any) { bad(format, args...) })
		default:
			bad("has a list that is neither a reference, an input, an element nor a list")
		}
	}
}

func (c *planCheck) hasInput(name string) bool {
	for _, in := range c.p.Inputs {
		if in.Name == name {
			return true
		}
	}
	return false
}

// checkItems checks the $item markers of step i's value v against the
// loops around it.
func (c *planCheck) checkItems(i int, s *Step, v any, around []*Loop) {
	c.checkItemsIn(v, around, func(format string, args ...any) {
		c.report(lang.EItemOutside, c.spans.step(i), "", 0, "step %q "+format, append([]any{s.Key}, args...)...)
	})
}

// checkItemsIn reports each $item of v that names no item of around.
func (c *planCheck) checkItemsIn(v any, around []*Loop, report func(format string, args ...any)) {
	_, _ = mapMarkers(v, func(k, value string) (any, bool, error) {
		if k != ItemKey {
			return nil, false, nil
		}
		name, _ := splitName(value)
		for _, l := range around {
			if l.Item == name {
				return nil, false, nil
			}
		}
		report("reads $item %q outside the loops of item %q", value, name)
		return nil, false, nil
	})
}

// bindingName reports whether s is a binding's name (docs/design/language.md v1.2).
func bindingName(s string) bool {
	if s == "" || strings.ContainsAny(s, ".[]#") {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return s[0] != '-'
}

// holdsMarker reports whether a plan value holds a marker with key.
func holdsMarker(v any, key string) bool {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[key]; ok && len(v) == 1 {
			return true
		}
		for _, item := range v {
			if holdsMarker(item, key) {
				return true
			}
		}
	case []any:
		for _, item := range v {
			if holdsMarker(item, key) {
				return true
			}
		}
	}
	return false
}
