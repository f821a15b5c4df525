package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// :gate-when (docs/design/language.md v1.4): the gate applies only when
// its condition holds, decided when the step becomes ready.
const gateWhenSource = `(m.echo :env $env :as @sys)
	(m.send :to "erase" :gate-when (= @sys.env "production") :as @erase)`

// ready → waiting_approval when the condition holds: GATE_REQUESTED names
// it, and an approval runs the step.
func TestMachineGateWhenHolds(t *testing.T) {
	f := newFixture(t, gateWhenSource, map[string]any{"env": "production"})
	require.Equal(t, rbtype.GateNone, f.step("erase").Gate, "the row has no gate until its condition is decided")
	_, calls := f.advance()
	w, calls := f.advance(succeed(callFor(t, calls, "sys"), map[string]any{"env": "production"}))
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepWaitingApproval, f.step("erase").Status, "%s", f)
	require.Equal(t, machine.GateRequestedData{Gate: rbtype.GateHumanConfirm, When: `(= @sys.env "production")`},
		eventData[machine.GateRequestedData](t, w.Events, "GATE_REQUESTED erase"))
	// Another advance does not decide it again.
	w, _ = f.advance()
	require.Empty(t, w.Events)
	w, calls, err := f.command(&machine.DecideGate{Step: "erase", Approve: true, By: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{"GATE_APPROVED erase", "STEP_STARTED erase"}, eventNames(w.Events))
	require.Equal(t, map[string]any{"to": "erase"}, callFor(t, calls, "erase").Call.Args)
}

// ready → running when it does not: no gate is asked for.
func TestMachineGateWhenDoesNotHold(t *testing.T) {
	f := newFixture(t, gateWhenSource, map[string]any{"env": "dev"})
	_, calls := f.advance()
	w, calls := f.advance(succeed(callFor(t, calls, "sys"), map[string]any{"env": "dev"}))
	require.NotContains(t, eventNames(w.Events), "GATE_REQUESTED erase")
	require.Equal(t, rbtype.StepRunning, f.step("erase").Status, "%s", f)
	callFor(t, calls, "erase")
}

// A condition that cannot be read fails the step, as a :when's does.
func TestMachineGateWhenUnreadable(t *testing.T) {
	f := newFixture(t, gateWhenSource, map[string]any{"env": "dev"})
	_, calls := f.advance()
	f.advance(succeed(callFor(t, calls, "sys"), map[string]any{"other": 1}))
	require.Equal(t, rbtype.StepFailed, f.step("erase").Status, "%s", f)
	require.Equal(t, rbtype.CodeMissingRequiredContext, f.step("erase").ErrorCode)
}

// A gate-when inside a for-each is decided per element, on the element's
// own data.
func TestMachineGateWhenPerElement(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @list)
		(for-each @list.systems :as @s
		  (m.send :to @s.name :gate-when (= @s.env "production") :as @erase))`, nil)
	_, calls := f.advance()
	f.advance(succeed(callFor(t, calls, "list"), map[string]any{"systems": []any{
		map[string]any{"name": "a", "env": "production"}, map[string]any{"name": "b", "env": "dev"}}}))
	for range 3 {
		f.advance()
	}
	require.Equal(t, rbtype.StepWaitingApproval, f.step("erase[0]").Status, "%s", f)
	require.Equal(t, rbtype.StepRunning, f.step("erase[1]").Status, "%s", f)
}
