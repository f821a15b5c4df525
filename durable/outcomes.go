package durable

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// writeOutcomesSQL records outcomes (docs/design/semantics.md section 13). Each takes
// its version from the lineage: the latest outcome of the same root and
// step in an earlier generation is its previous version. An outcome
// without an arguments hash (a resume records its outcome in another
// transaction than the start) takes its attempt's from the ledger, which
// the same batch wrote first. A repeat of an outcome id changes nothing.
const writeOutcomesSQL = `
	INSERT INTO outcomes (outcome_id, tenant, runbook_id, lineage_root, generation, step_key, attempt, verb, type,
		status, preview, args_hash, result_hash, model, parameters, consumed, version, previous)
	SELECT u.id, u.tenant, u.runbook, u.root, u.generation, u.step, u.attempt, u.verb, u.type, u.status, u.preview,
		coalesce(u.args_hash, (SELECT a.args_hash FROM step_attempts a
			WHERE a.runbook_id = u.runbook AND a.step_key = u.step AND a.attempt = u.attempt)),
		u.result_hash, u.model, u.parameters::jsonb,
		coalesce((SELECT array_agg(c::uuid) FROM jsonb_array_elements_text(u.consumed::jsonb) c), '{}'),
		coalesce(prev.version, 0) + 1, prev.outcome_id
	FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::int[], $6::text[], $7::int[], $8::text[],
		$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[])
		AS u(id, tenant, runbook, root, generation, step, attempt, verb, type, status, preview, args_hash,
			result_hash, model, parameters, consumed)
	LEFT JOIN LATERAL (
		SELECT o.outcome_id, o.version FROM outcomes o
		WHERE o.lineage_root = u.root AND o.step_key = u.step AND o.generation < u.generation
		ORDER BY o.generation DESC, o.version DESC LIMIT 1) prev ON true
	ON CONFLICT (outcome_id) DO NOTHING`

func outcomeArgs(os []driver.Outcome) []any {
	n := len(os)
	ids, runbooks, roots := make([][16]byte, n), make([][16]byte, n), make([][16]byte, n)
	tenants, steps, verbs, types, statuses, previews := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	generations, attempts := make([]int32, n), make([]int32, n)
	argsHashes, models, params := make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n),
		make(pgtype.FlatArray[pgtype.Text], n)
	resultHashes, consumed := make([]string, n), make([]string, n)
	for i, o := range os {
		ids[i], runbooks[i], roots[i], tenants[i] = o.ID, o.RunbookID, o.LineageRoot, o.Tenant
		generations[i], steps[i], attempts[i], verbs[i] = int32(o.Generation), o.StepKey, int32(o.Attempt), o.Verb
		types[i], statuses[i], previews[i] = o.Type, string(o.Status), o.Preview
		argsHashes[i], resultHashes[i], models[i], params[i] = nullableText(o.ArgsHash), o.ResultHash, nullableText(o.Model), nullableJSON(o.Parameters)
		b, _ := json.Marshal(orNoIDs(o.Consumed)) // uuids always encode
		consumed[i] = string(b)
	}
	return []any{ids, tenants, runbooks, roots, generations, steps, attempts, verbs, types, statuses, previews,
		argsHashes, resultHashes, models, params, consumed}
}

func orNoIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

// writeArgumentsSQL keeps arguments by hash; a hash kept already is the
// same arguments.
const writeArgumentsSQL = `
	INSERT INTO attempt_arguments (runbook_id, args_hash, args)
	SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[])
	ON CONFLICT DO NOTHING`

func argumentsArgs(as []driver.Arguments) []any {
	runbooks, hashes, args := make([][16]byte, len(as)), make([]string, len(as)), make([]string, len(as))
	for i, a := range as {
		runbooks[i], hashes[i], args[i] = a.RunbookID, a.Hash, string(a.Args)
	}
	return []any{runbooks, hashes, args}
}

const outcomeColumns = `outcome_id, tenant, runbook_id, lineage_root, generation, step_key, attempt, verb, type, status,
	preview, coalesce(args_hash, ''), result_hash, coalesce(model, ''), parameters, consumed, version, previous, created_at`

func scanOutcome(row pgx.CollectableRow) (driver.Outcome, error) {
	var o driver.Outcome
	var status string
	var params []byte
	err := row.Scan(&o.ID, &o.Tenant, &o.RunbookID, &o.LineageRoot, &o.Generation, &o.StepKey, &o.Attempt, &o.Verb,
		&o.Type, &status, &o.Preview, &o.ArgsHash, &o.ResultHash, &o.Model, &params, &o.Consumed, &o.Version,
		&o.Previous, &o.CreatedAt)
	o.Status, o.Parameters = rbtype.OutcomeStatus(status), rawJSON(params)
	if o.Consumed == nil {
		o.Consumed = []uuid.UUID{}
	}
	return o, err
}

// Outcomes lists a runbook's outcomes, oldest first.
func (s *Store) Outcomes(ctx context.Context, runbookID uuid.UUID) ([]driver.Outcome, error) {
	return viewReader{s.pool}.Outcomes(ctx, runbookID)
}

// Outcomes lists a runbook's outcomes, as Store.Outcomes does.
func (r viewReader) Outcomes(ctx context.Context, runbookID uuid.UUID) ([]driver.Outcome, error) {
	rows, err := r.q.Query(ctx, `SELECT `+outcomeColumns+` FROM outcomes WHERE runbook_id = $1 ORDER BY created_at, step_key`, runbookID)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanOutcome)
	return out, translate(err)
}

// OutcomesByID reads outcomes by id, in no particular order; ids not
// found are left out.
func (s *Store) OutcomesByID(ctx context.Context, ids []uuid.UUID) ([]driver.Outcome, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+outcomeColumns+` FROM outcomes WHERE outcome_id = ANY($1)`, ids)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanOutcome)
	return out, translate(err)
}

// StepArguments finds a step's arguments by hash: the step's row holds
// the latest attempt's, attempt_arguments any it held before.
func (s *Store) StepArguments(ctx context.Context, runbookID uuid.UUID, stepKey, hash string) (json.RawMessage, error) {
	var args []byte
	err := s.pool.QueryRow(ctx, `SELECT args FROM attempt_arguments WHERE runbook_id = $1 AND args_hash = $2`, runbookID, hash).Scan(&args)
	if err == nil {
		return args, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, translate(err)
	}
	err = s.pool.QueryRow(ctx, `SELECT resolved_args FROM runbook_steps WHERE runbook_id = $1 AND key = $2`, runbookID, stepKey).Scan(&args)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return rawJSON(args), translate(err)
}
