package machine

import (
	"encoding/json"
	"maps"

	"github.com/runbookdev/runbook/rbtype"
)

// A dry run finishes what it can (docs/reference/cli.md, "--dry-run"): a
// step that a dry run does not call for real (its handler cannot
// rehearse, it has side effects, or its inputs come from such a step)
// completes as simulated with a result later steps may read, typed as
// its verb's output_schema declares. It never fails for lack of a real
// result: the verb's output_schema is not held against a rehearsal,
// whose answer describes the request rather than the provider's reply.

// dryRunField marks a placeholder result as a dry run's, where the
// verb's output_schema allows a field it does not list.
const dryRunField = "dry_run"

// completeDryRun records a dry run's step as simulated, with
// dryRunResult's value: STEP_DRY_RUN, then STEP_SUCCEEDED marked
// simulated. rehearsed is what the handler's dry run returned, or nil
// when it was not called; reason says why the step was simulated when
// not for its side effects.
func (t *transition) completeDryRun(s *rbtype.Step, rehearsed json.RawMessage, reason string) {
	value, placeholder := t.dryRunResult(s, rehearsed)
	level := rbtype.LevelOpaque
	if ps, ok := t.plan.Steps[s.Key]; ok {
		level = ps.Execution.Level.Effective()
	}
	args := t.argsHash[s.ID]
	if args == "" && len(s.ResolvedArgs) > 0 {
		args = HashJSON(s.ResolvedArgs)
	}
	t.event(rbtype.EventStepDryRun, s, StepDryRunData{
		Level: level, ArgsHash: args, ResultHash: HashJSON(value), Placeholder: placeholder, Reason: reason,
	})
	t.complete(s, value, true, StepSucceededData{Reason: reason})
}

// dryRunResult is the result a dry run records for s: what its handler's
// dry run returned, when that matches the verb's output_schema (a
// validation endpoint's answer, say); otherwise a placeholder built from
// the schema (placeholder is true), holding the rehearsal's own fields
// and "dry_run": true where the schema allows them.
func (t *transition) dryRunResult(s *rbtype.Step, rehearsed json.RawMessage) (value json.RawMessage, placeholder bool) {
	var got any
	if len(rehearsed) > 0 {
		if v, err := rbtype.DecodeJSON(rehearsed); err == nil {
			got = v
		}
	}
	info, ok := t.plan.Plan.Verbs[s.Verb]
	if !ok || info.OutputSchema == nil {
		if got != nil {
			return rehearsed, false
		}
		return json.RawMessage(`{"` + dryRunField + `":true}`), true
	}
	schema := info.OutputSchema
	if got != nil && schema.Validate(got) == nil {
		return rehearsed, false
	}
	base := schema.Placeholder()
	candidates := []any{base}
	if obj, ok := base.(map[string]any); ok {
		marked := maps.Clone(obj)
		marked[dryRunField] = true
		withRehearsal := maps.Clone(marked)
		if r, ok := got.(map[string]any); ok {
			for k, v := range r {
				if _, declared := obj[k]; !declared {
					withRehearsal[k] = v
				}
			}
		}
		candidates = []any{withRehearsal, marked, base}
	}
	for _, c := range candidates {
		if schema.Validate(c) == nil {
			return mustJSON(c), true
		}
	}
	// The schema asks for what a placeholder cannot make up (a pattern,
	// say): the dry run goes on with the closest shape.
	return mustJSON(base), true
}

// mustJSON encodes a value decoded from JSON or built of JSON's types.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
