package lang

import (
	"testing"

	"gotest.tools/v3/golden"
)

// TestEBNF pins the grammar. A change to it shows up in this golden file
// (regenerate with go test -update) and so in review.
func TestEBNF(t *testing.T) {
	golden.Assert(t, EBNF()+"\n", "grammar.ebnf.golden")
}
