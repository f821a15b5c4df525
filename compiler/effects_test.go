package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
)

// effectVerbs: a step with no effect, an HTTP call, a table write, a
// high-risk verb, and one with a gate of its own.
const effectVerbs = `
- name: plain
  domain: s
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema: {properties: {v: {type: string}}}
- name: call
  domain: s
  execution:
    kind: sync
    handler: http.call
    params: {url: "https://api.example:8443/v1/things?page=1"}
    side_effects: external_call
  input_schema: {properties: {v: {type: string}}}
- name: write
  domain: s
  execution:
    kind: sync
    handler: pg.crud
    params: {op: insert, table: app.things, columns: [name]}
    side_effects: internal_db
  input_schema: {properties: {name: {type: string}}}
- name: risky
  domain: s
  risk: high
  execution: {kind: sync, handler: core.echo, side_effects: external_call, level: guarded}
- name: signed
  domain: s
  execution: {kind: sync, handler: core.echo, side_effects: human_process, gate: human_confirm}
`

// gates summarises a plan's effects as step → "gate by gated_by".
func gates(t *testing.T, cat *registry.Catalogue, src string) map[string]string {
	t.Helper()
	plan, diags := compileSource(t, cat, "shape.rbk", []byte(src))
	require.False(t, diags.HasErrors(), diags.Error())
	out := map[string]string{}
	for _, e := range plan.Effects {
		out[e.Step] = string(e.Gate) + " " + e.GatedBy
	}
	return out
}

// TestEffectGates runs the gate analysis over the shapes a reviewer meets:
// fan-out from a gate, diamonds with the gate at the top and on one
// branch, and the accepted failure that lets a step run past a rejected
// gate.
func TestEffectGates(t *testing.T) {
	cat := catalogueOf(t, "effects.yaml", effectVerbs)
	tests := []struct {
		name string
		src  string
		want map[string]string
	}{
		{"fan-out from a gate; a step beside it is ungated", `
(s.plain :gate "human_confirm" :as @top)
(s.call :after @top :as @a)
(s.call :v @top.v :as @b)
(s.write :name @top.v :as @c)
(s.call :as @free)`, map[string]string{
			"a": "human_confirm top", "b": "human_confirm top", "c": "human_confirm top", "free": "none ",
		}},
		{"diamond, the gate at the top: every path crosses it", `
(s.plain :gate "human_confirm" :as @top)
(s.plain :v @top.v :as @left)
(s.plain :after @top :as @right)
(s.call :v @left.v :after @right :as @join)`, map[string]string{
			"join": "human_confirm top",
		}},
		{"diamond, the gate on one branch: the join waits for both", `
(s.plain :as @top)
(s.plain :v @top.v :gate "human_confirm" :as @left)
(s.plain :after @top :as @right)
(s.call :v @right.v :after @left :as @join)`, map[string]string{
			"join": "human_confirm left",
		}},
		{"diamond, gates on both branches: the nearer is named", `
(s.plain :as @top)
(s.plain :v @top.v :gate "human_confirm" :as @left)
(s.plain :after @top :gate "human_confirm" :as @right)
(s.call :v @right.v :after @left :as @join)`, map[string]string{
			"join": "human_confirm right",
		}},
		{"an accepted failure: :after a gated step that may fail runs without it", `
(s.plain :gate "human_confirm" :on-failure "continue" :as @maybe)
(s.call :after @maybe :as @anyway)
(s.call :v @maybe.v :as @needs)`, map[string]string{
			"anyway": "none ", "needs": "human_confirm maybe",
		}},
		{"an accepted failure still waits for the gates before it", `
(s.plain :gate "human_confirm" :as @top)
(s.plain :after @top :on-failure "continue" :as @maybe)
(s.call :after @maybe :as @anyway)`, map[string]string{
			"anyway": "human_confirm top",
		}},
		{"a step's own gate is the nearest; a high-risk verb always has one", `
(s.plain :gate "human_confirm" :as @top)
(s.signed :after @top :as @sign)
(s.risky :after @top :as @risk)
(s.risky :as @alone)`, map[string]string{
			"sign": "human_confirm sign", "risk": "human_confirm risk", "alone": "human_confirm alone",
		}},
		{"a step a condition may skip: :after it runs without its gate", `
(s.plain :as @probe)
(s.plain :gate "human_confirm" :when (= @probe.v "go") :as @maybe)
(s.call :after @maybe :as @anyway)
(s.call :v @maybe.v :as @needs)`, map[string]string{
			"anyway": "none ", "needs": "human_confirm maybe",
		}},
		{"a skip propagates along data: behind such a step, only the gates every ending passes", `
(s.plain :gate "human_confirm" :as @top)
(s.plain :v @top.v :gate "human_confirm" :when (= @top.v "go") :as @maybe)
(s.plain :v @maybe.v :as @after)
(s.call :after @after :as @anyway)`, map[string]string{
			"anyway": "human_confirm top",
		}},
		{"a hook's only gate is its own", `
(s.plain :gate "human_confirm" :as @top)
(s.call :v @top.v :as @c)
(on-failure
  (s.call :v @top.v :as @undo)
  (s.signed :as @tell))`, map[string]string{
			"c": "human_confirm top", "undo": "none ", "tell": "human_confirm tell",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, gates(t, cat, tc.src))
		})
	}
}

func TestEffectEntries(t *testing.T) {
	cat := catalogueOf(t, "effects.yaml", effectVerbs)
	plan, diags := compileSource(t, cat, "e.rbk", []byte(`(s.plain :as @p)
(s.call :v @p.v :as @c)
(s.write :name "x" :gate "human_confirm" :as @w)
(s.risky :as @r)`))
	require.False(t, diags.HasErrors(), diags.Error())
	require.Equal(t, []Effect{
		{Step: "c", Verb: "s.call", SideEffects: rbtype.SideEffectsExternalCall, Risk: rbtype.RiskLow, Gate: rbtype.GateNone, Target: "api.example:8443/v1/things"},
		{Step: "w", Verb: "s.write", SideEffects: rbtype.SideEffectsInternalDB, Risk: rbtype.RiskLow, Gate: rbtype.GateHumanConfirm, GatedBy: "w", Target: "app.things"},
		{Step: "r", Verb: "s.risky", SideEffects: rbtype.SideEffectsExternalCall, Risk: rbtype.RiskHigh, Gate: rbtype.GateHumanConfirm, GatedBy: "r"},
	}, plan.Effects, "the step without side effects is not listed")
	require.Equal(t, rbtype.GateHumanConfirm, plan.Step("r").Gate, "a high-risk step is frozen with a gate")

	_, diags = compileSource(t, cat, "e.rbk", []byte(`(s.risky :gate "none")`))
	require.Equal(t, []string{`E041 verb "s.risky" is high risk, so its steps always wait at gate "human_confirm", which a call cannot remove`}, codes(diags))
}

// TestEffectsOfAnExtension: an extension's plan lists the effects of the
// steps it adds, behind the running runbook's gates where they follow them.
func TestEffectsOfAnExtension(t *testing.T) {
	cat := testCatalogue(t)
	base, diags := compileSource(t, cat, "base.rbk", []byte(`(t.approve :as @ok)`))
	require.False(t, diags.HasErrors(), diags.Error())
	extended, diags := ExtendSource(base, "more.rbk", []byte(`(t.make :name "x" :after @ok :as @made) (t.make :name "y" :as @free)`), cat)
	require.False(t, diags.HasErrors(), diags.Error())
	require.Equal(t, []Effect{
		{Step: "ok", Verb: "t.approve", SideEffects: rbtype.SideEffectsExternalCall, Risk: rbtype.RiskLow, Gate: rbtype.GateHumanConfirm, GatedBy: "ok"},
		{Step: "made", Verb: "t.make", SideEffects: rbtype.SideEffectsInternalDB, Risk: rbtype.RiskLow, Gate: rbtype.GateHumanConfirm, GatedBy: "ok"},
		{Step: "free", Verb: "t.make", SideEffects: rbtype.SideEffectsInternalDB, Risk: rbtype.RiskLow, Gate: rbtype.GateNone},
	}, extended.Effects)
}
