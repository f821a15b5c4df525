package durable

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The listing's filters by what a runbook waits on. They decide exactly
// what the runtime's view decides from the steps (runtime.buildView; a
// test in httpapi holds the two together), from a few facts about each
// runbook's steps: stepFactsSQL, a LATERAL aggregate over the runbook's
// own steps, found through the (runbook_id, key) index. No index covers a
// step's status, so that the many updates that change it stay HOT
// (migration 001); and a finished complete runbook, which is most of
// history, reads no step at all: the aggregate's guard is a one-time
// filter on the runbook's own row. (EXISTS subqueries, tried first, were
// planned as hashed subplans that read every step of every runbook,
// history included, on each listing.)

// stepFactsSQL joins each listed runbook r to the facts f about its steps:
// gated (one waits for approval), escalated, moving (one is ready,
// running or due a retry, or parked with its notification in), parked (one
// waits for a notification or a timer), undone (one has not ended),
// compensated (a compensation ran or runs; one a draft skipped undid
// nothing, as runtime's undone says), retryable (a failed or escalated one that a retry may help:
// noRetry names the codes of a step that never called its handler for
// which it would not) and drafts (a draft's step skipped as DRAFT_ONLY).
func stepFactsSQL(noRetry string) string {
	return `
	CROSS JOIN LATERAL (
		SELECT
			coalesce(bool_or(s.status = 'waiting_approval'), false) AS gated,
			coalesce(bool_or(s.status IN ('escalated', 'in_doubt')), false) AS escalated,
			coalesce(bool_or(s.status = 'in_doubt'), false) AS doubt,
			coalesce(bool_or(s.status IN ('ready', 'running', 'failed_retryable')
				OR (s.status = 'parked' AND n.correlation_key IS NOT NULL)), false) AS moving,
			coalesce(bool_or(s.status = 'parked' AND n.correlation_key IS NULL), false) AS parked,
			coalesce(bool_or(s.status NOT IN ('complete', 'failed', 'skipped', 'cancelled', 'escalated')), false) AS undone,
			coalesce(bool_or(s.compensation_status IS NOT NULL AND s.compensation_status <> 'skipped'), false) AS compensated,
			coalesce(bool_or(s.status IN ('failed', 'escalated')
				AND (s.attempt > 0 OR NOT coalesce(s.error_code, '') = ANY(` + noRetry + `))), false) AS retryable,
			coalesce(bool_or(s.status = 'skipped' AND s.error_code = 'DRAFT_ONLY'), false) AS drafts
		FROM runbook_steps s
		LEFT JOIN invocation_records i
			ON s.status = 'parked' AND i.runbook_id = r.id AND i.step_id = s.id AND i.status = 'active'
		LEFT JOIN completion_notifications n
			ON n.correlation_key = i.correlation_key AND n.status = 'received'
		WHERE s.runbook_id = r.id
		  AND (r.status IN ('executing', 'in_progress', 'escalated', 'failed', 'partial') OR r.mode = 'draft_only')
	) f`
}

const runningSQL = `r.status IN ('executing', 'in_progress')`

// stateSQL are the refined states, as the view says them.
var stateSQL = map[string]string{
	string(rbtype.StateAwaitingApproval): runningSQL + ` AND NOT f.moving AND f.gated`,
	string(rbtype.StateInDoubt):          runningSQL + ` AND NOT f.moving AND NOT f.gated AND f.doubt`,
	string(rbtype.StateParked):           runningSQL + ` AND NOT f.moving AND NOT f.gated AND NOT f.doubt AND f.parked`,
	string(rbtype.StateHeldOpen):         `r.status = 'in_progress' AND NOT f.moving AND NOT f.gated AND NOT f.doubt AND NOT f.parked AND NOT f.undone`,
	string(rbtype.RunbookExecuting):      `r.status = 'executing' AND (f.moving OR NOT (f.gated OR f.parked))`,
	string(rbtype.RunbookInProgress):     `r.status = 'in_progress' AND (f.moving OR NOT (f.gated OR f.parked) AND f.undone)`,
}

// needsPersonSQL: r waits on a person: a gate to decide, an escalation to
// resolve, a failure a retry may fix, or a draft to run for real.
const needsPersonSQL = `((` + runningSQL + ` AND f.gated)
		OR (r.status IN ('executing', 'in_progress', 'escalated') AND f.escalated)
		OR (r.status IN ('failed', 'partial', 'escalated', 'in_progress') AND NOT f.compensated AND f.retryable)
		OR (r.mode = 'draft_only' AND r.status IN ('complete', 'failed', 'partial', 'escalated') AND f.drafts))`

// needsPersonBranches are where a runbook that waits on a person can be:
// among the running, escalated, failed and partial runbooks
// (runbooks_status_created), or among the finished drafts
// (runbooks_drafts_created, migration 022).
var needsPersonBranches = []string{
	`r.status IN ('executing', 'in_progress', 'escalated', 'failed', 'partial')`,
	`r.mode = 'draft_only' AND r.status = 'complete'`,
}

// rareBranches says where to look for the runbooks of a listing that
// matches few of them (what waits on a person, a runbook awaiting
// approval or held open), or nil for one whose matches are many and
// recent (parked, executing, the rest), which the newest-first index
// finds by reading until the page is full. A rare listing read that way
// would walk all of history to find its few: it reads the statuses they
// can have instead, through their indexes, and sorts what it found.
func rareBranches(q driver.RunbookQuery) []string {
	switch {
	case q.NeedsPerson != nil && *q.NeedsPerson:
		return needsPersonBranches
	case q.State == string(rbtype.StateAwaitingApproval), q.State == string(rbtype.StateHeldOpen), q.State == string(rbtype.StateInDoubt):
		return []string{runningSQL}
	}
	return nil
}

// listFilter is the joins and WHERE clause of a listing, and their
// arguments after the five every listing has ($1 status, $2 and $3 the
// cursor, $4 the limit, $5 the tenant).
func listFilter(q driver.RunbookQuery) (join, where string, args []any, err error) {
	where = `($1 = '' OR r.status = $1)
		  AND ($5 = '' OR r.tenant = $5)
		  AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3))`
	if q.State == "" && q.NeedsPerson == nil {
		return "", where, nil, nil
	}
	codes := make([]string, len(q.NoRetryCodes))
	for i, c := range q.NoRetryCodes {
		codes[i] = string(c)
	}
	args = append(args, codes)
	join = stepFactsSQL("$6::text[]")
	if q.State != "" {
		cond, ok := stateSQL[q.State]
		if !ok {
			return "", "", nil, fmt.Errorf("%w: %q is not a state to list by", driver.ErrBadRequest, q.State)
		}
		where += ` AND (` + cond + `)`
	}
	if q.NeedsPerson != nil {
		cond := needsPersonSQL
		if !*q.NeedsPerson {
			cond = `NOT ` + cond
		}
		where += ` AND ` + cond
	}
	return join, where, args, nil
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
	return collectNotified(rows, err)
}

// EventsOfType returns a runbook's events of some types, oldest first.
func (s *Store) EventsOfType(ctx context.Context, runbookID uuid.UUID, types []rbtype.EventType) ([]driver.Event, error) {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+eventColumns+`
		FROM runbook_event_rows b, jsonb_array_elements(b.events) WITH ORDINALITY x(e, k)
		WHERE b.runbook_id = $1 AND x.e->>0 = ANY($2) ORDER BY b.last_id, x.k`, runbookID, names)
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
