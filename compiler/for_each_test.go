package compiler

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
)

// loopVerbs is the catalogue of the tests of for-each (docs/design/language.md v1.3).
const loopVerbs = `
- name: list
  domain: lb
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema:
    properties:
      items:
        type: array
        items:
          type: object
          properties:
            name: {type: string}
            ports: {type: array, items: {type: integer}}
- name: drain
  domain: lb
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
  input_schema:
    properties:
      host: {type: string}
      port: {type: integer}
  output_schema:
    properties:
      ok: {type: boolean}
      url: {type: string}
- name: report
  domain: lb
  execution: {kind: sync, handler: core.echo, side_effects: none}
`

// runtimeLoops: a list known at run time, a loop within it over each
// element's ports, and a step after both reading their results.
const runtimeLoops = `(lb.list :as @hosts)
(for-each @hosts.items :as @host :parallel 2
  (lb.drain :host @host.name :as @drained)
  (for-each @host.ports :as @port
    (lb.drain :host @host.name :port @port :after @drained :as @checked)))
(lb.report :all @drained :first @drained[0].url :checks @checked)
`

func compileLoops(t *testing.T, src string) *Plan {
	t.Helper()
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	plan, diags := compileSource(t, cat, "loops.rbk", []byte(src))
	require.False(t, diags.HasErrors(), diags.Error())
	require.Empty(t, CheckPlan(plan, cat), "what the compiler writes passes the plan check")
	return plan
}

func keysOf(steps []*Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Key
	}
	return out
}

// A list known only at run time is frozen as a loop and its templates,
// read with $item; a step outside reads the templates as lists.
func TestRuntimeLoopIsFrozenAsTemplates(t *testing.T) {
	plan := compileLoops(t, runtimeLoops)
	require.Equal(t, []*Loop{
		{Key: "host", Item: "host", List: map[string]any{RefKey: "hosts.items"}, Parallel: 2},
		{Key: "port", Item: "port", List: map[string]any{ItemKey: "host.ports"}, Within: "host"},
	}, plan.Loops)
	require.Equal(t, []string{"hosts", "drained", "checked", "lb.report#4"}, keysOf(plan.Steps))
	require.Equal(t, "host", plan.Step("drained").Loop)
	require.Equal(t, "port", plan.Step("checked").Loop)
	require.Equal(t, map[string]any{"host": map[string]any{ItemKey: "host.name"}, "port": map[string]any{ItemKey: "port"}}, plan.Step("checked").Args)
	require.Equal(t, []Edge{
		{From: "hosts", To: "drained", Kind: EdgeData},
		{From: "hosts", To: "checked", Kind: EdgeData},
		{From: "drained", To: "checked", Kind: EdgeSequence},
		{From: "drained", To: "lb.report#4", Kind: EdgeData},
		{From: "checked", To: "lb.report#4", Kind: EdgeData},
	}, plan.Edges)
	require.Equal(t, Version2, plan.SchemaVersion)
	for _, e := range plan.Effects {
		require.True(t, e.PerElement, e.Step)
	}

	back, err := ParsePlan(plan.JSON())
	require.NoError(t, err, "loops round-trip and are hashed")
	require.Equal(t, string(plan.JSON()), string(back.JSON()))
	want, err := json.Marshal(hashedView(plan))
	require.NoError(t, err)
	require.Equal(t, sha256Hex(want), plan.Hash(), "the canonical JSON of loops is encoding/json's")
}

// Expand makes what the runtime adds: instances of the templates, their
// elements read through the list, instances of the loops within, and
// edges; a second Expand does the inner loop of one element.
func TestExpandMakesInstances(t *testing.T) {
	plan := compileLoops(t, runtimeLoops)
	cat := catalogueOf(t, "loops.yaml", loopVerbs)

	_, err := plan.Expand("port", 2)
	require.ErrorContains(t, err, `loop "port" is within loop "host"`)

	outer, err := plan.Expand("host", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"hosts", "drained", "checked", "lb.report#4", "drained[0]", "checked[0]", "drained[1]", "checked[1]"}, keysOf(outer.Steps))
	d1 := outer.Step("drained[1]")
	require.Equal(t, "", d1.Loop)
	require.Equal(t, map[string]any{"host": map[string]any{RefKey: "hosts.items[1].name"}}, d1.Args)
	c0 := outer.Step("checked[0]")
	require.Equal(t, "port[0]", c0.Loop)
	require.Equal(t, map[string]any{"host": map[string]any{RefKey: "hosts.items[0].name"}, "port": map[string]any{ItemKey: "port"}}, c0.Args)
	require.Contains(t, outer.Loops, &Loop{Key: "port[0]", Item: "port", List: map[string]any{RefKey: "hosts.items[0].ports"}})
	require.Contains(t, outer.Edges, Edge{From: "drained[0]", To: "checked[0]", Kind: EdgeSequence}, "same element")
	require.Contains(t, outer.Edges, Edge{From: "hosts", To: "drained[1]", Kind: EdgeData})
	require.Equal(t, outer.Hash(), outer.PlanHash)
	require.Empty(t, CheckPlan(outer, cat))

	inner, err := outer.Expand("port[0]", 3)
	require.NoError(t, err)
	c02 := inner.Step("checked[0][2]")
	require.NotNil(t, c02)
	require.Equal(t, map[string]any{"host": map[string]any{RefKey: "hosts.items[0].name"}, "port": map[string]any{RefKey: "hosts.items[0].ports[2]"}}, c02.Args)
	require.Contains(t, inner.Edges, Edge{From: "drained[0]", To: "checked[0][2]", Kind: EdgeSequence})
	require.Empty(t, CheckPlan(inner, cat))

	empty, err := plan.Expand("host", 0)
	require.NoError(t, err)
	require.Equal(t, keysOf(plan.Steps), keysOf(empty.Steps), "an empty list adds nothing")
}

// A run-time expansion is bounded by the plan's bytes before its
// instances are made: refused with ErrPlanTooLarge past the bound, made
// within it, and unbounded when no bound is given.
func TestExpandWithinRefusesBeforeItMakes(t *testing.T) {
	plan := compileLoops(t, runtimeLoops)
	size := len(plan.JSON())
	_, err := plan.ExpandWithin("host", 1000, size+1000)
	require.ErrorIs(t, err, ErrPlanTooLarge)
	require.ErrorContains(t, err, "(for-each ... :as @host) makes a plan of more than")
	grown, err := plan.ExpandWithin("host", 2, size+10_000)
	require.NoError(t, err)
	require.Len(t, grown.Steps, len(plan.Steps)+4)
	_, err = plan.ExpandWithin("host", 1000, 0)
	require.NoError(t, err)
}

// A list written out is expanded by the compiler: instances in place of
// the templates, a step outside reading the instances, nested lists
// written out expanded too, and a loop known at run time inside one
// written out made once per element.
func TestWrittenListsAreExpandedWhenCompiled(t *testing.T) {
	plan := compileLoops(t, `(lb.list :as @hosts)
(for-each [{:name "a" :ports [1 2]} {:name "b" :ports [3]}] :as @h
  (lb.drain :host @h.name :as @d)
  (for-each @h.ports :as @p
    (lb.drain :host @h.name :port @p :after @d :as @c))
  (for-each @hosts.items :as @other
    (lb.drain :host @other.name :as @o)))
(lb.report :all @d :one @d[1].url :c @c :after @o)
`)
	require.Equal(t, []string{"hosts", "d[0]", "d[1]", "c[0][0]", "c[0][1]", "c[1][0]", "o[0]", "o[1]", "lb.report#5"}, keysOf(plan.Steps))
	require.Equal(t, map[string]any{"host": "a", "port": json.Number("2")}, plan.Step("c[0][1]").Args)
	require.Equal(t, "other[1]", plan.Step("o[1]").Loop)
	require.Equal(t, []*Loop{
		{Key: "other[0]", Item: "other", List: map[string]any{RefKey: "hosts.items"}},
		{Key: "other[1]", Item: "other", List: map[string]any{RefKey: "hosts.items"}},
	}, plan.Loops)
	report := plan.Step("lb.report#5")
	require.Equal(t, map[string]any{
		"all": []any{map[string]any{RefKey: "d[0]"}, map[string]any{RefKey: "d[1]"}},
		"one": map[string]any{RefKey: "d[1].url"},
		"c": []any{
			[]any{map[string]any{RefKey: "c[0][0]"}, map[string]any{RefKey: "c[0][1]"}},
			[]any{map[string]any{RefKey: "c[1][0]"}},
		},
	}, report.Args)
	require.Contains(t, plan.Edges, Edge{From: "d[0]", To: "c[0][1]", Kind: EdgeSequence})
	require.Contains(t, plan.Edges, Edge{From: "o[1]", To: "lb.report#5", Kind: EdgeSequence})
	require.NotContains(t, strings.Join(keysOf(plan.Steps), " "), "checked")
}

// A list written out under a :parallel smaller than it stays a loop of
// templates, which the runtime expands, so that its scheduler can hold
// the elements to :parallel; one that :parallel does not bound is
// expanded as any list written out.
func TestWrittenListsUnderParallelStayLoops(t *testing.T) {
	plan := compileLoops(t, `(for-each ["a" "b" "c"] :as @x :parallel 2 (lb.drain :host @x :as @d))
(for-each ["p" "q"] :as @y :parallel 2 (lb.drain :host @y :as @e))
(lb.report :d @d :e @e)`)
	require.Equal(t, []string{"d", "e[0]", "e[1]", "lb.report#3"}, keysOf(plan.Steps))
	require.Equal(t, "x", plan.Step("d").Loop)
	require.Equal(t, []*Loop{{Key: "x", Item: "x", List: []any{"a", "b", "c"}, Parallel: 2}}, plan.Loops)
	require.Equal(t, map[string]any{"d": map[string]any{RefKey: "d"},
		"e": []any{map[string]any{RefKey: "e[0]"}, map[string]any{RefKey: "e[1]"}}}, plan.Step("lb.report#3").Args)
	_, diags := ReadPlan("plan.json", plan.JSON(), catalogueOf(t, "loops.yaml", loopVerbs))
	require.Empty(t, diags, "the plan check takes it")
}

// A runbook without for-each, or whose lists are all written out and
// use no other v2 form, keeps... version 2 for the iteration keys, which
// a version 1 runtime would misread.
func TestWrittenListsNeedVersion2(t *testing.T) {
	plan := compileLoops(t, `(for-each ["a"] :as @x (lb.drain :host @x))`)
	require.Equal(t, Version2, plan.SchemaVersion)
	require.Equal(t, []string{"lb.drain#1[0]"}, keysOf(plan.Steps))
	require.Nil(t, plan.Loops)
}

// A list written out longer than --max-fanout, and lists that would
// expand to more steps than a plan may hold, are E054 before anything is
// expanded.
func TestWrittenListsAreBounded(t *testing.T) {
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	list := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = `"h` + strconv.Itoa(i) + `"`
		}
		return "[" + strings.Join(items, " ") + "]"
	}
	src := "(for-each " + list(3) + " :as @x (lb.drain :host @x))"
	f, _ := lang.Parse("b.rbk", []byte(src))
	_, diags := Options{MaxFanout: 2}.Compile([]*lang.File{f}, cat)
	require.Equal(t, []string{"E054 the list of (for-each ...) holds 3 elements, more than 2 (--max-fanout)"}, codes(diags))
	plan, diags := Options{MaxFanout: 3}.Compile([]*lang.File{f}, cat)
	require.Empty(t, diags)
	require.Len(t, plan.Steps, 3)

	start := time.Now()
	nested := "(for-each " + list(400) + " :as @x (for-each " + list(400) + " :as @y (lb.drain :host @x :port 1) (lb.drain :host @y)))"
	_, diags = compileSource(t, cat, "n.rbk", []byte(nested))
	require.Equal(t, []string{"E054 the lists written out in this runbook's for-each forms expand to more than 100000 steps; a runbook may have at most 100000"}, codes(diags))
	require.Equal(t, 1, diags[0].Range.Start.Line)
	t.Logf("refused in %v", time.Since(start))
}

// An extension of a running runbook reads a template of the base as the
// list of its results, and cannot read the base's elements.
func TestExtendReadsTemplatesAsLists(t *testing.T) {
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	base := compileLoops(t, runtimeLoops)
	ext, diags := ExtendSource(base, "more.rbk", []byte(`(lb.report :urls @drained :one @drained[0].url)`), cat)
	require.Empty(t, diags)
	require.Equal(t, base.Loops, ext.Loops)
	require.Contains(t, ext.Edges, Edge{From: "drained", To: "lb.report#5", Kind: EdgeData})

	_, diags = ExtendSource(base, "more.rbk", []byte(`(lb.report :x @drained.url :h @host.name)`), cat)
	require.Equal(t, []string{
		`E032 @drained is array, which has no field "url"`,
		"E055 @host is the element of a for-each, bound only inside its body",
	}, codes(diags))
}

// TestCheckPlanHoldsLoops edits a compiled plan with loops in the ways the
// runtime could not expand, recomputes the hash each time, and requires
// each refused.
func TestCheckPlanHoldsLoops(t *testing.T) {
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	raw := compileLoops(t, runtimeLoops).JSON()
	loop := func(doc map[string]any, i int) map[string]any { return at(doc, "loops", i) }
	tests := []struct {
		name   string
		change func(doc map[string]any)
		want   string
	}{
		{"a template of no loop", func(doc map[string]any) { stepNamed(doc, "drained")["loop"] = "nowhere" },
			`E070 step "drained" is in loop "nowhere", which the plan does not have`},
		{"a loop within no loop", func(doc map[string]any) { loop(doc, 1)["within"] = "nowhere" },
			`E070 loop "port" stands within a loop the plan does not have, or more than 4 deep`},
		{"a list without its edges", func(doc map[string]any) { doc["edges"] = doc["edges"].([]any)[1:] },
			`E070 loop "host" reads step "hosts", but template "drained" has no data edge from it: the loop would be expanded before its list is known`},
		{"a list read from a template of its own", func(doc map[string]any) { loop(doc, 0)["list"] = map[string]any{"$ref": "drained"} },
			`E070 loop "host" reads step "drained", which is a hook or inside the loop`},
		{"an element of no loop around", func(doc map[string]any) {
			stepNamed(doc, "lb.report#4")["args"].(map[string]any)["x"] = map[string]any{"$item": "host.name"}
		}, `E055 step "lb.report#4" reads $item "host.name" outside the loops of item "host"`},
		{"a loop key used twice", func(doc map[string]any) { loop(doc, 1)["key"] = "host" },
			`E070 loop key "host" is empty or used twice`},
		{"a negative parallel", func(doc map[string]any) { loop(doc, 0)["parallel"] = json.Number("-1") },
			`E041 loop "host" has parallel -1`},
		{"a loop in a version 1 plan", func(doc map[string]any) { doc["schema_version"] = json.Number("1") },
			`E070 plan schema_version 1 cannot hold conditions, hooks, loops, or (str ...) of run-time values; a plan with them is version 2`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := ReadPlan("plan.json", edit(t, raw, false, tc.change), cat)
			require.Contains(t, codes(diags), tc.want)
		})
	}
}

// A plan whose loops stand within each other in a circle is refused, not
// walked forever.
func TestCheckPlanRefusesCircularLoops(t *testing.T) {
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	raw := compileLoops(t, runtimeLoops).JSON()
	circle := edit(t, raw, false, func(doc map[string]any) {
		at(doc, "loops", 0)["within"] = "port"
	})
	_, diags := ReadPlan("plan.json", circle, cat)
	require.Contains(t, codes(diags), `E070 loop "host" stands within a loop the plan does not have, or more than 4 deep`)
}
