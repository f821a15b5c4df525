package compiler

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
)

func testCatalogue(t testing.TB) *registry.Catalogue {
	t.Helper()
	cat, _, diags, err := registry.Load([]string{"testdata/verbs"}, registry.NewHandlers())
	require.NoError(t, err)
	require.Empty(t, diags)
	return cat
}

// compileSource parses and compiles one source, returning the plan and
// all diagnostics, sorted.
func compileSource(t testing.TB, cat *registry.Catalogue, name string, src []byte) (*Plan, lang.Diagnostics) {
	return compileWith(t, Options{}, cat, name, src)
}

// compileWith is compileSource with options.
func compileWith(t testing.TB, o Options, cat *registry.Catalogue, name string, src []byte) (*Plan, lang.Diagnostics) {
	t.Helper()
	f, diags := lang.Parse(name, src)
	plan, more := o.Compile([]*lang.File{f}, cat)
	diags.Append(more)
	return plan, diags.Sorted()
}

// TestGolden compiles testdata/cases/*.rbk against testdata/verbs (with
// the policy of a *.policy.yaml beside a case, as rbc lint --policy; v
// cases as rbc lint, with its warnings about the verbs called) and pins
// the diagnostics (text, with carets), the source with every fix applied
// that is the only one offered for its diagnostic (what rbc fix writes),
// and the plan in *.golden. Regenerate with go test ./compiler -update.
func TestGolden(t *testing.T) {
	cat := testCatalogue(t)
	cases, err := filepath.Glob("testdata/cases/*.rbk")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, path := range cases {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			require.NoError(t, err)
			// A v case is a warning of rbc lint's about the verbs called.
			o := Options{Lint: strings.HasPrefix(filepath.Base(path), "v")}
			if polFile := strings.TrimSuffix(path, ".rbk") + ".policy.yaml"; fileExists(polFile) {
				o.Policy, err = policy.ReadFile(polFile, policy.KnownTags(cat.PolicyTags()))
				require.NoError(t, err)
			}
			plan, diags := compileWith(t, o, cat, path, src)
			var out bytes.Buffer
			require.NoError(t, lang.WriteText(&out, diags, lang.Sources{path: src}))
			if fixed, applied := lang.ApplyFixes(path, src, diags); len(applied) > 0 {
				out.WriteString("---- with the fixes applied\n")
				out.Write(fixed)
			}
			if plan != nil {
				out.WriteString("---- plan\n")
				out.Write(plan.JSON())
			}
			base := filepath.Base(path)
			expectPlan := strings.HasPrefix(base, "ok_") || strings.HasPrefix(base, "w") || strings.HasPrefix(base, "v")
			require.Equal(t, expectPlan, plan != nil, "ok_, w and v cases compile; the others do not")
			golden.Assert(t, out.String(), strings.TrimPrefix(strings.TrimSuffix(path, ".rbk")+".golden", "testdata/"))
		})
	}
}

// TestEveryCodeHasACase keeps the rule that each E, W and V code is pinned
// by at least one test: E and W codes by a golden case here, V codes by the
// verbs and registry tables, the codes refusing a submitted plan by the
// plan check's tests.
func TestEveryCodeHasACase(t *testing.T) {
	var covered strings.Builder
	goldens, _ := filepath.Glob("testdata/cases/*.golden")
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		require.NoError(t, err)
		covered.Write(b)
	}
	for _, glob := range []string{"../verbs/*_test.go", "../registry/*_test.go", "../builtin/*_test.go", "../lang/*_test.go", "plan_check_test.go"} {
		tests, _ := filepath.Glob(glob)
		for _, f := range tests {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			covered.Write(b)
		}
	}
	for _, info := range lang.Codes {
		require.Contains(t, covered.String(), string(info.Code), "no test pins %s (%s)", info.Code, info.Summary)
	}
}

func TestCompileIsDeterministic(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_features.rbk")
	require.NoError(t, err)
	first, diags := compileSource(t, cat, "x.rbk", src)
	require.False(t, diags.HasErrors())
	for range 5 {
		again, _ := compileSource(t, cat, "x.rbk", src)
		require.Equal(t, string(first.JSON()), string(again.JSON()))
	}
}

func TestCommentsAndLayoutDoNotChangeTheHash(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_features.rbk")
	require.NoError(t, err)
	plan, _ := compileSource(t, cat, "x.rbk", src)

	edited := bytes.Replace(src, []byte(";; Every value kind"), []byte(";; A different comment,\n;; now on two lines, about every value kind"), 1)
	require.NotEqual(t, src, edited)
	replanned, _ := compileSource(t, cat, "moved/elsewhere.rbk", edited)
	require.Equal(t, plan.PlanHash, replanned.PlanHash)
	require.NotEqual(t, plan.Steps[0].Pos, replanned.Steps[0].Pos, "positions are recorded, just not hashed")

	f, _ := lang.Parse("x.rbk", src)
	reformatted, _ := compileSource(t, cat, "x.rbk", lang.Format(f))
	require.Equal(t, plan.PlanHash, reformatted.PlanHash)

	changed, _ := compileSource(t, cat, "x.rbk", bytes.Replace(src, []byte(`:count 3`), []byte(`:count 4`), 1))
	require.NotEqual(t, plan.PlanHash, changed.PlanHash, "a change in meaning changes the hash")
}

// TestHashIsCanonicalJSON holds the hand-built canonical form equal to
// what encoding/json writes for the hashed view of the plan.
func TestHashIsCanonicalJSON(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_features.rbk")
	require.NoError(t, err)
	plan, _ := compileSource(t, cat, "x.rbk", src)
	plan.Steps[0].Args["name"] = "quote\" back\\ <tag> & \u2028 \x01 \xff é"
	// The second step of a verb with a block of its own: hashed with it,
	// not with the first step's.
	plan.Step("t.use#5").Execution.Retry.MaxAttempts = 7

	// Effects are derived from what is hashed, and left out like positions.
	require.NotEmpty(t, plan.Effects)
	view := hashedView(plan)
	want, err := json.Marshal(view)
	require.NoError(t, err)
	require.Equal(t, sha256Hex(want), plan.Hash())

	var roundTrip bytes.Buffer
	enc := plan.encodeSteps()
	for i := range enc.steps {
		roundTrip.Reset()
		enc.writeWithoutPos(&roundTrip, i)
		direct, err := json.Marshal(view.Steps[i])
		require.NoError(t, err)
		require.Equal(t, string(direct), roundTrip.String())
	}
}

func TestParsePlanRoundTrip(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_features.rbk")
	require.NoError(t, err)
	plan, _ := compileSource(t, cat, "x.rbk", src)
	back, err := ParsePlan(plan.JSON())
	require.NoError(t, err)
	require.Equal(t, plan.PlanHash, back.Hash())
	require.Equal(t, string(plan.JSON()), string(back.JSON()))
	require.NoError(t, back.Verbs["t.use"].InputSchema.ValidateProperty("id", "6f1c0d3e-2b7a-4d5e-9f00-1a2b3c4d5e6f"),
		"a read plan's schemas are compiled and ready")

	tampered := bytes.Replace(plan.JSON(), []byte(`"count":3`), []byte(`"count":30`), 1)
	_, err = ParsePlan(tampered)
	require.ErrorContains(t, err, "does not match the plan's content")

	_, err = ParsePlan([]byte(`{"schema_version": 99}`))
	require.ErrorContains(t, err, "schema_version 99 is not supported")
}

// hashedView is the plan as its hash sees it: without its hash, sources,
// effects and positions.
func hashedView(plan *Plan) *Plan {
	view := *plan
	view.PlanHash, view.Sources, view.sealed, view.Effects = "", nil, nil, nil
	view.Steps = nil
	for _, s := range plan.Steps {
		c := *s
		c.Pos = nil
		view.Steps = append(view.Steps, &c)
	}
	return &view
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
