package compiler

import (
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// inputTypes infers each $input's type from the parameters it is passed
// to, and from the conditions that compare it: the intersection of what
// they admit. Two uses that admit nothing in common are E050.
type inputTypes struct {
	byName map[string]*inputState
}

type inputState struct {
	types  []string // nil: any
	uuid   bool
	first  lang.Range // the use that first constrained the type
	where  string     // and where it was: ":count", ":when"
	frozen bool       // from the plan being extended
}

func newInputTypes() *inputTypes { return &inputTypes{byName: map[string]*inputState{}} }

// frozen registers an input of a plan being extended, with its type fixed.
func (t *inputTypes) frozen(inp Input) {
	st := &inputState{frozen: true, uuid: inp.Format == "uuid"}
	if inp.Type != "any" {
		st.types = strings.Split(inp.Type, "|")
	}
	t.byName[inp.Name] = st
}

// use records that in is passed where sub is expected; where says where,
// for messages: the parameter (":count"), or ":when" for a condition.
func (t *inputTypes) use(diags *lang.Diagnostics, in *lang.Input, sub map[string]any, where string) {
	st, ok := t.byName[in.Name]
	if !ok {
		st = &inputState{}
		t.byName[in.Name] = st
	}
	want := verbs.Types(sub)
	if want == nil {
		return
	}
	if st.types == nil && !st.frozen {
		st.types, st.first, st.where, st.uuid = want, in.Span, where, verbs.IsUUID(sub)
		return
	}
	if st.types == nil {
		return // frozen as any: every use fits
	}
	both := intersect(st.types, want)
	if len(both) == 0 {
		d := diags.Errorf(lang.ETypeConflict, in.Span, "$%s is used as %s here (%s), but as %s elsewhere",
			in.Name, strings.Join(want, " or "), where, strings.Join(st.types, " or "))
		if st.frozen {
			d.WithNote("the other use is in the running runbook, whose inputs keep their types")
		} else {
			d.WithRelated(st.first, "$%s is used as %s here (%s)", in.Name, strings.Join(st.types, " or "), st.where)
		}
		return
	}
	st.types = both
	st.uuid = st.uuid || verbs.IsUUID(sub)
}

// intersect keeps the types both lists admit; an integer is a number.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			switch {
			case x == y:
				out = append(out, x)
			case x == "integer" && y == "number", x == "number" && y == "integer":
				out = append(out, "integer")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// list returns the inputs sorted by name, with their inferred types.
func (t *inputTypes) list() []Input {
	out := make([]Input, 0, len(t.byName))
	for name, st := range t.byName {
		inp := Input{Name: name, Type: "any"}
		if st.types != nil {
			inp.Type = strings.Join(st.types, "|")
		}
		if st.uuid && slices.Contains(st.types, "string") {
			inp.Format = "uuid"
		}
		out = append(out, inp)
	}
	slices.SortFunc(out, func(x, y Input) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// types returns what an input's uses admit so far: nil for any.
func (t *inputTypes) types(name string) []string {
	if st, ok := t.byName[name]; ok {
		return st.types
	}
	return nil
}
