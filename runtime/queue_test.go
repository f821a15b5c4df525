package runtime

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// pop batches the items of up to maxRunbooks runbooks, in arrival order,
// but an item marked alone goes in a batch by itself, even apart from its
// own runbook's other items.
func TestPopTakesAnItemMarkedAloneByItself(t *testing.T) {
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	q := newWorkQueue()
	q.push(workItem{runbookID: a}, workItem{runbookID: b, alone: true}, workItem{runbookID: a, tries: 1},
		workItem{runbookID: c}, workItem{runbookID: b})

	batch, ok := q.pop(10)
	require.True(t, ok)
	require.Equal(t, []workItem{{runbookID: a}, {runbookID: a, tries: 1}, {runbookID: c}, {runbookID: b}}, batch,
		"everything but the lone item, whose runbook's other item still comes")
	batch, _ = q.pop(10)
	require.Equal(t, []workItem{{runbookID: b, alone: true}}, batch)
	require.Zero(t, q.len())

	q.push(workItem{runbookID: a, alone: true}, workItem{runbookID: a}, workItem{runbookID: b})
	batch, _ = q.pop(10)
	require.Equal(t, []workItem{{runbookID: a, alone: true}}, batch, "first in line, alone")
	batch, _ = q.pop(1)
	require.Equal(t, []workItem{{runbookID: a}}, batch, "maxRunbooks still bounds a batch")
	batch, _ = q.pop(1)
	require.Equal(t, []workItem{{runbookID: b}}, batch)
}
