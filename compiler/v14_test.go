package compiler

import (
	"os"
	"path/filepath"
	"slices"
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

// A submitted plan's v1.4 parts are held to what the compiler writes: a
// plan edited to read a status without waiting for it, to run a gated
// step without its gate, to smuggle in a value the runtime never reads
// as data, or to name options the verb cannot honour is refused.
func TestPlanCheckRefusesEditedV3Plans(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_v14.rbk")
	require.NoError(t, err)
	compiled, _ := compileSource(t, cat, "ok_v14.rbk", src)
	require.NotNil(t, compiled)
	for name, tc := range map[string]struct {
		edit func(p *Plan)
		want string
	}{
		"no settle edge": {func(p *Plan) {
			p.Edges = slices.DeleteFunc(p.Edges, func(e Edge) bool { return e.Kind == EdgeSettle && e.From == "review" })
		}, `reads the status of "review" without a settle edge`},
		"a gate_when without its gate": {func(p *Plan) { p.Step("t.free#5").Gate = rbtype.GateNone }, "has gate_when but gate"},
		"a literal only the runtime writes": {func(p *Plan) {
			p.Step("report").Args["n"] = map[string]any{LitKey: map[string]any{RefKey: "thing.id"}}
		}, "holds $lit"},
		"an element outside its form":  {func(p *Plan) { p.Step("report").Args["n"] = map[string]any{ElemKey: "i.url"} }, "reads element"},
		"approvers that name no group": {func(p *Plan) { p.Step("t.free#5").Approvers = "a b" }, "is not a group's name"},
		"a timeout result the schema refuses": {func(p *Plan) {
			p.Step("review").TimeoutResult = map[string]any{"decision": "maybe"}
		}, "timeout_result its verb's output_schema refuses"},
		"a reminder after the timeout": {func(p *Plan) { p.Step("review").RemindAfter = "P30D" }, "not before its wait's timeout"},
		"a mode by an unknown code": {func(p *Plan) {
			p.Step("report").OnFailureByCode = map[string]rbtype.OnFailure{"NOPE": rbtype.OnFailureAbort}
		}, `on_failure_by_code for "NOPE"`},
		"a throttle on a step outside a loop": {func(p *Plan) { p.Step("thing").Parallel = 3 }, "has parallel 3"},
		"a status read in an argument": {func(p *Plan) {
			p.Step("report").Args["n"] = map[string]any{StatusKey: "thing"}
		}, `reads the status of "thing" outside a condition`},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := DecodePlan(compiled.JSON())
			require.NoError(t, err)
			tc.edit(p)
			p.Effects = Effects(p)
			p.seal()
			_, diags := ReadPlan("plan.json", p.JSON(), cat)
			require.True(t, diags.HasErrors(), "accepted")
			require.Contains(t, diags.Error(), tc.want)
		})
	}
}
