package runtime_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// The claim loop stops claiming while its queue is full and waits for a
// wake-up or its poll. Runbooks made due while no worker listened send no
// wake-up that reaches it; with polls and sweeps an hour apart, only the
// queue telling it that it runs low gets them all done.
func TestClaimingResumesWhenTheQueueRunsLow(t *testing.T) {
	b := setup(t, func(c *runtime.Config) {
		c.PollInterval, c.SweepInterval = time.Hour, time.Hour
		c.ClaimBatch, c.BatchSize = 4, 2
	})
	const runbooks = 24
	ids := make([]uuid.UUID, runbooks)
	for i := range ids {
		ids[i] = b.submit(t, "(t.echo :n $n :as @a)\n", map[string]any{"n": i})
	}
	b.run(t)
	for _, id := range ids {
		v := b.waitStatus(t, id, rbtype.RunbookComplete)
		require.JSONEq(t, `{"n":`+strconv.Itoa(slices.Index(ids, id))+`}`, string(v.Outcomes["a"]))
	}
}
