package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// stepsOnce checks, from the runbooks' events, that every one of the
// steps of each runbook started exactly once, and counts the steps each
// worker started. Several rbd workers on one schema must share the work,
// never repeat it: a step started twice, or a runbook with a step that
// never started, fails the run.
func stepsOnce(ids []uuid.UUID, ledgers [][]apitype.Event, steps int) (map[string]int, error) {
	byWorker := map[string]int{}
	for i, evs := range ledgers {
		started := map[string]int{}
		for _, e := range evs {
			if e.Type == rbtype.EventStepStarted {
				started[e.Step]++
				byWorker[e.Worker]++
			}
		}
		for key, n := range started {
			if n != 1 {
				return nil, fmt.Errorf("runbook %s: step %s started %d times", ids[i], key, n)
			}
		}
		if len(started) != steps {
			return nil, fmt.Errorf("runbook %s: %d of its %d steps started", ids[i], len(started), steps)
		}
	}
	return byWorker, nil
}

// attemptsOnce checks the same from the job ledger's table
// (step_attempts, one row per attempt) for the runbooks ids: as many rows
// as their steps, one per step, none an attempt after the first. Other
// runbooks in the schema (the history's) are not counted.
func (l *lab) attemptsOnce(ctx context.Context, schema string, ids []uuid.UUID, steps int) error {
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var rows, distinct, maxAttempt int
	err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (runbook_id, step_key)), coalesce(max(attempt), 0) FROM `+
		pgx.Identifier{schema, "step_attempts"}.Sanitize()+` WHERE runbook_id = ANY($1::uuid[])`, idStrings(ids)).Scan(&rows, &distinct, &maxAttempt)
	if err != nil {
		return err
	}
	want := len(ids) * steps
	if rows != want || distinct != want || maxAttempt != 1 {
		return fmt.Errorf("step_attempts: %d rows for %d steps (%d distinct), highest attempt %d; want one attempt per step",
			rows, want, distinct, maxAttempt)
	}
	return nil
}

// idStrings are ids as text, which pgx sends as a text[] for the query to
// cast.
func idStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// shares shows how many steps each worker started, in worker order.
func shares(byWorker map[string]int) string {
	parts := make([]string, 0, len(byWorker))
	for _, w := range slices.Sorted(maps.Keys(byWorker)) {
		parts = append(parts, fmt.Sprintf("%s %d", w, byWorker[w]))
	}
	return strings.Join(parts, ", ")
}
