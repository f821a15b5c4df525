package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// @failures (docs/design/language.md v1.4): a hook sees every failure, in
// the order they happened, not the first only.
func TestMachineHookSeesEveryFailure(t *testing.T) {
	f := newFixture(t, `(m.send :to "a" :as @a) (m.send :to "b" :as @b) (m.echo :v 1 :as @ok)
		(on-failure (m.echo :n (count @failures) :first @failures[0].step :second @failures[1].code :status @failures[1].status :as @h))`, nil)
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "b"), rbtype.CodePolicyDenied), succeed(callFor(t, calls, "ok"), map[string]any{"v": 1}))
	f.now = f.now.Add(time.Minute)
	f.advance(failWith(callFor(t, calls, "a"), rbtype.CodeInvalidInput))
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	_, calls = f.advance()
	h := callFor(t, calls, "h")
	require.Equal(t, map[string]any{"n": json.Number("2"), "first": "b", "second": "INVALID_INPUT", "status": "failed"}, h.Call.Args)
}

// A cancelled runbook has no failed step: @failures holds the one
// @failure that says it was cancelled.
func TestMachineHookFailuresOfACancellation(t *testing.T) {
	f := newFixture(t, `(m.wait :as @w) (on-failure (m.echo :n (count @failures) :status @failures[0].status :as @h))`, nil)
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "w"), ""))
	_, calls, err := f.command(&machine.CancelRunbook{By: "ops"})
	require.NoError(t, err, "the hooks start in the cancel's own transaction")
	require.Equal(t, map[string]any{"n": json.Number("1"), "status": "cancelled"}, callFor(t, calls, "h").Call.Args)
}
