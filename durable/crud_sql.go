package durable

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// crudSelectLimit bounds the rows one select returns: a step's result is
// stored with the runbook, and a table scan does not belong there.
const crudSelectLimit = 1000

// crudStatement is one statement for a pg.crud operation: its SQL, in
// which every name is quoted, and the values bound to its parameters.
type crudStatement struct {
	sql  string
	args []any
}

// crudParts is a request taken apart for the builders.
type crudParts struct {
	table     string         // quoted, schema-qualified if the verb said so
	key       []string       // the verb's key columns, in its order
	cols      []string       // every column with a value, sorted
	keyCols   []string       // the key columns among cols
	setCols   []string       // the others
	values    map[string]any // by column
	returning []string       // quoted
}

// crudBuilders are the statements, one builder per operation.
var crudBuilders = map[rbtype.CRUDOp]func(crudParts) (crudStatement, error){
	rbtype.CRUDInsert: buildInsert,
	rbtype.CRUDSelect: buildSelect,
	rbtype.CRUDUpdate: buildUpdate,
	rbtype.CRUDDelete: buildDelete,
	rbtype.CRUDUpsert: buildUpsert,
}

// buildCRUD builds the statement for a request.
func buildCRUD(r driver.CRUDRequest) (crudStatement, error) {
	build, ok := crudBuilders[r.Op]
	if !ok {
		return crudStatement{}, fmt.Errorf("%w: unknown op %q", driver.ErrBadRequest, r.Op)
	}
	parts, err := splitCRUD(r)
	if err != nil {
		return crudStatement{}, err
	}
	return build(parts)
}

// splitCRUD quotes the names and sorts the value columns into key and set
// columns. A value for a column that the verb's columns (or key) do not
// list is refused, also when the verb lists no columns: the verb file,
// not the runbook, decides what is written, and an open input_schema
// would otherwise let arguments name any column.
func splitCRUD(r driver.CRUDRequest) (crudParts, error) {
	p := crudParts{
		table:     pgx.Identifier(strings.Split(r.Table, ".")).Sanitize(),
		key:       r.Key,
		cols:      slices.Sorted(maps.Keys(r.Values)),
		values:    r.Values,
		returning: quoteAll(r.Returning),
	}
	for _, c := range p.cols {
		isKey := slices.Contains(r.Key, c)
		if !isKey && !slices.Contains(r.Columns, c) {
			return crudParts{}, fmt.Errorf("%w: column %q is not one the verb allows", driver.ErrBadRequest, c)
		}
		if isKey {
			p.keyCols = append(p.keyCols, c)
		} else {
			p.setCols = append(p.setCols, c)
		}
	}
	return p, nil
}

// buildInsert: INSERT INTO t (a, b) VALUES ($1, $2) [RETURNING ...].
func buildInsert(p crudParts) (crudStatement, error) {
	var b binder
	return crudStatement{sql: insertInto(p, &b) + returning(p), args: b.args}, nil
}

// buildUpsert is an insert that updates the row its key columns already
// name: ON CONFLICT (key) DO UPDATE SET the other columns, or DO NOTHING
// when there are none.
func buildUpsert(p crudParts) (crudStatement, error) {
	if len(p.key) == 0 {
		return crudStatement{}, fmt.Errorf("%w: upsert needs key columns", driver.ErrBadRequest)
	}
	var b binder
	action := "DO NOTHING"
	if len(p.setCols) > 0 {
		sets := make([]string, len(p.setCols))
		for i, c := range p.setCols {
			q := quote(c)
			sets[i] = q + " = excluded." + q
		}
		action = "DO UPDATE SET " + strings.Join(sets, ", ")
	}
	sql := fmt.Sprintf("%s ON CONFLICT (%s) %s%s", insertInto(p, &b), strings.Join(quoteAll(p.key), ", "), action, returning(p))
	return crudStatement{sql: sql, args: b.args}, nil
}

// buildUpdate: UPDATE t SET a = $1 WHERE k = $2 [RETURNING ...]. Every key
// column needs a value, so that an update never reaches more rows than
// the verb meant.
func buildUpdate(p crudParts) (crudStatement, error) {
	if len(p.setCols) == 0 {
		return crudStatement{}, fmt.Errorf("%w: update has nothing to set", driver.ErrBadRequest)
	}
	if err := needEveryKey(p, rbtype.CRUDUpdate); err != nil {
		return crudStatement{}, err
	}
	var b binder
	sets := make([]string, len(p.setCols))
	for i, c := range p.setCols {
		sets[i] = quote(c) + " = " + b.bind(p.values[c])
	}
	sql := fmt.Sprintf("UPDATE %s SET %s%s%s", p.table, strings.Join(sets, ", "), where(p, &b), returning(p))
	return crudStatement{sql: sql, args: b.args}, nil
}

// buildDelete: DELETE FROM t WHERE k = $1 [RETURNING ...], with every key
// column given, as for update.
func buildDelete(p crudParts) (crudStatement, error) {
	if err := needEveryKey(p, rbtype.CRUDDelete); err != nil {
		return crudStatement{}, err
	}
	var b binder
	sql := fmt.Sprintf("DELETE FROM %s%s%s", p.table, where(p, &b), returning(p))
	return crudStatement{sql: sql, args: b.args}, nil
}

// buildSelect: SELECT the returning columns (or *) of the rows whose key
// columns have the values given. Every key column needs a value, as for
// update and delete: a key argument left out would otherwise select every
// row. A verb without a key selects every row, up to the limit.
func buildSelect(p crudParts) (crudStatement, error) {
	if len(p.key) > 0 {
		if err := needEveryKey(p, rbtype.CRUDSelect); err != nil {
			return crudStatement{}, err
		}
	}
	what := "*"
	if len(p.returning) > 0 {
		what = strings.Join(p.returning, ", ")
	}
	var b binder
	sql := fmt.Sprintf("SELECT %s FROM %s%s LIMIT %d", what, p.table, where(p, &b), crudSelectLimit)
	return crudStatement{sql: sql, args: b.args}, nil
}

// insertInto is the INSERT of insert and upsert.
func insertInto(p crudParts, b *binder) string {
	if len(p.cols) == 0 {
		return "INSERT INTO " + p.table + " DEFAULT VALUES"
	}
	params := make([]string, len(p.cols))
	for i, c := range p.cols {
		params[i] = b.bind(p.values[c])
	}
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", p.table, strings.Join(quoteAll(p.cols), ", "), strings.Join(params, ", "))
}

// where matches the key columns that have values; "" when none do.
func where(p crudParts, b *binder) string {
	if len(p.keyCols) == 0 {
		return ""
	}
	conds := make([]string, len(p.keyCols))
	for i, c := range p.keyCols {
		conds[i] = quote(c) + " = " + b.bind(p.values[c])
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

func needEveryKey(p crudParts, op rbtype.CRUDOp) error {
	if len(p.key) == 0 {
		return fmt.Errorf("%w: %s needs key columns", driver.ErrBadRequest, op)
	}
	if len(p.keyCols) != len(p.key) {
		return fmt.Errorf("%w: every key column (%s) needs a value", driver.ErrBadRequest, strings.Join(p.key, ", "))
	}
	return nil
}

func returning(p crudParts) string {
	if len(p.returning) == 0 {
		return ""
	}
	return " RETURNING " + strings.Join(p.returning, ", ")
}

// binder numbers the statement's parameters in the order values are bound.
type binder struct{ args []any }

func (b *binder) bind(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quote(n)
	}
	return out
}
