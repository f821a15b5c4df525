package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// met is each row's measure and whether it met its target.
func met(r *report) map[string]bool {
	out := map[string]bool{}
	for _, w := range r.Rows {
		if w.Met != nil {
			out[w.Measure] = *w.Met
		}
	}
	return out
}

func TestBesideDBOSDividesThisRunsFigures(t *testing.T) {
	l := &lab{rbdStepsPerSecond: map[string]float64{"chain": 6000}, rbdResumeP50: 2, rbdResumeP99: 20}
	r := &report{}
	l.besideDBOS(r, 1000, 4, 12)
	require.Equal(t, map[string]bool{
		"rbd chain steps/s ÷ DBOS steps/s":           true,  // 6 ≥ 5
		"rbd resume p50 ÷ DBOS Send → next step p50": true,  // 0.5 ≤ 1
		"rbd resume p99 ÷ DBOS Send → next step p99": false, // 1.67 > 1
	}, met(r))
	require.InDelta(t, 6.0, r.Rows[0].Value, 1e-9)
}

func TestBesideDBOSLeavesOutWhatThisRunDidNotMeasure(t *testing.T) {
	l := &lab{rbdStepsPerSecond: map[string]float64{}}
	r := &report{}
	l.besideDBOS(r, 1000, 4, 12)
	require.Empty(t, r.Rows)
}

func TestHistoryRatiosAgainstTheEmptySchema(t *testing.T) {
	l := &lab{rbdStepsPerSecond: map[string]float64{"chain": 5000}, rbdResumeP50: 4}
	r := &report{}
	l.historyRatios(r, 4400, 5.2)
	require.Equal(t, map[string]bool{
		"chain steps/s with history ÷ on an empty schema": false, // 0.88 < 0.9
		"resume p50 with history ÷ on an empty schema":    false, // 1.3 > 1.2
	}, met(r))
	r = &report{}
	l.historyRatios(r, 4600, 4.4)
	require.Equal(t, map[string]bool{
		"chain steps/s with history ÷ on an empty schema": true, // 0.92
		"resume p50 with history ÷ on an empty schema":    true, // 1.1
	}, met(r))
	r = &report{}
	(&lab{rbdStepsPerSecond: map[string]float64{}}).historyRatios(r, 4600, 4.4)
	require.Empty(t, r.Rows)
}
