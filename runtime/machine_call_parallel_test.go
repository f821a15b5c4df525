package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// A call's :parallel (docs/design/language.md v1.4) bounds that call's
// iterations alone: one review waits at a time, while every reminder of
// the body goes out.
func TestMachineCallParallel(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @list)
		(for-each @list.users :as @u
		  (m.wait :who @u :parallel 1 :as @review)
		  (m.send :to @u :as @remind))`, nil)
	_, calls := f.advance()
	f.advance(succeed(callFor(t, calls, "list"), map[string]any{"users": []any{"ann", "bo", "cy"}}))
	var started []string
	for range 3 {
		_, calls = f.advance()
		for _, c := range calls {
			started = append(started, c.Call.StepKey)
			if c.Call.Verb == "m.wait" {
				f.advance(parked(c, ""))
			}
		}
	}
	require.ElementsMatch(t, []string{"review[0]", "remind[0]", "remind[1]", "remind[2]"}, started, "one review at a time; the reminders are not held")
	require.Equal(t, rbtype.StepPending, f.step("review[1]").Status)
	require.Equal(t, rbtype.StepPending, f.step("review[2]").Status)

	// The first review ends: the next starts.
	f.notify("review[0]", rbtype.OutcomeCompleted, `{}`, "")
	_, calls = f.advance()
	for range 2 {
		if len(calls) > 0 {
			break
		}
		_, calls = f.advance()
	}
	callFor(t, calls, "review[1]")
	require.Equal(t, rbtype.StepPending, f.step("review[2]").Status)
}
