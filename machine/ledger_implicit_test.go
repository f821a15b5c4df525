package machine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// The attempts a step row took are left out of the rows written, and
// only they, in order, however many there are.
func TestStoredAttemptsLeaveOutOnlyThoseStepRowsTook(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	started := now.Add(-time.Second)
	tr := &transition{Now: now, Rb: &rbtype.Runbook{}}
	var steps []*rbtype.Step
	for i := range 20 {
		s := &rbtype.Step{ID: int64(i + 1), Key: string(rune('a' + i)), Verb: "v"}
		s.Status, s.Attempt, s.StartedAt, s.FinishedAt = rbtype.StepComplete, 1, &started, &now
		steps = append(steps, s)
		a := rbtype.Attempt{StepKey: s.Key, Verb: "v", Attempt: 1, StartedAt: &started, FinishedAt: now, Outcome: attemptSucceeded, Cache: "off"}
		if i%3 == 0 {
			a.Outcome = AttemptFailed // a row of its own
		}
		tr.attempts = append(tr.attempts, a)
		tr.markPlain(s, i)
	}
	steps[4].Status = rbtype.StepFailed // its step did not complete: a row of its own
	steps[7].Attempt = 2                // another attempt's row: a row of its own
	var kept []string
	for _, s := range steps {
		if tr.implicitAttempt(s) != nil {
			kept = append(kept, s.Key)
		}
	}
	var stored []string
	for _, a := range tr.appendStoredAttempts(nil) {
		stored = append(stored, a.StepKey)
	}
	require.Equal(t, []string{"b", "c", "f", "i", "k", "l", "n", "o", "q", "r", "t"}, kept)
	require.Equal(t, []string{"a", "d", "e", "g", "h", "j", "m", "p", "s"}, stored)
}
