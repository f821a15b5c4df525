package durable

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/runtime/driver"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// identifier is what CRUD accepts as a table or column name; verbs are
// checked against the same rule when they are loaded.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CRUD runs one operation. Identifiers are checked and quoted; values are
// always bound as parameters. Argument names may use dashes; they map to
// columns with underscores.
func (s *Store) CRUD(ctx context.Context, r driver.CRUDRequest) ([]map[string]any, error) {
	table, err := quoteTable(r.Table)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	for k, v := range r.Values {
		col := strings.ReplaceAll(k, "-", "_")
		if !identifier.MatchString(col) {
			return nil, fmt.Errorf("%w: %q is not a column name", driver.ErrBadRequest, k)
		}
		if len(r.Columns) > 0 && !slices.Contains(r.Columns, col) && !slices.Contains(r.Key, col) {
			return nil, fmt.Errorf("%w: column %q is not one the verb allows", driver.ErrBadRequest, col)
		}
		values[col] = v
	}
	cols := make([]string, 0, len(values))
	for c := range values {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	var keyCols, setCols []string
	for _, c := range cols {
		if slices.Contains(r.Key, c) {
			keyCols = append(keyCols, c)
		} else {
			setCols = append(setCols, c)
		}
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where := func() (string, error) {
		if len(keyCols) != len(r.Key) && r.Op != rbtype.CRUDSelect {
			return "", fmt.Errorf("%w: every key column (%s) needs a value", driver.ErrBadRequest, strings.Join(r.Key, ", "))
		}
		if len(keyCols) == 0 {
			return "TRUE", nil
		}
		parts := make([]string, len(keyCols))
		for i, c := range keyCols {
			parts[i] = pgx.Identifier{c}.Sanitize() + " = " + arg(values[c])
		}
		return strings.Join(parts, " AND "), nil
	}
	returning := ""
	if len(r.Returning) > 0 {
		quoted := make([]string, len(r.Returning))
		for i, c := range r.Returning {
			if !identifier.MatchString(c) {
				return nil, fmt.Errorf("%w: %q is not a column name", driver.ErrBadRequest, c)
			}
			quoted[i] = pgx.Identifier{c}.Sanitize()
		}
		returning = " RETURNING " + strings.Join(quoted, ", ")
	}
	var sql string
	switch r.Op {
	case rbtype.CRUDInsert, rbtype.CRUDUpsert:
		names := make([]string, len(cols))
		params := make([]string, len(cols))
		for i, c := range cols {
			names[i], params[i] = pgx.Identifier{c}.Sanitize(), arg(values[c])
		}
		sql = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(names, ", "), strings.Join(params, ", "))
		if r.Op == rbtype.CRUDUpsert {
			if len(r.Key) == 0 {
				return nil, fmt.Errorf("%w: upsert needs key columns", driver.ErrBadRequest)
			}
			conflict := make([]string, len(r.Key))
			for i, c := range r.Key {
				conflict[i] = pgx.Identifier{c}.Sanitize()
			}
			sets := make([]string, 0, len(setCols))
			for _, c := range setCols {
				sets = append(sets, pgx.Identifier{c}.Sanitize()+" = excluded."+pgx.Identifier{c}.Sanitize())
			}
			if len(sets) == 0 {
				sql += fmt.Sprintf(" ON CONFLICT (%s) DO NOTHING", strings.Join(conflict, ", "))
			} else {
				sql += fmt.Sprintf(" ON CONFLICT (%s) DO UPDATE SET %s", strings.Join(conflict, ", "), strings.Join(sets, ", "))
			}
		}
		sql += returning
	case rbtype.CRUDUpdate:
		if len(setCols) == 0 {
			return nil, fmt.Errorf("%w: update has nothing to set", driver.ErrBadRequest)
		}
		sets := make([]string, len(setCols))
		for i, c := range setCols {
			sets[i] = pgx.Identifier{c}.Sanitize() + " = " + arg(values[c])
		}
		w, err := where()
		if err != nil {
			return nil, err
		}
		sql = fmt.Sprintf("UPDATE %s SET %s WHERE %s%s", table, strings.Join(sets, ", "), w, returning)
	case rbtype.CRUDDelete:
		w, err := where()
		if err != nil {
			return nil, err
		}
		sql = fmt.Sprintf("DELETE FROM %s WHERE %s%s", table, w, returning)
	case rbtype.CRUDSelect:
		w, err := where()
		if err != nil {
			return nil, err
		}
		what := "*"
		if len(r.Returning) > 0 {
			what = strings.TrimPrefix(returning, " RETURNING ")
		}
		sql = fmt.Sprintf("SELECT %s FROM %s WHERE %s LIMIT 1000", what, table, w)
	default:
		return nil, fmt.Errorf("%w: unknown op %q", driver.ErrBadRequest, r.Op)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}

func quoteTable(name string) (string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("%w: %q is not a table name", driver.ErrBadRequest, name)
	}
	for _, p := range parts {
		if !identifier.MatchString(p) {
			return "", fmt.Errorf("%w: %q is not a table name", driver.ErrBadRequest, name)
		}
	}
	return pgx.Identifier(parts).Sanitize(), nil
}
