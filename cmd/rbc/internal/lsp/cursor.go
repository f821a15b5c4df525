package lsp

import (
	"strings"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// cursor is where completion was asked for: the word being typed, the
// token before it, and the call around it.
type cursor struct {
	d     *document
	o     *outline
	off   int    // the cursor's byte offset
	start int    // where the word being typed starts
	word  string // from start to the cursor: "@case.ca", ":cli", "kyc.", ""
	prev  int    // the last token before the word, or -1
	call  *callInfo
	// level is the innermost bracket around the cursor inside the call:
	// "(" at the call's own level, "[" or "{" inside a list or map.
	level string
}

func newCursor(d *document, off int) *cursor {
	c := &cursor{d: d, o: d.tokens(), off: off, prev: -1}
	src := d.text.src
	c.start = off
	for c.start > 0 && isWordByte(src[c.start-1]) {
		c.start--
	}
	c.word = src[c.start:off]
	for i, t := range c.o.toks {
		if t.Range.End.Byte > c.start {
			break
		}
		c.prev = i
	}
	if c.prev < 0 {
		return c
	}
	for _, call := range c.o.calls {
		closed := c.o.toks[call.close].Text == ")" && call.close <= c.prev
		if call.open <= c.prev && !closed && (c.call == nil || call.open > c.call.open) {
			c.call = call
		}
	}
	c.level = c.o.inside[c.prev]
	return c
}

// isWordByte reports whether b may be part of a word being completed: a
// name, keyword, reference with its path, or input.
func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		strings.IndexByte("_-.:@$[]=<>!", b) >= 0
}

// quiet reports whether the cursor is in a string or a comment, where
// nothing is offered.
func (c *cursor) quiet() bool {
	src := c.d.text.src
	for _, t := range c.o.toks {
		if t.Range.Start.Byte >= c.off {
			break
		}
		if t.Kind == lang.TokenString && t.Range.End.Byte > c.off {
			return true
		}
	}
	lineStart := strings.LastIndexByte(src[:c.off], '\n') + 1
	semi := strings.IndexByte(src[lineStart:c.off], ';')
	if semi < 0 {
		return false
	}
	// A ';' inside a string on this line does not start a comment.
	at := lineStart + semi
	for _, t := range c.o.toks {
		if t.Kind == lang.TokenString && t.Range.Start.Byte < at && at < t.Range.End.Byte {
			return false
		}
	}
	return true
}

// atArgument reports whether an argument keyword may be typed here: at the
// call's own level, after its verb or a complete argument.
func (c *cursor) atArgument() bool {
	if c.call == nil || c.level != "(" {
		return false
	}
	if strings.HasPrefix(c.word, ":") {
		return true
	}
	return c.word == "" && c.o.toks[c.prev].Kind != lang.TokenKeyword
}

// atValue reports whether a value may be typed here: right after a
// keyword, inside a list, or among a form's values.
func (c *cursor) atValue() bool {
	if c.call == nil || c.word != "" {
		return false
	}
	return c.o.toks[c.prev].Kind == lang.TokenKeyword || c.level == "[" || c.level == levelForm
}

// atOperator reports whether a condition's operator may be typed here:
// right after the "(" of a :when's value, or of an operand of and, or
// and not (docs/design/language.md v1.2).
func (c *cursor) atOperator() bool {
	if c.prev < 1 || c.o.toks[c.prev].Text != "(" {
		return false
	}
	before := c.o.toks[c.prev-1]
	if before.Kind == lang.TokenKeyword && (before.Text == ":when" || before.Text == ":gate-when") {
		return true
	}
	switch c.o.formHead[c.prev-1] {
	case lang.OpAnd, lang.OpOr, lang.OpNot:
		return c.o.inside[c.prev-1] == levelForm
	}
	return false
}

// atFunc reports whether a value form of v1.4 may be typed here: right
// after a "(" that stands where a value does, after an argument's keyword
// or among a form's values (docs/design/language.md v1.4).
func (c *cursor) atFunc() bool {
	if c.prev < 1 || c.o.toks[c.prev].Text != "(" {
		return false
	}
	before := c.o.toks[c.prev-1]
	if before.Kind == lang.TokenKeyword {
		return true
	}
	return c.o.inside[c.prev-1] == levelForm
}

// wordRange is the range the completion replaces: the word being typed.
func (c *cursor) wordRange() protocol.Range {
	return protocol.Range{Start: c.d.text.position(c.start), End: c.d.text.position(c.off)}
}
