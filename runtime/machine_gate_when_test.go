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

// A policy's gate, frozen on the row at admission, applies whatever the
// :gate-when says: a runbook cannot lift its tenant's gate.
func TestMachineGateWhenKeepsThePolicysGate(t *testing.T) {
	f := newFixture(t, gateWhenSource, map[string]any{"env": "dev"})
	f.step("erase").Gate = rbtype.GateHumanConfirm // as admission's gate() writes it
	_, calls := f.advance()
	w, _ := f.advance(succeed(callFor(t, calls, "sys"), map[string]any{"env": "dev"}))
	require.Equal(t, rbtype.StepWaitingApproval, f.step("erase").Status, "%s", f)
	require.Equal(t, machine.GateRequestedData{Gate: rbtype.GateHumanConfirm}, eventData[machine.GateRequestedData](t, w.Events, "GATE_REQUESTED erase"))
}

// :approvers (docs/design/language.md v1.4): only a token of the group,
// or one that may decide any (an admin), decides; another is refused,
// naming the group, and the step keeps waiting.
func TestMachineApprovers(t *testing.T) {
	f := newFixture(t, `(m.approve :what "erase" :approvers "compliance" :as @g)`, nil)
	w, _ := f.advance()
	require.Equal(t, machine.GateRequestedData{Gate: rbtype.GateHumanConfirm, Approvers: "compliance"}, eventData[machine.GateRequestedData](t, w.Events, "GATE_REQUESTED g"))
	for _, groups := range [][]string{nil, {"dpo", "ops"}} {
		_, _, err := f.command(&machine.DecideGate{Step: "g", Approve: true, By: "bob", Groups: groups})
		require.ErrorIs(t, err, rbtype.ErrForbidden)
		require.ErrorContains(t, err, `is decided only by a token of group "compliance"`)
		require.Equal(t, rbtype.StepWaitingApproval, f.step("g").Status)
	}
	_, _, err := f.command(&machine.DecideGate{Step: "g", By: "carol", Groups: []string{"dpo", "compliance"}})
	require.NoError(t, err, "a token of the group decides (here, rejects)")
	require.Equal(t, rbtype.StepFailed, f.step("g").Status)

	admin := newFixture(t, `(m.approve :what "erase" :approvers "compliance" :as @g)`, nil)
	admin.advance()
	_, _, err = admin.command(&machine.DecideGate{Step: "g", Approve: true, By: "root", AnyGroup: true})
	require.NoError(t, err, "an admin always may")
}
