package runtime

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The job ledger (docs/design/semantics.md section 3): one step_attempts row per
// attempt, written with the outcome that ends it, in the same transaction.
// A park is recorded as parked and completed by its resume.

// namespaceAttempt names attempt ids: UUIDv5 of runbook, step and attempt.
var namespaceAttempt = uuid.MustParse("5c1e7a90-2b4d-5e8f-9a63-0d7c1b4e8f25")

// The outcomes an attempt is recorded with.
const (
	attemptSucceeded = "succeeded"
	attemptFailed    = "failed"
	attemptParked    = "parked"
)

// attemptID is an attempt's id: the same however often it is recorded.
func attemptID(runbookID uuid.UUID, stepKey string, attempt int) uuid.UUID {
	return uuid.NewSHA1(namespaceAttempt, []byte(runbookID.String()+"\x00"+stepKey+"\x00"+strconv.Itoa(attempt)))
}

// record adds an attempt's row to the transaction's writes, and counts
// what it used.
func (t *transition) record(s *driver.Step, attempt int, outcome string, code rbtype.ErrorCode, cache string, u driver.Usage) {
	u = boundedUsage(u)
	t.m.observe.used(s.Verb, u)
	t.usage[s.ID] = addUsage(t.usage[s.ID], u)
	id := attemptID(t.rb.ID, s.Key, attempt)
	if outcome != attemptParked {
		t.attemptEnded(s, attempt, id, outcome, code, cache)
	}
	if i, ok := t.attemptAt[id]; ok {
		// Parked and resumed in one transaction (a notification that came
		// first): one row, as the upsert would have made of two, and which
		// one statement may not touch twice.
		a := &t.attempts[i]
		a.Outcome, a.ErrorCode, a.FinishedAt = outcome, code, t.now
		a.Usage = addUsage(a.Usage, u)
		t.usage[s.ID] = a.Usage
		return
	}
	if t.attemptAt == nil {
		t.attemptAt = make(map[uuid.UUID]int)
	}
	t.attemptAt[id] = len(t.attempts)
	rt := t.runbookTrace()
	t.attempts = append(t.attempts, driver.Attempt{
		ID: id, RunbookID: t.rb.ID, Tenant: t.rb.Tenant, Actor: t.rb.Actor,
		StepKey: s.Key, Verb: s.Verb, Attempt: attempt, WorkerID: t.m.worker, StartedAt: s.StartedAt,
		FinishedAt: t.now, Outcome: outcome, ErrorCode: code, Cache: cache, Usage: u,
		CorrelationID: rt.correlationID, TraceID: rt.span.TraceID().String(), SpanID: attemptSpanID(id).String(),
		ArgsHash: t.argsHash[s.ID],
	})
}

// addUsage sums two reports of one attempt's usage; the later model wins.
func addUsage(a, b driver.Usage) driver.Usage {
	a.TokensIn += b.TokensIn
	a.TokensOut += b.TokensOut
	a.CostUSD += b.CostUSD
	a.Credits += b.Credits
	if b.Model != "" {
		a.Model = b.Model
	}
	if len(b.Parameters) > 0 {
		a.Parameters = b.Parameters
	}
	return a
}

// recordOutcome records a call's outcome in the ledger (dry runs, which
// did nothing, are not recorded).
func (t *transition) recordOutcome(s *driver.Step, o *outcome) {
	if o.dryRun {
		return
	}
	cache := "off"
	if o.cacheKey != "" {
		cache = "miss"
	}
	switch {
	case o.err != nil:
		t.record(s, o.attempt, attemptFailed, o.err.Code, cache, o.result.Usage)
	case o.result.IsParked():
		t.record(s, o.attempt, attemptParked, "", cache, o.result.Usage)
	default:
		t.record(s, o.attempt, attemptSucceeded, "", cache, o.result.Usage)
	}
}
