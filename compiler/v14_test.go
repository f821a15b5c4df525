package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompiledPlansPassThePlanCheck submits every plan the ok_ and w
// golden cases compile to the daemon's plan check: what the compiler
// writes of v1.4 (settle edges, the forms' markers, the call options) is
// what the check lets through.
func TestCompiledPlansPassThePlanCheck(t *testing.T) {
	cat := testCatalogue(t)
	cases, err := filepath.Glob("testdata/cases/*.rbk")
	require.NoError(t, err)
	for _, path := range cases {
		base := filepath.Base(path)
		if !strings.HasPrefix(base, "ok_") && !strings.HasPrefix(base, "w") {
			continue
		}
		t.Run(base, func(t *testing.T) {
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			plan, _ := compileSource(t, cat, path, src)
			require.NotNil(t, plan)
			_, diags := ReadPlan("plan.json", plan.JSON(), cat)
			require.Empty(t, diags)
		})
	}
}

// TestVersion3IsRefusedBelowIt: a plan that uses v1.4 and says it is an
// older version is refused, so a daemon never runs a status test or a
// gate_when it was not told about.
func TestVersion3IsRefusedBelowIt(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_v14.rbk")
	require.NoError(t, err)
	plan, _ := compileSource(t, cat, "ok_v14.rbk", src)
	require.Equal(t, SchemaVersion, plan.SchemaVersion)
	plan.SchemaVersion = Version2
	plan.seal()
	_, diags := ReadPlan("plan.json", plan.JSON(), cat)
	require.NotEmpty(t, diags)
	require.Contains(t, diags[0].Message, "cannot hold status tests")
}
