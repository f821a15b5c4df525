package main

import (
	"context"
	"fmt"
	"io"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

const submitUsage = `Usage: rbd submit FILE.rbk|PLAN.json [flags]

Submits a runbook source, compiled by the daemon with its verbs, or a plan
compiled beforehand by rbc (a .json file), and prints the runbook's id.
With --wait it then shows the events as they happen, until the runbook
finishes or waits on a person or a notification, and shows its state.
`

func runSubmit(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("submit", submitUsage, stdout, stderr)
	var inputs inputFlags
	inputs.register(c.fs)
	key := c.fs.String("idempotency-key", "", "dedupes submissions: a repeat returns the runbook the first one started")
	dryRun := c.fs.Bool("dry-run", false, "simulate: every step is recorded as simulated and no handler with side effects runs")
	draftOnly := c.fs.Bool("draft-only", false, "draft: run everything but the steps with outside effects (external calls, people's work), which end skipped with DRAFT_ONLY")
	holdOpen := c.fs.Bool("hold-open", false, "keep the runbook in_progress after its steps finish, for rbd extend, until rbd close")
	wait := c.fs.Bool("wait", false, "follow the runbook until it finishes or waits on a person or a notification")
	actor := c.fs.String("actor", whoAmI(), "who submits, for the ledger")
	c.fs.StringVar(&c.correlationID, "correlation-id", "", "your id for the work (X-Correlation-Id), shown on the runbook, its events and its ledger; default the runbook's id")
	files, status, ok := c.parse(args, 1, "one FILE.rbk or PLAN.json")
	if !ok {
		return status
	}
	text, err := readRunbook(files[0])
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	sources := text.sources
	values, err := inputs.values()
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	req := client.SubmitRequest{Inputs: values, Actor: *actor, HoldOpen: *holdOpen, IdempotencyKey: *key,
		Source: text.source, Plan: text.plan, Filename: text.filename}
	if req.Mode, err = modeOf(*dryRun, *draftOnly); err != nil {
		return cantRun(stderr, "%v", err)
	}
	ctx, cancel := c.context()
	defer cancel()
	cl := c.client()
	sub, err := cl.Submit(ctx, req)
	if err != nil {
		return c.failed(err, sources)
	}
	if !*wait {
		if c.json() {
			_ = writeJSON(stdout, sub)
		} else {
			fmt.Fprintln(stdout, sub.ID)
		}
		return exitOK
	}
	if !c.json() {
		fmt.Fprintln(stdout, sub.ID)
	}
	view, err := follow(ctx, cl, sub.ID.String(), c.json(), stdout)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, view)
	} else {
		fmt.Fprintln(stdout)
		printRunbook(stdout, view)
	}
	return waitStatus(view)
}

// follow shows a runbook's events (unless quiet) until it finishes or
// waits on the outside world, and returns its state then.
func follow(ctx context.Context, cl *client.Client, id string, quiet bool, out io.Writer) (*client.Runbook, error) {
	var show func([]client.Event)
	if !quiet {
		show = func(evs []client.Event) { printEvents(out, evs) }
	}
	return cl.WaitFunc(ctx, id, show)
}

// waitStatus is submit --wait's exit status: 0 when the runbook completed
// or waits as designed, 1 when it failed, was cancelled or escalated.
func waitStatus(v *client.Runbook) int {
	switch v.Status {
	case rbtype.RunbookExecuting, rbtype.RunbookInProgress, rbtype.RunbookComplete, rbtype.RunbookPartial:
		// Partial: its only failures were ones the runbook accepts
		// (on_failure: continue).
		return exitOK
	}
	return exitFailed
}
