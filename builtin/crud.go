package builtin

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// crudBuiltin is pg.crud: what the compiler checks a verb against, and the code that runs it.
var crudBuiltin = builtinHandler{
	spec: handler.Spec{Name: CRUDHandler, Kind: rbtype.KindSync, Summary: "insert, select, update, delete or upsert on one table",
		CheckParams: checkCRUD, DryRun: true},
	impl: func(d Deps) handler.Handler { return &crud{exec: d.CRUD, daemonSchema: d.DaemonSchema} },
}

// crud is pg.crud: one operation on one table, the table and columns from
// the verb's params, the values from the arguments, always bound as
// parameters. The names are checked again here, by the rule the catalogue
// applied when the verb was loaded: the plan may have been compiled by
// another rbc, against another schema, or written by hand.
type crud struct {
	exec         driver.CRUDExecutor
	daemonSchema string
}

func (h *crud) Call(ctx context.Context, c *handler.Call) (handler.Result, error) {
	req, err := h.request(c)
	if err != nil {
		return handler.Result{}, err
	}
	return h.run(ctx, req)
}

// DryRun runs the statement in a transaction that rolls back: what it
// would return, constraints checked, nothing changed.
func (h *crud) DryRun(ctx context.Context, c *handler.Call) (handler.Result, error) {
	req, err := h.request(c)
	if err != nil {
		return handler.Result{}, err
	}
	req.DryRun = true
	return h.run(ctx, req)
}

func (h *crud) run(ctx context.Context, req driver.CRUDRequest) (handler.Result, error) {
	if h.exec == nil {
		return handler.Result{}, handler.Errorf(rbtype.CodeDependencyUnavailable, "pg.crud has no database")
	}
	rows, err := h.exec.CRUD(ctx, req)
	// The database's own text names tables and constraints; the step's
	// error reaches API callers, so it carries the executor's safe
	// message, and the engine logs the rest.
	msg := ""
	if err != nil {
		msg = err.Error()
		var stmt *driver.StatementError
		if errors.As(err, &stmt) {
			msg = stmt.Message
		}
	}
	switch {
	case errors.Is(err, driver.ErrTransient):
		return handler.Result{}, &handler.Error{Code: rbtype.CodeTransientDBLock, Message: msg, Err: err}
	case errors.Is(err, driver.ErrBadRequest), errors.Is(err, driver.ErrConflict):
		return handler.Result{}, &handler.Error{Code: rbtype.CodeInvalidInput, Message: msg, Err: err}
	case errors.Is(err, driver.ErrForbidden):
		return handler.Result{}, &handler.Error{Code: rbtype.CodeAuthForbidden, Message: msg, Err: err}
	case err != nil:
		return handler.Result{}, &handler.Error{Code: rbtype.CodeDependencyUnavailable, Message: msg, Err: err}
	}
	if req.Op == rbtype.CRUDSelect {
		if rows == nil {
			rows = []map[string]any{}
		}
		return handler.Complete(map[string]any{"rows": rows, "count": len(rows)}), nil
	}
	if len(rows) > 0 {
		return handler.Complete(rows[0]), nil
	}
	return handler.Complete(map[string]any{"count": 0}), nil
}

// request reads the call into a CRUD request, refusing rbd's own tables
// (POLICY_DENIED) and names that are not identifiers (INVALID_INPUT);
// both are final. Argument names may use dashes; they map to columns with
// underscores.
func (h *crud) request(c *handler.Call) (driver.CRUDRequest, error) {
	req := driver.CRUDRequest{
		Op:        rbtype.CRUDOp(stringParam(c.Params, "op")),
		Table:     stringParam(c.Params, "table"),
		Key:       stringsParam(c.Params, "key"),
		Columns:   stringsParam(c.Params, "columns"),
		Returning: stringsParam(c.Params, "returning"),
		Values:    make(map[string]any, len(c.Args)),
	}
	if err := CheckCRUDTable(req.Table, h.daemonSchema); err != nil {
		code := rbtype.CodeInvalidInput
		if errors.Is(err, ErrDaemonTable) {
			code = rbtype.CodePolicyDenied
		}
		return req, &handler.Error{Code: code, Message: err.Error(), Err: err}
	}
	for k, v := range c.Args {
		req.Values[strings.ReplaceAll(k, "-", "_")] = v
	}
	for _, names := range [][]string{req.Key, req.Columns, req.Returning, slices.Sorted(maps.Keys(req.Values))} {
		for _, name := range names {
			if err := CheckIdentifier(name); err != nil {
				return req, &handler.Error{Code: rbtype.CodeInvalidInput, Message: "pg.crud column " + err.Error(), Err: err}
			}
		}
	}
	return req, nil
}

func stringParam(p map[string]any, name string) string {
	s, _ := p[name].(string)
	return s
}

func stringsParam(p map[string]any, name string) []string {
	list, _ := p[name].([]any)
	out := make([]string, 0, len(list))
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkCRUD checks pg.crud's params but for the table's name, which the
// catalogue checks (checkCRUDTable) because the rule needs rbd's schema.
// Identifiers come from verb files, never from runbook arguments; values
// are always bound as parameters.
func checkCRUD(m map[string]any) error {
	p := newParams(m, "op", "table", "key", "columns", "returning")
	op := rbtype.CRUDOp(p.str("op", true))
	if op != "" && !slices.Contains(rbtype.CRUDOps, op) {
		p.fail("op", "param \"op\" %q must be one of %s", op, joinOps(rbtype.CRUDOps))
	}
	p.str("table", true)
	for _, key := range []string{"key", "columns", "returning"} {
		for _, c := range p.strings(key) {
			if CheckIdentifier(c) != nil {
				p.fail(key, "param %q: %q is not a lower-case SQL column name", key, c)
			}
		}
	}
	if (op == rbtype.CRUDUpdate || op == rbtype.CRUDDelete || op == rbtype.CRUDUpsert) && len(p.strings("key")) == 0 {
		p.fail("op", "op %q needs param \"key\": the columns that select the row", op)
	}
	return p.err()
}

func joinOps(ops []rbtype.CRUDOp) string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}
