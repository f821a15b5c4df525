package cli

import (
	"encoding/json"
	"io"
	"strings"
	"text/tabwriter"
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

// Write adds cells; rows end with a newline, cells with a tab.
func (t *Table) Write(p []byte) (int, error) { return t.tw.Write(p) }

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
