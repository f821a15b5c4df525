package machine

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Execution levels (docs/design/semantics.md section 7). A step of a full verb is
// rehearsed on every attempt: the handler's dry run, then verify (the dry
// run's output against the verb's output_schema and the step's :expect),
// then the real call; a verify failure fails the step with VERIFY_FAILED,
// never retried, and nothing is committed. A guarded step dry-runs when
// its handler can, then commits. The rehearsal happens in the worker, in
// the call's slot and under its lease; what it saw is recorded with the
// call's outcome, in the transaction that records the outcome: STEP_DRY_RUN,
// then STEP_VERIFIED or STEP_VERIFY_FAILED, before STEP_SUCCEEDED.

// Rehearsal is what a step's protocol needs to rehearse a call, decided
// when the call is leased.
type Rehearsal struct {
	level  rbtype.Level
	expect map[string]any
	output *verbs.Schema // the verb's output_schema, or nil
}

// Rehearsed is what a rehearsal saw, for the ledger.
type Rehearsed struct {
	Level      rbtype.Level `json:"level"`
	ArgsHash   string       `json:"args_hash"`
	ResultHash string       `json:"result_hash,omitempty"`
	// Ran says the handler could dry-run (a guarded step whose handler
	// cannot goes straight to the commit).
	Ran bool `json:"-"`
	// Verified is nil when nothing was verified (guarded), else whether
	// the dry run passed.
	Verified *bool  `json:"-"`
	Problem  string `json:"-"`
}

// StepDryRunData is the data of STEP_DRY_RUN: the level, and the hashes
// of the arguments and of what the dry run returned.
type StepDryRunData struct {
	Level      rbtype.Level `json:"level"`
	ArgsHash   string       `json:"args_hash"`
	ResultHash string       `json:"result_hash,omitempty"`
	// Placeholder says, in a dry-run runbook, that the result is built
	// from the verb's output_schema rather than returned by the handler
	// (dryrun_result.go); Reason says why the step was simulated when not
	// for its side effects.
	Placeholder bool   `json:"placeholder,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// StepVerifyFailedData is the data of STEP_VERIFY_FAILED.
type StepVerifyFailedData struct {
	Message string `json:"message"`
}

// rehearsalFor is the rehearsal a step's call needs, or nil for an opaque
// step, a dry-run runbook (whose calls are all rehearsals already) and
// every call that is not a step's own.
func (t *transition) rehearsalFor(p *prepared, dryRun bool) *Rehearsal {
	level := p.exec.Level.Effective()
	if level == rbtype.LevelOpaque || dryRun || t.Rb.Mode == rbtype.ModeDryRun {
		return nil
	}
	r := &Rehearsal{level: level}
	if ps, ok := t.plan.Steps[p.step.Key]; ok {
		r.expect = ps.Expect
	}
	if info, ok := t.plan.Plan.Verbs[p.step.Verb]; ok {
		r.output = info.OutputSchema
	}
	return r
}

// Level is the execution level the Rehearsal is for: full verifies what
// the dry run returned, guarded only requires that it ran.
func (r *Rehearsal) Level() rbtype.Level { return r.level }

// Check records what a dry run returned (value, already encoded) in seen
// and, at level full, verifies it: it returns VERIFY_FAILED when the
// output does not match the output_schema or an :expect path, nil to go
// on to the commit. The dry run itself is the engine's to make (it is a
// handler call); this is what the plan asks of its answer.
func (r *Rehearsal) Check(seen *Rehearsed, value json.RawMessage) error {
	seen.Ran = true
	seen.ResultHash = HashJSON(value)
	if r.level != rbtype.LevelFull {
		return nil
	}
	ok := true
	seen.Verified = &ok
	if problem := r.verify(value); problem != "" {
		ok = false
		seen.Problem = problem
		return handler.Errorf(rbtype.CodeVerifyFailed, "the dry run did not pass verification, so nothing was committed: %s", problem)
	}
	return nil
}

// verify checks a dry run's output against the output_schema and each
// :expect path, and says what is wrong, or "".
func (r *Rehearsal) verify(value json.RawMessage) string {
	got, err := rbtype.DecodeJSON(value)
	if err != nil {
		return "its output is not JSON: " + err.Error()
	}
	if r.output != nil {
		if err := r.output.Validate(got); err != nil {
			return "its output does not match the output_schema: " + err.Error()
		}
	}
	for _, path := range slices.Sorted(maps.Keys(r.expect)) {
		want := r.expect[path]
		have, found := lookupPath(got, path)
		switch {
		case !found:
			return fmt.Sprintf("expected %s = %s, but the output has no %s", path, jsonText(want), path)
		case !sameJSONValue(have, want):
			return fmt.Sprintf("expected %s = %s, got %s", path, jsonText(want), jsonText(have))
		}
	}
	return ""
}

// lookupPath follows a dotted path through objects.
func lookupPath(v any, path string) (any, bool) {
	for _, field := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[field]; !ok {
			return nil, false
		}
	}
	return v, true
}

// sameJSONValue compares two JSON values as JSON: numbers by their
// encoding's value, so 5 and 5.0 agree.
func sameJSONValue(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	da, err1 := rbtype.DecodeJSON(ja)
	db, err2 := rbtype.DecodeJSON(jb)
	if err1 != nil || err2 != nil {
		return false
	}
	if na, ok := da.(json.Number); ok {
		if nb, ok := db.(json.Number); ok {
			fa, e1 := na.Float64()
			fb, e2 := nb.Float64()
			return e1 == nil && e2 == nil && fa == fb
		}
	}
	return reflect.DeepEqual(da, db)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// recordRehearsal writes what a Rehearsal saw into the ledger, before the
// outcome's own events.
func (t *transition) recordRehearsal(s *rbtype.Step, seen *Rehearsed) {
	if seen == nil {
		return
	}
	if seen.Ran {
		t.event(rbtype.EventStepDryRun, s, StepDryRunData{Level: seen.Level, ArgsHash: seen.ArgsHash, ResultHash: seen.ResultHash})
	}
	switch {
	case seen.Verified == nil:
	case *seen.Verified:
		t.event(rbtype.EventStepVerified, s, nil)
	default:
		t.event(rbtype.EventStepVerifyFailed, s, StepVerifyFailedData{Message: seen.Problem})
	}
}
