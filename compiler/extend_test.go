package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
)

// TestExtensionDiagnosticsNoteTheRunningRunbook: a mistake against the
// running runbook has no second place in the new source to point at, so
// the diagnostic says where the other half is in a note, not in its
// message.
func TestExtensionDiagnosticsNoteTheRunningRunbook(t *testing.T) {
	cat := testCatalogue(t)
	base, diags := compileSource(t, cat, "base.rbk", []byte(`(t.make :name $n :as @made)`))
	require.False(t, diags.HasErrors(), diags.Error())
	_, diags = ExtendSource(base, "more.rbk", []byte(`(t.make :name "y" :count $n :as @made)`), cat)
	byCode := map[lang.Code]*lang.Diagnostic{}
	for _, d := range diags {
		byCode[d.Code] = d
	}
	require.Len(t, byCode, 2, diags.Error())

	dup := byCode[lang.EDuplicateBinding]
	require.NotNil(t, dup, diags.Error())
	require.Equal(t, "binding @made is defined twice", dup.Message)
	require.Equal(t, []string{"it names a step the running runbook already has"}, dup.Notes)
	require.Empty(t, dup.Related)

	conflict := byCode[lang.ETypeConflict]
	require.NotNil(t, conflict, diags.Error())
	require.Equal(t, "$n is used as integer here (:count), but as string elsewhere", conflict.Message)
	require.Equal(t, []string{"the other use is in the running runbook, whose inputs keep their types"}, conflict.Notes)
}
