package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNestedCallsCompileLikeTheirFlattenedTwin is docs/design/language.md v1.1's
// promise: a runbook with nested calls compiles to the plan of the same
// runbook written flat, by hand, apart from where the steps are written.
// Nested calls are numbered by their opening parenthesis, so the twins
// name their steps to get the same keys.
func TestNestedCallsCompileLikeTheirFlattenedTwin(t *testing.T) {
	cat := testCatalogue(t)
	nested := `;; t.open returns id; t.make returns its whole result.
(t.use
  :id (t.open :name $name :as @opened)
  :label @made.status
  :anything {:all (t.make :name "whole" :as @whole)
             :many [(t.open :as @second) (t.wait :id (t.open :name "inner" :as @inner) :as @waited)]}
  :as @used)
(t.make :name (t.free :x 1 :as @freed) :as @made)
(t.approve :after @used)
`
	flat := `(t.open :name $name :as @opened)
(t.make :name "whole" :as @whole)
(t.open :as @second)
(t.open :name "inner" :as @inner)
(t.wait :id @inner.id :as @waited)
(t.use
  :id @opened.id
  :label @made.status
  :anything {:all @whole :many [@second.id @waited]}
  :as @used)
(t.free :x 1 :as @freed)
(t.make :name @freed :as @made)
(t.approve :after @used)
`
	nestedPlan, diags := compileSource(t, cat, "twin.rbk", []byte(nested))
	require.Empty(t, diags)
	flatPlan, diags := compileSource(t, cat, "twin.rbk", []byte(flat))
	require.Empty(t, diags)

	require.Len(t, nestedPlan.Steps, 9)
	for _, p := range []*Plan{nestedPlan, flatPlan} {
		for _, s := range p.Steps {
			require.NotNil(t, s.Pos)
			s.Pos = nil
		}
		p.seal()
	}
	require.Equal(t, string(flatPlan.JSON()), string(nestedPlan.JSON()), "steps in the same order, the same edges and arguments")
	require.Equal(t, flatPlan.PlanHash, nestedPlan.PlanHash)
	require.Equal(t, map[string]any{"$ref": "opened.id"}, nestedPlan.Step("used").Args["id"])
}
