package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// A for-each over a (filter ...) (docs/design/language.md v1.4) waits for
// the step the filter reads, then expands over the elements kept.
func TestMachineForEachOverAFilter(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @list)
		(for-each (filter @list.users :as @u (= @u.kind "person")) :as @p
		  (m.send :to @p.id :as @sent))
		(m.echo :n (count @sent) :as @report)`, nil)
	_, calls := f.advance()
	require.Equal(t, rbtype.StepPending, f.step("sent").Status, "waits for @list")
	w, calls := f.advance(succeed(callFor(t, calls, "list"), map[string]any{"users": []any{
		map[string]any{"id": "ann", "kind": "person"}, map[string]any{"id": "bot", "kind": "service"}, map[string]any{"id": "cy", "kind": "person"}}}))
	require.Contains(t, eventNames(w.Events), "MAP_EXPANDED")
	for range 2 {
		if len(calls) > 0 {
			break
		}
		_, calls = f.advance()
	}
	require.Equal(t, map[string]any{"to": "ann"}, callFor(t, calls, "sent[0]").Call.Args)
	require.Equal(t, map[string]any{"to": "cy"}, callFor(t, calls, "sent[1]").Call.Args)
	require.Len(t, calls, 2, "the service account is filtered out")
	_, calls = f.advance(succeed(callFor(t, calls, "sent[0]"), map[string]any{"ok": true}), succeed(callFor(t, calls, "sent[1]"), map[string]any{"ok": true}))
	for range 2 {
		if len(calls) > 0 {
			break
		}
		_, calls = f.advance()
	}
	require.Equal(t, "2", callFor(t, calls, "report").Call.Args["n"].(interface{ String() string }).String())
}
