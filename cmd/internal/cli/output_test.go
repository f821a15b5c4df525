package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A table's cells reach the terminal with their control characters
// escaped: an escape sequence in an error message shows as text (issue
// 27), and tabs and newlines still lay the table out.
func TestTablesEscapeControlCharacters(t *testing.T) {
	var out strings.Builder
	tb := NewTable(&out)
	_, err := tb.Write([]byte("KEY\tDETAIL\nk\t\x1b]0;pwned\x07 and \x1b[2J, \u202eevil, bad \xff byte, \u00e9t\u00e9\n"))
	require.NoError(t, err)
	require.NoError(t, tb.Flush())
	require.Equal(t, "KEY  DETAIL\n"+`k    \x1b]0;pwned\a and \x1b[2J, \u202eevil, bad \xff byte, été`+"\n", out.String())
	require.Equal(t, `a\tb`, EscapeControls("a\tb", ""))
	require.Equal(t, "plain", EscapeControls("plain", ""))
}
