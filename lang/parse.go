package lang

import (
	"strings"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// MaxNesting bounds how deeply lists and maps may nest. Deeper input is
// reported, not parsed, so that no input can exhaust the stack.
const MaxNesting = 64

// Parse parses a runbook source. It always returns a File holding every call
// that parsed, and the diagnostics (E001, E002) for everything that did not.
//
// It works in four steps, each in its own file:
//   - scan (scan.go) turns the bytes into tokens, reporting and skipping
//     every lexical mistake;
//   - Parse splits the tokens into calls, so that a mistake in one call
//     does not hide mistakes in the next;
//   - participle parses each call's tokens by the grammar in package syntax,
//     once per call shape (shapes.go);
//   - build (build.go) turns participle's tree into the AST, with the
//     ranges of every token it was built from; or syntaxError
//     (syntax_error.go) turns participle's error into an E001.
func Parse(filename string, src []byte) (*File, Diagnostics) {
	ts := scan(filename, src)
	p := &parser{ts: ts, file: &File{Name: filename, Comments: ts.notes}, diags: ts.diags, shapes: shapes{}}
	if !ts.binary && len(ts.diags) < maxLexErrors {
		p.parseCalls()
	}
	return p.file, p.diags.Sorted()
}

type parser struct {
	ts     *tokenStream
	file   *File
	diags  Diagnostics
	shapes shapes
}

// parseCalls splits the tokens into calls and parses each. A call ends at
// its closing ")" or, when that is missing, just before the next "(": calls
// never nest in v1, so a "(" inside a call always means the previous one was
// left open.
//
// Calls are parsed one after another. Parsing them in parallel saved about
// 35 ms of 290 ms at 100k steps on two cores, and nothing measurable in
// `rbc compile` (BENCHMARKS.md): not worth a lock on the shape cache,
// buffered results and a worker pool.
func (p *parser) parseCalls() {
	toks := p.ts.toks
	index := 0 // the call's 1-based position in the file, parsed or not
	for i := 0; i < len(toks); {
		if !toks[i].is("(") {
			p.diags.Errorf(ESyntax, p.ts.rangeOf(i), "expected \"(\" to start a call, found %s", describe(toks[i]))
			for i < len(toks) && !toks[i].is("(") {
				i++
			}
			continue
		}
		end, deep := p.segment(i)
		index++
		var call *Call
		if deep >= 0 {
			p.diags.Errorf(ESyntax, p.ts.rangeOf(deep), "lists and maps nest more than %d levels deep", MaxNesting)
		} else {
			call = p.parseCall(i, end, index)
		}
		if call != nil {
			p.file.Calls = append(p.file.Calls, call)
		} else {
			p.noteUnparsed(i, end)
		}
		i = end
	}
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
		if t.typ != syntax.Punct {
			continue
		}
		switch t.text {
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
			if (t.text == "]" && toks[top].is("[")) || (t.text == "}" && toks[top].is("{")) {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return i, deep
}

// parseCall parses the call in tokens [start, end), the index-th of the
// file. It returns nil, having reported why, if the call did not parse.
func (p *parser) parseCall(start, end, index int) *Call {
	tree, err := p.shapes.tree(p.ts.toks[start:end])
	if err != nil {
		p.syntaxError(err, start, end)
		return nil
	}
	b := &builder{ts: p.ts, start: start, diags: &p.diags}
	return b.call(tree, index)
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
		if t.typ != syntax.Ref {
			continue
		}
		name := t.text[1:]
		if j := strings.IndexAny(name, ".["); j >= 0 {
			name = name[:j]
		}
		if i > start && p.ts.toks[i-1].typ == syntax.Keyword && p.ts.toks[i-1].text == ":as" {
			u.Bound[name] = true
		} else {
			u.Referenced[name] = true
		}
	}
}
