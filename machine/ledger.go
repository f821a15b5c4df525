package machine

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// The job ledger (docs/design/semantics.md section 3): one step_attempts row per
// attempt, written with the outcome that ends it, in the same transaction
// (a plain success in the row of the step it completes: ledger_implicit.go).
// A park is recorded as parked and completed by its resume.

// namespaceAttempt names attempt ids: UUIDv5 of runbook, step and attempt.
var namespaceAttempt = uuid.MustParse("5c1e7a90-2b4d-5e8f-9a63-0d7c1b4e8f25")

// The outcomes an attempt is recorded with.
const (
	attemptSucceeded = "succeeded"
	AttemptFailed    = "failed"
	attemptParked    = "parked"
)

// AttemptID is an attempt's id: the same however often it is recorded.
// It is uuid.NewSHA1(namespaceAttempt, runbook id as text, NUL, step key,
// NUL, attempt), built in one buffer: an advance names each attempt
// three times (lease, completion, ledger), and the library's way made
// four allocations of each (TestAttemptIDIsTheNameBasedUUID holds the two
// equal).
func AttemptID(runbookID uuid.UUID, stepKey string, attempt int) uuid.UUID {
	var buf [128]byte
	b := append(buf[:0], namespaceAttempt[:]...)
	b = appendUUIDText(b, runbookID)
	b = append(b, 0)
	b = append(b, stepKey...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(attempt), 10)
	sum := sha1.Sum(b)
	var id uuid.UUID
	copy(id[:], sum[:])
	id[6] = (id[6] & 0x0f) | 0x50 // version 5
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id
}

// appendUUIDText appends u in its canonical text form, as u.String()
// writes it.
func appendUUIDText(b []byte, u uuid.UUID) []byte {
	var text [36]byte
	hex.Encode(text[0:8], u[0:4])
	text[8] = '-'
	hex.Encode(text[9:13], u[4:6])
	text[13] = '-'
	hex.Encode(text[14:18], u[6:8])
	text[18] = '-'
	hex.Encode(text[19:23], u[8:10])
	text[23] = '-'
	hex.Encode(text[24:], u[10:])
	return append(b, text[:]...)
}

// record adds an attempt's row to the transaction's writes, and counts
// what it used.
func (t *transition) record(s *rbtype.Step, attempt int, outcome string, code rbtype.ErrorCode, cache string, u rbtype.Usage) {
	u = handler.BoundedUsage(u)
	t.m.Observe.Used(s.Verb, u)
	t.usage[s.ID] = addUsage(t.usage[s.ID], u)
	id := AttemptID(t.Rb.ID, s.Key, attempt)
	if outcome != attemptParked {
		t.attemptEnded(s, attempt, id, outcome, code, cache)
	}
	if outcome == AttemptFailed {
		t.failedAttemptResetsTrust(s, attempt, code)
	}
	if i, ok := t.attemptAt[id]; ok {
		// Parked and resumed in one transaction (a notification that came
		// first): one row, as the upsert would have made of two, and which
		// one statement may not touch twice.
		a := &t.attempts[i]
		a.Outcome, a.ErrorCode, a.FinishedAt = outcome, code, t.Now
		a.Usage = addUsage(a.Usage, u)
		t.usage[s.ID] = a.Usage
		return
	}
	if t.attemptAt == nil {
		t.attemptAt = make(map[uuid.UUID]int)
	}
	t.attemptAt[id] = len(t.attempts)
	rt := t.runbookTrace()
	t.attempts = append(t.attempts, rbtype.Attempt{
		ID: id, RunbookID: t.Rb.ID, Tenant: t.Rb.Tenant, Actor: t.Rb.Actor,
		StepKey: s.Key, Verb: s.Verb, Attempt: attempt, WorkerID: t.m.Worker, StartedAt: s.StartedAt,
		FinishedAt: t.Now, Outcome: outcome, ErrorCode: code, Cache: cache, Usage: u,
		CorrelationID: rt.CorrelationID, TraceID: rt.Span.TraceID().String(), SpanID: AttemptSpanID(id).String(),
		ArgsHash: t.argsHash[s.ID],
	})
}

// addUsage sums two reports of one attempt's usage; the later model wins.
func addUsage(a, b rbtype.Usage) rbtype.Usage {
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
func (t *transition) recordOutcome(s *rbtype.Step, o *Outcome) {
	if o.DryRun {
		return
	}
	cache := "off"
	if o.CacheKey != "" {
		cache = "miss"
	}
	switch {
	case o.Err != nil:
		t.record(s, o.Attempt, AttemptFailed, o.Err.Code, cache, o.Result.Usage)
	case o.Result.IsParked():
		t.record(s, o.Attempt, attemptParked, "", cache, o.Result.Usage)
	default:
		n := len(t.attempts)
		t.record(s, o.Attempt, attemptSucceeded, "", cache, o.Result.Usage)
		if len(t.attempts) > n { // a row of its own, not a park's completed
			t.markPlain(s, n) // ledger_implicit.go
		}
	}
}
