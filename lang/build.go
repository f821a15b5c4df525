package lang

import (
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// builder turns participle's tree of one call into the AST. The tree says
// which of the call's tokens plays which part (syntax.Index); the text and
// range of every node come from the tokens themselves. So a tree cached for
// a call shape builds the AST of any call of that shape.
type builder struct {
	ts     *tokenStream
	start  int // the index in ts.toks of the top-level call's "("
	opened int // how many calls the file opened before it
	diags  *Diagnostics
	// dropped is called with the tokens [start, end) of a nested call or
	// form left out for a mistake, so that the names it binds and uses
	// are noted as unparsed (parser.noteUnparsed).
	dropped func(start, end int)
	// nodes makes the nodes (the parser's, shared by its builders).
	nodes *nodeSlabs
}

// at is the index in ts.toks of a token of the tree.
func (b *builder) at(t lexer.Token) int { return b.start + syntax.Index(t) }

func (b *builder) rangeOf(t lexer.Token) Range { return b.ts.rangeOf(b.at(t)) }

// top builds a top-level item: a call or an (on-failure ...) form. It
// returns nil, having reported why, for anything else.
func (b *builder) top(n *syntax.Top) Node {
	if n.Call != nil {
		return b.call(n.Call)
	}
	f := n.Form
	head := b.ts.toks[b.at(f.Head)].text
	switch {
	case head == FormOnFailure:
		return b.onFailure(f)
	case head == FormForEach:
		if l := b.forEach(f, 1); l != nil {
			return l
		}
		return nil
	case head == FormStr || IsOperator(head) || IsFunc(head) || b.ts.toks[b.at(f.Head)].typ == syntax.Op:
		b.diags.Errorf(ESyntax, b.formRange(f), "expected a call at the top level, found (%s ...), which stands where a value may", head)
	default:
		b.badVerb(f)
	}
	b.drop(f)
	return nil
}

// call builds a call, top-level or nested. Its verb is a Name, which holds
// a dot by construction.
func (b *builder) call(n *syntax.Call) *Call {
	c := b.nodes.calls.new()
	*c = Call{
		Span:      b.rangeOf(n.Open).Through(b.rangeOf(n.Close)),
		Verb:      b.ts.toks[b.at(n.Verb)].text,
		VerbRange: b.rangeOf(n.Verb),
		Index:     b.index(n.Open),
		Args:      b.args(n.Args),
	}
	return c
}

// badVerb reports a form headed by a word that is neither a form nor an
// operator, with keyword arguments or none: a call whose verb name lacks
// its domain.
func (b *builder) badVerb(f *syntax.Form) {
	b.diags.Errorf(ESyntax, b.rangeOf(f.Head), "verb name %q must be two or more identifiers joined by dots, as in kyc.open-case", b.ts.toks[b.at(f.Head)].text)
}

// drop notes the names a form left out of the file binds and uses (see
// parser.noteUnparsed).
func (b *builder) drop(f *syntax.Form) { b.dropRange(b.at(f.Open), b.at(f.Close)+1) }

func (b *builder) dropRange(start, end int) {
	if b.dropped != nil {
		b.dropped(start, end)
	}
}

func (b *builder) formRange(f *syntax.Form) Range {
	return b.rangeOf(f.Open).Through(b.rangeOf(f.Close))
}

// form builds a form that stands as a value: (str ...) or a condition.
// Whether a condition may stand where it does is the compiler's to say
// (it may only follow :when); a form that can never be a value, or a
// word that is no form, is reported here and stands as a Bad value.
func (b *builder) form(f *syntax.Form) Value {
	headTok := b.ts.toks[b.at(f.Head)]
	head, headRange := headTok.text, b.rangeOf(f.Head)
	switch {
	case head == FormStr:
		return &Str{Parts: b.positional(f, "(str ...) joins values"), HeadRange: headRange, Span: b.formRange(f)}
	case head == FormOnFailure || head == FormForEach:
		b.diags.Errorf(ESyntax, b.formRange(f), "(%s ...) is a top-level form; it cannot stand as a value", head)
	case IsFunc(head):
		return b.fn(f, head, headRange)
	case IsOperator(head) || headTok.typ == syntax.Op || !hasArgs(f):
		// An unknown word with values after it reads as a condition with
		// a misspelt operator: the compiler suggests the one meant (E052).
		if len(f.Items) == 0 && headTok.typ == syntax.Word && !IsOperator(head) {
			b.badVerb(f) // (foo): a call without a domain
			break
		}
		return &Cond{Op: head, OpRange: headRange, Args: b.positional(f, "a condition takes values"), Span: b.formRange(f)}
	default:
		b.badVerb(f)
	}
	b.drop(f)
	return &Bad{Span: b.formRange(f)}
}

// fn builds a value form of v1.4 (Func). filter, any and all take one
// keyword, :as; any other keyword, or :as on another form, is reported
// here. How many values each takes is the compiler's to check.
func (b *builder) fn(f *syntax.Form, head string, headRange Range) *Func {
	out := &Func{Name: head, HeadRange: headRange, Span: b.formRange(f)}
	for _, it := range f.Items {
		if it.Arg == nil {
			out.Args = append(out.Args, b.value(it.Value))
			continue
		}
		key := b.at(it.Arg.Key)
		name := b.ts.toks[key].text[1:]
		arg := &Arg{Name: name, NameRange: b.ts.rangeOf(key), Value: b.value(it.Arg.Value)}
		switch {
		case name == "as" && TakesElement(head) && out.As == nil:
			out.As = arg
		case name == "as" && TakesElement(head):
			b.diags.Errorf(EDuplicateArg, arg.NameRange, "(%s ...) binds one element; :as is given twice", head)
		case TakesElement(head):
			b.diags.Errorf(ESyntax, arg.NameRange, "(%s ...) takes a list, :as @e and a condition, as in (%s @hosts.items :as @h (= @h.env \"prod\")); found %s", head, head, b.ts.toks[key].text)
		default:
			b.diags.Errorf(ESyntax, arg.NameRange, "(%s ...) takes values, not argument names; found %s", head, b.ts.toks[key].text)
		}
	}
	return out
}

// hasArgs reports whether a form holds a keyword argument.
func hasArgs(f *syntax.Form) bool {
	for _, it := range f.Items {
		if it.Arg != nil {
			return true
		}
	}
	return false
}

// positional builds a form's values, reporting each keyword among them:
// what says what the form takes instead.
func (b *builder) positional(f *syntax.Form, what string) []Value {
	out := make([]Value, 0, len(f.Items))
	for _, it := range f.Items {
		if it.Arg != nil {
			key := b.at(it.Arg.Key)
			b.diags.Errorf(ESyntax, b.ts.rangeOf(key), "%s, not argument names; found %s", what, b.ts.toks[key].text)
			continue
		}
		out = append(out, b.value(it.Value))
	}
	return out
}

// onFailure builds (on-failure CALL...).
func (b *builder) onFailure(f *syntax.Form) *OnFailure {
	h := &OnFailure{HeadRange: b.rangeOf(f.Head), Span: b.formRange(f)}
	for _, it := range f.Items {
		if it.Value != nil && it.Value.Call != nil {
			h.Calls = append(h.Calls, b.call(it.Value.Call))
			continue
		}
		at := b.itemRange(it)
		b.diags.Errorf(ESyntax, at, "(%s ...) holds calls, found %s", FormOnFailure, b.describeItem(it))
		b.dropRange(b.itemTokens(it))
	}
	return h
}

// forEach builds (for-each LIST :as @item [:parallel N] CALL...) at the
// given depth: the list first, then the options, then the body's calls and
// for-each forms. What the options say is the compiler's to check; what
// stands where is checked here. It returns nil, having reported why, for a
// form nested too deep or without a body.
func (b *builder) forEach(f *syntax.Form, depth int) *ForEach {
	l := &ForEach{HeadRange: b.rangeOf(f.Head), Depth: depth, Span: b.formRange(f)}
	bodied := false // whether anything was written after the options
	if depth > MaxForEachDepth {
		b.diags.Errorf(ESyntax, l.HeadRange, "(for-each ...) nests more than %d deep", MaxForEachDepth)
		b.drop(f)
		return nil
	}
	for i, it := range f.Items {
		switch {
		case i == 0 && it.Value != nil:
			l.List = b.value(it.Value)
		case i == 0:
			b.diags.Errorf(ESyntax, b.itemRange(it), "(for-each ...) starts with the list to go through, as in (for-each @hosts.items :as @host ...); found %s", b.describeItem(it))
			l.Options = append(l.Options, &Arg{Name: b.ts.toks[b.at(it.Arg.Key)].text[1:], NameRange: b.rangeOf(it.Arg.Key), Value: b.value(it.Arg.Value)})
		case it.Arg != nil && len(l.Body) == 0:
			l.Options = append(l.Options, &Arg{Name: b.ts.toks[b.at(it.Arg.Key)].text[1:], NameRange: b.rangeOf(it.Arg.Key), Value: b.value(it.Arg.Value)})
		case it.Arg != nil:
			b.diags.Errorf(ESyntax, b.itemRange(it), "the options of (for-each ...) come before its calls; found %s after one", b.describeItem(it))
			b.dropRange(b.itemTokens(it))
		case it.Value.Call != nil:
			bodied = true
			l.Body = append(l.Body, b.call(it.Value.Call))
		case it.Value.Form != nil && b.ts.toks[b.at(it.Value.Form.Head)].text == FormForEach:
			bodied = true
			if inner := b.forEach(it.Value.Form, depth+1); inner != nil {
				l.Body = append(l.Body, inner)
			}
		default:
			bodied = true
			b.diags.Errorf(ESyntax, b.itemRange(it), "the body of (for-each ...) holds calls, found %s", b.describeItem(it))
			b.dropRange(b.itemTokens(it))
		}
	}
	if !bodied && l.List != nil {
		b.diags.Errorf(ESyntax, l.HeadRange, "(for-each ...) holds no call: nothing would run for each element")
	}
	if len(f.Items) == 0 {
		b.diags.Errorf(ESyntax, l.Span, "(for-each ...) needs a list, :as @item and calls, as in (for-each @hosts.items :as @host (lb.drain :host @host))")
		return nil
	}
	return l
}

// itemRange is the range a form's item covers.
func (b *builder) itemRange(it *syntax.Item) Range {
	first, last := b.itemTokens(it)
	return b.ts.span(first, last-1)
}

// itemTokens is the token range [first, end) of a form's item.
func (b *builder) itemTokens(it *syntax.Item) (int, int) {
	if it.Arg != nil {
		_, end := b.valueTokens(it.Arg.Value)
		return b.at(it.Arg.Key), end
	}
	return b.valueTokens(it.Value)
}

// valueTokens is the token range [first, end) of a value.
func (b *builder) valueTokens(v *syntax.Value) (int, int) {
	switch {
	case v.List != nil:
		return b.at(v.List.Open), b.at(v.List.Close) + 1
	case v.Map != nil:
		return b.at(v.Map.Open), b.at(v.Map.Close) + 1
	case v.Call != nil:
		return b.at(v.Call.Open), b.at(v.Call.Close) + 1
	case v.Form != nil:
		return b.at(v.Form.Open), b.at(v.Form.Close) + 1
	}
	i := b.at(*v.Scalar)
	return i, i + 1
}

// describeItem names a form's item for a syntax error.
func (b *builder) describeItem(it *syntax.Item) string {
	first, _ := b.itemTokens(it)
	if it.Value != nil && it.Value.Form != nil {
		return "(" + b.ts.toks[first+1].text + " ...)"
	}
	return describe(b.ts.toks[first])
}

// index is the position of the call opened by open among the calls the
// file opens: the calls before the top-level one, and the calls opened
// from its own "(" up to open. A form's "(" opens no call.
func (b *builder) index(open lexer.Token) int {
	n := b.opened
	for i := b.start; i <= b.at(open); i++ {
		if b.ts.opensCall(i) {
			n++
		}
	}
	return n
}

// args builds a call's arguments. They are made together, one allocation
// for all of a call's (BENCHMARKS.md, "Compile under 2 s").
func (b *builder) args(ns []*syntax.Arg) []*Arg {
	args := make([]*Arg, len(ns))
	made := make([]Arg, len(ns))
	for i, n := range ns {
		key := b.at(n.Key)
		made[i] = Arg{Name: b.ts.toks[key].text[1:], NameRange: b.ts.rangeOf(key), Value: b.value(n.Value)}
		args[i] = &made[i]
	}
	return args
}

// entries builds a map's entries. A key written as a string must be an
// identifier, as a keyword's is (E001 otherwise): a map in a runbook never
// has a key such as "$ref".
func (b *builder) entries(ns []*syntax.Entry) []*Arg {
	args := make([]*Arg, len(ns))
	made := make([]Arg, len(ns)) // as args
	for i, n := range ns {
		key := b.at(n.Key)
		tok := b.ts.toks[key]
		arg := &made[i]
		*arg = Arg{NameRange: b.ts.rangeOf(key), Value: b.value(n.Value)}
		if tok.typ == syntax.String {
			arg.Name, arg.Quoted = b.ts.stringValue(key), true
			if !isIdentifier(arg.Name) {
				b.diags.Errorf(ESyntax, arg.NameRange, "a map's key is a name, such as :status or \"BUDGET_EXCEEDED\"; %s is not one", tok.text)
			}
		} else {
			arg.Name = tok.text[1:]
		}
		args[i] = arg
	}
	return args
}

// isIdentifier reports whether s is an identifier of the lexical rules:
// [A-Za-z_][A-Za-z0-9_-]*.
func isIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return s != ""
}

func (b *builder) value(n *syntax.Value) Value {
	switch {
	case n.List != nil:
		l := &List{Span: b.rangeOf(n.List.Open).Through(b.rangeOf(n.List.Close)), Items: make([]Value, len(n.List.Items))}
		for i, item := range n.List.Items {
			l.Items[i] = b.value(item)
		}
		return l
	case n.Map != nil:
		return &Map{Span: b.rangeOf(n.Map.Open).Through(b.rangeOf(n.Map.Close)), Entries: b.entries(n.Map.Entries)}
	case n.Call != nil:
		return b.call(n.Call)
	case n.Form != nil:
		return b.form(n.Form)
	}
	i := b.at(*n.Scalar)
	tok := b.ts.toks[i]
	r := b.ts.rangeOf(i)
	switch tok.typ {
	case syntax.String:
		v := b.nodes.strings.new()
		*v = String{Value: b.ts.stringValue(i), Raw: tok.text, Span: r}
		return v
	case syntax.Int:
		v, _ := strconv.ParseInt(tok.text, 10, 64) // checked by the scanner
		n := b.nodes.ints.new()
		*n = Int{Value: v, Raw: tok.text, Span: r}
		return n
	case syntax.Decimal:
		v, _ := strconv.ParseFloat(tok.text, 64) // checked by the scanner
		return &Decimal{Value: v, Raw: tok.text, Span: r}
	case syntax.Ref:
		return b.ref(tok.text, r)
	case syntax.Input:
		return &Input{Name: tok.text[1:], Span: r}
	case syntax.Word:
		switch tok.text {
		case "true", "false":
			return &Bool{Value: tok.text == "true", Span: r}
		case "nil":
			return &Null{Span: r}
		}
	}
	return &Bad{Span: r}
}

// ref decomposes a reference token into its name and path steps, each with
// its own range. References are ASCII by construction, so byte and column
// offsets agree.
func (b *builder) ref(text string, r Range) Value {
	at := func(from, to int) Range {
		return Range{
			Filename: r.Filename,
			Start:    Pos{Line: r.Start.Line, Column: r.Start.Column + from, Byte: r.Start.Byte + from},
			End:      Pos{Line: r.Start.Line, Column: r.Start.Column + to, Byte: r.Start.Byte + to},
		}
	}
	nameEnd := 1 + strings.IndexAny(text[1:]+".", ".[")
	ref := b.nodes.refs.new()
	*ref = Ref{Name: text[1:nameEnd], NameRange: at(0, nameEnd), Span: r}
	for i := nameEnd; i < len(text); {
		if text[i] == '.' {
			j := i + 1
			for j < len(text) && text[j] != '.' && text[j] != '[' {
				j++
			}
			ref.Path = append(ref.Path, PathStep{Field: text[i+1 : j], Span: at(i, j)})
			i = j
			continue
		}
		j := i + strings.IndexByte(text[i:], ']') + 1
		idx, err := strconv.Atoi(text[i+1 : j-1])
		if err != nil {
			b.diags.Errorf(EBadLiteral, at(i, j), "index %s is too large", text[i:j])
			return &Bad{Span: r}
		}
		ref.Path = append(ref.Path, PathStep{Index: idx, IsIndex: true, Span: at(i, j)})
		i = j
	}
	return ref
}
