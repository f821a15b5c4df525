package lang

import (
	"errors"
	"fmt"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// syntaxError turns participle's error for the call in tokens [start, end)
// into an E001 that says what was expected and what was found, in the
// language's own words.
func (p *parser) syntaxError(err error, start, end int) {
	var serr *syntax.Error
	if !errors.As(err, &serr) {
		p.diags.Errorf(ESyntax, p.ts.span(start, end-1), "%v", err)
		return
	}
	i := start + serr.At
	if i >= end { // participle ran out of the call's tokens
		if p.ts.openStr {
			return // the unterminated string was reported; this is its echo
		}
		last := p.ts.toks[end-1].end()
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
	if p.ts.toks[i].typ == syntax.Keyword && ctx != `"]"` {
		// A keyword is welcome here; participle backed off it because what
		// follows is not a value. Point at that instead.
		kw := p.ts.toks[i].text
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
	case i == start+1 || p.ts.toks[i-1].is("("):
		want = `expected a verb name (domain.verb) after "("`
	case p.ts.toks[i-1].typ == syntax.Keyword:
		want = fmt.Sprintf("expected a value after %s", p.ts.toks[i-1].text)
	case ctx == `"]"`:
		want = `expected a value or "]"`
	case p.inForm(start, i):
		want = `expected a value or ")"`
	default:
		want = "expected an argument name (:name) or " + ctx
	}
	p.diags.Errorf(ESyntax, p.ts.rangeOf(i), "%s, found %s", want, describe(p.ts.toks[i]))
}

// lexErrorBefore reports whether the scanner reported a problem between
// token i and the token before it. A syntax error there is only the echo of
// what the scanner dropped.
func (p *parser) lexErrorBefore(i int) bool {
	from := 0
	if i > 0 {
		from = p.ts.toks[i-1].end().Byte
	}
	to := p.ts.toks[i].start.Byte
	for _, d := range p.ts.diags {
		if d.Range.Start.Byte >= from && d.Range.Start.Byte < to {
			return true
		}
	}
	return false
}

// context names the closer of the innermost list, map or call that token i
// sits in: `"]"`, `"}"` or `")"`.
func (p *parser) context(start, i int) string {
	if j := p.innermostOpen(start, i); j > start {
		return map[string]string{"(": `")"`, "[": `"]"`, "{": `"}"`}[p.ts.toks[j].text]
	}
	return `")"`
}

// inForm reports whether token i sits directly in a form (str ...), a
// condition or (on-failure ...), whose items are values, rather than in a
// call, whose items are arguments.
func (p *parser) inForm(start, i int) bool {
	j := p.innermostOpen(start, i)
	return j >= start && p.ts.headedByWord(j)
}

// innermostOpen is the index of the innermost bracket left open before
// token i, from start on; start-1 when there is none.
func (p *parser) innermostOpen(start, i int) int {
	depth := 0
	for j := i - 1; j >= start; j-- {
		t := p.ts.toks[j]
		if t.typ != syntax.Punct {
			continue
		}
		switch t.text {
		case "]", "}", ")":
			depth++
		case "[", "{", "(":
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return start - 1
}

// closerFor names the bracket that would close the innermost construct left
// open in tokens [start, end).
func (p *parser) closerFor(start, end int) string {
	var open []string
	for i := start; i < end; i++ {
		t := p.ts.toks[i]
		if t.typ != syntax.Punct {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			open = append(open, t.text)
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
