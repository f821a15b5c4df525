package verbs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A computed duration's text parses back to its length.
func TestDurationOfRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{4 * time.Hour, 96 * time.Hour, 1200 * time.Millisecond, 56 * 24 * time.Hour, 90 * time.Second} {
		got := DurationOf(d)
		back, err := ParseDuration(got.ISO)
		require.NoError(t, err, got.ISO)
		require.Equal(t, d, back.D, got.ISO)
	}
}
