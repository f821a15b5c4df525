package runtime

import (
	"context"
	"errors"

	"github.com/runbookdev/runbook/runtime/driver"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// crud is pg.crud: one operation on one table, the table and columns from
// the verb's params (checked when the verb was loaded), the values from the
// arguments, always bound as parameters.
type crud struct{ exec driver.CRUDExecutor }

func (h *crud) Call(ctx context.Context, c *Call) (Result, error) {
	if h.exec == nil {
		return Result{}, Errorf(rbtype.CodeDependencyUnavailable, "pg.crud has no database")
	}
	req := driver.CRUDRequest{
		Op:        rbtype.CRUDOp(stringParam(c.Params, "op")),
		Table:     stringParam(c.Params, "table"),
		Key:       stringsParam(c.Params, "key"),
		Columns:   stringsParam(c.Params, "columns"),
		Returning: stringsParam(c.Params, "returning"),
		Values:    c.Args,
	}
	rows, err := h.exec.CRUD(ctx, req)
	switch {
	case errors.Is(err, driver.ErrTransient):
		return Result{}, &Error{Code: rbtype.CodeTransientDBLock, Message: err.Error(), Err: err}
	case errors.Is(err, driver.ErrBadRequest):
		return Result{}, &Error{Code: rbtype.CodeInvalidInput, Message: err.Error(), Err: err}
	case err != nil:
		return Result{}, &Error{Code: rbtype.CodeDependencyUnavailable, Message: err.Error(), Err: err}
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
