package runtime_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
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

// Work the daemon hands itself (a submission, a call's outcome) is not
// claimed again from the database while an advancer has it. A claim after
// every pop of the queue found the runbook an advancer was working on, and
// a second advancer advanced it again once the first let go of its lock.
// With polls and sweeps an hour apart, each runbook of one step costs its
// two advances, the start and the outcome, and no more.
func TestWorkHandedOverLocallyIsNotClaimedAgain(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := setup(t, func(c *runtime.Config) {
		c.Metrics = runtime.NewMetrics(reg)
		c.PollInterval, c.SweepInterval = time.Hour, time.Hour
	})
	b.run(t)
	// The claim the loop makes as it starts may meet the first runbook.
	b.waitStatus(t, b.submit(t, "(t.echo :n 0 :as @a)\n", nil), rbtype.RunbookComplete)
	before := metric(t, reg, "rbd_advance_duration_seconds")
	const runbooks = 20
	for i := range runbooks {
		id := b.submit(t, "(t.echo :n $n :as @a)\n", map[string]any{"n": i})
		b.waitStatus(t, id, rbtype.RunbookComplete)
	}
	require.Equal(t, float64(2*runbooks), metric(t, reg, "rbd_advance_duration_seconds")-before)
}
