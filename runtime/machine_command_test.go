package runtime

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Every command is an input of the state machine, like an outcome: one
// row each of what it does to a runbook in one round (the events it
// writes, the statuses it leaves, what starts in the same transaction),
// and of each refusal, which writes nothing at all. The tests above take
// some of them further, one command at a time.

// commandCase is one row: a runbook brought to a state by advances, a
// command, and what the round must do.
type commandCase struct {
	name   string
	source string
	// setup brings the runbook to the state the command meets.
	setup func(t *testing.T, f *fixture)
	cmd   func(f *fixture) machine.Command
	// err is the refusal expected; then nothing is written.
	err error
	// events are the events written, in order; steps the statuses after
	// (of the steps named); status the runbook's.
	events []string
	steps  map[string]rbtype.StepStatus
	status rbtype.RunbookStatus
	// started are the steps leased in the command's own transaction.
	started []string
}

// parkedAt brings a runbook whose first step is m.wait to its park.
func parkedAt(key string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		_, calls := f.advance()
		f.advance(parked(callFor(t, calls, key), ""))
	}
}

// failedAt brings a runbook to fail at one step, its dependents skipped.
func failedAt(key string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		_, calls := f.advance()
		f.advance(failWith(callFor(t, calls, key), rbtype.CodePolicyDenied))
	}
}

// completed runs a one-step runbook to its end.
func completed(t *testing.T, f *fixture) {
	_, calls := f.advance()
	f.advance(succeed(calls[0], map[string]any{}))
}

// escalatedAt brings a runbook whose wait escalates past its timeout.
func escalatedAt(key string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		parkedAt(key)(t, f)
		f.now = f.now.Add(2 * f.m.LeaseTTL).Add(f.plan.Steps[key].Execution.Timeouts.ParkTimeout.D)
		f.advance()
	}
}

func TestMachineCommands(t *testing.T) {
	const gated = `(m.approve :what "wire" :as @g) (m.echo :after @g :as @then)`
	const waits = `(m.wait :as @w) (m.echo :after @w :as @later)`
	const escalates = `(m.wait-escalate :as @w) (m.echo :after @w :as @next)`
	const retries = `(m.send :to "x" :as @s) (m.echo :after @s :as @next)`
	const hooked = `(m.wait :as @w) (on-failure (m.echo :v @failure.status :as @h))`
	cases := []commandCase{
		{name: "approve", source: gated, setup: func(_ *testing.T, f *fixture) { f.advance() },
			cmd:    func(*fixture) machine.Command { return &machine.DecideGate{Step: "g", Approve: true, By: "ops"} },
			events: []string{"GATE_APPROVED g", "STEP_STARTED g"}, started: []string{"g"},
			steps: map[string]rbtype.StepStatus{"g": rbtype.StepRunning, "then": rbtype.StepPending}, status: rbtype.RunbookExecuting},
		{name: "reject", source: gated, setup: func(_ *testing.T, f *fixture) { f.advance() },
			cmd:    func(*fixture) machine.Command { return &machine.DecideGate{Step: "g", By: "ops"} },
			events: []string{"GATE_REJECTED g", "STEP_FAILED g", "STEP_SKIPPED then", "RUNBOOK_FAILED"},
			steps:  map[string]rbtype.StepStatus{"g": rbtype.StepFailed, "then": rbtype.StepSkipped}, status: rbtype.RunbookFailed},
		{name: "decide a step that does not wait", source: gated, setup: func(_ *testing.T, f *fixture) { f.advance() },
			cmd: func(*fixture) machine.Command { return &machine.DecideGate{Step: "then", Approve: true} }, err: rbtype.ErrConflict},
		{name: "decide a step that is not there", source: gated, setup: func(_ *testing.T, f *fixture) { f.advance() },
			cmd: func(*fixture) machine.Command { return &machine.DecideGate{Step: "gg", Approve: true} }, err: rbtype.ErrNotFound},
		{name: "cancel", source: waits, setup: parkedAt("w"),
			cmd:    func(*fixture) machine.Command { return &machine.CancelRunbook{By: "ops"} },
			events: []string{"STEP_CANCELLED w", "STEP_CANCELLED later", "RUNBOOK_CANCELLED"},
			steps:  map[string]rbtype.StepStatus{"w": rbtype.StepCancelled, "later": rbtype.StepCancelled}, status: rbtype.RunbookCancelled},
		{name: "cancel a finished runbook", source: `(m.echo :v 1)`, setup: completed,
			cmd: func(*fixture) machine.Command { return &machine.CancelRunbook{By: "ops"} }, err: rbtype.ErrConflict},
		{name: "cancel a runbook with a failure hook", source: hooked, setup: parkedAt("w"),
			cmd:    func(*fixture) machine.Command { return &machine.CancelRunbook{By: "ops"} },
			events: []string{"STEP_CANCELLED w", "RUNBOOK_CANCELLED", "HOOK_STARTED h"}, started: []string{"h"},
			steps: map[string]rbtype.StepStatus{"w": rbtype.StepCancelled, "h": rbtype.StepRunning}, status: rbtype.RunbookCancelled},
		{name: "retry a failed runbook whose hooks run", source: retries + ` (on-failure (m.approve :what @failure.code :as @h))`,
			setup: func(t *testing.T, f *fixture) { failedAt("s")(t, f); f.advance() },
			cmd:   func(*fixture) machine.Command { return &machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}} }, err: rbtype.ErrConflict},
		{name: "approve a failure hook", source: retries + ` (on-failure (m.approve :what @failure.code :as @h))`,
			setup:  func(t *testing.T, f *fixture) { failedAt("s")(t, f); f.advance() },
			cmd:    func(*fixture) machine.Command { return &machine.DecideGate{Step: "h", Approve: true, By: "ops"} },
			events: []string{"GATE_APPROVED h", "HOOK_STARTED h"}, started: []string{"h"},
			steps: map[string]rbtype.StepStatus{"h": rbtype.StepRunning, "s": rbtype.StepFailed}, status: rbtype.RunbookFailed},
		{name: "close", source: `(m.echo :v 1)`,
			setup: func(t *testing.T, f *fixture) { f.rb.Status = rbtype.RunbookInProgress; completed(t, f) },
			cmd:   func(*fixture) machine.Command { return &machine.CloseRunbook{By: "agent"} }, events: []string{"RUNBOOK_CLOSED", "RUNBOOK_COMPLETED"},
			status: rbtype.RunbookComplete},
		{name: "close a runbook not held open", source: waits, setup: parkedAt("w"),
			cmd: func(*fixture) machine.Command { return &machine.CloseRunbook{By: "agent"} }, err: rbtype.ErrConflict},
		{name: "retry", source: retries, setup: failedAt("s"),
			cmd:    func(*fixture) machine.Command { return &machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}} },
			events: []string{"RUNBOOK_RETRIED", "STEP_STARTED s"}, started: []string{"s"},
			steps: map[string]rbtype.StepStatus{"s": rbtype.StepRunning, "next": rbtype.StepPending}, status: rbtype.RunbookExecuting},
		{name: "retry a running runbook", source: waits, setup: parkedAt("w"),
			cmd: func(*fixture) machine.Command { return &machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}} }, err: rbtype.ErrConflict},
		{name: "retry a step that is not there", source: retries, setup: failedAt("s"),
			cmd: func(*fixture) machine.Command {
				return &machine.RetryRunbook{O: machine.RetryOptions{Steps: []string{"t"}}}
			}, err: rbtype.ErrNotFound},
		{name: "heartbeat", source: waits, setup: parkedAt("w"),
			cmd: func(f *fixture) machine.Command {
				return &machine.Heartbeat{Key: f.invs[*f.step("w").InvocationID].CorrelationKey, Extend: verbs.MustDuration("PT2H")}
			},
			events: []string{"STEP_HEARTBEAT w"}, steps: map[string]rbtype.StepStatus{"w": rbtype.StepParked}, status: rbtype.RunbookExecuting},
		{name: "heartbeat an unknown wait", source: waits, setup: parkedAt("w"),
			cmd: func(*fixture) machine.Command {
				return &machine.Heartbeat{Key: "nope", Extend: verbs.MustDuration("PT2H")}
			}, err: rbtype.ErrConflict},
		{name: "resolve complete", source: escalates, setup: escalatedAt("w"),
			cmd: func(*fixture) machine.Command {
				return &machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveComplete, Result: json.RawMessage(`{}`), By: "ops"}}
			},
			events: []string{"STEP_RESOLVED w", "STEP_SUCCEEDED w", "STEP_STARTED next"}, started: []string{"next"},
			steps: map[string]rbtype.StepStatus{"w": rbtype.StepComplete, "next": rbtype.StepRunning}, status: rbtype.RunbookExecuting},
		{name: "resolve fail", source: escalates, setup: escalatedAt("w"),
			cmd: func(*fixture) machine.Command {
				return &machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveFail, By: "ops"}}
			},
			events: []string{"STEP_RESOLVED w", "STEP_FAILED w", "RUNBOOK_FAILED"},
			steps:  map[string]rbtype.StepStatus{"w": rbtype.StepFailed, "next": rbtype.StepSkipped}, status: rbtype.RunbookFailed},
		{name: "resolve a step not escalated", source: waits, setup: parkedAt("w"),
			cmd: func(*fixture) machine.Command {
				return &machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveFail}}
			}, err: rbtype.ErrConflict},
		{name: "regenerated", source: `(m.echo :v 1)`, setup: completed,
			cmd: func(f *fixture) machine.Command {
				return &machine.RecordRegeneration{Child: uuid.New(), Lineage: driver.Lineage{Root: f.rb.ID, Parent: f.rb.ID, Generation: 1}, By: "ops"}
			},
			events: []string{"RUNBOOK_REGENERATED", "RUNBOOK_REGENERATED"}, status: rbtype.RunbookComplete},
		{name: "regenerate a running runbook", source: waits, setup: parkedAt("w"),
			cmd: func(f *fixture) machine.Command { return &machine.RecordRegeneration{Child: uuid.New(), By: "ops"} }, err: rbtype.ErrConflict},
		{name: "extend past max-steps", source: waits,
			setup: func(t *testing.T, f *fixture) { parkedAt("w")(t, f); f.m.Limits.MaxSteps = 3 },
			cmd:   func(f *fixture) machine.Command { return extensionOf(f, "x1", "x2") }, err: machine.ErrLimit},
		{name: "extend within max-steps", source: waits,
			setup:  func(t *testing.T, f *fixture) { parkedAt("w")(t, f); f.m.Limits.MaxSteps = 3 },
			cmd:    func(f *fixture) machine.Command { return extensionOf(f, "x1") },
			events: []string{"RUNBOOK_EXTENDED"}, steps: map[string]rbtype.StepStatus{"w": rbtype.StepParked}, status: rbtype.RunbookExecuting},
		{name: "a cancel's request answered", source: waits,
			setup: func(t *testing.T, f *fixture) {
				parkedAt("w")(t, f)
				_, _, err := f.command(&machine.CancelRunbook{By: "ops"})
				require.NoError(t, err)
			},
			cmd: func(*fixture) machine.Command {
				return &machine.RecordCancelAsk{Step: "w", Attempt: 1, Typ: rbtype.EventInvocationCancelSent, Data: machine.InvocationCancelData{CorrelationKey: "k"}}
			},
			events: []string{"INVOCATION_CANCEL_SENT w"}, status: rbtype.RunbookCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.source, nil)
			c.setup(t, f)
			before, events := f.String(), len(f.events)
			w, calls, err := f.command(c.cmd(f))
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				require.Equal(t, before, f.String(), "a refused command changes nothing")
				require.Len(t, f.events, events, "and writes nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.events, eventNames(w.Events))
			for key, want := range c.steps {
				require.Equal(t, want, f.step(key).Status, key)
			}
			require.Equal(t, c.status, f.rb.Status)
			var started []string
			for _, pc := range calls {
				started = append(started, pc.Call.StepKey)
			}
			require.Equal(t, c.started, started)
			require.Equal(t, c.started, f.leasedKeys(w))
		})
	}
}

// extensionOf is an extension of the fixture's runbook adding steps of
// these keys (their plan is the runbook's own: only the count matters to
// the limit).
func extensionOf(f *fixture, keys ...string) *machine.ExtendRunbook {
	x := &machine.CompiledExtension{RunbookID: f.rb.ID, Plan: f.plan.Plan, PlanJSON: f.plan.Plan.JSON(), Version: f.rb.Version + 1, Keys: keys}
	for i, k := range keys {
		x.Added = append(x.Added, driver.NewStep{Key: k, Position: len(f.steps) + i + 1, Verb: "m.echo"})
	}
	return &machine.ExtendRunbook{Ext: x, Actor: "agent"}
}

// The mutations a command writes say who changed the runbook and how, with
// the data of its event.
func TestMachineCommandsLogTheirMutations(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s)`, nil)
	failedAt("s")(t, f)
	w, _, err := f.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops", Note: "claimed bob"}})
	require.NoError(t, err)
	require.Len(t, w.Mutations, 1)
	m := w.Mutations[0]
	require.Equal(t, driver.Mutation{RunbookID: f.rb.ID, Actor: "ops", Kind: rbtype.MutationRetry, Payload: w.Events[0].Data}, m)
	require.JSONEq(t, `{"steps":["s"],"by":"ops","note":"claimed bob"}`, string(m.Payload))
}

// A cancel undoes what the runbook did: the completed steps whose verbs
// declare a compensation are undone, newest first, as after a failure, and
// the runbook finishes once they have run; a cancel that says not to
// leaves them, and the runbook finishes at once.
func TestMachineCancelCompensates(t *testing.T) {
	const source = `(m.reserve :what "car" :as @car) (m.reserve :what "hotel" :after @car :as @hotel)
		(m.approve :what "pay" :after @hotel :as @pay)`
	toTheGate := func(t *testing.T) *fixture {
		f := newFixture(t, source, nil)
		_, calls := f.advance()
		_, calls = f.advance(succeed(callFor(t, calls, "car"), map[string]any{"id": "c1"}))
		f.advance(succeed(callFor(t, calls, "hotel"), map[string]any{"id": "h1"}))
		require.Equal(t, rbtype.StepWaitingApproval, f.step("pay").Status)
		return f
	}
	t.Run("compensate", func(t *testing.T) {
		f := toTheGate(t)
		w, _, err := f.command(&machine.CancelRunbook{By: "ops", Compensate: true})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"car", "hotel"}, w.Compensate[f.rb.ID])
		require.Equal(t, machine.RunbookCancelledData{By: "ops", Compensate: true}, eventData[machine.RunbookCancelledData](t, w.Events, "RUNBOOK_CANCELLED"))
		require.Equal(t, rbtype.RunbookCancelled, f.rb.Status)
		require.Nil(t, f.rb.FinishedAt, "not finished while compensations are to run")
		require.Equal(t, f.now, *f.rb.WakeAt)

		_, calls := f.advance()
		hotel := callFor(t, calls, "hotel")
		require.Equal(t, machine.CallCompensation, hotel.Purpose, "the newest completion first")
		_, calls = f.advance(succeed(hotel, map[string]any{}))
		car := callFor(t, calls, "car")
		w, _ = f.advance(succeed(car, map[string]any{}))
		require.Equal(t, []string{"COMPENSATION_SUCCEEDED car"}, eventNames(w.Events))
		require.Equal(t, rbtype.CompensationComplete, f.step("hotel").CompensationStatus)
		require.Equal(t, rbtype.CompensationComplete, f.step("car").CompensationStatus)
		require.NotNil(t, f.rb.FinishedAt, "finished once they have run")
		require.Equal(t, rbtype.RunbookCancelled, f.rb.Status)
	})
	t.Run("no compensate", func(t *testing.T) {
		f := toTheGate(t)
		w, _, err := f.command(&machine.CancelRunbook{By: "ops"})
		require.NoError(t, err)
		require.Empty(t, w.Compensate)
		require.NotNil(t, f.rb.FinishedAt)
		_, calls := f.advance()
		require.Empty(t, calls)
		require.Equal(t, rbtype.CompensationNone, f.step("car").CompensationStatus)
	})
}
