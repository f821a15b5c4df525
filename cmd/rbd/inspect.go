package main

import (
	"fmt"
	"io"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

const statusUsage = `Usage: rbd status ID [flags]

Shows a runbook: its status, what it waits on, and every step. With --wait
it first waits until the runbook finishes or waits on a person or a
notification, and exits 1 if it failed, was cancelled or escalated.
`

func runStatus(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("status", statusUsage, stdout, stderr)
	wait := c.fs.Bool("wait", false, "wait until the runbook finishes or waits on a person or a notification")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	var view *apitype.RunbookView
	var err error
	if *wait {
		view, err = follow(ctx, c.client(), ids[0], true, stdout)
	} else {
		view, err = c.client().Get(ctx, ids[0])
	}
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, view)
	} else {
		printRunbook(stdout, view)
	}
	if *wait {
		return waitStatus(view)
	}
	return exitOK
}

const listUsage = `Usage: rbd list [flags]

Lists runbooks, newest first. When more remain, the last line gives the
--after cursor of the next page.
`

func runList(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("list", listUsage, stdout, stderr)
	statusFilter := c.fs.String("status", "", "only runbooks in this status: executing, complete, failed, cancelled or escalated")
	limit := c.fs.Int("limit", 20, "runbooks per page, at most 1000")
	after := c.fs.String("after", "", "the cursor of the page to show, from the previous page")
	tenant := c.fs.String("tenant", "", "only this tenant's runbooks (an admin token; another token lists its own tenant's)")
	state := c.fs.String("state", "", "only runbooks in this state: a status, or parked, awaiting_approval or held_open")
	needsPerson := c.fs.Bool("needs-person", false, "only runbooks that wait on a person: a gate, an escalation, a failure a retry may fix")
	_, status, ok := c.parse(args, 0, "no arguments")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	q := client.ListRequest{Tenant: *tenant, Status: rbtype.RunbookStatus(*statusFilter), State: *state, Limit: *limit, After: *after}
	if *needsPerson {
		q.NeedsPerson = needsPerson
	}
	page, err := c.client().List(ctx, q)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, page)
	} else {
		printList(stdout, page)
	}
	return exitOK
}

const eventsUsage = `Usage: rbd events ID [flags]

Shows a runbook's event ledger. With --follow it keeps showing events as
they are written, until the runbook finishes.
`

func runEvents(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("events", eventsUsage, stdout, stderr)
	followLive := c.fs.Bool("follow", false, "keep showing new events until the runbook finishes")
	after := c.fs.Int64("after", 0, "show only the events after this event id")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	cl := c.client()
	if !*followLive {
		evs, err := cl.Events(ctx, ids[0], *after)
		if err != nil {
			return c.failed(err, nil)
		}
		if c.json() {
			_ = writeJSON(stdout, apitype.EventsResponse{Events: evs})
		} else {
			printEvents(stdout, evs)
		}
		return exitOK
	}
	// Following: one event per line as it comes, JSON Lines with --format json.
	final, err := cl.Follow(ctx, ids[0], *after, func(ev apitype.Event) error {
		if c.json() {
			return writeJSONLine(stdout, ev)
		}
		printEvents(stdout, []apitype.Event{ev})
		return nil
	})
	if err != nil {
		return c.failed(err, nil)
	}
	if !c.json() {
		fmt.Fprintf(stdout, "runbook %s\n", final)
	}
	return exitOK
}
