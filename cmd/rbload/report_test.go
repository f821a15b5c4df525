package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPercentileIsNearestRank(t *testing.T) {
	samples := []float64{15, 20, 35, 40, 50}
	require.Equal(t, 15.0, percentile(samples, 0))
	require.Equal(t, 20.0, percentile(samples, 30))
	require.Equal(t, 35.0, percentile(samples, 50))
	require.Equal(t, 50.0, percentile(samples, 99))
	require.Equal(t, 50.0, percentile(samples, 100))
	require.Equal(t, []float64{15, 20, 35, 40, 50}, samples, "the samples are left as they were")
	require.True(t, math.IsNaN(percentile(nil, 50)))
}

func TestMedian(t *testing.T) {
	require.Equal(t, 3.0, median([]float64{5, 1, 3}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	require.True(t, math.IsNaN(median(nil)))
}

func TestFormat(t *testing.T) {
	require.Equal(t, "12,345", format(12345.4))
	require.Equal(t, "1,000,000", format(1e6))
	require.Equal(t, "-1,500", format(-1500))
	require.Equal(t, "250", format(250.2))
	require.Equal(t, "12.3", format(12.34))
	require.Equal(t, "1.23", format(1.234))
}

func TestTargets(t *testing.T) {
	r := &report{}
	require.True(t, *r.add("x", 12000, "steps/s").atLeast(10000, "≥ 10,000").Met)
	require.False(t, *r.add("y", 4, "ms").atMost(3, "≤ 3").Met)
	require.Nil(t, r.add("z", 1, "").Met)
}

func TestNotesLeaveOutEmptyParts(t *testing.T) {
	require.Equal(t, "a; b", notes("a", "", "b", ""))
	require.Equal(t, "", notes("", ""))
}
