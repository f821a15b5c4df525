package main

import (
	"context"
	"fmt"
	"io"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

const submitUsage = `Usage: rbd submit FILE.rbk|PLAN.json [flags]

Submits a runbook source, compiled by the daemon with its verbs, or a plan
compiled beforehand by rbc (a .json file), and prints the runbook's id.
With --wait it then shows the events as they happen, until the runbook
finishes or waits on a person or a notification, and shows its state.

A submission is keyed by its request key: the --idempotency-key, or else
the plan, inputs and mode. A repeat of a key runs nothing new: it prints
the runbook the first one started and says "already submitted as ID
(STATUS)" on standard error (exit status 0; "created": false with
--format json), until that runbook fails. Submitted again after it
failed, it runs as a new runbook in the failed one's lineage (said on
standard error): effects that happened return their receipts and do not
happen again. --new runs it again on purpose, as a new runbook in a new
lineage, under a fresh key, and says that effects may repeat.
`

func runSubmit(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("submit", submitUsage, stdout, stderr)
	var inputs inputFlags
	inputs.register(c.fs)
	key := c.fs.String("idempotency-key", "", "dedupes submissions: a repeat returns the runbook the first one started")
	fresh := c.fs.Bool("new", false, "start a new runbook in a new lineage even if the same plan and inputs ran before (a fresh request key); effects earlier runs had may happen again")
	name := c.fs.String("name", "", "the runbook's name in lists and the console (default: the file's name without its extension)")
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
	if *fresh && *key != "" {
		_ = c.fs.UsageErrorf("--new and --idempotency-key both choose the request key; give one")
		return exitCantRun
	}
	if *fresh {
		*key = "new:" + client.NewIdempotencyKey()
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
	req := apitype.SubmitRequest{Inputs: values, Actor: *actor, Name: *name, HoldOpen: *holdOpen, IdempotencyKey: *key,
		Source: text.source, Plan: text.plan, Filename: text.filename, NewLineage: *fresh}
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
	if !sub.Created {
		// Say so, or a repeat looks as if it ran again. The id still goes
		// to standard output, for id=$(rbd submit ...).
		fmt.Fprintf(stderr, "rbd: %s: nothing new runs; rbd submit --new starts a new run\n", alreadySubmitted(sub))
	} else if sub.Message != "" {
		// Which lineage it joined, or that effects may repeat.
		fmt.Fprintf(stderr, "rbd: %s\n", sub.Message)
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
	var seen int64
	if !sub.Created {
		// A repeat shows what happens from now, not the first run's
		// ledger again.
		if seen, err = lastEvent(ctx, cl, sub.ID.String()); err != nil {
			return c.failed(err, nil)
		}
	}
	view, err := followAfter(ctx, cl, sub.ID.String(), seen, c.json(), stdout)
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
func follow(ctx context.Context, cl *client.Client, id string, quiet bool, out io.Writer) (*apitype.RunbookView, error) {
	return followAfter(ctx, cl, id, 0, quiet, out)
}

// followAfter is follow, showing only the events after the id seen.
func followAfter(ctx context.Context, cl *client.Client, id string, seen int64, quiet bool, out io.Writer) (*apitype.RunbookView, error) {
	var show func([]apitype.Event)
	if !quiet {
		show = func(evs []apitype.Event) {
			for len(evs) > 0 && evs[0].ID <= seen {
				evs = evs[1:]
			}
			printEvents(out, evs)
		}
	}
	return cl.WaitFunc(ctx, id, show)
}

// lastEvent is the id of a runbook's latest event, 0 when it has none.
func lastEvent(ctx context.Context, cl *client.Client, id string) (int64, error) {
	evs, err := cl.Events(ctx, id, 0)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[len(evs)-1].ID, nil
}

// alreadySubmitted says which runbook a repeated submission returned: the
// daemon's message, or the same words when it sent none.
func alreadySubmitted(sub *apitype.SubmitResponse) string {
	if sub.Message != "" {
		return sub.Message
	}
	return fmt.Sprintf("already submitted as %s (%s)", sub.ID, sub.Status)
}

// waitStatus is submit --wait's exit status: 0 when the runbook completed
// or waits as designed, 1 when it failed, was cancelled or escalated.
func waitStatus(v *apitype.RunbookView) int {
	switch v.Status {
	case rbtype.RunbookExecuting, rbtype.RunbookInProgress, rbtype.RunbookComplete, rbtype.RunbookPartial:
		// Partial: its only failures were ones the runbook accepts
		// (on_failure: continue).
		return exitOK
	}
	return exitFailed
}
