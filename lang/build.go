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
	// dropped is called with the tokens [start, end) of a nested call
	// left out for a bad verb name, so that the names it binds and uses
	// are noted as unparsed (parser.noteUnparsed).
	dropped func(start, end int)
}

// at is the index in ts.toks of a token of the tree.
func (b *builder) at(t lexer.Token) int { return b.start + syntax.Index(t) }

func (b *builder) rangeOf(t lexer.Token) Range { return b.ts.rangeOf(b.at(t)) }

// call builds a call, top-level or nested. It returns nil, having
// reported why, for a verb name that is not domain.verb.
func (b *builder) call(n *syntax.Call) *Call {
	c := &Call{
		Span:      b.rangeOf(n.Open).Through(b.rangeOf(n.Close)),
		Verb:      b.ts.toks[b.at(n.Verb)].text,
		VerbRange: b.rangeOf(n.Verb),
		Index:     b.index(n.Open),
	}
	c.Args = b.args(n.Args)
	if strings.Count(c.Verb, ".") != 1 {
		// Left out of the file: a later pass has no use for a call whose
		// verb cannot exist.
		b.diags.Errorf(ESyntax, c.VerbRange, "verb name %q must be two identifiers joined by one dot, as in kyc.open-case", c.Verb)
		return nil
	}
	return c
}

// index is the position of the call opened by open among the calls the
// file opens: the calls before the top-level one, and the "(" tokens from
// its own up to open.
func (b *builder) index(open lexer.Token) int {
	n := b.opened
	for i := b.start; i <= b.at(open); i++ {
		if b.ts.toks[i].is("(") {
			n++
		}
	}
	return n
}

func (b *builder) args(ns []*syntax.Arg) []*Arg {
	args := make([]*Arg, len(ns))
	for i, n := range ns {
		key := b.at(n.Key)
		args[i] = &Arg{Name: b.ts.toks[key].text[1:], NameRange: b.ts.rangeOf(key), Value: b.value(n.Value)}
	}
	return args
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
		return &Map{Span: b.rangeOf(n.Map.Open).Through(b.rangeOf(n.Map.Close)), Entries: b.args(n.Map.Entries)}
	case n.Call != nil:
		if c := b.call(n.Call); c != nil {
			return c
		}
		// A nested call with a bad verb name was reported; it stands as a
		// bad value so that the call around it is still checked.
		if b.dropped != nil {
			b.dropped(b.at(n.Call.Open), b.at(n.Call.Close)+1)
		}
		return &Bad{Span: b.rangeOf(n.Call.Open).Through(b.rangeOf(n.Call.Close))}
	}
	i := b.at(*n.Scalar)
	tok := b.ts.toks[i]
	r := b.ts.rangeOf(i)
	switch tok.typ {
	case syntax.String:
		return &String{Value: b.ts.stringValue(i), Raw: tok.text, Span: r}
	case syntax.Int:
		v, _ := strconv.ParseInt(tok.text, 10, 64) // checked by the scanner
		return &Int{Value: v, Raw: tok.text, Span: r}
	case syntax.Decimal:
		v, _ := strconv.ParseFloat(tok.text, 64) // checked by the scanner
		return &Decimal{Value: v, Raw: tok.text, Span: r}
	case syntax.Ref:
		return b.ref(tok.text, r)
	case syntax.Input:
		return &Input{Name: tok.text[1:], Span: r}
	case syntax.Name:
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
	ref := &Ref{Name: text[1:nameEnd], NameRange: at(0, nameEnd), Span: r}
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
