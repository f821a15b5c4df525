package compiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// An escalation verb no step calls is frozen into the plan with its
// execution block, as a compensation verb is, so that the runtime can
// page from the plan alone; a plan whose verbs table lacks it is refused.
func TestEscalationVerbIsFrozenAndChecked(t *testing.T) {
	defs, diags := verbs.Parse("esc.yaml", []byte(`
- name: page
  domain: ops
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: wait
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P1D, on_timeout: escalate, escalation: {verb: ops.page, args: {case: "@args.case"}}}
  input_schema:
    properties:
      case: {type: string}
`))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, registry.NewHandlers())
	require.Empty(t, diags)
	plan, diags := compileSource(t, cat, "esc.rbk", []byte(`(t.wait :case "c-1" :as @w)`))
	require.False(t, diags.HasErrors(), diags.Error())
	info, ok := plan.Verbs["ops.page"]
	require.True(t, ok, "the escalation verb is in the verbs table")
	require.NotNil(t, info.Execution)
	require.Equal(t, "core.echo", info.Execution.Handler)
	require.Equal(t, &verbs.Compensation{Verb: "ops.page", Args: map[string]any{"case": "@args.case"}},
		plan.Steps[0].Execution.Timeouts.Escalation)

	_, diags = ReadPlan("plan.json", plan.JSON(), cat)
	require.False(t, diags.HasErrors(), diags.Error())
	lacking := edit(t, plan.JSON(), false, func(doc map[string]any) { delete(at(doc, "verbs"), "ops.page") })
	_, diags = ReadPlan("plan.json", lacking, cat)
	require.True(t, diags.HasErrors())
	require.Contains(t, diags.Error(), `the plan's verbs table lacks ops.page, which step "w" escalates to`)
}
