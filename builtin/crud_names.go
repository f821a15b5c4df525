package builtin

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/runbookdev/runbook/migrations"
)

// CRUDHandler is the name of the built-in handler that works on the
// application's tables.
const CRUDHandler = "pg.crud"

// The two ways a pg.crud name is refused. Both are final: no retry makes a
// name acceptable.
var (
	// ErrNotIdentifier: not a lower-case SQL identifier (optionally
	// schema-qualified, for a table).
	ErrNotIdentifier = errors.New("not a lower-case SQL identifier")
	// ErrDaemonTable: a table in rbd's own schema, one of rbd's tables
	// named without a schema, or a system catalog. A verb file must not be
	// able to rewrite the engine's state, or read the catalogs' secrets.
	ErrDaemonTable = errors.New("not a table pg.crud may use")
)

// identifier is the only shape of name pg.crud puts into SQL: PostgreSQL's
// unquoted identifiers, lower-case, so that what a verb file says is what
// the database resolves, with no folding or quoting to reason about.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// nameError is a refused name: its message says why in full, and it
// matches ErrNotIdentifier or ErrDaemonTable with errors.Is.
type nameError struct {
	msg  string
	kind error
}

func (e *nameError) Error() string { return e.msg }
func (e *nameError) Unwrap() error { return e.kind }

func refuse(kind error, format string, args ...any) error {
	return &nameError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// CheckIdentifier reports whether name is a lower-case SQL identifier:
// a column, or a schema.
func CheckIdentifier(name string) error {
	if !identifier.MatchString(name) {
		return refuse(ErrNotIdentifier, "%q is not a lower-case SQL identifier", name)
	}
	return nil
}

// CheckCRUDTable is the one rule for a pg.crud table, applied when a verb
// is loaded (rbc, rbd) and again before every call (a plan may have been
// compiled elsewhere). daemonSchema is the schema rbd keeps its tables in;
// empty means migrations.DefaultSchema.
//
// The table must be a lower-case SQL identifier, optionally
// schema-qualified (crm.deals), and must not be rbd's: not in rbd's
// schema, not one of rbd's tables named without a schema (the search path
// decides where those resolve, and it is not the verb's to decide), and not
// in the system catalogs. That part of the check is made first, on the name
// as PostgreSQL could read it (case folded, quotes and spaces dropped), so
// that RBD."Runbooks" is reported as the attempt it is, not as a typo.
func CheckCRUDTable(table, daemonSchema string) error {
	if daemonSchema == "" {
		daemonSchema = migrations.DefaultSchema
	}
	if why := daemonTable(table, daemonSchema); why != "" {
		return refuse(ErrDaemonTable, "table %q %s; pg.crud may not use it", table, why)
	}
	parts := strings.Split(table, ".")
	if len(parts) > 2 || !identifier.MatchString(parts[0]) || !identifier.MatchString(parts[len(parts)-1]) {
		return refuse(ErrNotIdentifier, "table %q is not a lower-case SQL identifier, optionally schema-qualified", table)
	}
	return nil
}

// daemonTable says why table is off limits, or "" when it is not.
func daemonTable(table, daemonSchema string) string {
	parts := strings.Split(loosely(table), ".")
	name := parts[len(parts)-1]
	if len(parts) == 1 {
		switch {
		case slices.Contains(migrations.Relations(), name):
			return "is the name of one of rbd's own tables (an application's table of that name needs its schema: app." + name + ")"
		case strings.HasPrefix(name, "pg_"):
			return "would resolve to PostgreSQL's system catalog"
		}
		return ""
	}
	// With a database name in front (db.schema.table), the schema is
	// still the next to last part.
	schema := parts[len(parts)-2]
	switch {
	case schema == loosely(daemonSchema):
		return fmt.Sprintf("is in rbd's own schema %q, which holds the daemon's state", loosely(daemonSchema))
	case strings.HasPrefix(schema, "pg_") || schema == "information_schema":
		return "is in PostgreSQL's system catalogs"
	}
	return ""
}

// loosely reads a name the way PostgreSQL might after quoting and case
// folding: lower-case, without double quotes or white space.
func loosely(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}
