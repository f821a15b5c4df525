package machine

import (
	"slices"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// Implicit ledger rows (docs/design/runtime.md, "The job ledger and the edges"). Most
// attempts succeed at once, use nothing and touch no cache: their
// step_attempts row would repeat what the row of the step they complete
// holds already (runbook, step, verb, attempt, start and end), and cost
// a chain step one row in three. Such an attempt is written into that
// step row's update instead (rbtype.StepChange.Ledger), and step_attempts
// shows it as a row like any other. Every other attempt keeps a row of
// its own: a failure, a park and its resume, a cache hit or miss, usage,
// and any attempt whose step does not end complete, with the same start
// and end, in the same transaction.

// plainAttempt is an attempt that may be kept in its step's row: where it
// stands in the outbox's attempts, and whether the step row took it.
type plainAttempt struct {
	at    int
	taken bool
}

// markPlain notes that the attempt just recorded at index i of the
// outbox's attempts, for step s, is a plain success: a call's own outcome
// (not a resume, whose park already has a row), with no cache and no
// usage.
func (t *transition) markPlain(s *rbtype.Step, i int) {
	a := &t.attempts[i]
	if a.Outcome != attemptSucceeded || a.Cache != "off" || !usageIsZero(a.Usage) {
		return
	}
	if t.plain == nil {
		t.plain = make(map[int64]*plainAttempt)
	}
	t.plain[s.ID] = &plainAttempt{at: i}
}

// usageIsZero reports whether an attempt reported no usage at all.
func usageIsZero(u rbtype.Usage) bool {
	return u.TokensIn == 0 && u.TokensOut == 0 && u.CostUSD == 0 && u.Credits == 0 && u.Model == "" && len(u.Parameters) == 0
}

// implicitAttempt is the ledger row step s's change carries, or nil: the
// plain attempt recorded for it, when the step row as it is written says
// all the rest of that row (complete, not simulated, the attempt's number,
// verb, start and end).
func (t *transition) implicitAttempt(s *rbtype.Step) *rbtype.ImplicitAttempt {
	p := t.plain[s.ID]
	if p == nil {
		return nil
	}
	a := &t.attempts[p.at]
	if s.Status != rbtype.StepComplete || s.Simulated || a.Attempt != s.Attempt || a.Verb != s.Verb ||
		s.FinishedAt == nil || !s.FinishedAt.Equal(a.FinishedAt) || !sameTime(s.StartedAt, a.StartedAt) ||
		a.Outcome != attemptSucceeded || a.Cache != "off" || !usageIsZero(a.Usage) {
		return nil
	}
	p.taken = true
	return &rbtype.ImplicitAttempt{ID: a.ID, WorkerID: a.WorkerID, ArgsHash: a.ArgsHash, ResultHash: a.ResultHash}
}

// appendStoredAttempts appends the attempts that are rows of their own:
// all but those a step row took (implicitAttempt, called first).
func (t *transition) appendStoredAttempts(to []rbtype.Attempt) []rbtype.Attempt {
	var buf [8]int
	taken := buf[:0] // most transitions take one or two: no allocation
	for _, p := range t.plain {
		if p.taken {
			taken = append(taken, p.at)
		}
	}
	if len(taken) == 0 {
		return append(to, t.attempts...)
	}
	slices.Sort(taken)
	for i, a := range t.attempts {
		if len(taken) > 0 && taken[0] == i {
			taken = taken[1:]
			continue
		}
		to = append(to, a)
	}
	return to
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
