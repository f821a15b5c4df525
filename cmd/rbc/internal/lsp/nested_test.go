package lsp

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// The outline names the steps of nested calls (docs/design/language.md v1.1) as the
// compiler keys them, so document symbols match the plan.
func TestOutlineKeysNestedCallsAsTheCompilerDoes(t *testing.T) {
	defs, diags := verbs.Parse("v.yaml", []byte("- name: go\n  domain: a\n  execution: {kind: sync, handler: core.echo, side_effects: none}\n"))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, registry.NewHandlers())
	require.Empty(t, diags)
	src := "(a.go :x (a.go :y 1) :z (a.go :w (a.go :v 2 :as @deep)))\n(a.go :after @deep)\n"
	plan, diags := compiler.CompileSource("t.rbk", []byte(src), cat)
	require.False(t, diags.HasErrors(), "%v", diags)
	var want []string
	for _, s := range plan.Steps {
		want = append(want, s.Key)
	}
	o := newOutline(lang.Lex("t.rbk", []byte(src)))
	var got []string
	for _, c := range o.calls {
		got = append(got, o.key(c))
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got)
}
