package lang

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// MaxNesting bounds how deeply lists and maps may nest. Deeper input is
// reported, not parsed, so that no input can exhaust the stack.
const MaxNesting = 64

// Parse parses a runbook source. It always returns a File holding every call
// that parsed, and the diagnostics (E001, E002) for everything that did not.
// Each call is parsed on its own, so a mistake in one call does not hide
// mistakes in the next.
func Parse(filename string, src []byte) (*File, Diagnostics) {
	ts := scan(filename, src)
	p := &parser{ts: ts, file: &File{Name: filename, Comments: ts.notes}, shapes: newShapeCache()}
	p.diags = ts.diags
	if !ts.binary && len(ts.diags) < maxLexErrors {
		p.parseCalls()
	}
	return p.file, p.diags.Sorted()
}

type parser struct {
	ts     *tokenStream
	file   *File
	diags  Diagnostics
	shapes *shapeCache
}

// span is the tokens [start, end) of one call, with its 1-based index.
type span struct{ start, end, index int }

// callResult is what parsing one span produced.
type callResult struct {
	call  *Call
	diags Diagnostics
}

func isPunct(t lexer.Token, v string) bool { return t.Type == syntax.Punct && t.Value == v }

// parseCalls splits the tokens into calls and parses each. A call ends at
// its closing ")" or, when that is missing, just before the next "(": calls
// never nest in v1, so a "(" inside a call always means the previous one was
// left open.
//
// Calls are independent once split, so they are parsed in parallel:
// participle's reflective parser costs a few microseconds a token, which
// dominates compile time on large runbooks.
func (p *parser) parseCalls() {
	toks := p.ts.toks
	var spans, deepSpans []span
	calls := 0
	for i := 0; i < len(toks); {
		if !isPunct(toks[i], "(") {
			j := i
			for j < len(toks) && !isPunct(toks[j], "(") {
				j++
			}
			p.diags.Errorf(ESyntax, p.ts.rangeOf(i), "expected \"(\" to start a call, found %s", describe(toks[i]))
			i = j
			continue
		}
		end, deep := p.segment(i)
		calls++
		if deep >= 0 {
			p.diags.Errorf(ESyntax, p.ts.rangeOf(deep), "lists and maps nest more than %d levels deep", MaxNesting)
			deepSpans = append(deepSpans, span{start: i, end: end, index: calls})
		} else {
			spans = append(spans, span{start: i, end: end, index: calls})
		}
		i = end
	}
	results := make([]callResult, len(spans))
	parallel(len(spans), func(k int) { results[k] = p.parseCall(spans[k]) })
	for k, r := range results {
		if r.call != nil {
			p.file.Calls = append(p.file.Calls, r.call)
		} else {
			p.noteUnparsed(spans[k].start, spans[k].end)
		}
		p.diags.Append(r.diags)
	}
	for _, d := range deepSpans {
		p.noteUnparsed(d.start, d.end)
	}
}

// noteUnparsed records the names a call that failed to parse binds and
// refers to.
func (p *parser) noteUnparsed(start, end int) {
	u := &p.file.Unparsed
	if u.Bound == nil {
		u.Bound, u.Referenced = map[string]bool{}, map[string]bool{}
	}
	for i := start; i < end; i++ {
		t := p.ts.toks[i]
		if t.Type != syntax.Ref {
			continue
		}
		name := t.Value[1:]
		if j := strings.IndexAny(name, ".["); j >= 0 {
			name = name[:j]
		}
		if i > start && p.ts.toks[i-1].Type == syntax.Keyword && p.ts.toks[i-1].Value == ":as" {
			u.Bound[name] = true
		} else {
			u.Referenced[name] = true
		}
	}
}

// parallel runs fn(0..n-1) on GOMAXPROCS goroutines, in chunks so that
// small inputs pay nothing for it. (The compiler has its own copy: lang
// may import nothing else of ours.)
func parallel(n int, fn func(int)) {
	workers := runtime.GOMAXPROCS(0)
	const chunk = 256
	if workers == 1 || n <= chunk {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				from := int(next.Add(chunk)) - chunk
				if from >= n {
					return
				}
				for i := from; i < min(from+chunk, n); i++ {
					fn(i)
				}
			}
		})
	}
	wg.Wait()
}

// segment finds the end (exclusive) of the call opened at token start. deep
// is the index of a token nested past MaxNesting, or -1.
func (p *parser) segment(start int) (end, deep int) {
	toks := p.ts.toks
	stack := []int{start}
	deep = -1
	i := start + 1
	for ; i < len(toks) && len(stack) > 0; i++ {
		t := toks[i]
		if t.Type != syntax.Punct {
			continue
		}
		switch t.Value {
		case "(":
			return i, deep
		case "[", "{":
			stack = append(stack, i)
			if len(stack) > MaxNesting+1 && deep < 0 {
				deep = i
			}
		case ")":
			return i + 1, deep
		case "]", "}":
			top := stack[len(stack)-1]
			if (t.Value == "]" && isPunct(toks[top], "[")) || (t.Value == "}" && isPunct(toks[top], "{")) {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return i, deep
}

// parseCall parses one call's tokens. It only reads shared state, so calls
// can be parsed concurrently.
func (p *parser) parseCall(sp span) callResult {
	start, end := sp.start, sp.end
	var eof lexer.Position
	if end < len(p.ts.toks) {
		eof = p.ts.toks[end].Pos
	} else {
		eof = p.ts.endPos()
	}
	cp := &callParser{parser: p, start: start, end: end}
	toks := p.ts.toks[start:end]
	key := shapeKey(toks)
	var call *syntax.Call
	if tmpl := p.shapes.lookup(key); tmpl != nil && useShapeCache {
		call = replay(tmpl, toks)
	} else {
		tree, err := syntax.ParseTokens(toks, eof)
		if err != nil {
			cp.syntaxError(err, start, end)
			return callResult{diags: cp.diags}
		}
		// A span holds exactly one call: it starts at "(" and ends at the
		// matching ")".
		call = tree.Calls[0]
		p.shapes.remember(key, call, toks)
	}
	c := cp.call(call, sp.index)
	return callResult{call: c, diags: cp.diags}
}

// callParser converts one call. Its diagnostics are its own, so calls can
// be converted concurrently; the shared parser is only read.
type callParser struct {
	*parser
	start, end int // the call's tokens
	diags      Diagnostics
}

// callToken finds the index of the call's token starting at byte offset
// off; searching the call's few tokens, not the file's million, matters at
// 100k steps.
func (p *callParser) callToken(off int) int {
	toks := p.ts.toks[p.start:p.end]
	return p.start + sort.Search(len(toks), func(i int) bool { return toks[i].Pos.Offset >= off })
}

// syntaxError turns participle's error into an E001 that says what was
// expected and what was found, in the language's own words.
func (p *callParser) syntaxError(err error, start, end int) {
	var perr participle.Error
	if !errors.As(err, &perr) {
		p.diags.Errorf(ESyntax, p.ts.span(start, end-1), "%v", err)
		return
	}
	at := perr.Position()
	i := p.tokenAt(at.Offset)
	if i < start || i >= end { // participle stopped at the end of the call's tokens
		if p.ts.openStr {
			return // the unterminated string was reported; this is its echo
		}
		last := p.ts.ends[end-1]
		r := Range{Filename: p.ts.file, Start: last, End: last}
		next := "the end of the file"
		if end < len(p.ts.toks) {
			next = describe(p.ts.toks[end])
		}
		p.diags.Errorf(ESyntax, r, "missing %s before %s", p.closerFor(start, end), next).
			WithRelated(p.ts.rangeOf(start), "the call starts here")
		return
	}
	if p.lexErrorBefore(i) {
		return // the scanner dropped something bad here and reported it
	}
	ctx := p.context(start, i)
	if p.ts.toks[i].Type == syntax.Keyword && ctx != `"]"` {
		// A keyword is welcome here; participle backed off it because what
		// follows is not a value. Point at that instead.
		kw := p.ts.toks[i].Value
		if i+1 >= end {
			p.diags.Errorf(ESyntax, p.ts.rangeOf(i), "expected a value after %s, found nothing", kw)
			return
		}
		if p.lexErrorBefore(i + 1) {
			return
		}
		p.diags.Errorf(ESyntax, p.ts.rangeOf(i+1), "expected a value after %s, found %s", kw, describe(p.ts.toks[i+1]))
		return
	}
	var want string
	switch {
	case i == start+1:
		want = `expected a verb name (domain.verb) after "("`
	case p.ts.toks[i-1].Type == syntax.Keyword:
		want = fmt.Sprintf("expected a value after %s", p.ts.toks[i-1].Value)
	case ctx == `"]"`:
		want = `expected a value or "]"`
	default:
		want = "expected an argument name (:name) or " + ctx
	}
	p.diags.Errorf(ESyntax, p.ts.rangeOf(i), "%s, found %s", want, describe(p.ts.toks[i]))
}

// lexErrorBefore reports whether the scanner reported a problem between
// token i and the token before it. A syntax error there is only the echo of
// what the scanner dropped.
func (p *callParser) lexErrorBefore(i int) bool {
	from := 0
	if i > 0 {
		from = p.ts.ends[i-1].Byte
	}
	to := p.ts.toks[i].Pos.Offset
	for _, d := range p.ts.diags {
		if d.Range.Start.Byte >= from && d.Range.Start.Byte < to {
			return true
		}
	}
	return false
}

// context names the closer of the innermost list, map or call that token i
// sits in: `"]"`, `"}"` or `")"`.
func (p *callParser) context(start, i int) string {
	depth := 0
	for j := i - 1; j > start; j-- {
		t := p.ts.toks[j]
		if t.Type != syntax.Punct {
			continue
		}
		switch t.Value {
		case "]", "}":
			depth++
		case "[", "{":
			if depth == 0 {
				if t.Value == "[" {
					return `"]"`
				}
				return `"}"`
			}
			depth--
		}
	}
	return `")"`
}

// tokenAt finds the index of the token starting at byte offset off, or the
// first token after it.
func (p *parser) tokenAt(off int) int {
	return sort.Search(len(p.ts.toks), func(i int) bool { return p.ts.toks[i].Pos.Offset >= off })
}

func (p *callParser) call(n *syntax.Call, index int) *Call {
	c := &Call{
		Span:      p.tokenRange(n.Open).Through(p.tokenRange(n.Close)),
		Verb:      n.Verb.Value,
		VerbRange: p.tokenRange(n.Verb),
		Index:     index,
	}
	c.Args = p.args(n.Keys, n.Values)
	if strings.Count(c.Verb, ".") != 1 {
		// Left out of the file: a later pass has no use for a call whose
		// verb cannot exist.
		p.diags.Errorf(ESyntax, c.VerbRange, "verb name %q must be two identifiers joined by one dot, as in kyc.open-case", c.Verb)
		return nil
	}
	return c
}

// tokenRange finds a token's range. Tokens are found by offset, which is
// unique; participle hands back copies, not indexes.
func (p *callParser) tokenRange(t lexer.Token) Range {
	return p.ts.rangeOf(p.callToken(t.Pos.Offset))
}

// args pairs keys with values. The grammar captures them side by side; a
// key is always the token just before its value's first token.
func (p *callParser) args(keys []string, values []*syntax.Value) []*Arg {
	args := make([]*Arg, len(keys))
	for i, key := range keys {
		v := p.value(values[i])
		k := p.callToken(v.Range().Start.Byte) - 1
		args[i] = &Arg{Name: key[1:], NameRange: p.ts.rangeOf(k), Value: v}
	}
	return args
}

func (p *callParser) value(n *syntax.Value) Value {
	switch {
	case n.List != nil:
		l := &List{Span: p.tokenRange(n.List.Open).Through(p.tokenRange(n.List.Close)), Items: make([]Value, len(n.List.Items))}
		for i, item := range n.List.Items {
			l.Items[i] = p.value(item)
		}
		return l
	case n.Map != nil:
		return &Map{Span: p.tokenRange(n.Map.Open).Through(p.tokenRange(n.Map.Close)), Entries: p.args(n.Map.Keys, n.Map.Values)}
	}
	i := p.callToken(n.Scalar.Pos.Offset)
	tok := p.ts.toks[i]
	r := p.ts.rangeOf(i)
	switch tok.Type {
	case syntax.String:
		return &String{Value: p.ts.stringValue(i), Raw: tok.Value, Span: r}
	case syntax.Int:
		v, _ := strconv.ParseInt(tok.Value, 10, 64) // checked by the scanner
		return &Int{Value: v, Raw: tok.Value, Span: r}
	case syntax.Decimal:
		v, _ := strconv.ParseFloat(tok.Value, 64) // checked by the scanner
		return &Decimal{Value: v, Raw: tok.Value, Span: r}
	case syntax.Ref:
		return p.ref(tok.Value, r)
	case syntax.Input:
		return &Input{Name: tok.Value[1:], Span: r}
	case syntax.Name:
		switch tok.Value {
		case "true", "false":
			return &Bool{Value: tok.Value == "true", Span: r}
		case "nil":
			return &Null{Span: r}
		}
	}
	return &Bad{Span: r}
}

// ref decomposes a reference token into its name and path steps, each with
// its own range. References are ASCII by construction, so byte and column
// offsets agree.
func (p *callParser) ref(text string, r Range) Value {
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
			p.diags.Errorf(EBadLiteral, at(i, j), "index %s is too large", text[i:j])
			return &Bad{Span: r}
		}
		ref.Path = append(ref.Path, PathStep{Index: idx, IsIndex: true, Span: at(i, j)})
		i = j
	}
	return ref
}

// closerFor names the bracket that would close the innermost construct left
// open in tokens [start, end).
func (p *callParser) closerFor(start, end int) string {
	var open []string
	for i := start; i < end; i++ {
		t := p.ts.toks[i]
		if t.Type != syntax.Punct {
			continue
		}
		switch t.Value {
		case "(", "[", "{":
			open = append(open, t.Value)
		case ")", "]", "}":
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	if len(open) == 0 {
		return `")"`
	}
	return map[string]string{"(": `")"`, "[": `"]"`, "{": `"}"`}[open[len(open)-1]]
}
