package builtin_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/migrations"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// daemonTables are ways a verb file might name rbd's own state, each of
// which the rule refuses, at load (V015) and before every call.
var daemonTables = []string{
	"runbooks",
	"rbd.runbooks",
	"RBD.Runbooks",
	"Rbd.RUNBOOKS",
	`"rbd"."runbooks"`,
	`"RBD".runbooks`,
	" rbd . runbooks ",
	"postgres.rbd.runbooks",
	"rbd.anything_else",
	"step_leases",
	"action_receipts",
	migrations.VersionTable,
	"Schema_Version",
	"rbd.schema_version",
	"runbook_steps_completion_seq",
	"pg_catalog.pg_authid",
	"PG_CATALOG.pg_authid",
	"pg_authid",
	"pg_toast.pg_toast_1234",
	"pg_temp.scratch",
	"information_schema.tables",
}

func TestCheckCRUDTableRefusesRBDsOwnTables(t *testing.T) {
	for _, table := range daemonTables {
		err := builtin.CheckCRUDTable(table, "")
		require.ErrorIs(t, err, builtin.ErrDaemonTable, table)
		require.NotErrorIs(t, err, builtin.ErrNotIdentifier, table)
	}
	for _, rel := range migrations.Relations() {
		require.ErrorIs(t, builtin.CheckCRUDTable(rel, "ops"), builtin.ErrDaemonTable, "unqualified %s, whatever rbd's schema", rel)
	}
}

func TestCheckCRUDTableFollowsRBDsSchema(t *testing.T) {
	require.ErrorIs(t, builtin.CheckCRUDTable("ops.deals", "ops"), builtin.ErrDaemonTable)
	require.ErrorIs(t, builtin.CheckCRUDTable("OPS.deals", "ops"), builtin.ErrDaemonTable)
	require.NoError(t, builtin.CheckCRUDTable("rbd.deals", "ops"), "rbd is only rbd's schema when it is --schema")
	require.ErrorIs(t, builtin.CheckCRUDTable("public.deals", "public"), builtin.ErrDaemonTable)
	require.NoError(t, builtin.CheckCRUDTable("public.deals", ""))
}

func TestCheckCRUDTableMessages(t *testing.T) {
	for table, want := range map[string]string{
		"rbd.runbooks":         `table "rbd.runbooks" is in rbd's own schema "rbd", which holds the daemon's state; pg.crud may not use it`,
		"step_leases":          `table "step_leases" is the name of one of rbd's own tables (an application's table of that name needs its schema: app.step_leases); pg.crud may not use it`,
		"pg_authid":            `table "pg_authid" would resolve to PostgreSQL's system catalog; pg.crud may not use it`,
		"pg_catalog.pg_authid": `table "pg_catalog.pg_authid" is in PostgreSQL's system catalogs; pg.crud may not use it`,
		"Deals":                `table "Deals" is not a lower-case SQL identifier, optionally schema-qualified`,
	} {
		require.EqualError(t, builtin.CheckCRUDTable(table, ""), want)
	}
}

func TestCheckCRUDTableAcceptsTheApplicationsTables(t *testing.T) {
	for _, table := range []string{"deals", "crm.deals", "ops.incidents", "public.deals", "crm.runbooks", "app.step_leases", "crm.pg_like", "_t", "a1.b_2"} {
		require.NoError(t, builtin.CheckCRUDTable(table, ""), table)
	}
	for _, table := range []string{"", "Deals", "crm.Deals", "a.b.c", "deals;", "deals x", "1deals", ".deals", "crm.", "dé", strings.Repeat("a", 64)} {
		err := builtin.CheckCRUDTable(table, "")
		require.ErrorIs(t, err, builtin.ErrNotIdentifier, "%q", table)
	}
}

func TestCheckIdentifier(t *testing.T) {
	require.NoError(t, builtin.CheckIdentifier("deal_id"))
	require.NoError(t, builtin.CheckIdentifier(strings.Repeat("a", 63)))
	for _, bad := range []string{"", "Deal", "deal-id", "a.b", `"a"`, "1a", strings.Repeat("a", 64)} {
		require.ErrorIs(t, builtin.CheckIdentifier(bad), builtin.ErrNotIdentifier, bad)
	}
}

// TestV015RefusesRBDsTablesAtLoad is the load-time side: a catalogue whose
// pg.crud verbs name rbd's state is refused with V015, at the table.
func TestV015RefusesRBDsTablesAtLoad(t *testing.T) {
	var src strings.Builder
	for i, table := range daemonTables {
		fmt.Fprintf(&src, "- {name: v%d, domain: d, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: '%s'}}}\n",
			i, strings.ReplaceAll(table, "'", "''"))
	}
	defs, diags := verbs.Parse("v.yaml", []byte(src.String()))
	require.Empty(t, diags)
	_, diags = registry.New(defs, registry.NewHandlers())
	diags = diags.Sorted()
	require.Len(t, diags, len(daemonTables))
	for i, d := range diags {
		require.Equal(t, "V015", string(d.Code), d.Message)
		require.Equal(t, i+1, d.Range.Start.Line)
		require.Contains(t, d.Message, "pg.crud may not use it")
	}
}

func TestV015FollowsTheDaemonSchemaOption(t *testing.T) {
	src := `
- {name: a, domain: d, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: ops.deals}}}
- {name: b, domain: d, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: crm.deals}}}
- {name: c, domain: d, execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: select, table: rbd.deals}}}
`
	defs, diags := verbs.Parse("v.yaml", []byte(src))
	require.Empty(t, diags)
	_, diags = registry.New(defs, registry.NewHandlers())
	require.Equal(t, []string{
		`4:121 V015 table "rbd.deals" is in rbd's own schema "rbd", which holds the daemon's state; pg.crud may not use it`,
	}, diagLines(diags.Sorted()), "without the option, rbd's schema is the default")
	_, diags = registry.New(defs, registry.NewHandlers(), registry.DaemonSchema("ops"))
	require.Equal(t, []string{
		`2:121 V015 table "ops.deals" is in rbd's own schema "ops", which holds the daemon's state; pg.crud may not use it`,
	}, diagLines(diags.Sorted()))
}

// diagLines renders diagnostics as "line:col CODE message".
func diagLines(ds lang.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%d:%d %s %s", d.Range.Start.Line, d.Range.Start.Column, d.Code, d.Text())
	}
	return out
}
