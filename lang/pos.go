package lang

import "fmt"

// Pos is one place in a source file.
type Pos struct {
	// Line is 1-based.
	Line int `json:"line"`
	// Column is 1-based and counts Unicode code points, not bytes, so a
	// caret drawn under it lines up on a terminal.
	Column int `json:"column"`
	// Byte is the 0-based byte offset into the file.
	Byte int `json:"byte"`
}

// Range is a span of a source file. End is exclusive.
type Range struct {
	Filename string `json:"file"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
}

// String renders the range as file:line:column, the form editors jump to.
func (r Range) String() string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// Len is the range's length in bytes.
func (r Range) Len() int { return r.End.Byte - r.Start.Byte }

// Contains reports whether other lies inside r.
func (r Range) Contains(other Range) bool {
	return r.Filename == other.Filename && r.Start.Byte <= other.Start.Byte && other.End.Byte <= r.End.Byte
}

// Through returns the range from the start of r to the end of other.
func (r Range) Through(other Range) Range {
	return Range{Filename: r.Filename, Start: r.Start, End: other.End}
}

// advance moves p over text, counting lines and code points.
func (p Pos) advance(text string) Pos {
	for _, c := range text {
		if c == '\n' {
			p.Line++
			p.Column = 1
		} else {
			p.Column++
		}
	}
	p.Byte += len(text)
	return p
}
