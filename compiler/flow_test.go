package compiler

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
)

// flowVerbs is the catalogue of the tests of conditions and hooks
// (docs/design/language.md v1.2).
const flowVerbs = `
- name: probe
  domain: db
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema:
    properties:
      seconds: {type: number}
      state: {type: string}
- name: promote
  domain: db
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
  input_schema:
    properties:
      cluster: {type: string}
- name: post
  domain: chat
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
  input_schema:
    properties:
      text: {type: string}
`

const flowSource = `(db.probe :as @lag)
(db.promote :cluster $cluster :when (and (< @lag.seconds 5) (= @lag.state "streaming")) :as @promoted)
(chat.post :text (str "promoted " $cluster) :after @promoted)
(on-failure
  (chat.post :text (str "failover of " $cluster " failed: " @failure.message) :when (!= @failure.status "cancelled")))
`

func flowPlan(t *testing.T) ([]byte, *Plan) {
	t.Helper()
	cat := catalogueOf(t, "flow.yaml", flowVerbs)
	plan, diags := compileSource(t, cat, "flow.rbk", []byte(flowSource))
	require.False(t, diags.HasErrors(), diags.Error())
	return plan.JSON(), plan
}

// A plan with conditions and hooks is version 2; one without is
// version 1, byte for byte what it was (the golden cases pin the bytes).
func TestPlanVersionFollowsWhatItUses(t *testing.T) {
	_, plan := flowPlan(t)
	require.Equal(t, Version2, plan.SchemaVersion)
	require.Equal(t, 2, Version2)

	cat := catalogueOf(t, "flow.yaml", flowVerbs)
	for src, want := range map[string]int{
		`(db.probe)`:                                             1,
		`(chat.post :text (str "a" 1 nil))`:                      1, // joined when compiling
		`(chat.post :text (str "a" $b))`:                         2,
		`(db.probe :as @p) (db.promote :when (exists @p.state))`: 2,
		"(db.probe)\n(on-failure (db.probe))":                    2,
	} {
		plan, diags := compileSource(t, cat, "v.rbk", []byte(src))
		require.False(t, diags.HasErrors(), diags.Error())
		require.Equal(t, want, plan.SchemaVersion, src)
	}
}

// The hand-built canonical JSON of conditions, hooks and $str is what
// encoding/json writes for the hashed view, and a plan reads back to the
// same bytes and hash.
func TestConditionsAndHooksHashAndRoundTrip(t *testing.T) {
	raw, plan := flowPlan(t)
	want, err := json.Marshal(hashedView(plan))
	require.NoError(t, err)
	require.Equal(t, sha256Hex(want), plan.Hash())

	back, err := ParsePlan(raw)
	require.NoError(t, err)
	require.Equal(t, string(raw), string(back.JSON()))
	cond := back.Step("promoted").When
	require.Equal(t, "and", cond.Op)
	require.IsType(t, &Cond{}, cond.Args[0], "the operands of and are conditions")
	require.Equal(t, json.Number("5"), cond.Args[0].(*Cond).Args[1], "numbers stay as written")
	require.Equal(t, `(and (< @lag.seconds 5) (= @lag.state "streaming"))`, cond.String())
	hook := back.Steps[len(back.Steps)-1]
	require.Equal(t, KindHook, hook.Kind)

	changed := bytes.Replace(raw, []byte(`seconds"},5]`), []byte(`seconds"},6]`), 1)
	require.NotEqual(t, string(raw), string(changed))
	_, err = ParsePlan(changed)
	require.ErrorContains(t, err, "does not match the plan's content", "the hash covers conditions")
}

// Hooks make no edges and come last; conditions make data edges.
func TestConditionsMakeDataEdgesAndHooksNone(t *testing.T) {
	_, plan := flowPlan(t)
	require.Equal(t, []Edge{
		{From: "lag", To: "promoted", Kind: EdgeData},
		{From: "promoted", To: "chat.post#3", Kind: EdgeSequence},
	}, plan.Edges)
	require.Equal(t, "chat.post#4", plan.Steps[len(plan.Steps)-1].Key)
}

// TestCheckPlanHoldsConditionsAndHooks edits a compiled plan with
// conditions and hooks in the ways the runtime could not run, recomputes
// the hash each time, and requires each refused.
func TestCheckPlanHoldsConditionsAndHooks(t *testing.T) {
	cat := catalogueOf(t, "flow.yaml", flowVerbs)
	raw, _ := flowPlan(t)
	p, diags := ReadPlan("plan.json", raw, cat)
	require.Empty(t, diags)
	require.NotNil(t, p)

	when := func(doc map[string]any) map[string]any { return at(stepNamed(doc, "promoted"), "when") }
	tests := []struct {
		name   string
		change func(doc map[string]any)
		want   string
	}{
		{"an unknown operator", func(doc map[string]any) { when(doc)["op"] = "xor" },
			`E052 step "promoted" has a condition with unknown operator "xor" (operators: = != < <= > >= and or not in exists)`},
		{"too few operands", func(doc map[string]any) { when(doc)["args"] = when(doc)["args"].([]any)[:1] },
			`E041 step "promoted" has a condition whose and takes two or more conditions, found 1`},
		{"a reference without its edge", func(doc map[string]any) { doc["edges"] = doc["edges"].([]any)[1:] },
			`E070 step "promoted" has a condition reading step "lag" without a data edge from it: the condition would be evaluated before what it reads is known`},
		{"a reference to no step", func(doc map[string]any) {
			at(when(doc), "args", 0)["args"].([]any)[0].(map[string]any)["$ref"] = "nowhere.seconds"
		}, `E070 step "promoted" has a condition reading "nowhere.seconds", which names no step of the plan`},
		{"a condition reading an input the plan lacks", func(doc map[string]any) {
			at(when(doc), "args", 0)["args"].([]any)[0] = map[string]any{"$input": "ghost"}
		}, `E070 step "promoted" has a condition reading input "ghost", which the plan's inputs do not list`},
		{"@failure outside a hook", func(doc map[string]any) {
			stepNamed(doc, "promoted")["args"].(map[string]any)["cluster"] = map[string]any{"$failure": "failure.code"}
		}, `E053 step "promoted" reads $failure, which only a hook (kind "hook") can`},
		{"a field the failure lacks", func(doc map[string]any) {
			at(stepNamed(doc, "chat.post#4"), "when")["args"].([]any)[0] = map[string]any{"$failure": "failure.secret"}
		}, `E070 step "chat.post#4" reads $failure "failure.secret"; the failure is "failure" or one of its fields (code, message, status, step)`},
		{"an edge into a hook", func(doc map[string]any) {
			doc["edges"] = append(doc["edges"].([]any), map[string]any{"from": "lag", "to": "chat.post#4", "kind": "data"})
		}, `E070 edge "lag" → "chat.post#4" joins hook "chat.post#4": a hook is not part of the DAG, no edge leads into or out of it`},
		{"an unknown kind", func(doc map[string]any) { stepNamed(doc, "chat.post#4")["kind"] = "finally" },
			`E070 step "chat.post#4" has kind "finally" (expected "hook", or none)`},
		{"a $str that is not a list", func(doc map[string]any) {
			stepNamed(doc, "chat.post#3")["args"].(map[string]any)["text"] = map[string]any{"$str": "promoted"}
		}, `E070 step "chat.post#3" has a $str that is not a list of parts`},
		{"version 1 with a condition", func(doc map[string]any) { doc["schema_version"] = json.Number("1") },
			`E070 plan schema_version 1 cannot hold conditions, hooks, loops, or (str ...) of run-time values; a plan with them is version 2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := ReadPlan("plan.json", edit(t, raw, false, tc.change), cat)
			require.Contains(t, codes(diags), tc.want)
		})
	}

	t.Run("conditions nested deeper than the language allows", func(t *testing.T) {
		deep := map[string]any{"op": "=", "args": []any{json.Number("1"), json.Number("1")}}
		for range lang.MaxNesting + 2 {
			deep = map[string]any{"op": "not", "args": []any{deep}}
		}
		_, diags := ReadPlan("plan.json", edit(t, raw, false, func(doc map[string]any) { stepNamed(doc, "promoted")["when"] = deep }), cat)
		require.Contains(t, codes(diags), `E070 step "promoted" has a condition nested more than 64 deep`)
	})
}

// SplitRef finds the step a $ref names by the longest key that is a
// prefix of it, so keys holding dots and brackets resolve.
func TestSplitRef(t *testing.T) {
	keys := map[string]bool{"case": true, "screening.run#3": true, "upload": true, "upload[2]": true, "screening": true}
	isKey := func(k string) bool { return keys[k] }
	for ref, want := range map[string][3]any{
		"case.case_id":            {"case", ".case_id", true},
		"screening.run#3.hits[0]": {"screening.run#3", ".hits[0]", true},
		"screening.hits":          {"screening", ".hits", true},
		"upload[2].url":           {"upload[2]", ".url", true},
		"upload[1].url":           {"upload", "[1].url", true},
		"upload":                  {"upload", "", true},
		"nowhere.x":               {"", "", false},
		"":                        {"", "", false},
	} {
		key, path, ok := SplitRef(ref, isKey)
		require.Equal(t, want, [3]any{key, path, ok}, ref)
	}
}

// The golden plan of ok_conditions passes the plan check against the
// catalogue it was compiled with.
func TestGoldenConditionsPlanChecks(t *testing.T) {
	cat := testCatalogue(t)
	src, err := os.ReadFile("testdata/cases/ok_conditions.rbk")
	require.NoError(t, err)
	plan, diags := compileSource(t, cat, "testdata/cases/ok_conditions.rbk", src)
	require.False(t, diags.HasErrors())
	require.Empty(t, CheckPlan(plan, cat))
}

// An extension cannot add a second (on-failure ...) to a runbook that has
// one.
func TestExtendKeepsOneOnFailure(t *testing.T) {
	cat := catalogueOf(t, "flow.yaml", flowVerbs)
	_, base := flowPlan(t)
	_, diags := ExtendSource(base, "more.rbk", []byte("(on-failure (chat.post :text \"again\"))"), cat)
	require.Equal(t, []string{"E053 the running runbook has its (on-failure ...) already; a runbook holds one"}, codes(diags))
}
