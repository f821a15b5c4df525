package machine

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// diagramMoves reads the state diagrams of docs/design/runtime.md: the
// first three draw a step's moves (on its own, a cancel or an abort, a
// person's command), the next two a runbook's. A composite state ("state
// \"...: a, b\" as name") stands for each status it lists.
func diagramMoves(t *testing.T) (steps, runbooks map[string]bool) {
	t.Helper()
	b, err := os.ReadFile("../docs/design/runtime.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```mermaid\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	require.GreaterOrEqual(t, len(blocks), 5, "docs/design/runtime.md draws five state diagrams")
	composite := regexp.MustCompile(`state "[^:]*: ([^"]*)" as (\w+)`)
	arrow := regexp.MustCompile(`^\s*(\[\*\]|\w+) --> (\[\*\]|\w+)`)
	read := func(block string) map[string]bool {
		groups := map[string][]string{}
		for _, m := range composite.FindAllStringSubmatch(block, -1) {
			groups[m[2]] = strings.Split(m[1], ", ")
		}
		expand := func(s string) []string {
			if g, ok := groups[s]; ok {
				return g
			}
			return []string{s}
		}
		moves := map[string]bool{}
		for _, line := range strings.Split(block, "\n") {
			m := arrow.FindStringSubmatch(line)
			if m == nil || m[1] == "[*]" || m[2] == "[*]" {
				continue // entering or leaving the machine is no move
			}
			for _, from := range expand(m[1]) {
				for _, to := range expand(m[2]) {
					moves[from+" -> "+to] = true
				}
			}
		}
		return moves
	}
	steps, runbooks = map[string]bool{}, map[string]bool{}
	for i, blk := range blocks[:5] {
		into := steps
		if i >= 3 {
			into = runbooks
		}
		for m := range read(blk[1]) {
			into[m] = true
		}
	}
	return steps, runbooks
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMovesAreTheDiagrams holds the guards' tables to the page: a move the
// machine allows and the page does not draw, or the other way round,
// fails here.
func TestMovesAreTheDiagrams(t *testing.T) {
	drawnSteps, drawnRunbooks := diagramMoves(t)
	allowedSteps := map[string]bool{}
	for from, tos := range stepMoves {
		for _, to := range tos {
			allowedSteps[string(from)+" -> "+string(to)] = true
		}
	}
	allowedRunbooks := map[string]bool{}
	for from, tos := range runbookMoves {
		for _, to := range tos {
			allowedRunbooks[string(from)+" -> "+string(to)] = true
		}
	}
	require.Equal(t, sortedKeys(drawnSteps), sortedKeys(allowedSteps), "a step's moves: docs/design/runtime.md against machine/moves.go")
	require.Equal(t, sortedKeys(drawnRunbooks), sortedKeys(allowedRunbooks), "a runbook's moves: docs/design/runtime.md against machine/moves.go")
}

// TestAMoveOutsideTheDiagramAbandonsTheTransaction: the guard refuses a
// move the diagram lacks (a completed step cannot become ready again) and
// lets a drawn one through.
func TestAMoveOutsideTheDiagramAbandonsTheTransaction(t *testing.T) {
	rb := &rbtype.Runbook{ID: uuid.New(), Status: rbtype.RunbookExecuting}
	done := &rbtype.Step{ID: 1, Key: "a", StepState: rbtype.StepState{Status: rbtype.StepComplete}}
	waiting := &rbtype.Step{ID: 2, Key: "b", StepState: rbtype.StepState{Status: rbtype.StepPending}}
	tr := newTransition(&Machine{}, rb.CreatedAt, rb, nil, []*rbtype.Step{done, waiting})

	tr.moveStep(waiting, rbtype.StepReady)
	require.NoError(t, tr.err)
	tr.moveStep(done, rbtype.StepReady)
	require.ErrorContains(t, tr.err, "step a cannot move from complete to ready")

	tr = newTransition(&Machine{}, rb.CreatedAt, rb, nil, nil)
	tr.moveRunbook(rbtype.RunbookComplete)
	require.NoError(t, tr.err)
	tr.moveRunbook(rbtype.RunbookInProgress)
	require.ErrorContains(t, tr.err, "cannot move from complete to in_progress")
}
