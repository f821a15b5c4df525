package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
)

// A call to a verb whose definition has errors is told that its verb is
// defined but invalid, pointing at the definition, not that it is unknown.
func TestCallToAnInvalidVerb(t *testing.T) {
	dir := t.TempDir()
	verbs := filepath.Join(dir, "v.yaml")
	require.NoError(t, os.WriteFile(verbs, []byte(`- name: promote
  domain: db
  execution: {kind: sync, handler: core.echo, side_efects: none}
`), 0o644))
	cat, _, verbDiags, err := registry.Load([]string{dir}, registry.NewHandlers())
	require.NoError(t, err)
	require.True(t, verbDiags.HasErrors())
	_, diags := compileSource(t, cat, "x.rbk", []byte("(db.promote)\n(db.demote)\n"))
	require.Len(t, diags, 2)
	require.Equal(t, lang.EUnknownVerb, diags[0].Code)
	require.Equal(t, `verb "db.promote" is defined but invalid: its definition has errors`, diags[0].Message)
	require.Equal(t, verbs, diags[0].Related[0].Range.Filename)
	require.Equal(t, 1, diags[0].Related[0].Range.Start.Line)
	require.Equal(t, `unknown verb "db.demote"`, diags[1].Message, "a verb defined nowhere is still unknown")
}
