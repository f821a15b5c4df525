package migrations

import "slices"

// DefaultSchema is the schema rbd keeps its tables in unless told
// otherwise. It is not public: the application's tables live there, and
// pg.crud, which works on them, must never reach rbd's own.
const DefaultSchema = "rbd"

// VersionTable records which migrations have run; it lives in rbd's schema
// beside the tables the migrations create.
const VersionTable = "schema_version"

// relations are the tables and sequences the migrations create, and the
// version table. A test migrates a real database and compares.
var relations = []string{
	"action_receipts",
	"budget_changes",
	"budget_changes_id_seq",
	"completion_notifications",
	"completion_notifications_id_seq",
	"attempt_arguments",
	"invocation_records",
	"outcomes",
	"result_cache",
	"runbook_edge_rows", // migration 027: edges no plan holds
	"runbook_edges",     // a view since 027: the plans' edges and runbook_edge_rows
	"runbook_event_ids",
	"runbook_event_rows",
	"runbook_events",
	"runbook_events_id_seq",
	"runbook_mutations",
	"runbook_mutations_id_seq",
	"runbook_steps",
	"runbook_steps_completion_seq",
	"runbook_steps_id_seq",
	"runbook_wakeups",
	"runbooks",
	"schedules",
	"server_keys",
	VersionTable,
	"step_attempt_rows", // migration 027: the ledger's stored rows
	"step_attempts",     // a view since 027: the stored rows and the steps' implicit ones
	"step_leases",
	"tenant_budgets",
	"tenant_spend",
	"tenant_unreserved_attempts", // migration 028: attempts that reserved nothing, by runbook
	"verb_trust",                 // migration 023: earned trust
}

// Relations lists, sorted, the names of every table and sequence rbd keeps
// in its schema: the daemon's own state, which pg.crud may never name. The
// slice is a copy; changing it changes nothing.
func Relations() []string {
	out := slices.Clone(relations)
	slices.Sort(out)
	return out
}
