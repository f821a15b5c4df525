package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/apitype"
)

// reproduction is what rbd replay --mode reproduce prints as JSON: the
// stored view and the whole ledger.
type reproduction struct {
	Runbook *apitype.RunbookView `json:"runbook"`
	Events  []apitype.Event      `json:"events"`
}

const regenerateUsage = `Usage: rbd regenerate ID [flags]

Starts a new runbook of a finished runbook's lineage: the same plan, its
inputs with those given overriding them, and prints the new id. Steps whose
verbs regenerate (pure or stable, no effect outside the daemon) run again
under new keys; every other step keeps its parent's key, so an effect that
happened (a send) returns its receipt and does not happen again.
`

func runRegenerate(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("regenerate", regenerateUsage, stdout, stderr)
	var inputs inputFlags
	inputs.register(c.fs)
	key := c.fs.String("idempotency-key", "", "dedupes the request: a repeat returns the runbook the first one started")
	by := c.fs.String("by", whoAmI(), "who asks for the regeneration")
	c.fs.StringVar(&c.correlationID, "correlation-id", "", "your id for the work (X-Correlation-Id); default the parent's")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	values, err := inputs.values()
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	return regenerate(c, ids[0], apitype.RegenerateRequest{Inputs: values, By: *by, IdempotencyKey: *key}, stdout)
}

func regenerate(c *clientCommand, id string, req apitype.RegenerateRequest, stdout io.Writer) int {
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Regenerate(ctx, id, req)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		fmt.Fprintf(stdout, "%s\n%s generation %d of %s\n", res.ID, res.Status, res.Lineage.Generation, res.Lineage.Root)
	}
	return exitOK
}

const replayUsage = `Usage: rbd replay ID --mode reproduce|retry|regenerate [flags]

Replays a runbook (docs/design/semantics.md section 6):
  reproduce   shows what is stored, its state and its whole ledger;
              nothing is recomputed
  retry       runs its failed, skipped and escalated steps again, with
              the same keys (as rbd retry)
  regenerate  starts a new runbook of its lineage (as rbd regenerate)
`

// replayModes are the modes of rbd replay.
var replayModes = []string{"reproduce", "retry", "regenerate"}

func runReplay(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("replay", replayUsage, stdout, stderr)
	mode := c.fs.String("mode", "", "reproduce, retry or regenerate")
	by := c.fs.String("by", whoAmI(), "who asks, for retry and regenerate")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	if !slices.Contains(replayModes, *mode) {
		return cantRun(stderr, "--mode must be %s, got %q", strings.Join(replayModes, ", "), *mode)
	}
	switch *mode {
	case "retry":
		return retry(c, ids[0], apitype.RetryRequest{By: *by}, stdout)
	case "regenerate":
		return regenerate(c, ids[0], apitype.RegenerateRequest{By: *by}, stdout)
	}
	ctx, cancel := c.context()
	defer cancel()
	cl := c.client()
	view, err := cl.Get(ctx, ids[0])
	if err != nil {
		return c.failed(err, nil)
	}
	evs, err := cl.Events(ctx, ids[0], 0)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, reproduction{Runbook: view, Events: evs})
		return exitOK
	}
	printRunbook(stdout, view)
	fmt.Fprintln(stdout)
	printEvents(stdout, evs)
	return exitOK
}
