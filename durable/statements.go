package durable

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// StatementLog records every distinct statement a store sends, with the
// arguments it was last sent with: the query-plan tests run a workload,
// then explain each statement it used (ExplainGeneric), so that no
// statement on a hot path can escape them by not being listed.
type StatementLog struct {
	mu   sync.Mutex
	seen map[string][]any
}

// NewStatementLog makes an empty log, for Config.Statements.
func NewStatementLog() *StatementLog { return &StatementLog{seen: map[string][]any{}} }

// Statements lists the statements recorded, sorted, with their arguments.
func (l *StatementLog) Statements() []Statement {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Statement, 0, len(l.seen))
	for sql, args := range l.seen {
		out = append(out, Statement{SQL: sql, Args: args})
	}
	slices.SortFunc(out, func(a, b Statement) int { return strings.Compare(a.SQL, b.SQL) })
	return out
}

// Statement is one statement of a StatementLog.
type Statement struct {
	SQL  string
	Args []any
}

func (l *StatementLog) record(sql string, args []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[sql] = slices.Clone(args)
}

// TraceQueryStart records a statement sent on its own.
func (l *StatementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.record(d.SQL, d.Args)
	return ctx
}

// TraceQueryEnd does nothing.
func (l *StatementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart does nothing: each of the batch's statements is recorded
// by TraceBatchQuery.
func (l *StatementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery records a statement sent in a batch.
func (l *StatementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.record(d.SQL, d.Args)
}

// TraceBatchEnd does nothing.
func (l *StatementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// ExplainGeneric is the plan PostgreSQL settles on for a statement once it
// uses the generic plan of a prepared statement (after five runs, when it
// judges the generic plan no worse): prepared with its parameters' types
// inferred, explained with plan_cache_mode = force_generic_plan and the
// arguments given. Nothing runs: the transaction it explains in is rolled
// back.
func (s *Store) ExplainGeneric(ctx context.Context, sql string, args []any) (string, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return "", translate(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", translate(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return "", translate(err)
	}
	if _, err := tx.Exec(ctx, "PREPARE explained AS "+sql); err != nil {
		return "", translate(err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "DEALLOCATE explained") }()
	// EXECUTE takes its arguments as expressions, not as parameters of
	// the EXPLAIN: they are written as literals of the types PostgreSQL
	// inferred for the prepared statement.
	var oids []uint32
	var types []string
	err = tx.QueryRow(ctx, `SELECT parameter_types::oid[], parameter_types::text[] FROM pg_prepared_statements
		WHERE name = 'explained'`).Scan(&oids, &types)
	if err != nil {
		return "", translate(err)
	}
	if len(oids) != len(args) {
		return "", fmt.Errorf("the statement takes %d parameters; %d arguments were recorded", len(oids), len(args))
	}
	literals := make([]string, len(args))
	for i, arg := range args {
		if arg == nil {
			literals[i] = "NULL::" + types[i]
			continue
		}
		text, err := conn.Conn().TypeMap().Encode(oids[i], pgtype.TextFormatCode, arg, nil)
		if err != nil {
			return "", fmt.Errorf("argument %d: %w", i+1, err)
		}
		if text == nil {
			literals[i] = "NULL::" + types[i]
			continue
		}
		literals[i] = "'" + strings.ReplaceAll(string(text), "'", "''") + "'::" + types[i]
	}
	explain := "EXPLAIN EXECUTE explained"
	if len(args) > 0 {
		explain += "(" + strings.Join(literals, ", ") + ")"
	}
	rows, err := tx.Query(ctx, explain)
	if err != nil {
		return "", translate(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), translate(err)
}
