package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The first line is written, the repeats within the interval are held
// back, and the first after it says how many were.
func TestLineLimitWritesOnceAnIntervalAndCountsTheRest(t *testing.T) {
	clock := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	l := newLineLimit(10 * time.Second)
	l.now = func() time.Time { return clock }

	write, held := l.allow()
	require.True(t, write)
	require.Zero(t, held)
	for range 41 {
		clock = clock.Add(100 * time.Millisecond)
		write, _ = l.allow()
		require.False(t, write)
	}
	clock = clock.Add(10 * time.Second)
	write, held = l.allow()
	require.True(t, write)
	require.Equal(t, 41, held)
	clock = clock.Add(10 * time.Second)
	write, held = l.allow()
	require.True(t, write)
	require.Zero(t, held, "the count starts again")
}
