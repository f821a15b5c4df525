package verbs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

const minimal = `- name: open-case
  domain: kyc
  execution:
    kind: sync
    handler: core.echo
    side_effects: none
`

func diagLines(ds lang.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		r := d.Range
		out[i] = fmt.Sprintf("%d:%d-%d:%d %s %s", r.Start.Line, r.Start.Column, r.End.Line, r.End.Column, d.Code, d.Text())
	}
	return out
}

func TestParseDefinitionDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"not YAML", "- name: [unclosed\n", []string{
			"1:1-1:18 V001 not valid YAML: did not find expected ',' or ']'",
		}},
		{"not a list", "name: x\n", []string{
			`1:1-1:8 V001 a verb file must be a YAML list of definitions (each item starting with "- name:")`,
		}},
		{"empty file", "", []string{
			"1:1-1:1 V001 the file is empty; a verb file is a YAML list of definitions",
		}},
		{"repeated key", minimal + "  name: again\n", []string{
			`7:3-7:7 V001 field "name" is given twice`,
		}},
		{"unknown field with suggestion", minimal + "  descripton: hi\n", []string{
			`7:3-7:13 V002 unknown field "descripton" in the definition (valid fields: cost, description, domain, execution, input_schema, name, outcome, output_schema, policy_tags, returns, risk) (did you mean "description"?)`,
		}},
		{"returns misspelt", minimal + "  return: case_id\n", []string{
			`7:3-7:9 V002 unknown field "return" in the definition (valid fields: cost, description, domain, execution, input_schema, name, outcome, output_schema, policy_tags, returns, risk) (did you mean "returns"?)`,
		}},
		{"returns not a field name", minimal + "  returns: case.id\n", []string{
			`7:12-7:19 V004 returns "case.id" is not an identifier ([A-Za-z_][A-Za-z0-9_-]*)`,
		}},
		{"unknown risk", minimal + "  risk: hihg\n", []string{
			`7:9-7:13 V004 unknown risk "hihg" (expected low, medium, high) (did you mean "high"?)`,
		}},
		{"policy tags not a list", minimal + "  policy_tags: external_send\n", []string{
			`7:16-7:29 V004 policy_tags must be a list of tags, as in [external_send, pii]`,
		}},
		{"a policy tag that is not an identifier", minimal + "  policy_tags: [External-Send, pii, pii]\n", []string{
			`7:17-7:30 V004 policy tag "External-Send" is not a lower-case identifier ([a-z][a-z0-9_]*, as in external_send)`,
			`7:37-7:40 V004 policy tag "pii" is given twice`,
		}},
		{"returns not a single value", minimal + "  returns: [a, b]\n", []string{
			`7:12-7:18 V004 returns must be a single value`,
		}},
		{"unknown nested field", minimal + "    retry: {max_attempt: 3}\n", []string{
			`7:13-7:24 V002 unknown field "max_attempt" in execution.retry (valid fields: backoff, base_delay, by_code, max_attempts, max_delay) (did you mean "max_attempts"?)`,
		}},
		{"missing fields", "- name: x\n  domain: y\n  execution: {kind: sync}\n", []string{
			`3:14-3:26 V003 missing required field "handler" in execution`,
			`3:14-3:26 V003 missing required field "side_effects" in execution`,
		}},
		{"missing execution", "- name: x\n  domain: y\n", []string{
			`1:3-1:10 V003 missing required field "execution" in the definition`,
		}},
		{"bad kind", "- name: x\n  domain: y\n  execution: {kind: syn, handler: core.echo, side_effects: none}\n", []string{
			`3:21-3:24 V004 unknown kind "syn" (expected sync, durable) (did you mean "sync"?)`,
		}},
		{"bad enumerations", minimal + "    gate: humn_confirm\n    idempotency: {scope: step}\n    retry: {backoff: linear}\n", []string{
			`7:11-7:23 V004 unknown gate "humn_confirm" (expected none, human_confirm) (did you mean "human_confirm"?)`,
			`8:26-8:30 V004 unknown idempotency scope "step" (expected runbook_step, runbook, global)`,
			`9:22-9:28 V004 unknown backoff "linear" (expected exponential, fixed)`,
		}},
		{"bad durations", minimal + "    timeouts: {run_timeout: 30s}\n    retry: {base_delay: P1M, max_attempts: 0}\n", []string{
			`7:29-7:32 V004 bad duration for execution.timeouts.run_timeout: "30s" is not an ISO 8601 duration (examples: PT30S, PT5M, P14D)`,
			`8:25-8:28 V004 bad duration for execution.retry.base_delay: "P1M" uses years or months, whose length varies; use days (P30D) instead`,
			`8:44-8:45 V004 execution.retry.max_attempts must be a whole number from 1 to 100 (1 means no retry)`,
		}},
		{"delays the wrong way round", minimal + "    retry: {max_attempts: 3, base_delay: PT1M, max_delay: PT10S}\n", []string{
			`7:59-7:64 V004 retry.max_delay PT10S is shorter than retry.base_delay PT1M`,
		}},
		{"bad identifier", "- name: open case\n  domain: kyc\n  execution: {kind: sync, handler: core.echo, side_effects: none}\n", []string{
			`1:9-1:18 V004 name "open case" is not an identifier ([A-Za-z_][A-Za-z0-9_-]*)`,
		}},
		{"bad domain", "- name: create\n  domain: capital..share-class\n  execution: {kind: sync, handler: core.echo, side_effects: none}\n", []string{
			`2:11-2:31 V004 domain "capital..share-class" is not one or more identifiers joined by dots ([A-Za-z_][A-Za-z0-9_-]*, as in kyc or capital.share-class)`,
		}},
		{"park_timeout on a sync verb", minimal + "    timeouts: {park_timeout: P1D}\n", []string{
			`7:30-7:33 V004 park_timeout applies only to durable verbs; "kyc.open-case" is sync`,
		}},
		{"invalid schema", minimal + "  input_schema:\n    properties:\n      n: {type: intger}\n", []string{
			`9:17-9:23 V005 invalid input_schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`,
		}},
		{"unknown schema keyword", minimal + "  input_schema:\n    requird: [n]\n    properties:\n      n: {type: integer, minimun: 1}\n", []string{
			`8:5-8:12 V005 unknown JSON Schema keyword "requird" in input_schema (did you mean "required"?)`,
			`10:26-10:33 V005 unknown JSON Schema keyword "minimun" in input_schema (did you mean "minimum"?)`,
		}},
		{"arguments outside properties", minimal + "  input_schema:\n    case-id: {type: uuid}\n", []string{
			`8:5-8:12 V005 unknown JSON Schema keyword "case-id" in input_schema; arguments are declared under properties:`,
		}},
		{"durable without park_timeout", "- name: wait\n  domain: kyc\n  execution: {kind: durable, handler: await.notification, side_effects: none}\n", []string{
			`3:21-3:28 V010 durable verb "kyc.wait" has no timeouts.park_timeout; nothing may wait forever`,
		}},
		{"key field not an argument", minimal + "    idempotency: {key_fields: [case-id, case_id]}\n  input_schema:\n    properties:\n      case-id: {type: uuid}\n", []string{
			`7:41-7:48 V013 idempotency key field "case_id" is not an argument in input_schema (did you mean "case-id"?)`,
		}},
		{"bad compensation reference", minimal + "    compensation: {verb: kyc.undo, args: {x: \"@arg.x\"}}\n", []string{
			`7:46-7:54 V014 compensation arg "@arg.x" must be a literal, "@args.<path>" or "@result.<path>"`,
		}},
		{"a cache on an external call", strings.Replace(minimal, "none", "external_call", 1) + "    cache: {policy: ttl, ttl: PT1H}\n", []string{
			`7:21-7:24 V020 cache policy "ttl" on verb "kyc.open-case", whose side_effects are external_call: a cache hit would skip the effect; use policy never, or the global idempotency scope for an effect that must happen once ever`,
		}},
		{"a cache on a durable verb", "- name: wait\n  domain: kyc\n  execution:\n    kind: durable\n    handler: await.notification\n    side_effects: none\n" +
			"    timeouts: {park_timeout: P1D}\n    cache: {policy: ttl, ttl: PT1H}\n", []string{
			`8:21-8:24 V020 cache policy "ttl" on durable verb "kyc.wait": a wait's answer comes from the outside world each time; use policy never`,
		}},
		{"external results reused forever", "- name: look\n  domain: kyc\n  execution: {kind: sync, handler: core.echo, side_effects: none, cache: {policy: reuse}}\n", []string{
			`3:83-3:88 V021 cache policy reuse on verb "kyc.look", whose determinism is external: the world it reads may change, so its results may only be reused for a while; use policy ttl with a ttl, or declare determinism pure or stable`,
		}},
		{"ttl without a ttl", "- name: look\n  domain: kyc\n  execution: {kind: sync, handler: core.echo, side_effects: none, cache: {policy: ttl}}\n", []string{
			`3:83-3:86 V022 cache policy ttl on verb "kyc.look" needs a ttl (an ISO 8601 duration such as PT6H)`,
		}},
		{"a high-risk verb at level opaque", strings.Replace(minimal, "  execution:", "  risk: high\n  execution:", 1), []string{
			`3:9-3:13 V030 verb "kyc.open-case" is risk high at execution level opaque: a high-risk call must be rehearsed; declare execution.level full (dry run, verify, commit) or guarded`,
		}},
		{"bad determinism", minimal + "    determinism: stabel\n", []string{
			`7:18-7:24 V004 unknown determinism "stabel" (expected pure, stable, external) (did you mean "stable"?)`,
		}},
		{"escalation without escalating", minimal + "    timeouts: {escalation: {verb: ops.page}}\n", []string{
			`7:28-7:45 V004 timeouts.escalation runs only when a park escalates; "kyc.open-case" needs timeouts.on_timeout: escalate`,
		}},
		{"escalation reading a result", "- name: wait\n  domain: kyc\n  execution:\n    kind: durable\n    handler: await.notification\n    side_effects: none\n" +
			"    timeouts:\n      park_timeout: P1D\n      on_timeout: escalate\n      escalation: {verb: ops.page, args: {x: \"@result.id\", y: \"@argz\"}}\n", []string{
			`10:63-10:70 V014 escalation arg "@argz" must be a literal, "@args.<path>" or "@result.<path>"`,
			`10:46-10:58 V014 escalation arg "x": "@result.id" refers to a result, and a step that escalates has none; use "@args.<path>" or a literal`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs, diags := Parse("v.yaml", []byte(tt.src))
			require.Equal(t, tt.want, diagLines(diags))
			require.Empty(t, defs, "a definition with errors is left out")
		})
	}
}

func TestParseDefinitionDefaults(t *testing.T) {
	defs, diags := Parse("v.yaml", []byte(minimal))
	require.Empty(t, diags)
	require.Len(t, defs, 1)
	d := defs[0]
	require.Equal(t, "kyc.open-case", d.FullName())
	e := d.Execution
	require.Equal(t, rbtype.ScopeRunbookStep, e.Idempotency.Scope)
	require.Equal(t, 30*time.Second, e.Timeouts.RunTimeout.D)
	require.Equal(t, rbtype.OnTimeoutFail, e.Timeouts.OnTimeout)
	require.Nil(t, e.Timeouts.ParkTimeout)
	require.Equal(t, Retry{MaxAttempts: 1, Backoff: rbtype.BackoffExponential, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay,
		ByCode: DefaultByCode()}, e.Retry, "a verb that declares no attempts gets the table of docs/design/semantics.md section 12")
	require.Equal(t, rbtype.GateNone, e.Gate)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, d.Hash)

	// The hash covers content, not layout: the same definition written in
	// flow style hashes the same.
	flow := "- {name: open-case, domain: kyc, execution: {kind: sync, handler: core.echo, side_effects: none}}\n"
	again, diags := Parse("w.yaml", []byte(flow))
	require.Empty(t, diags)
	require.Equal(t, d.Hash, again[0].Hash)
}

func TestRetryDelay(t *testing.T) {
	r := Retry{MaxAttempts: 5, Backoff: rbtype.BackoffExponential, BaseDelay: MustDuration("PT2S"), MaxDelay: MustDuration("PT10S")}
	require.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second},
		[]time.Duration{r.Delay(1), r.Delay(2), r.Delay(3), r.Delay(4)})
	r.Backoff = rbtype.BackoffFixed
	require.Equal(t, 2*time.Second, r.Delay(4))
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT30S": 30 * time.Second, "PT5M": 5 * time.Minute, "P14D": 14 * 24 * time.Hour,
		"P1DT2H": 26 * time.Hour, "PT0.5S": 500 * time.Millisecond, "P1W": 7 * 24 * time.Hour,
	} {
		d, err := ParseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, d.D, in)
		require.Equal(t, in, d.String())
	}
	for _, bad := range []string{"", "30s", "P", "PT", "P1Y", "P2M", "-PT5S", "PT0S", "P1H"} {
		_, err := ParseDuration(bad)
		require.Error(t, err, bad)
	}
	b, err := json.Marshal(MustDuration("P9D"))
	require.NoError(t, err)
	require.Equal(t, `"P9D"`, string(b))
	var back Duration
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, 9*24*time.Hour, back.D)
}

func TestLoadPathsDuplicateVerb(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(minimal), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b.yml"), []byte("# again\n"+minimal), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a verb file"), 0o644))

	loaded, diags, err := LoadPaths([]string{dir})
	require.NoError(t, err)
	require.Len(t, loaded.Definitions, 1)
	require.Len(t, loaded.Sources, 2, "only .yaml and .yml files are read")
	require.Equal(t, []string{`2:9-2:18 V012 verb "kyc.open-case" is defined twice`}, diagLines(diags))
	require.Equal(t, filepath.Join(dir, "sub", "b.yml"), diags[0].Range.Filename)
	require.Equal(t, filepath.Join(dir, "a.yaml"), diags[0].Related[0].Range.Filename)

	_, _, err = LoadPaths([]string{filepath.Join(dir, "missing")})
	require.ErrorContains(t, err, "error reading verbs")
}

// TestLoadPathsDuplicateOfABrokenVerb: a verb defined twice is V012 even
// when one definition has errors of its own; the one without errors is
// kept, so runbooks calling it are not also told it does not exist.
func TestLoadPathsDuplicateOfABrokenVerb(t *testing.T) {
	broken := strings.Replace(minimal, "kind: sync", "kind: syn", 1)
	cases := []struct {
		name  string
		files map[string]string
		want  []string // file:diagnostic
	}{
		{"broken first, in another file", map[string]string{"a.yaml": broken, "b.yaml": minimal}, []string{
			`a.yaml:4:11-4:14 V004 unknown kind "syn" (expected sync, durable) (did you mean "sync"?)`,
			`b.yaml:1:9-1:18 V012 verb "kyc.open-case" is defined twice (first: a.yaml:1:9)`,
		}},
		{"broken first, in the same file", map[string]string{"a.yaml": broken + minimal}, []string{
			`a.yaml:4:11-4:14 V004 unknown kind "syn" (expected sync, durable) (did you mean "sync"?)`,
			`a.yaml:7:9-7:18 V012 verb "kyc.open-case" is defined twice (first: a.yaml:1:9)`,
		}},
		{"broken second", map[string]string{"a.yaml": minimal, "b.yaml": broken}, []string{
			`b.yaml:1:9-1:18 V012 verb "kyc.open-case" is defined twice (first: a.yaml:1:9)`,
			`b.yaml:4:11-4:14 V004 unknown kind "syn" (expected sync, durable) (did you mean "sync"?)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, src := range c.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
			}
			loaded, diags, err := LoadPaths([]string{dir})
			require.NoError(t, err)
			var got []string
			for i, line := range diagLines(diags) {
				d := diags[i]
				if len(d.Related) > 0 {
					r := d.Related[0].Range
					line += fmt.Sprintf(" (first: %s:%d:%d)", filepath.Base(r.Filename), r.Start.Line, r.Start.Column)
				}
				got = append(got, filepath.Base(d.Range.Filename)+":"+line)
			}
			require.Equal(t, c.want, got)
			require.Len(t, loaded.Definitions, 1)
			require.Equal(t, "kyc.open-case", loaded.Definitions[0].FullName())
			require.Equal(t, "sync", string(loaded.Definitions[0].Execution.Kind))
		})
	}
}

func TestParseDefinitionReturns(t *testing.T) {
	defs, diags := Parse("v.yaml", []byte(minimal+"  returns: case_id\n"))
	require.Empty(t, diags)
	require.Equal(t, "case_id", defs[0].Returns)
	require.Equal(t, 7, defs[0].FieldRange("returns").Start.Line)

	// A verb without returns hashes as it did before the field existed.
	plain, diags := Parse("v.yaml", []byte(minimal))
	require.Empty(t, diags)
	b, err := json.Marshal(plain[0])
	require.NoError(t, err)
	require.NotContains(t, string(b), "returns")
	require.NotEqual(t, plain[0].Hash, defs[0].Hash, "returns changes what a nested call means, so it is part of the definition's hash")
}

// TestParsePolicyTags: a verb's policy_tags are frozen into its execution
// block, in the order written; a verb without them hashes as before tags
// existed (the block's JSON leaves them out).
func TestParsePolicyTags(t *testing.T) {
	defs, diags := Parse("x.yaml", []byte(minimal+"  policy_tags: [external_send, pii]\n"))
	require.Empty(t, diags)
	require.Equal(t, []string{"external_send", "pii"}, defs[0].Execution.PolicyTags)
	block, err := json.Marshal(defs[0].Execution)
	require.NoError(t, err)
	require.Contains(t, string(block), `"policy_tags":["external_send","pii"]`)

	plain, diags := Parse("x.yaml", []byte(minimal))
	require.Empty(t, diags)
	block, err = json.Marshal(plain[0].Execution)
	require.NoError(t, err)
	require.NotContains(t, string(block), "policy_tags")
	require.NotEqual(t, plain[0].Hash, defs[0].Hash, "the tags are part of the definition")
}

// A high-risk verb's execution block says the gate that applies to its
// steps, human_confirm, so that what every plan, `rbc verbs` and the
// language server show is the truth; writing gate: none on one is V004.
func TestHighRiskVerbsFreezeTheirGate(t *testing.T) {
	high := minimal + "  risk: high\n"
	high = strings.Replace(high, "side_effects: none", "side_effects: external_call\n    level: guarded", 1)
	defs, diags := Parse("v.yaml", []byte(high))
	require.Empty(t, diags)
	require.Equal(t, rbtype.GateHumanConfirm, defs[0].Execution.Gate)
	require.Equal(t, rbtype.GateHumanConfirm, defs[0].Gate())

	contradiction := strings.Replace(high, "level: guarded", "level: guarded\n    gate: none", 1)
	defs, diags = Parse("v.yaml", []byte(contradiction))
	require.Empty(t, defs)
	require.Equal(t, []string{
		`8:11-8:15 V004 verb "kyc.open-case" is risk high, and a high-risk step always waits at a human_confirm gate; remove gate: none (or lower the risk)`,
	}, diagLines(diags))
}

// A definition with errors is kept apart as invalid, with what decoded,
// unless another definition of its name is valid.
func TestLoadPathsKeepsInvalidDefinitionsApart(t *testing.T) {
	dir := t.TempDir()
	broken := strings.Replace(minimal, "kind: sync", "kind: sync\n    hander: x", 1)
	other := strings.Replace(broken, "open-case", "close-case", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(broken+other+minimal), 0o644))
	loaded, diags, err := LoadPaths([]string{dir})
	require.NoError(t, err)
	require.Len(t, diags, 3, "two V002 and a V012")
	require.Equal(t, []string{"kyc.open-case"}, names(loaded.Definitions))
	require.Equal(t, []string{"kyc.close-case"}, names(loaded.Invalid), "open-case has a valid definition too")
	require.Equal(t, "core.echo", loaded.Invalid[0].Execution.Handler, "what decoded is kept")
}

func names(defs []*Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.FullName())
	}
	return out
}
