package durable

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// An advance's write queues the same statements, with the same arguments,
// in the same order, every time: its maps (invocations to finish by
// status, leases to end, steps to compensate by runbook) are walked
// sorted, not in Go's random map order.
func TestWriteAdvanceQueuesInOneOrder(t *testing.T) {
	ids := func(n int) []uuid.UUID {
		out := make([]uuid.UUID, n)
		for i := range out {
			out[i] = uuid.New()
		}
		return out
	}
	w := driver.AdvanceWrite{
		Finished: map[rbtype.InvocationStatus][]uuid.UUID{
			rbtype.InvocationCompleted: ids(2), rbtype.InvocationCancelled: ids(1), rbtype.InvocationTimedOut: ids(3),
		},
		Compensate: map[uuid.UUID][]string{},
		Worker:     "w", LeaseUntil: time.Unix(0, 0),
	}
	for _, id := range ids(8) {
		w.Compensate[id] = []string{"a", "b"}
	}
	queued := func() []*pgx.QueuedQuery {
		var b pgx.Batch
		var leased []int64
		queueAdvance(&b, w, map[int64]string{9: leaseClear, 3: leaseClear, 5: leaseClear, 4: leaseTake}, &leased)
		return b.QueuedQueries
	}
	first := queued()
	require.Len(t, first, 2+3+8)
	for range 50 {
		again := queued()
		require.Len(t, again, len(first))
		for i := range first {
			require.Equal(t, first[i].SQL, again[i].SQL)
			require.Equal(t, first[i].Arguments, again[i].Arguments)
		}
	}
	require.Equal(t, string(rbtype.InvocationCancelled), first[0].Arguments[1], "statuses in sorted order")
	require.Equal(t, string(rbtype.InvocationCompleted), first[1].Arguments[1])
	require.Equal(t, clearLeasesSQL, first[3].SQL)
	require.Equal(t, []int64{3, 5, 9}, first[3].Arguments[0], "ended leases of unchanged steps, sorted")
	require.Equal(t, takeLeasesSQL, first[4].SQL)
}

// notificationColumnsOfN must read what notificationColumns reads, in the
// same order: scanNotification scans either.
func TestNotificationColumnsOfNAreNotificationColumns(t *testing.T) {
	require.Equal(t, notificationColumns, strings.ReplaceAll(notificationColumnsOfN, "n.", ""))
}
