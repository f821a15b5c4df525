package runtime

import (
	"sync"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/machine"
)

// workItem is something for an advancer to do: look at a runbook that is
// due, or record a call's outcome.
type workItem struct {
	runbookID uuid.UUID
	outcome   *machine.Outcome
	tries     int // transactions that failed with this item in them
	// alone puts the item in a transaction of its own: a transaction it
	// was part of failed in a way a retry may not cure, and alone it
	// cannot take other runbooks' work down with it (engine.retry).
	alone bool
}

// workQueue is an unbounded queue of work items. Pushing never blocks, so
// a finishing handler call can always hand back its outcome, whatever the
// advancers are doing.
type workQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []workItem
	closed bool
	// runningLow, when set, is called (without blocking) whenever a pop
	// leaves fewer than lowWater items: the claim loop, which stops
	// claiming while the queue is full, then claims again at once instead
	// of at its next poll.
	lowWater   int
	runningLow func()
}

func newWorkQueue() *workQueue {
	q := &workQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *workQueue) push(items ...workItem) {
	q.mu.Lock()
	q.items = append(q.items, items...)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// pop waits for work and takes the items of up to maxRunbooks runbooks, in
// arrival order, or one item marked alone, by itself. It returns false
// once the queue is closed and empty.
func (q *workQueue) pop(maxRunbooks int) ([]workItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, false
	}
	seen := map[uuid.UUID]bool{}
	var taken, kept []workItem
	for i, it := range q.items {
		switch {
		case it.alone && len(taken) == 0:
			taken = []workItem{it}
			kept = append(kept, q.items[i+1:]...)
		case it.alone:
			kept = append(kept, it)
			continue
		case seen[it.runbookID] || len(seen) < maxRunbooks:
			seen[it.runbookID] = true
			taken = append(taken, it)
			continue
		default:
			kept = append(kept, it)
			continue
		}
		break
	}
	q.items = kept
	if q.runningLow != nil && len(kept) < q.lowWater {
		q.runningLow()
	}
	return taken, true
}

func (q *workQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// close lets pop drain what is left and then report the end.
func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
