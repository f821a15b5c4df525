package registry

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"

	"github.com/runbookdev/runbook/lang"
)

// TestGolden loads each testdata/cases/*.yaml as a catalogue and pins
// every diagnostic, rendered with its caret, in the *.golden beside it.
// Regenerate with go test ./registry -update.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/cases/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, path := range cases {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, sources, diags, err := Load([]string{path}, NewHandlers())
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, lang.WriteText(&out, diags, sources))
			golden.Assert(t, out.String(), strings.TrimPrefix(strings.TrimSuffix(path, ".yaml")+".golden", "testdata/"))
		})
	}
}
