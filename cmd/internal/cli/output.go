package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table lines up tab-separated cells and trims the padding tabwriter
// leaves after the last non-empty cell of a row.
type Table struct {
	out io.Writer
	buf strings.Builder
	tw  *tabwriter.Writer
}

// NewTable makes a table that writes to out when flushed.
func NewTable(out io.Writer) *Table {
	t := &Table{out: out}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// Write adds cells; rows end with a newline, cells with a tab. Any other
// control character is written escaped (ESC as \x1b), so that what the
// cells hold, which others may have written (an error's message, a
// decider's name), never reaches the terminal as a sequence it would act
// on: a title change, a cleared screen, hidden text.
func (t *Table) Write(p []byte) (int, error) {
	if _, err := t.tw.Write([]byte(EscapeControls(string(p), "\t\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// EscapeControls writes s with its control characters (C0 and C1, DEL,
// and the bidirectional overrides that reorder what a terminal shows)
// escaped as Go would quote them, but for those in keep; invalid UTF-8 is
// escaped byte by byte.
func EscapeControls(s, keep string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return needsEscape(r) && !strings.ContainsRune(keep, r) }) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r) && !strings.ContainsRune(keep, r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether r would act on a terminal rather than show.
func needsEscape(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Flush aligns the rows and writes them out.
func (t *Table) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}
