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
	nodes  nodeSlabs
}

// parseCalls splits the tokens into top-level calls and parses each. A call
// ends at its closing ")" or, when that is missing, just before the next
// "(" that cannot be a nested call (see segment), so that a mistake in one
// call does not hide mistakes in the next.
//
// Calls are parsed one after another. Parsing them in parallel saved about
// 35 ms of 290 ms at 100k steps on two cores, and nothing measurable in
// `rbc compile` (BENCHMARKS.md): not worth a lock on the shape cache,
// buffered results and a worker pool.
func (p *parser) parseCalls() {
	toks := p.ts.toks
	// opened counts the calls opened so far, nested ones included: a call's
	// Index is the position of its "(" among them (docs/design/language.md v1.1), which
	// for a file without nested calls is its position among the calls.
	opened := 0
	for i := 0; i < len(toks); {
		if !toks[i].is("(") {
			p.diags.Errorf(ESyntax, p.ts.rangeOf(i), "expected \"(\" to start a call, found %s", describe(toks[i]))
			for i < len(toks) && !toks[i].is("(") {
				i++
			}
			continue
		}
		end, deep := p.segment(i)
		var node Node
		if deep >= 0 {
			p.diags.Errorf(ESyntax, p.ts.rangeOf(deep), "lists, maps and nested calls nest more than %d levels deep", MaxNesting)
		} else {
			node = p.parseTop(i, end, opened)
		}
		switch n := node.(type) {
		case *Call:
			p.file.Calls = append(p.file.Calls, n)
		case *OnFailure:
			p.file.OnFailure = append(p.file.OnFailure, n)
		case *ForEach:
			p.file.ForEach = append(p.file.ForEach, n)
		default:
			p.noteUnparsed(i, end)
		}
		for j := i; j < end; j++ {
			if p.ts.opensCall(j) {
				opened++
			}
		}
		i = end
	}
}

// segment finds the end (exclusive) of the call opened at token start. deep
// is the index of a token nested past MaxNesting, or -1.
//
// A "(" where a value may stand (after an argument name, among a list's
// items, or among a form's items) opens a nested call or form. Anywhere
// else it cannot continue the call, so the call was left open and the "("
// starts the next one. So does a "(" in the first column, wherever it
// stands: top-level calls start there, nested ones never do in canonical
// layout, and without this a list left open would swallow every call after
// it into one syntax error.
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
			top := stack[len(stack)-1]
			if t.start.Column == 1 || toks[i-1].typ != syntax.Keyword && !toks[top].is("[") && !p.ts.headedByWord(top) {
				return i, deep
			}
			fallthrough
		case "[", "{":
			stack = append(stack, i)
			if len(stack) > MaxNesting+1 && deep < 0 {
				deep = i
			}
		case ")", "]", "}":
			top := stack[len(stack)-1]
			if (t.text == ")" && toks[top].is("(")) || (t.text == "]" && toks[top].is("[")) || (t.text == "}" && toks[top].is("{")) {
				stack = stack[:len(stack)-1]
			} else if t.text == ")" {
				// A ")" closing a list or map left open ends the call it
				// is in; participle reports what is missing.
				for len(stack) > 0 && !toks[stack[len(stack)-1]].is("(") {
					stack = stack[:len(stack)-1]
				}
				stack = stack[:len(stack)-1]
			}
		}
	}
	return i, deep
}

// parseTop parses the call or form in tokens [start, end), after opened
// calls of the file. It returns nil, having reported why, if it did not
// parse or is not a top-level item.
func (p *parser) parseTop(start, end, opened int) Node {
	tree, err := p.shapes.tree(p.ts.toks[start:end])
	if err != nil {
		p.syntaxError(err, start, end)
		return nil
	}
	b := &builder{ts: p.ts, start: start, opened: opened, diags: &p.diags, dropped: p.noteUnparsed, nodes: &p.nodes}
	if n := b.top(tree); n != nil {
		return n
	}
	return nil // not a typed nil: the caller switches on the type
}

// noteUnparsed records the names a call that failed to parse (or a nested
// call left out) binds and refers to.
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
