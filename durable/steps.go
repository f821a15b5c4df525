package durable

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
)

const stepColumns = `id, runbook_id, key, position, verb, args, execution, gate, status, attempt, next_attempt_at,
	coalesce(idempotency_key, ''), invocation_id, resolved_args, result, coalesce(error_code, ''),
	coalesce(error_message, ''), simulated, coalesce(gate_decision, ''), coalesce(gate_decided_by, ''),
	gate_decided_at, coalesce(gate_comment, ''), completion_seq, coalesce(compensation_status, ''),
	coalesce(compensation_error, ''), coalesce(escalation_status, ''), coalesce(escalation_error, ''),
	created_at, updated_at, started_at, finished_at,
	lease_worker, lease_attempt, lease_acquired_at, lease_expires_at`

// rawJSON keeps a JSON column's bytes; SQL NULL and JSON null are empty.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func querySteps(ctx context.Context, q querier, sql string, args ...any) ([]*driver.Step, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*driver.Step
	sc := newStepScanner()
	for rows.Next() {
		s, err := sc.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, translate(rows.Err())
}

// stepStateColumns are stepColumns without the frozen arguments and
// execution block, which a worker has in its decoded plan, and without the
// resolved arguments and result, which it keeps cached or fetches with
// StepData when it needs them: loading every step's result in every
// transaction cost more than anything else on the hot path.
var stepStateColumns = strings.NewReplacer(
	"args, execution", "NULL::jsonb, NULL::jsonb",
	"resolved_args, result", "NULL::jsonb, NULL::jsonb",
).Replace(stepColumns)

// viewStepColumns are stepStateColumns with the results of the steps
// whose positions are in ($2, $3]: a view reads every step's state and
// the results of one page of them, so that a runbook of thousands of steps
// is not read whole for each look at it.
var viewStepColumns = strings.NewReplacer(
	"args, execution", "NULL::jsonb, NULL::jsonb",
	"resolved_args, result", "NULL::jsonb, CASE WHEN position > $2 AND position <= $3 THEN result END",
).Replace(stepColumns)

// Steps loads a runbook's steps, in plan order, outside any transaction:
// their state, and the results of the steps of page.
func (s *Store) Steps(ctx context.Context, runbookID uuid.UUID, page driver.StepPage) ([]*driver.Step, error) {
	return viewReader{s.pool}.Steps(ctx, runbookID, page)
}

// Steps loads a runbook's steps, as Store.Steps does.
func (r viewReader) Steps(ctx context.Context, runbookID uuid.UUID, page driver.StepPage) ([]*driver.Step, error) {
	return querySteps(ctx, r.q, "SELECT "+viewStepColumns+" FROM runbook_steps WHERE runbook_id = $1 ORDER BY position",
		runbookID, page.After, page.After+page.Limit)
}

// updateStepsSQL writes many steps' changes in one statement.
var updateStepsSQL = `
	UPDATE runbook_steps s SET
		status = u.status, attempt = u.attempt, next_attempt_at = u.next_at,
		idempotency_key = u.idem_key, invocation_id = u.invocation,
		resolved_args = coalesce(u.resolved::jsonb, s.resolved_args), result = coalesce(u.result::jsonb, s.result),
		error_code = u.err_code, error_message = u.err_msg, simulated = u.simulated,
		gate_decision = u.decision, gate_decided_by = u.decided_by, gate_decided_at = u.decided_at,
		gate_comment = u.comment, compensation_status = u.comp_status, compensation_error = u.comp_err,
		escalation_status = u.esc_status, escalation_error = u.esc_err,
		started_at = u.started_at, finished_at = u.finished_at,
		completion_seq = CASE WHEN u.completed THEN nextval('runbook_steps_completion_seq') ELSE s.completion_seq END,
		lease_worker      = CASE u.lease WHEN 'take' THEN $23 WHEN 'clear' THEN NULL ELSE s.lease_worker END,
		lease_attempt     = CASE u.lease WHEN 'take' THEN u.attempt WHEN 'clear' THEN NULL ELSE s.lease_attempt END,
		lease_acquired_at = CASE u.lease WHEN 'take' THEN now() WHEN 'clear' THEN NULL ELSE s.lease_acquired_at END,
		lease_expires_at  = CASE u.lease WHEN 'take' THEN $24 WHEN 'clear' THEN NULL ELSE s.lease_expires_at END,
		ledger_attempt_id  = coalesce(u.ledger_id, s.ledger_attempt_id),
		ledger_worker      = CASE WHEN u.ledger_id IS NULL THEN s.ledger_worker ELSE u.ledger_worker END,
		ledger_args_hash   = CASE WHEN u.ledger_id IS NULL THEN s.ledger_args_hash ELSE u.ledger_args END,
		ledger_result_hash = CASE WHEN u.ledger_id IS NULL THEN s.ledger_result_hash ELSE u.ledger_result END,
		updated_at = now()
	FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[], $5::text[], $6::uuid[], $7::text[],
		$8::text[], $9::text[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::timestamptz[],
		$15::text[], $16::text[], $17::text[], $18::timestamptz[], $19::timestamptz[], $20::bool[],
		$21::text[], $22::text[], $25::text[], $26::uuid[], $27::text[], $28::text[], $29::text[])
		AS u(id, status, attempt, next_at, idem_key, invocation, resolved, result, err_code, err_msg,
			simulated, decision, decided_by, decided_at, comment, comp_status, comp_err, started_at,
			finished_at, completed, esc_status, esc_err, lease, ledger_id, ledger_worker, ledger_args, ledger_result)
	WHERE s.id = u.id AND (u.lease <> 'take' OR ` + leaseIsFreeFor("$23") + `)
	RETURNING s.id, u.lease = 'take'`

// leaseIsFreeFor is the guard under which a step's lease is taken by the
// worker named by param: from no one, from that worker, or from a lease
// that expired. Under the runbook's lock nothing else can hold it; a
// refusal says the advance's view of the step is wrong.
func leaseIsFreeFor(param string) string {
	return "(s.lease_worker IS NULL OR s.lease_worker = " + param + " OR s.lease_expires_at < now())"
}

// Lease operations on a step's row (updateStepsSQL): keep the lease as it
// is, take it for this worker and the step's attempt, or clear it.
const (
	leaseKeep  = ""
	leaseTake  = "take"
	leaseClear = "clear"
)

// stepChangeArgs lays the changes out as the columns of updateStepsSQL;
// lease says what happens to each step's lease (leaseKeep when absent),
// taken by worker until expiresAt.
func stepChangeArgs(changes []driver.StepChange, lease map[int64]string, worker string, expiresAt time.Time) []any {
	n := len(changes)
	var (
		ids        = make([]int64, n)
		status     = make([]string, n)
		attempt    = make([]int32, n)
		nextAt     = make(pgtype.FlatArray[pgtype.Timestamptz], n)
		idemKey    = make(pgtype.FlatArray[pgtype.Text], n)
		invocation = make(pgtype.FlatArray[pgtype.UUID], n)
		resolved   = make(pgtype.FlatArray[pgtype.Text], n)
		result     = make(pgtype.FlatArray[pgtype.Text], n)
		errCode    = make(pgtype.FlatArray[pgtype.Text], n)
		errMsg     = make(pgtype.FlatArray[pgtype.Text], n)
		simulated  = make([]bool, n)
		decision   = make(pgtype.FlatArray[pgtype.Text], n)
		decidedBy  = make(pgtype.FlatArray[pgtype.Text], n)
		decidedAt  = make(pgtype.FlatArray[pgtype.Timestamptz], n)
		comment    = make(pgtype.FlatArray[pgtype.Text], n)
		compStatus = make(pgtype.FlatArray[pgtype.Text], n)
		compErr    = make(pgtype.FlatArray[pgtype.Text], n)
		escStatus  = make(pgtype.FlatArray[pgtype.Text], n)
		escErr     = make(pgtype.FlatArray[pgtype.Text], n)
		startedAt  = make(pgtype.FlatArray[pgtype.Timestamptz], n)
		finishedAt = make(pgtype.FlatArray[pgtype.Timestamptz], n)
		completed  = make([]bool, n)
		leaseOp    = make([]string, n)
		// The implicit ledger rows (migration 027): NULL ids keep what
		// the rows hold.
		ledgerIDs     = make(pgtype.FlatArray[pgtype.UUID], n)
		ledgerWorkers = make(pgtype.FlatArray[pgtype.Text], n)
		ledgerArgs    = make(pgtype.FlatArray[pgtype.Text], n)
		ledgerResults = make(pgtype.FlatArray[pgtype.Text], n)
	)
	for i, c := range changes {
		ids[i], status[i], attempt[i], nextAt[i] = c.ID, string(c.Status), int32(c.Attempt), nullableTime(c.NextAttemptAt)
		idemKey[i], invocation[i] = nullableText(c.IdempotencyKey), nullableUUID(c.InvocationID)
		resolved[i], result[i] = nullableJSON(c.ResolvedArgs), nullableJSON(c.Result)
		errCode[i], errMsg[i], simulated[i] = nullableText(c.ErrorCode), nullableText(c.ErrorMessage), c.Simulated
		decision[i], decidedBy[i] = nullableText(c.GateDecision), nullableText(c.GateDecidedBy)
		decidedAt[i], comment[i] = nullableTime(c.GateDecidedAt), nullableText(c.GateComment)
		compStatus[i], compErr[i] = nullableText(c.CompensationStatus), nullableText(c.CompensationError)
		escStatus[i], escErr[i] = nullableText(c.EscalationStatus), nullableText(c.EscalationError)
		startedAt[i], finishedAt[i], completed[i] = nullableTime(c.StartedAt), nullableTime(c.FinishedAt), c.Completed
		leaseOp[i] = lease[c.ID]
		if l := c.Ledger; l != nil {
			ledgerIDs[i] = pgtype.UUID{Bytes: l.ID, Valid: true}
			ledgerWorkers[i], ledgerArgs[i], ledgerResults[i] = nullableText(l.WorkerID), nullableText(l.ArgsHash), nullableText(l.ResultHash)
		}
	}
	return []any{ids, status, attempt, nextAt, idemKey, invocation, resolved, result, errCode, errMsg, simulated,
		decision, decidedBy, decidedAt, comment, compStatus, compErr, startedAt, finishedAt, completed, escStatus, escErr,
		worker, expiresAt, leaseOp, ledgerIDs, ledgerWorkers, ledgerArgs, ledgerResults}
}

func nullString[T ~string](s T) *string {
	if s == "" {
		return nil
	}
	v := string(s)
	return &v
}

func nullJSON(b json.RawMessage) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
