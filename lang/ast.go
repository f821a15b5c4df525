package lang

import (
	"slices"
	"strconv"
	"strings"
)

// File is a parsed runbook source.
type File struct {
	Name string
	// Calls are the top-level calls, in source order.
	Calls []*Call
	// OnFailure holds the top-level (on-failure ...) forms, in source
	// order. A runbook has at most one (E053, reported by the compiler,
	// which sees all of a runbook's files).
	OnFailure []*OnFailure
	// ForEach holds the top-level (for-each ...) forms, in source order.
	ForEach  []*ForEach
	Comments []Comment
	// Unparsed holds what the calls that failed to parse bind and refer to,
	// so later passes can stay quiet about names whose definition or use
	// was lost to a syntax error, rather than report a cascade.
	Unparsed Names
}

// Names are binding names seen in calls that did not parse.
type Names struct {
	Bound      map[string]bool // named by :as
	Referenced map[string]bool // used by a reference
}

// Comment is one `;` comment, kept for the formatter.
type Comment struct {
	Text string // including the leading semicolons
	Span Range
}

// Node is a top-level item of a file (a *Call, an *OnFailure or a
// *ForEach), or an item of a for-each's body (a *Call or a *ForEach).
type Node interface {
	Range() Range
}

// Top returns the file's top-level items of every kind, in source order.
func (f *File) Top() []Node {
	out := make([]Node, 0, len(f.Calls)+len(f.OnFailure)+len(f.ForEach))
	for _, c := range f.Calls {
		out = append(out, c)
	}
	for _, h := range f.OnFailure {
		out = append(out, h)
	}
	for _, l := range f.ForEach {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Node) int { return a.Range().Start.Byte - b.Range().Start.Byte })
	return out
}

// OnFailure is the top-level form (on-failure CALL...): calls that run
// once, after compensation, when the runbook ends failed, partial or
// cancelled (docs/design/language.md v1.2). They may refer to @failure.
type OnFailure struct {
	HeadRange Range // "on-failure"
	Calls     []*Call
	Span      Range // from "(" to ")"
}

// Range is the form's span.
func (h *OnFailure) Range() Range { return h.Span }

// ForEach is (for-each LIST :as @item [:parallel N] CALL...): its calls
// run once for each element of the list, with @item bound to the element
// (docs/design/language.md v1.3). It stands at the top level or in another for-each's
// body.
type ForEach struct {
	HeadRange Range // "for-each"
	// List is the form's first item; nil when the form has none
	// (reported).
	List Value
	// Options are the keyword options as written (:as, :parallel, and
	// whatever else; the compiler checks them).
	Options []*Arg
	// Body holds the calls and the for-each forms nested in it, in order.
	Body []Node
	// Depth is 1 for a top-level for-each, 2 for one in its body, and so
	// on up to MaxForEachDepth.
	Depth int
	Span  Range
}

// Range is the form's span.
func (l *ForEach) Range() Range { return l.Span }

// Calls returns the calls of the body, those of nested for-each forms
// included, in source order.
func (l *ForEach) Calls() []*Call {
	var out []*Call
	for _, n := range l.Body {
		switch n := n.(type) {
		case *Call:
			out = append(out, n)
		case *ForEach:
			out = append(out, n.Calls()...)
		}
	}
	return out
}

// Call is one verb call: one step of the runbook. A call may also stand as
// a value, nested in another call's arguments (docs/design/language.md v1.1); it is
// still a step of its own, whose result the value refers to.
type Call struct {
	Span      Range  // from "(" to ")"
	Verb      string // domain.verb, as written
	VerbRange Range
	Args      []*Arg // in source order, step options included
	// Index is the 1-based position of the call's "(" among the calls the
	// file opens, nested ones included: for a file without nested calls,
	// its position among the file's calls.
	Index int
}

// Arg is a keyword and its value, in a call or a map.
type Arg struct {
	Name      string // without the leading ':'
	NameRange Range  // the keyword, ':' included
	Value     Value
	// Quoted marks a map's key written as a string ("BUDGET_EXCEEDED")
	// rather than a keyword; the formatter keeps it so.
	Quoted bool
}

// Key renders the key as written: ":name", or "\"name\"" when quoted.
func (a *Arg) Key() string {
	if a.Quoted {
		return strconv.Quote(a.Name)
	}
	return ":" + a.Name
}

// Range covers the keyword and its value.
func (a *Arg) Range() Range { return a.NameRange.Through(a.Value.Range()) }

// Value is any argument value.
type Value interface {
	Range() Range
	isValue()
}

// String is a string literal.
type String struct {
	Value string // decoded
	Raw   string // as written, quotes included
	Span  Range
}

// Int is an integer literal.
type Int struct {
	Value int64
	Raw   string
	Span  Range
}

// Decimal is a decimal literal. Raw is kept so the plan and the formatter
// reproduce it exactly.
type Decimal struct {
	Value float64
	Raw   string
	Span  Range
}

// Bool is true or false.
type Bool struct {
	Value bool
	Span  Range
}

// Null is nil.
type Null struct{ Span Range }

// Ref is a reference to another step's result: @name.field[0]...
type Ref struct {
	Name      string
	NameRange Range // "@name"
	Path      []PathStep
	Span      Range
}

// PathStep is one .field or [index] of a reference.
type PathStep struct {
	Field   string
	Index   int
	IsIndex bool
	Span    Range
}

// Input is a value supplied at submission: $name.
type Input struct {
	Name string
	Span Range
}

// List is [value ...].
type List struct {
	Items []Value
	Span  Range
}

// Map is {:key value ...}.
type Map struct {
	Entries []*Arg
	Span    Range
}

// Str is (str V...): the text its parts make when joined, strings as they
// are and anything else as canonical JSON (docs/design/language.md v1.2). It is a
// value, not a call.
type Str struct {
	Parts     []Value
	HeadRange Range // "str"
	Span      Range
}

// Cond is a condition, (OP ARG...), the value of a step's :when
// (docs/design/language.md v1.2). Op is the operator as written, known or not: the
// compiler checks it (E052), its arity and its operands, which are values
// for a comparison and conditions for and, or and not.
type Cond struct {
	Op      string
	OpRange Range
	Args    []Value
	Span    Range
}

// Func is one of the value forms of v1.4 (docs/design/language.md): (status
// @x), (default REF VALUE), (count LIST), and (filter|any|all LIST :as @e
// COND). Name is its head (one of Funcs). Args are its values as written,
// the list first; As is the :as option of filter, any and all (nil when
// not written), which binds @e inside the condition only. The compiler
// checks the operands, their number and their types.
type Func struct {
	Name      string
	HeadRange Range
	Args      []Value
	As        *Arg
	Span      Range
}

// Bad stands where a malformed literal was; it has been reported already.
type Bad struct{ Span Range }

func (v *String) Range() Range  { return v.Span }
func (v *Int) Range() Range     { return v.Span }
func (v *Decimal) Range() Range { return v.Span }
func (v *Bool) Range() Range    { return v.Span }
func (v *Null) Range() Range    { return v.Span }
func (v *Ref) Range() Range     { return v.Span }
func (v *Input) Range() Range   { return v.Span }
func (v *List) Range() Range    { return v.Span }
func (v *Map) Range() Range     { return v.Span }
func (v *Str) Range() Range     { return v.Span }
func (v *Cond) Range() Range    { return v.Span }
func (v *Bad) Range() Range     { return v.Span }
func (v *Func) Range() Range    { return v.Span }

// Range is the call's span, so that a nested call can stand as a value.
func (c *Call) Range() Range { return c.Span }

func (*String) isValue()  {}
func (*Int) isValue()     {}
func (*Decimal) isValue() {}
func (*Bool) isValue()    {}
func (*Null) isValue()    {}
func (*Ref) isValue()     {}
func (*Input) isValue()   {}
func (*List) isValue()    {}
func (*Map) isValue()     {}
func (*Str) isValue()     {}
func (*Cond) isValue()    {}
func (*Bad) isValue()     {}
func (*Func) isValue()    {}
func (*Call) isValue()    {}

// PathString renders the path without the leading '@': "docs.files[0].url".
func (r *Ref) PathString() string {
	if len(r.Path) == 0 {
		return r.Name
	}
	// Built in one allocation: the compiler renders every reference of a
	// runbook into its plan with this (BENCHMARKS.md, "Compile under 2 s").
	n := len(r.Name)
	for _, p := range r.Path {
		if p.IsIndex {
			n += 2 + len(strconv.Itoa(p.Index))
		} else {
			n += 1 + len(p.Field)
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(r.Name)
	var digits [20]byte
	for _, p := range r.Path {
		if p.IsIndex {
			b.WriteByte('[')
			b.Write(strconv.AppendInt(digits[:0], int64(p.Index), 10))
			b.WriteByte(']')
		} else {
			b.WriteByte('.')
			b.WriteString(p.Field)
		}
	}
	return b.String()
}

// String renders one step as written: ".field" or "[0]".
func (p PathStep) String() string {
	if p.IsIndex {
		return "[" + strconv.Itoa(p.Index) + "]"
	}
	return "." + p.Field
}

// Walk calls fn for v and every value nested in it, depth first: items of
// lists, values of maps, the argument values of nested calls, the parts of
// (str ...), the operands of conditions and of v1.4's value forms.
func Walk(v Value, fn func(Value)) {
	fn(v)
	switch v := v.(type) {
	case *Str:
		for _, p := range v.Parts {
			Walk(p, fn)
		}
	case *Cond:
		for _, a := range v.Args {
			Walk(a, fn)
		}
	case *Func:
		for _, a := range v.Args {
			Walk(a, fn)
		}
	case *Call:
		for _, a := range v.Args {
			Walk(a.Value, fn)
		}
	case *List:
		for _, item := range v.Items {
			Walk(item, fn)
		}
	case *Map:
		for _, e := range v.Entries {
			Walk(e.Value, fn)
		}
	}
}
