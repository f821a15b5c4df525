package driver

import (
	"context"

	"github.com/runbookdev/runbook/rbtype"
)

// CRUDRequest is one pg.crud operation. The table and columns come from
// the verb's params, which the daemon's catalogue holds; the values come
// from the step's arguments, keyed by column, and are always bound as
// parameters.
type CRUDRequest struct {
	Op        rbtype.CRUDOp
	Table     string   // optionally schema-qualified
	Key       []string // columns that select the row (update, delete, upsert, select)
	Columns   []string // the columns values may set; empty means any
	Returning []string // columns to return
	Values    map[string]any
	// DryRun runs the statement in a transaction that rolls back: it says
	// what the statement would return, constraints checked, and changes
	// nothing (execution levels; docs/design/semantics.md section 7).
	DryRun bool
}

// CRUDExecutor runs one pg.crud operation on the application's database
// (not the daemon's own tables).
type CRUDExecutor interface {
	CRUD(ctx context.Context, req CRUDRequest) ([]map[string]any, error)
}
