package lang

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sources maps a file name to its contents, so that renderers can show the
// line a diagnostic points at.
type Sources map[string][]byte

// maxShownColumns bounds how much of a source line the text renderer shows.
// A 10 MB string literal on one line must not flood the terminal.
const maxShownColumns = 120

// WriteText renders diagnostics in the text format of docs/design/language.md: one
// header line each, then the source line and a caret under the range.
// Suggestions end the header line as "(did you mean ...?)". Related
// ranges follow as notes in the same shape, then one "= note:" line for
// each note without a place and one "= help:" line for each fix the
// diagnostic offers.
func WriteText(w io.Writer, ds Diagnostics, src Sources) error {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s: %s[%s]: %s\n", d.Range, d.Severity, d.Code, d.Headline())
		writeExcerpt(&b, d.Range, src)
		for _, rel := range d.Related {
			fmt.Fprintf(&b, "%s: note: %s\n", rel.Range, rel.Message)
			writeExcerpt(&b, rel.Range, src)
		}
		for _, n := range d.Notes {
			fmt.Fprintf(&b, "%5s = note: %s\n", "", n)
		}
		for _, f := range d.Fixes {
			fmt.Fprintf(&b, "%5s = help: %s\n", "", f.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeExcerpt prints the first line of r with carets under the range. A
// range that continues onto later lines is underlined to the end of its
// first line.
func writeExcerpt(b *strings.Builder, r Range, src Sources) {
	text, ok := src[r.Filename]
	if !ok || r.Start.Byte < 0 || r.Start.Byte > len(text) {
		return
	}
	lineStart := bytes.LastIndexByte(text[:r.Start.Byte], '\n') + 1
	lineEnd := len(text)
	if i := bytes.IndexByte(text[r.Start.Byte:], '\n'); i >= 0 {
		lineEnd = r.Start.Byte + i
	}
	if lineEnd > r.Start.Byte && text[lineEnd-1] == '\r' {
		lineEnd-- // a CRLF file: the \r is part of the line break, not the line
	}
	line := []rune(displayable(text[lineStart:lineEnd]))
	startCol := len([]rune(displayable(text[lineStart:r.Start.Byte])))
	endCol := startCol + 1
	if r.End.Byte > r.Start.Byte {
		end := min(r.End.Byte, lineEnd)
		endCol = max(startCol+1, len([]rune(displayable(text[lineStart:end]))))
	}

	// Show a window around the range when the line is too long.
	from, to := 0, len(line)
	if len(line) > maxShownColumns {
		from = max(0, startCol-maxShownColumns/3)
		to = min(len(line), from+maxShownColumns)
		endCol = min(endCol, to)
	}
	shown := string(line[from:to])
	pad := line[from:startCol]
	if from > 0 {
		shown = "…" + shown
		pad = append([]rune{' '}, pad...)
	}
	if to < len(line) {
		shown += "…"
	}
	var caret strings.Builder
	for _, c := range pad {
		// Keep tabs so the caret lines up with the tab-expanded source line.
		if c == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteString(strings.Repeat("^", max(1, endCol-startCol)))
	fmt.Fprintf(b, "%5d | %s\n", r.Start.Line, strings.TrimRight(shown, " \t\r"))
	fmt.Fprintf(b, "%5s | %s\n", "", caret.String())
}

// displayable replaces what a terminal cannot show (invalid UTF-8, control
// characters) one for one, so columns still count the same code points.
func displayable(b []byte) string {
	var out strings.Builder
	out.Grow(len(b))
	for len(b) > 0 {
		c, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case c == '\t':
			out.WriteRune(c)
		case c == utf8.RuneError || unicode.IsControl(c):
			out.WriteRune('\uFFFD')
		default:
			out.WriteRune(c)
		}
	}
	return out.String()
}
