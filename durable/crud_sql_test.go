package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The builders are pure: each case pins the SQL and the bound values, or
// the refusal. Their runs against PostgreSQL are in crud_test.go.

type buildCase struct {
	name    string
	req     driver.CRUDRequest
	sql     string
	args    []any
	refusal string // when set, the error that buildCRUD returns instead
}

func runBuildCases(t *testing.T, cases []buildCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := buildCRUD(c.req)
			if c.refusal != "" {
				require.ErrorIs(t, err, driver.ErrBadRequest)
				require.EqualError(t, err, c.refusal)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.sql, got.sql)
			require.Equal(t, c.args, got.args)
		})
	}
}

func TestBuildInsert(t *testing.T) {
	runBuildCases(t, []buildCase{{
		name: "columns sorted, values bound in that order",
		req:  driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{"company", "stage"}, Table: "crm.deals", Values: map[string]any{"stage": "new", "company": "Acme"}},
		sql:  `INSERT INTO "crm"."deals" ("company", "stage") VALUES ($1, $2)`,
		args: []any{"Acme", "new"},
	}, {
		name: "returning",
		req: driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{"company"}, Table: "deals", Returning: []string{"deal_id", "stage"},
			Values: map[string]any{"company": "Acme"}},
		sql:  `INSERT INTO "deals" ("company") VALUES ($1) RETURNING "deal_id", "stage"`,
		args: []any{"Acme"},
	}, {
		name: "no values: the defaults",
		req:  driver.CRUDRequest{Op: rbtype.CRUDInsert, Table: "deals", Returning: []string{"deal_id"}},
		sql:  `INSERT INTO "deals" DEFAULT VALUES RETURNING "deal_id"`,
	}, {
		name: "a hostile value is a bound value",
		req:  driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{"company"}, Table: "deals", Values: map[string]any{"company": "x'); DROP TABLE deals; --"}},
		sql:  `INSERT INTO "deals" ("company") VALUES ($1)`,
		args: []any{"x'); DROP TABLE deals; --"},
	}, {
		name: "a name is quoted, never spliced",
		req:  driver.CRUDRequest{Op: rbtype.CRUDInsert, Columns: []string{`a"b`}, Table: `deals"; drop`, Values: map[string]any{`a"b`: 1}},
		sql:  `INSERT INTO "deals""; drop" ("a""b") VALUES ($1)`,
		args: []any{1},
	}, {
		name:    "a verb that lists no columns lets arguments choose none",
		req:     driver.CRUDRequest{Op: rbtype.CRUDInsert, Table: "deals", Values: map[string]any{"is_admin": true}},
		refusal: `bad request: column "is_admin" is not one the verb allows`,
	}, {
		name:    "a column the verb does not allow",
		req:     driver.CRUDRequest{Op: rbtype.CRUDInsert, Table: "deals", Columns: []string{"company"}, Values: map[string]any{"score": 5}},
		refusal: `bad request: column "score" is not one the verb allows`,
	}, {
		name: "key columns are allowed besides columns",
		req: driver.CRUDRequest{Op: rbtype.CRUDInsert, Table: "deals", Key: []string{"company"}, Columns: []string{"stage"},
			Values: map[string]any{"company": "Acme", "stage": "new"}},
		sql:  `INSERT INTO "deals" ("company", "stage") VALUES ($1, $2)`,
		args: []any{"Acme", "new"},
	}})
}

func TestBuildUpsert(t *testing.T) {
	runBuildCases(t, []buildCase{{
		name: "updates the columns that are not the key",
		req: driver.CRUDRequest{Op: rbtype.CRUDUpsert, Columns: []string{"score", "stage"}, Table: "crm.deals", Key: []string{"company"}, Returning: []string{"deal_id"},
			Values: map[string]any{"company": "Acme", "stage": "won", "score": 9}},
		sql: `INSERT INTO "crm"."deals" ("company", "score", "stage") VALUES ($1, $2, $3)` +
			` ON CONFLICT ("company") DO UPDATE SET "score" = excluded."score", "stage" = excluded."stage" RETURNING "deal_id"`,
		args: []any{"Acme", 9, "won"},
	}, {
		name: "only the key: nothing to update",
		req:  driver.CRUDRequest{Op: rbtype.CRUDUpsert, Table: "tags", Key: []string{"a", "b"}, Values: map[string]any{"b": 2, "a": 1}},
		sql:  `INSERT INTO "tags" ("a", "b") VALUES ($1, $2) ON CONFLICT ("a", "b") DO NOTHING`,
		args: []any{1, 2},
	}, {
		name:    "no key",
		req:     driver.CRUDRequest{Op: rbtype.CRUDUpsert, Columns: []string{"company"}, Table: "deals", Values: map[string]any{"company": "Acme"}},
		refusal: "bad request: upsert needs key columns",
	}})
}

func TestBuildUpdate(t *testing.T) {
	runBuildCases(t, []buildCase{{
		name: "set, then where, numbered in that order",
		req: driver.CRUDRequest{Op: rbtype.CRUDUpdate, Columns: []string{"score", "stage"}, Table: "crm.deals", Key: []string{"company"}, Returning: []string{"stage"},
			Values: map[string]any{"company": "Acme", "stage": "won", "score": 9}},
		sql:  `UPDATE "crm"."deals" SET "score" = $1, "stage" = $2 WHERE "company" = $3 RETURNING "stage"`,
		args: []any{9, "won", "Acme"},
	}, {
		name: "a key of two columns",
		req:  driver.CRUDRequest{Op: rbtype.CRUDUpdate, Columns: []string{"c"}, Table: "t", Key: []string{"b", "a"}, Values: map[string]any{"a": 1, "b": 2, "c": 3}},
		sql:  `UPDATE "t" SET "c" = $1 WHERE "a" = $2 AND "b" = $3`,
		args: []any{3, 1, 2},
	}, {
		name:    "a key column without a value would update every row",
		req:     driver.CRUDRequest{Op: rbtype.CRUDUpdate, Columns: []string{"c"}, Table: "t", Key: []string{"a", "b"}, Values: map[string]any{"a": 1, "c": 3}},
		refusal: "bad request: every key column (a, b) needs a value",
	}, {
		name:    "no key",
		req:     driver.CRUDRequest{Op: rbtype.CRUDUpdate, Columns: []string{"c"}, Table: "t", Values: map[string]any{"c": 3}},
		refusal: "bad request: update needs key columns",
	}, {
		name:    "nothing to set",
		req:     driver.CRUDRequest{Op: rbtype.CRUDUpdate, Table: "t", Key: []string{"a"}, Values: map[string]any{"a": 1}},
		refusal: "bad request: update has nothing to set",
	}})
}

func TestBuildDelete(t *testing.T) {
	runBuildCases(t, []buildCase{{
		name: "by key, returning",
		req: driver.CRUDRequest{Op: rbtype.CRUDDelete, Table: "crm.deals", Key: []string{"company"}, Returning: []string{"deal_id"},
			Values: map[string]any{"company": "Acme"}},
		sql:  `DELETE FROM "crm"."deals" WHERE "company" = $1 RETURNING "deal_id"`,
		args: []any{"Acme"},
	}, {
		name:    "without the key's value it would delete every row",
		req:     driver.CRUDRequest{Op: rbtype.CRUDDelete, Table: "deals", Key: []string{"company"}},
		refusal: "bad request: every key column (company) needs a value",
	}, {
		name:    "no key",
		req:     driver.CRUDRequest{Op: rbtype.CRUDDelete, Columns: []string{"company"}, Table: "deals", Values: map[string]any{"company": "Acme"}},
		refusal: "bad request: delete needs key columns",
	}})
}

func TestBuildSelect(t *testing.T) {
	runBuildCases(t, []buildCase{{
		name: "the returning columns of the rows with the key's values",
		req: driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "crm.deals", Key: []string{"company"}, Returning: []string{"deal_id", "stage"},
			Values: map[string]any{"company": "Acme"}},
		sql:  `SELECT "deal_id", "stage" FROM "crm"."deals" WHERE "company" = $1 LIMIT 1000`,
		args: []any{"Acme"},
	}, {
		name: "no values: every row, up to the limit",
		req:  driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "deals"},
		sql:  `SELECT * FROM "deals" LIMIT 1000`,
	}, {
		name:    "part of the key given would select more rows than the verb meant",
		req:     driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "t", Key: []string{"a", "b"}, Values: map[string]any{"b": 2}},
		refusal: "bad request: every key column (a, b) needs a value",
	}, {
		name:    "no value for the key: every row, were it not refused",
		req:     driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "t", Key: []string{"a"}},
		refusal: "bad request: every key column (a) needs a value",
	}, {
		name:    "values of other columns are refused, not ignored",
		req:     driver.CRUDRequest{Op: rbtype.CRUDSelect, Table: "t", Key: []string{"a"}, Values: map[string]any{"a": 1, "c": 3}},
		refusal: `bad request: column "c" is not one the verb allows`,
	}})
}

func TestBuildRefusesAnUnknownOp(t *testing.T) {
	runBuildCases(t, []buildCase{{
		name:    "truncate",
		req:     driver.CRUDRequest{Op: "truncate", Table: "deals"},
		refusal: `bad request: unknown op "truncate"`,
	}})
}
