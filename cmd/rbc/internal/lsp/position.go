package lsp

import (
	"sort"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// text is a document's contents with the byte offset at which each line
// starts. lang counts columns in code points and keeps byte offsets; LSP
// counts characters in UTF-16 code units (its default and only
// universally supported encoding), so every position crosses here.
type text struct {
	src   string
	lines []int // byte offset of the start of each line
}

func newText(src string) *text {
	t := &text{src: src, lines: []int{0}}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	return t
}

// position converts a byte offset into an LSP position.
func (t *text) position(off int) protocol.Position {
	off = min(max(off, 0), len(t.src))
	line := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	return protocol.Position{Line: uint32(line), Character: uint32(utf16Len(t.src[t.lines[line]:off]))}
}

// offset converts an LSP position into a byte offset. A character past
// the end of its line means the end of the line, and a line past the end
// of the text the end of the text, as the protocol asks.
func (t *text) offset(p protocol.Position) int {
	if int(p.Line) >= len(t.lines) {
		return len(t.src)
	}
	off := t.lines[p.Line]
	end := len(t.src)
	if int(p.Line)+1 < len(t.lines) {
		end = t.lines[p.Line+1] - 1 // the '\n'
	}
	for units := 0; off < end && units < int(p.Character); {
		r, size := utf8.DecodeRuneInString(t.src[off:])
		units += utf16Units(r)
		off += size
	}
	return off
}

// lspRange converts a lang range, by its byte offsets.
func (t *text) lspRange(r lang.Range) protocol.Range {
	return protocol.Range{Start: t.position(r.Start.Byte), End: t.position(r.End.Byte)}
}

// whole is the range of the entire text.
func (t *text) whole() protocol.Range {
	return protocol.Range{Start: protocol.Position{}, End: t.position(len(t.src))}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Units(r)
	}
	return n
}

// utf16Units is how many UTF-16 code units encode r: two for a code point
// outside the Basic Multilingual Plane (an emoji), one otherwise. Invalid
// UTF-8 decodes to U+FFFD, one unit, as editors count it.
func utf16Units(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}
