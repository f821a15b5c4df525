package lsp

import (
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// The conversion between lang's positions and LSP's, on a line with a
// two-byte letter (one UTF-16 unit) and an emoji (four bytes, two units),
// checked against lang's own positions for every token.
func TestPositionsCountUTF16Units(t *testing.T) {
	src := "(a.b :x \"é😀\" :y @z)\n(c.d :w 1)"
	tx := newText(src)
	toks := lang.Lex("t.rbk", []byte(src))
	require.Len(t, toks, 12)
	for _, tok := range toks {
		for _, p := range []lang.Pos{tok.Range.Start, tok.Range.End} {
			line := p.Line - 1
			lineStart := tx.lines[line]
			want := protocol.Position{Line: uint32(line), Character: uint32(len(utf16.Encode([]rune(src[lineStart:p.Byte]))))}
			require.Equal(t, want, tx.position(p.Byte), "%q at byte %d", tok.Text, p.Byte)
			require.Equal(t, p.Byte, tx.offset(want), "%q at byte %d", tok.Text, p.Byte)
		}
	}
	// ":y" comes after the string: 8 + 1 + 3 + 1 + 1 units.
	require.Equal(t, protocol.Position{Line: 0, Character: 14}, tx.position(len(`(a.b :x "é😀" `)))
}

func TestOffsetClampsToTheText(t *testing.T) {
	tx := newText("ab\ncd")
	require.Equal(t, 2, tx.offset(protocol.Position{Line: 0, Character: 99}), "past the end of a line is its end")
	require.Equal(t, 5, tx.offset(protocol.Position{Line: 7, Character: 0}), "past the last line is the end")
	require.Equal(t, protocol.Position{Line: 1, Character: 2}, tx.position(99))
	require.Equal(t, protocol.Range{End: protocol.Position{Line: 1, Character: 2}}, tx.whole())
}
