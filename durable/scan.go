package durable

import (
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// Scanning the rows read on every advance. pgx scans into its own pgtype
// values and into plain strings, integers and times by a direct plan; a
// named string type (rbtype.StepStatus) costs it a reflect.Value.Convert,
// a nullable column read into a **time.Time a pointer-to-pointer plan,
// and a uuid.UUID the sql.Scanner path, and every Scan call allocates its
// destinations. In the chain run those were most of what LoadForAdvance
// spent in pgx, so a step row scans into a stepScanner's reused targets,
// converted after.

// stepScanner reads step rows (stepColumns or stepStateColumns) one after
// another into the same targets.
type stepScanner struct {
	s                                                           driver.Step
	runbookID, invocation                                       pgtype.UUID
	position, attempt                                           int32
	gate, status, errorCode, decision, compensation, escalation pgtype.DriverBytes
	args, exec, resolved, result                                []byte
	nextAttempt, decidedAt, startedAt, finishedAt               pgtype.Timestamptz
	createdAt, updatedAt                                        pgtype.Timestamptz
	completionSeq                                               pgtype.Int8
	leaseWorker                                                 pgtype.Text
	leaseAttempt                                                pgtype.Int4
	leaseAcquired, leaseExpires                                 pgtype.Timestamptz
	dest                                                        []any
}

func newStepScanner() *stepScanner {
	sc := &stepScanner{}
	s := &sc.s
	// JSON columns are scanned as bytes: into a json.RawMessage, pgx would
	// run them through encoding/json to check them.
	sc.dest = []any{&s.ID, &sc.runbookID, &s.Key, &sc.position, &s.Verb, &sc.args, &sc.exec, &sc.gate, &sc.status,
		&sc.attempt, &sc.nextAttempt, &s.IdempotencyKey, &sc.invocation, &sc.resolved, &sc.result, &sc.errorCode,
		&s.ErrorMessage, &s.Simulated, &sc.decision, &s.GateDecidedBy, &sc.decidedAt, &s.GateComment,
		&sc.completionSeq, &sc.compensation, &s.CompensationError, &sc.escalation, &s.EscalationError,
		&sc.createdAt, &sc.updatedAt, &sc.startedAt, &sc.finishedAt,
		&sc.leaseWorker, &sc.leaseAttempt, &sc.leaseAcquired, &sc.leaseExpires}
	return sc
}

// scan reads one row into a new Step.
func (sc *stepScanner) scan(row pgx.Row) (*driver.Step, error) {
	if err := row.Scan(sc.dest...); err != nil {
		return nil, translate(err)
	}
	s := new(driver.Step)
	*s = sc.s
	s.RunbookID, s.InvocationID = uuid.UUID(sc.runbookID.Bytes), uuidOrNil(sc.invocation)
	s.Position, s.Attempt = int(sc.position), int(sc.attempt)
	s.Gate, s.Status = rbtype.Gate(interned(sc.gate)), rbtype.StepStatus(interned(sc.status))
	s.ErrorCode, s.GateDecision = rbtype.ErrorCode(interned(sc.errorCode)), rbtype.GateDecision(interned(sc.decision))
	s.CompensationStatus = rbtype.CompensationStatus(interned(sc.compensation))
	s.EscalationStatus = rbtype.EscalationStatus(interned(sc.escalation))
	s.NextAttemptAt, s.GateDecidedAt = timeOrNil(sc.nextAttempt), timeOrNil(sc.decidedAt)
	s.CreatedAt, s.UpdatedAt = sc.createdAt.Time, sc.updatedAt.Time
	s.StartedAt, s.FinishedAt = timeOrNil(sc.startedAt), timeOrNil(sc.finishedAt)
	s.CompletionSeq = int64OrNil(sc.completionSeq)
	if sc.leaseWorker.Valid && sc.leaseAttempt.Valid && sc.leaseAcquired.Valid && sc.leaseExpires.Valid {
		s.Lease = &driver.Lease{StepID: s.ID, RunbookID: s.RunbookID, WorkerID: sc.leaseWorker.String,
			Attempt: int(sc.leaseAttempt.Int32), Status: "active", AcquiredAt: sc.leaseAcquired.Time, ExpiresAt: sc.leaseExpires.Time}
	}
	s.Args, s.Execution, s.ResolvedArgs, s.Result = rawJSON(sc.args), rawJSON(sc.exec), rawJSON(sc.resolved), rawJSON(sc.result)
	return s, nil
}

// internedValues are the values of the state columns: statuses, gates,
// decisions and the common error codes. A column read as one of them
// shares its string instead of allocating one per row.
var internedValues = func() map[string]string {
	m := map[string]string{}
	add := func(v string) { m[v] = v }
	for _, v := range rbtype.StepStatuses {
		add(string(v))
	}
	for _, v := range rbtype.RunbookStatuses {
		add(string(v))
	}
	for _, v := range rbtype.Modes {
		add(string(v))
	}
	for _, v := range []rbtype.CompensationStatus{rbtype.CompensationPending, rbtype.CompensationRunning,
		rbtype.CompensationComplete, rbtype.CompensationFailed} {
		add(string(v))
	}
	for _, v := range []string{string(rbtype.GateNone), string(rbtype.GateHumanConfirm),
		string(rbtype.GateApproved), string(rbtype.GateRejected)} {
		add(v)
	}
	return m
}()

// interned is b as a string, allocated only when it is not one of
// internedValues. b may be the driver's own memory (DriverBytes): the
// string never refers to it.
func interned(b []byte) string {
	if v, ok := internedValues[string(b)]; ok {
		return v
	}
	return string(b)
}

// timeOrNil is a nullable timestamptz as a *time.Time.
func timeOrNil(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time
	return &v
}

// uuidOrNil is a nullable uuid as a *uuid.UUID.
func uuidOrNil(u pgtype.UUID) *uuid.UUID {
	if !u.Valid {
		return nil
	}
	v := uuid.UUID(u.Bytes)
	return &v
}

// int64OrNil is a nullable bigint as a *int64.
func int64OrNil(i pgtype.Int8) *int64 {
	if !i.Valid {
		return nil
	}
	v := i.Int64
	return &v
}
