package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/rbtype"
)

const scheduleUsage = `Usage: rbd schedule create NAME FILE.rbk|PLAN.json --cron EXPR [flags]
       rbd schedule list
       rbd schedule pause|resume|delete ID

Schedules submit a runbook at each tick of a cron expression, evaluated in
an IANA time zone (docs/design/semantics.md section 14). EXPR has five
fields (minute hour day-of-month month day-of-week) or is a name such as
@hourly, @daily or "@every 90m". Each tick's runbook is keyed by the
schedule and the tick, so however many daemons run, a tick makes one.
`

func runSchedule(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, scheduleUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return exitOK
		}
		return exitCantRun
	}
	switch args[0] {
	case "create":
		return runScheduleCreate(args[1:], stdout, stderr)
	case "list":
		return runScheduleList(args[1:], stdout, stderr)
	case "pause", "resume":
		return runSchedulePause(args[0], args[1:], stdout, stderr)
	case "delete":
		return runScheduleDelete(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "rbd schedule: unknown subcommand %q (create, list, pause, resume, delete)\n", args[0])
	return exitCantRun
}

func runScheduleCreate(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("schedule create", scheduleUsage, stdout, stderr)
	var inputs inputFlags
	inputs.register(c.fs)
	cron := c.fs.String("cron", "", "when: five cron fields or @hourly, @daily, @every 90m ...")
	zone := c.fs.String("timezone", "UTC", "the IANA time zone the cron expression is read in")
	overlap := cli.Choice("skip", "skip", "allow")
	c.fs.Var(overlap, "overlap", "a tick while the previous runbook is unfinished: skip it, or allow a second")
	catchUp := cli.Choice("none", "none", "latest")
	c.fs.Var(catchUp, "catch-up", "ticks missed while no daemon ran: none, or the latest once")
	dryRun := c.fs.Bool("dry-run", false, "each tick's runbook is a dry run")
	draftOnly := c.fs.Bool("draft-only", false, "each tick's runbook drafts and runs nothing with outside effects")
	pos, status, ok := c.parse(args, 2, "a NAME and a FILE.rbk or PLAN.json")
	if !ok {
		return status
	}
	text, err := readRunbook(pos[1])
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	values, err := inputs.values()
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	req := apitype.ScheduleRequest{Name: pos[0], Cron: *cron, Timezone: *zone, Inputs: values,
		Overlap: rbtype.Overlap(overlap.Value), CatchUp: rbtype.CatchUp(catchUp.Value),
		Source: text.source, Plan: text.plan, Filename: text.filename}
	if req.Mode, err = modeOf(*dryRun, *draftOnly); err != nil {
		return cantRun(stderr, "%v", err)
	}
	ctx, cancel := c.context()
	defer cancel()
	v, err := c.client().CreateSchedule(ctx, req)
	if err != nil {
		return c.failed(err, text.sources)
	}
	if c.json() {
		_ = writeJSON(stdout, v)
		return exitOK
	}
	fmt.Fprintln(stdout, v.ID)
	return exitOK
}

func runScheduleList(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("schedule list", scheduleUsage, stdout, stderr)
	if _, status, ok := c.parse(args, 0, "no arguments"); !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	list, err := c.client().Schedules(ctx)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, list)
		return exitOK
	}
	printSchedules(stdout, list.Schedules)
	return exitOK
}

// printSchedules shows schedules one a line, with their next tick and the
// last runbook a tick made.
func printSchedules(w io.Writer, list []apitype.ScheduleView) {
	t := cli.NewTable(w)
	fmt.Fprintln(t, "ID\tNAME\tCRON\tTIMEZONE\tNEXT (UTC)\tLAST RUNBOOK\tSKIPPED")
	for _, s := range list {
		next := "paused"
		if s.NextFireAt != nil {
			next = s.NextFireAt.UTC().Format(time.RFC3339)
		}
		last := "-"
		if s.LastRunbook != nil {
			last = s.LastRunbook.ID.String() + " " + string(s.LastRunbook.Status)
		}
		if s.LastError != "" {
			last += " (" + s.LastError + ")"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, s.Name, s.Cron, s.Timezone, next, last, s.Skipped)
	}
	_ = t.Flush()
}

func runSchedulePause(verb string, args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("schedule "+verb, scheduleUsage, stdout, stderr)
	pos, status, ok := c.parse(args, 1, "a schedule's ID")
	if !ok {
		return status
	}
	paused := verb == "pause"
	ctx, cancel := c.context()
	defer cancel()
	v, err := c.client().PatchSchedule(ctx, pos[0], apitype.SchedulePatchRequest{Paused: &paused})
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, v)
		return exitOK
	}
	if paused {
		fmt.Fprintf(stdout, "%s paused\n", v.ID)
	} else {
		fmt.Fprintf(stdout, "%s resumed: next tick %s\n", v.ID, v.NextFireAt.UTC().Format(time.RFC3339))
	}
	return exitOK
}

func runScheduleDelete(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("schedule delete", scheduleUsage, stdout, stderr)
	pos, status, ok := c.parse(args, 1, "a schedule's ID")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	v, err := c.client().DeleteSchedule(ctx, pos[0])
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, v)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s deleted; the runbooks it made stay\n", v.ID)
	return exitOK
}
