package registry

import (
	"slices"
	"strings"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// checkCRUDKey requires every key column of a pg.crud verb to be a
// required argument (by its column name or with dashes for underscores).
// A key argument left out would widen a select, update or delete to every
// row; the handler refuses such a call, and this says so when the verb is
// loaded rather than when a runbook runs it.
func (c *Catalogue) checkCRUDKey(d *verbs.Definition, diags *lang.Diagnostics) {
	if d.Execution.Handler != builtin.CRUDHandler {
		return
	}
	keys, _ := d.Execution.Params["key"].([]any)
	var required []string
	if d.InputSchema != nil {
		required = d.InputSchema.Required()
	}
	for _, k := range keys {
		col, ok := k.(string)
		if !ok || slices.Contains(required, col) || slices.Contains(required, strings.ReplaceAll(col, "_", "-")) {
			continue
		}
		diags.Errorf(lang.VBadValue, d.FieldRange("execution.params.key"),
			"bad params for handler %q: key column %q must be a required argument (list it in input_schema.required): a call without it would reach every row, and is refused",
			builtin.CRUDHandler, col)
	}
}
