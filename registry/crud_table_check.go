package registry

import (
	"errors"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// checkCRUDTable applies builtin.CheckCRUDTable to a pg.crud verb's table: V015
// for one of rbd's own tables (or a system catalog), V004 for a name that
// is not an identifier. A missing or non-string table is left to the
// params check.
func (c *Catalogue) checkCRUDTable(d *verbs.Definition, diags *lang.Diagnostics) {
	if d.Execution.Handler != builtin.CRUDHandler {
		return
	}
	table, ok := d.Execution.Params["table"].(string)
	if !ok || table == "" {
		return
	}
	at := d.FieldRange("execution.params.table")
	switch err := builtin.CheckCRUDTable(table, c.daemonSchema); {
	case errors.Is(err, builtin.ErrDaemonTable):
		diags.Errorf(lang.VDaemonTable, at, "%v", err)
	case err != nil:
		diags.Errorf(lang.VBadValue, at, "bad params for handler %q: %v", builtin.CRUDHandler, err)
	}
}
