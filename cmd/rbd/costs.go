package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/cmd/internal/cli"
)

const costsUsage = `Usage: rbd costs [flags]

Sums what the runbooks' attempts used, from the job ledger: cost, credits,
tokens, attempts and cache hits, by tenant, actor, verb, day or month.
`

func runCosts(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("costs", costsUsage, stdout, stderr)
	groupBy := c.fs.String("group-by", "verb", "tenant, actor, verb, day or month")
	from := c.fs.String("from", "", "only attempts finished at or after this time or date")
	to := c.fs.String("to", "", "only attempts finished before this time or date")
	tenant := c.fs.String("tenant", "", "an admin's: only this tenant (default: every tenant)")
	if _, status, ok := c.parse(args, 0, "no arguments"); !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Costs(ctx, client.CostsRequest{GroupBy: *groupBy, From: *from, To: *to, Tenant: *tenant})
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
		return exitOK
	}
	t := cli.NewTable(stdout)
	fmt.Fprintf(t, "%s\tCOST USD\tCREDITS\tTOKENS IN\tTOKENS OUT\tATTEMPTS\tCACHE HITS\n", strings.ToUpper(res.GroupBy))
	for _, g := range res.Costs {
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", g.Group, money(g.CostUSD),
			money(g.Credits), g.TokensIn, g.TokensOut, g.Attempts, g.CacheHits)
	}
	_ = t.Flush()
	return exitOK
}
