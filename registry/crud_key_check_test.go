package registry

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCRUDKeyMustBeRequired: a pg.crud key argument left out would reach
// every row, so every key column is a required argument (docs/reliability.md).
func TestCRUDKeyMustBeRequired(t *testing.T) {
	_, diags := catalogue(t, `
- name: find
  domain: d
  execution: {kind: sync, handler: pg.crud, side_effects: none, params: {op: select, table: deals, key: [company]}}
  input_schema: {properties: {company: {type: string}}}
- name: drop
  domain: d
  execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: delete, table: deals, key: [deal_id]}}
  input_schema: {required: [deal-id]}
- name: all
  domain: d
  execution: {kind: sync, handler: pg.crud, side_effects: none, params: {op: select, table: deals}}
`)
	require.Equal(t, []string{
		`4:105 V004 bad params for handler "pg.crud": key column "company" must be a required argument (list it in input_schema.required): a call without it would reach every row, and is refused`,
	}, diagLines(diags))
}
