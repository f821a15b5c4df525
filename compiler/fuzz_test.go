package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
)

// FuzzCompile compiles arbitrary sources against the golden tests'
// catalogue. Whatever the input, compiling must not panic; every range it
// reports in the source, fixes' edits included, must lie inside it; the
// fixes must apply and the result check again; and a plan must read back
// with the effects it was written with.
//
// Run longer with: go test ./compiler -run XXX -fuzz FuzzCompile -fuzztime 60s
func FuzzCompile(f *testing.F) {
	cases, _ := filepath.Glob("testdata/cases/*.rbk")
	for _, path := range cases {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte(`(t.use :id (t.open :name (t.make :name $n :as @m) :as @o) :label @m.status :after [@o @m])`))
	f.Add([]byte(`(t.use :id (t.opne) :idd (t.misnamed :as @x) :id @x.id :after (t.free))`))
	// Conditions, text, hooks (docs/design/language.md v1.2) and for-each (v1.3).
	f.Add([]byte(`(t.make :name "a" :as @m) (t.free :when (or (exists @m.meta) (in @m.n [1 2])) :t (str @m.n "x"))
(on-failure (t.free :m @failure.message :when (= @failure.status "failed")))`))
	f.Add([]byte(`(t.make :name "a" :as @m)
(for-each @m.items :as @i :parallel 3 (t.make :name @i.url :as @made)
  (for-each [1 2] :as @n (t.use :id @made.id :n @n :as @u)))
(t.free :all @made :us @u :first @made[0] :after @u)`))
	cat := testCatalogue(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "fuzz.rbk"
		plan, diags := CompileSource(name, src, cat)
		inside := func(r lang.Range) {
			if r.Filename == name {
				require.True(t, 0 <= r.Start.Byte && r.Start.Byte <= r.End.Byte && r.End.Byte <= len(src), "range %+v outside %d bytes", r, len(src))
			}
		}
		for _, d := range diags {
			inside(d.Range)
			for _, rel := range d.Related {
				inside(rel.Range)
			}
			for _, fix := range d.Fixes {
				for _, e := range fix.Edits {
					require.Equal(t, name, e.Range.Filename)
					inside(e.Range)
				}
			}
		}
		fixed, _ := lang.ApplyFixes(name, src, diags)
		_, _ = CompileSource(name, fixed, cat)
		if plan != nil {
			back, err := ParsePlan(plan.JSON())
			require.NoError(t, err)
			require.Equal(t, plan.Effects, back.Effects)
			require.Equal(t, Effects(back), back.Effects)
			require.Empty(t, CheckPlan(plan, cat), "a compiled plan passes the plan check")
			// Every loop the runtime could expand expands into a plan
			// that passes the check too.
			for _, l := range plan.Loops {
				if l.Within == "" {
					expanded, err := plan.Expand(l.Key, 2)
					require.NoError(t, err)
					require.Empty(t, CheckPlan(expanded, cat))
				}
			}
		}
	})
}
