package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// :on-failure by error code (docs/design/language.md v1.4): a failure
// takes the mode its code names, every other code the default entry's.
func TestMachineFailureModeByCode(t *testing.T) {
	const src = `(m.send :to "x" :on-failure {"INVALID_INPUT" "abort" :default "continue"} :as @a)
		(m.echo :v 1 :after @a :as @b)
		(m.echo :v 2 :as @c)`
	for _, tc := range []struct {
		code    rbtype.ErrorCode
		b       rbtype.StepStatus
		runbook rbtype.RunbookStatus
	}{
		{rbtype.CodeInvalidInput, rbtype.StepSkipped, rbtype.RunbookFailed},   // abort: nothing new starts
		{rbtype.CodePolicyDenied, rbtype.StepComplete, rbtype.RunbookPartial}, // default: continue, accepted
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			f := newFixture(t, src, nil)
			_, calls := f.advance()
			require.Equal(t, rbtype.StepPending, f.step("b").Status)
			_, more := f.advance(failWith(callFor(t, calls, "a"), tc.code))
			if tc.b == rbtype.StepComplete {
				_, more = f.advance(succeed(callFor(t, more, "b"), map[string]any{"v": 1}), succeed(callFor(t, calls, "c"), map[string]any{"v": 2}))
			} else {
				// Under abort c, already running, is recorded when it returns.
				f.advance(succeed(callFor(t, calls, "c"), map[string]any{"v": 2}))
			}
			require.Empty(t, more)
			require.Equal(t, rbtype.StepFailed, f.step("a").Status)
			require.Equal(t, tc.code, f.step("a").ErrorCode)
			require.Equal(t, tc.b, f.step("b").Status, "%s", f)
			require.Equal(t, tc.runbook, f.rb.Status, "%s", f)
		})
	}
}
