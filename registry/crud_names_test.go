package registry

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/migrations"
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
		err := CheckCRUDTable(table, "")
		require.ErrorIs(t, err, ErrDaemonTable, table)
		require.NotErrorIs(t, err, ErrNotIdentifier, table)
	}
	for _, rel := range migrations.Relations() {
		require.ErrorIs(t, CheckCRUDTable(rel, "ops"), ErrDaemonTable, "unqualified %s, whatever rbd's schema", rel)
	}
}

func TestCheckCRUDTableFollowsRBDsSchema(t *testing.T) {
	require.ErrorIs(t, CheckCRUDTable("ops.deals", "ops"), ErrDaemonTable)
	require.ErrorIs(t, CheckCRUDTable("OPS.deals", "ops"), ErrDaemonTable)
	require.NoError(t, CheckCRUDTable("rbd.deals", "ops"), "rbd is only rbd's schema when it is --schema")
	require.ErrorIs(t, CheckCRUDTable("public.deals", "public"), ErrDaemonTable)
	require.NoError(t, CheckCRUDTable("public.deals", ""))
}

func TestCheckCRUDTableMessages(t *testing.T) {
	for table, want := range map[string]string{
		"rbd.runbooks":         `table "rbd.runbooks" is in rbd's own schema "rbd", which holds the daemon's state; pg.crud may not use it`,
		"step_leases":          `table "step_leases" is the name of one of rbd's own tables (an application's table of that name needs its schema: app.step_leases); pg.crud may not use it`,
		"pg_authid":            `table "pg_authid" would resolve to PostgreSQL's system catalog; pg.crud may not use it`,
		"pg_catalog.pg_authid": `table "pg_catalog.pg_authid" is in PostgreSQL's system catalogs; pg.crud may not use it`,
		"Deals":                `table "Deals" is not a lower-case SQL identifier, optionally schema-qualified`,
	} {
		require.EqualError(t, CheckCRUDTable(table, ""), want)
	}
}

func TestCheckCRUDTableAcceptsTheApplicationsTables(t *testing.T) {
	for _, table := range []string{"deals", "crm.deals", "ops.incidents", "public.deals", "crm.runbooks", "app.step_leases", "crm.pg_like", "_t", "a1.b_2"} {
		require.NoError(t, CheckCRUDTable(table, ""), table)
	}
	for _, table := range []string{"", "Deals", "crm.Deals", "a.b.c", "deals;", "deals x", "1deals", ".deals", "crm.", "dé", strings.Repeat("a", 64)} {
		err := CheckCRUDTable(table, "")
		require.ErrorIs(t, err, ErrNotIdentifier, "%q", table)
	}
}

func TestCheckIdentifier(t *testing.T) {
	require.NoError(t, CheckIdentifier("deal_id"))
	require.NoError(t, CheckIdentifier(strings.Repeat("a", 63)))
	for _, bad := range []string{"", "Deal", "deal-id", "a.b", `"a"`, "1a", strings.Repeat("a", 64)} {
		require.ErrorIs(t, CheckIdentifier(bad), ErrNotIdentifier, bad)
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
	_, diags := catalogue(t, src.String())
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
	_, diags = New(defs, NewHandlers())
	require.Equal(t, []string{
		`4:121 V015 table "rbd.deals" is in rbd's own schema "rbd", which holds the daemon's state; pg.crud may not use it`,
	}, diagLines(diags.Sorted()), "without the option, rbd's schema is the default")
	_, diags = New(defs, NewHandlers(), DaemonSchema("ops"))
	require.Equal(t, []string{
		`2:121 V015 table "ops.deals" is in rbd's own schema "ops", which holds the daemon's state; pg.crud may not use it`,
	}, diagLines(diags.Sorted()))
}
