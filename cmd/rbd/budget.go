package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/rbtype"
)

const budgetUsage = `Usage: rbd budget set --tenant T [--runbook A] [--day A] [--month A] [flags]
       rbd budget show [--tenant T] [flags]

set replaces the policy's budgets of a tenant (admins only): what one of
its runbooks may spend (--runbook), what the tenant may spend in a day and
in a month (UTC). An amount A is dollars (--month 3000), or measures by name
(--month cost_usd=3000,tokens=50000000,credits=10), or "policy" to take the
budget set away so that the policy's applies again. Each change is stored
and audited. A step a budget stopped runs again once retried (rbd retry).

show lists a tenant's budgets as they apply, with what was spent and what
is left (an admin's: any tenant's).
`

func runBudget(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "set" && args[0] != "show") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, budgetUsage)
			return exitOK
		}
		return cantRun(stderr, "budget takes set or show (rbd budget -h for help)")
	}
	c := newClientCommand("budget "+args[0], budgetUsage, stdout, stderr)
	tenant := c.fs.String("tenant", "", "the tenant whose budgets to set or show")
	if args[0] == "show" {
		if _, status, ok := c.parse(args[1:], 0, "no arguments"); !ok {
			return status
		}
		return showBudgets(c, *tenant)
	}
	amounts := map[rbtype.BudgetScope]*string{}
	for _, scope := range rbtype.BudgetScopes {
		amounts[scope] = c.fs.String(string(scope), "", "the "+string(scope)+"'s budget: dollars, measure=value,..., or policy")
	}
	if _, status, ok := c.parse(args[1:], 0, "no arguments"); !ok {
		return status
	}
	if *tenant == "" {
		return cantRun(stderr, "budget set needs --tenant: whose budget to set")
	}
	type change struct {
		scope  rbtype.BudgetScope
		budget *rbtype.Budget // nil: back to the policy's
	}
	var changes []change
	for _, scope := range rbtype.BudgetScopes {
		raw := *amounts[scope]
		if raw == "" {
			continue
		}
		b, err := parseBudget(raw)
		if err != nil {
			return cantRun(stderr, "--%s %q: %v", scope, raw, err)
		}
		changes = append(changes, change{scope, b})
	}
	if len(changes) == 0 {
		return cantRun(stderr, "budget set needs at least one of --runbook, --day, --month")
	}
	ctx, cancel := c.context()
	defer cancel()
	var done []*apitype.BudgetChanged
	for _, ch := range changes {
		var out *apitype.BudgetChanged
		var err error
		if ch.budget == nil {
			out, err = c.client().ClearBudget(ctx, *tenant, ch.scope)
		} else {
			out, err = c.client().SetBudget(ctx, *tenant, ch.scope, *ch.budget)
		}
		if err != nil {
			return c.failed(err, nil)
		}
		done = append(done, out)
	}
	if c.json() {
		_ = writeJSON(stdout, done)
		return exitOK
	}
	for _, d := range done {
		fmt.Fprintf(stdout, "tenant %s: %s budget %s (was %s)\n", d.Tenant, d.Budget, budgetText(d.After), budgetText(d.Before))
	}
	return exitOK
}

// parseBudget reads an amount: dollars, measure=value pairs, or policy.
func parseBudget(raw string) (*rbtype.Budget, error) {
	if raw == "policy" {
		return nil, nil
	}
	var b rbtype.Budget
	if !strings.Contains(raw, "=") {
		f, err := amount(raw)
		if err != nil {
			return nil, err
		}
		b.CostUSD = &f
		return &b, nil
	}
	for _, part := range strings.Split(raw, ",") {
		name, value, _ := strings.Cut(part, "=")
		f, err := amount(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		switch name {
		case rbtype.MeasureCostUSD:
			b.CostUSD = &f
		case rbtype.MeasureCredits:
			b.Credits = &f
		case rbtype.MeasureTokens:
			if f != math.Trunc(f) || f > math.MaxInt64/2 {
				return nil, errors.New("tokens must be a whole number")
			}
			t := int64(f)
			b.Tokens = &t
		default:
			return nil, fmt.Errorf("unknown measure %q (cost_usd, tokens, credits)", name)
		}
	}
	return &b, nil
}

// amount reads a number at or above zero.
func amount(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is below zero", s)
	}
	return f, nil
}

// budgetText says a budget in one line: its measures, or the policy's
// when none is set.
func budgetText(b *rbtype.Budget) string {
	if b == nil {
		return "the policy's"
	}
	var parts []string
	if b.CostUSD != nil {
		parts = append(parts, "cost_usd="+strconv.FormatFloat(*b.CostUSD, 'f', -1, 64))
	}
	if b.Tokens != nil {
		parts = append(parts, "tokens="+strconv.FormatInt(*b.Tokens, 10))
	}
	if b.Credits != nil {
		parts = append(parts, "credits="+strconv.FormatFloat(*b.Credits, 'f', -1, 64))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

func showBudgets(c *clientCommand, tenant string) int {
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Budgets(ctx, tenant)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(c.stdout, res)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "tenant %s\n", res.Tenant)
	if len(res.Budgets) == 0 {
		fmt.Fprintln(c.stdout, "no budgets: nothing caps its spending")
		return exitOK
	}
	t := cli.NewTable(c.stdout)
	fmt.Fprintln(t, "BUDGET\tLIMIT\tSPENT\tLEFT\tFROM")
	for _, b := range res.Budgets {
		spent, left := "-", "-"
		if b.Spent != nil {
			spent = fmt.Sprintf("cost_usd=%s,tokens=%d,credits=%s", strconv.FormatFloat(b.Spent.CostUSD, 'f', -1, 64), b.Spent.Tokens,
				strconv.FormatFloat(b.Spent.Credits, 'f', -1, 64))
			left = budgetText(b.Left)
		}
		from := b.Rule
		if b.Set != nil {
			from = "set by " + b.Set.UpdatedBy
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", b.Budget, budgetText(&b.Limit), spent, left, from)
	}
	_ = t.Flush()
	return exitOK
}
