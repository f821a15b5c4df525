package runtime

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
)

// crud is pg.crud: one operation on one table, the table and columns from
// the verb's params, the values from the arguments, always bound as
// parameters. The names are checked again here, by the rule the catalogue
// applied when the verb was loaded: the plan may have been compiled by
// another rbc, against another schema, or written by hand.
type crud struct {
	exec         driver.CRUDExecutor
	daemonSchema string
}

func (h *crud) Call(ctx context.Context, c *Call) (Result, error) {
	req, err := h.request(c)
	if err != nil {
		return Result{}, err
	}
	return h.run(ctx, req)
}

// DryRun runs the statement in a transaction that rolls back: what it
// would return, constraints checked, nothing changed.
func (h *crud) DryRun(ctx context.Context, c *Call) (Result, error) {
	req, err := h.request(c)
	if err != nil {
		return Result{}, err
	}
	req.DryRun = true
	return h.run(ctx, req)
}

func (h *crud) run(ctx context.Context, req driver.CRUDRequest) (Result, error) {
	if h.exec == nil {
		return Result{}, Errorf(rbtype.CodeDependencyUnavailable, "pg.crud has no database")
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
		return Result{}, &Error{Code: rbtype.CodeTransientDBLock, Message: msg, Err: err}
	case errors.Is(err, driver.ErrBadRequest), errors.Is(err, driver.ErrConflict):
		return Result{}, &Error{Code: rbtype.CodeInvalidInput, Message: msg, Err: err}
	case errors.Is(err, driver.ErrForbidden):
		return Result{}, &Error{Code: rbtype.CodeAuthForbidden, Message: msg, Err: err}
	case err != nil:
		return Result{}, &Error{Code: rbtype.CodeDependencyUnavailable, Message: msg, Err: err}
	}
	if req.Op == rbtype.CRUDSelect {
		if rows == nil {
			rows = []map[string]any{}
		}
		return Complete(map[string]any{"rows": rows, "count": len(rows)}), nil
	}
	if len(rows) > 0 {
		return Complete(rows[0]), nil
	}
	return Complete(map[string]any{"count": 0}), nil
}

// request reads the call into a CRUD request, refusing rbd's own tables
// (POLICY_DENIED) and names that are not identifiers (INVALID_INPUT);
// both are final. Argument names may use dashes; they map to columns with
// underscores.
func (h *crud) request(c *Call) (driver.CRUDRequest, error) {
	req := driver.CRUDRequest{
		Op:        rbtype.CRUDOp(stringParam(c.Params, "op")),
		Table:     stringParam(c.Params, "table"),
		Key:       stringsParam(c.Params, "key"),
		Columns:   stringsParam(c.Params, "columns"),
		Returning: stringsParam(c.Params, "returning"),
		Values:    make(map[string]any, len(c.Args)),
	}
	if err := registry.CheckCRUDTable(req.Table, h.daemonSchema); err != nil {
		code := rbtype.CodeInvalidInput
		if errors.Is(err, registry.ErrDaemonTable) {
			code = rbtype.CodePolicyDenied
		}
		return req, &Error{Code: code, Message: err.Error(), Err: err}
	}
	for k, v := range c.Args {
		req.Values[strings.ReplaceAll(k, "-", "_")] = v
	}
	for _, names := range [][]string{req.Key, req.Columns, req.Returning, slices.Sorted(maps.Keys(req.Values))} {
		for _, name := range names {
			if err := registry.CheckIdentifier(name); err != nil {
				return req, &Error{Code: rbtype.CodeInvalidInput, Message: "pg.crud column " + err.Error(), Err: err}
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
