package verbs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
)

// billionLaughs is the classic alias bomb, as a verb's input schema: nine
// levels of ten aliases each expand to 10^9 strings from 600-odd bytes.
const billionLaughs = `- name: bomb
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      a: &a {type: string, enum: ["lol"]}
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
      h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
      i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
      j: &j [*i, *i, *i, *i, *i, *i, *i, *i, *i, *i]
`

// TestAliasBombIsRefused: verbs.Parse walks yaml.Node itself, past
// yaml.v3's own alias limit, so it must bound alias expansion too.
func TestAliasBombIsRefused(t *testing.T) {
	start := time.Now()
	defs, diags := Parse("bomb.yaml", []byte(billionLaughs))
	require.Less(t, time.Since(start), 2*time.Second)
	require.Empty(t, defs)
	require.NotEmpty(t, diags)
	require.Equal(t, lang.VBadYAML, diags[0].Code)
	require.Contains(t, diags[0].Message, "alias")
	// The alias that goes over the budget: one of the *d on line 10.
	require.Equal(t, 10, diags[0].Range.Start.Line)
}

// TestSmallAliasesStillWork: a verb file may share a schema by alias.
func TestSmallAliasesStillWork(t *testing.T) {
	src := `- name: one
  domain: t
  execution: &x {kind: sync, handler: core.echo, side_effects: none}
- name: two
  domain: t
  execution: *x
`
	defs, diags := Parse("ok.yaml", []byte(src))
	require.Empty(t, diags)
	require.Len(t, defs, 2)
}
