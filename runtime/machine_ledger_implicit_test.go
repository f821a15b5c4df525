package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// implicitLedger is the ledger row the write keeps in the change of the
// step named (docs/design/runtime.md, "The job ledger and the edges"), nil when none.
func (f *fixture) implicitLedger(w driver.AdvanceWrite, key string) *rbtype.ImplicitAttempt {
	f.t.Helper()
	id := f.step(key).ID
	for _, c := range w.Steps {
		if c.ID == id {
			return c.Ledger
		}
	}
	return nil
}

// A plain attempt (succeeded, no usage, no cache) is kept in the change
// that completes its step, not as a row of its own; one that failed, or
// whose step did not complete, is a row.
func TestMachineKeepsPlainAttemptsInTheirSteps(t *testing.T) {
	f := newFixture(t, `(m.call :to "x" :as @c) (m.call :to @c.ok :as @d)`, nil)
	_, calls := f.advance()
	w, calls := f.advance(failWith(callFor(t, calls, "c"), rbtype.CodeRateLimit))
	require.Len(t, w.Attempts, 1, "a failure is a row")
	require.Nil(t, f.implicitLedger(w, "c"))
	f.now = f.now.Add(time.Hour)
	_, calls = f.advance()
	w, _ = f.advance(succeed(callFor(t, calls, "c"), map[string]any{"ok": true}))
	require.Empty(t, w.Attempts, "a plain success is no row of its own")
	l := f.implicitLedger(w, "c")
	require.NotNil(t, l)
	require.Equal(t, machine.AttemptID(f.rb.ID, "c", 2), l.ID)
	require.Equal(t, f.m.Worker, l.WorkerID)
	require.Equal(t, machine.HashJSON(f.step("c").ResolvedArgs), l.ArgsHash)
	require.Equal(t, machine.HashJSON([]byte(`{"ok":true}`)), l.ResultHash)
	require.Equal(t, rbtype.StepComplete, f.step("c").Status)
}
