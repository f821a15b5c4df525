package runtime

import (
	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// The API's types are apitype's, never the store's rows: these turn the
// rows a view reads into what the API shows, so a column added to a table
// does not reach the API's JSON unless a view chooses to show it.

// apiOutcome is an outcome row as the API shows it (no tenant).
func apiOutcome(o rbtype.Outcome) apitype.Outcome {
	return apitype.Outcome{
		ID: o.ID, RunbookID: o.RunbookID, LineageRoot: o.LineageRoot, Generation: o.Generation,
		StepKey: o.StepKey, Attempt: o.Attempt, Verb: o.Verb, Type: o.Type, Status: o.Status,
		Preview: o.Preview, ArgsHash: o.ArgsHash, ResultHash: o.ResultHash, Model: o.Model,
		Parameters: o.Parameters, Consumed: o.Consumed, Version: o.Version, Previous: o.Previous,
		CreatedAt: o.CreatedAt,
	}
}

// apiCost is a cost row as the API shows it.
func apiCost(c driver.Cost) apitype.Cost { return apitype.Cost(c) }

// apiSetBudget is a set budget's row as the API shows it.
func apiSetBudget(b driver.SetBudget) apitype.SetBudget { return apitype.SetBudget(b) }
