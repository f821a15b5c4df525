package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
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

// ListProducer names the step whose completion makes a loop's list
// known, through a (filter ...) too; a filter that would read two steps
// is refused (E054), since the loop expands when one completes.
func TestListProducer(t *testing.T) {
	isKey := func(k string) bool { return k == "users" || k == "other" }
	for list, want := range map[string]string{
		`{"$ref":"users.items"}`: "users",
		`{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.env"},{"$input":"env"}]}}}`: "users",
		`{"$input":"hosts"}`: "",
		`[1,2]`:              "",
		`{"$filter":{"list":{"$input":"hosts"},"as":"u","where":{"op":"=","args":[{"$elem":"u"},1]}}}`: "",
	} {
		got, ok := ListProducer(decodeValue(t, list), isKey)
		require.Equal(t, want, got, list)
		require.Equal(t, want != "", ok, list)
	}
	cat := testCatalogue(t)
	_, diags := compileSource(t, cat, "two.rbk", []byte(`(t.make :name "a" :as @a)
(t.make :name "b" :as @b)
(for-each (filter @a.items :as @i (= @i.url @b.id)) :as @x (t.free :v @x.url))`))
	require.True(t, diags.HasErrors())
	require.Contains(t, diags.Error(), "E054")
	require.Contains(t, diags.Error(), "reads 2 steps (a, b)")
}

func TestFailureModeByCode(t *testing.T) {
	s := &Step{OnFailure: rbtype.OnFailureContinue, OnFailureByCode: map[string]rbtype.OnFailure{"BUDGET_EXCEEDED": rbtype.OnFailureAbort, "TEMPORARY_PROVIDER_ERROR": rbtype.OnFailureIsolate}}
	require.Equal(t, rbtype.OnFailureAbort, s.FailureMode(rbtype.CodeBudgetExceeded))
	require.Equal(t, rbtype.OnFailureIsolate, s.FailureMode(rbtype.CodeTempProvider), "the short name is its code")
	require.Equal(t, rbtype.OnFailureContinue, s.FailureMode(rbtype.CodeInternal))
	require.Equal(t, rbtype.OnFailureAbort, (&Step{OnFailure: rbtype.OnFailureAbort}).FailureMode(rbtype.CodeInternal))
}
