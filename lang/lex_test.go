package lang

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Lex returns the tokens of a call that does not parse, with their kinds
// and ranges, and leaves out comments.
func TestLexKeepsTheTokensOfABrokenCall(t *testing.T) {
	src := "(kyc.open-case :name \"é\" ; note\n  :n 1.5 :as @case.x[0] :in $who"
	_, diags := Parse("t.rbk", []byte(src))
	require.True(t, diags.HasErrors(), "the call is not closed")

	toks := Lex("t.rbk", []byte(src))
	var kinds []TokenKind
	var texts []string
	for _, tok := range toks {
		kinds = append(kinds, tok.Kind)
		texts = append(texts, tok.Text)
		require.Equal(t, tok.Text, src[tok.Range.Start.Byte:tok.Range.End.Byte])
	}
	require.Equal(t, []string{"(", "kyc.open-case", ":name", `"é"`, ":n", "1.5", ":as", "@case.x[0]", ":in", "$who"}, texts)
	require.Equal(t, []TokenKind{TokenPunct, TokenName, TokenKeyword, TokenString, TokenKeyword, TokenNumber, TokenKeyword, TokenRef, TokenKeyword, TokenInput}, kinds)
	require.Equal(t, Pos{Line: 2, Column: 3, Byte: strings.Index(src, ":n 1.5")}, toks[4].Range.Start)
}
