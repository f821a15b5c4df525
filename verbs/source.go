package verbs

import (
	"bytes"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
)

// source turns yaml.v3's line and column marks into lang ranges with byte
// offsets, which yaml.v3 does not keep.
type source struct {
	name       string
	text       []byte
	lineStarts []int
}

func newSource(name string, text []byte) *source {
	s := &source{name: name, text: text, lineStarts: []int{0}}
	for i, c := range text {
		if c == '\n' {
			s.lineStarts = append(s.lineStarts, i+1)
		}
	}
	return s
}

// pos converts a 1-based line and code-point column.
func (s *source) pos(line, col int) lang.Pos {
	if line < 1 {
		return lang.Pos{Line: 1, Column: 1}
	}
	if line > len(s.lineStarts) {
		line = len(s.lineStarts)
	}
	off := s.lineStarts[line-1]
	for c := 1; c < col && off < len(s.text) && s.text[off] != '\n'; c++ {
		_, size := utf8.DecodeRune(s.text[off:])
		off += size
	}
	return lang.Pos{Line: line, Column: max(col, 1), Byte: off}
}

// rangeOf covers a node's first token: a scalar as written, quotes
// included, or the rest of the line for a collection.
func (s *source) rangeOf(n *yaml.Node) lang.Range {
	start := s.pos(n.Line, n.Column)
	rest := s.text[start.Byte:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	n2 := len(bytes.TrimRight(rest, " \t\r"))
	if n.Kind == yaml.ScalarNode {
		switch {
		case n.Style&yaml.DoubleQuotedStyle != 0:
			n2 = quotedLen(rest, '"')
		case n.Style&yaml.SingleQuotedStyle != 0:
			n2 = quotedLen(rest, '\'')
		case bytes.HasPrefix(rest, []byte(n.Value)) && n.Value != "":
			n2 = len(n.Value)
		}
	}
	return s.span(start, n2)
}

// span is the range of n bytes from start, which lie on one line.
func (s *source) span(start lang.Pos, n int) lang.Range {
	end := start
	end.Byte += n
	end.Column += utf8.RuneCount(s.text[start.Byte:end.Byte])
	return lang.Range{Filename: s.name, Start: start, End: end}
}

// quotedLen measures a quoted scalar on its first line, or the whole line
// when the closing quote is on a later one.
func quotedLen(b []byte, q byte) int {
	for i := 1; i < len(b); i++ {
		switch {
		case q == '"' && b[i] == '\\':
			i++
		case b[i] == q && q == '\'' && i+1 < len(b) && b[i+1] == '\'':
			i++
		case b[i] == q:
			return i + 1
		}
	}
	return len(b)
}

// lineRange covers a whole line, for errors yaml.v3 reports by line only.
func (s *source) lineRange(line int) lang.Range {
	start := s.pos(line, 1)
	rest := s.text[start.Byte:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	return s.span(start, len(bytes.TrimRight(rest, "\r")))
}
