package durable

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The listing's filters by what a runbook waits on. Each is a predicate on
// the row r of runbooks, written to decide exactly what the runtime's view
// decides from the steps (runtime.buildView; a test in runtime holds the
// two together). They look the steps up through the (runbook_id, key)
// index; no index covers a step's status, so that the many updates that
// change it stay HOT (migration 001): a filtered listing reads the steps
// of the runbooks it passes, which for the states of running runbooks are
// the running ones.

// stepWhere is "r has a step s for which cond holds".
func stepWhere(cond string) string {
	return `EXISTS (SELECT 1 FROM runbook_steps s WHERE s.runbook_id = r.id AND (` + cond + `))`
}

// notifiedSQL: s is parked and its notification is in the inbox, to be
// consumed: it moves without anyone.
const notifiedSQL = `EXISTS (SELECT 1 FROM invocation_records i
	JOIN completion_notifications n ON n.correlation_key = i.correlation_key AND n.status = 'received'
	WHERE i.runbook_id = r.id AND i.step_id = s.id AND i.status = 'active')`

var (
	runningSQL = `r.status IN ('executing', 'in_progress')`
	movingSQL  = stepWhere(`s.status IN ('ready', 'running', 'failed_retryable') OR (s.status = 'parked' AND ` + notifiedSQL + `)`)
	gatedSQL   = stepWhere(`s.status = 'waiting_approval'`)
	parkedSQL  = stepWhere(`s.status = 'parked' AND NOT ` + notifiedSQL)
	undoneSQL  = stepWhere(`s.status NOT IN ('complete', 'failed', 'skipped', 'cancelled', 'escalated')`)
	waitingSQL = `(` + gatedSQL + ` OR ` + parkedSQL + `)`
)

// stateSQL are the refined states, as the view says them.
var stateSQL = map[string]string{
	string(rbtype.StateAwaitingApproval): runningSQL + ` AND NOT ` + movingSQL + ` AND ` + gatedSQL,
	string(rbtype.StateParked):           runningSQL + ` AND NOT ` + movingSQL + ` AND NOT ` + gatedSQL + ` AND ` + parkedSQL,
	string(rbtype.StateHeldOpen):         `r.status = 'in_progress' AND NOT ` + movingSQL + ` AND NOT ` + waitingSQL + ` AND NOT ` + undoneSQL,
	string(rbtype.RunbookExecuting):      `r.status = 'executing' AND (` + movingSQL + ` OR NOT ` + waitingSQL + `)`,
	string(rbtype.RunbookInProgress):     `r.status = 'in_progress' AND (` + movingSQL + ` OR NOT ` + waitingSQL + ` AND ` + undoneSQL + `)`,
}

// needsPersonSQL: r waits on a person: a gate to decide, an escalation to
// resolve, a failure a retry may fix, or a draft to run for real.
// noRetry is the parameter holding the codes for which no retry is
// offered to a step that never called its handler (runtime.NoRetryCodes).
func needsPersonSQL(noRetry string) string {
	retryable := `s.status IN ('failed', 'escalated') AND (s.attempt > 0 OR NOT coalesce(s.error_code, '') = ANY(` + noRetry + `))`
	return `((` + runningSQL + ` AND ` + gatedSQL + `)
		OR (r.status IN ('executing', 'in_progress', 'escalated') AND ` + stepWhere(`s.status = 'escalated'`) + `)
		OR (r.status IN ('failed', 'partial', 'escalated', 'in_progress')
			AND NOT ` + stepWhere(`s.compensation_status IS NOT NULL`) + `
			AND ` + stepWhere(retryable) + `)
		OR (r.mode = 'draft_only' AND r.status IN ('complete', 'failed', 'partial', 'escalated')
			AND ` + stepWhere(`s.status = 'skipped' AND s.error_code = 'DRAFT_ONLY'`) + `))`
}

// listFilter is the WHERE clause of a listing and its arguments, after
// the four every listing has ($1 status, $2 and $3 the cursor, $4 the
// limit, $5 the tenant).
func listFilter(q driver.RunbookQuery) (string, []any, error) {
	where := `($1 = '' OR r.status = $1)
		  AND ($5 = '' OR r.tenant = $5)
		  AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3))`
	var args []any
	if q.State != "" {
		cond, ok := stateSQL[q.State]
		if !ok {
			return "", nil, fmt.Errorf("%w: %q is not a state to list by", driver.ErrBadRequest, q.State)
		}
		where += ` AND (` + cond + `)`
	}
	if q.NeedsPerson != nil {
		codes := make([]string, len(q.NoRetryCodes))
		for i, c := range q.NoRetryCodes {
			codes[i] = string(c)
		}
		args = append(args, codes)
		cond := needsPersonSQL(fmt.Sprintf("$%d::text[]", 5+len(args)))
		if !*q.NeedsPerson {
			cond = `NOT ` + cond
		}
		where += ` AND ` + cond
	}
	return where, args, nil
}

// StepStates loads the steps of several runbooks without their arguments,
// execution blocks and results, in plan order.
func (s *Store) StepStates(ctx context.Context, runbookIDs []uuid.UUID) ([]*driver.Step, error) {
	return querySteps(ctx, s.pool, "SELECT "+stepStateColumns+` FROM runbook_steps
		WHERE runbook_id = ANY($1) ORDER BY runbook_id, position`, runbookIDs)
}

// ActiveInvocations returns the open waits of several runbooks, each with
// Notified set when its notification is in the inbox.
func (s *Store) ActiveInvocations(ctx context.Context, runbookIDs []uuid.UUID) ([]driver.Invocation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+invocationColumns+`,
			EXISTS (SELECT 1 FROM completion_notifications n
				WHERE n.correlation_key = i.correlation_key AND n.status = 'received')
		FROM invocation_records i WHERE runbook_id = ANY($1) AND status = 'active' ORDER BY parked_at, invocation_id`, runbookIDs)
	if err != nil {
		return nil, translate(err)
	}
	invs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Invocation, error) {
		var i driver.Invocation
		err := r.Scan(append(invocationFields(&i), &i.Notified)...)
		return i, err
	})
	return invs, translate(err)
}

// EventsOfType returns a runbook's events of some types, oldest first.
func (s *Store) EventsOfType(ctx context.Context, runbookID uuid.UUID, types []rbtype.EventType) ([]driver.Event, error) {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, runbook_id, type, coalesce(step_key, ''), coalesce(attempt, 0), coalesce(worker_id, ''), data, at
		FROM runbook_events WHERE runbook_id = $1 AND type = ANY($2) ORDER BY id`, runbookID, names)
	if err != nil {
		return nil, translate(err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Event, error) {
		var e driver.Event
		err := r.Scan(&e.ID, &e.RunbookID, &e.Type, &e.StepKey, &e.Attempt, &e.WorkerID, &e.Data, &e.At)
		return e, err
	})
	return events, translate(err)
}
