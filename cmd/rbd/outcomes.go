package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/cmd/internal/cli"
)

const outcomesUsage = `Usage: rbd outcomes ID [flags]

Shows what a runbook produced (docs/design/semantics.md section 13): given a runbook's
id, its typed outcomes (drafts and final results) with their previews;
given an outcome's id, that outcome with its provenance: the attempt that
made it, the hashes of its arguments and result, the model and
parameters, what it was made from, and its earlier versions.
`

func runOutcomes(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("outcomes", outcomesUsage, stdout, stderr)
	pos, status, ok := c.parse(args, 1, "a runbook's or an outcome's id")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	cl := c.client()
	o, err := cl.Outcome(ctx, pos[0])
	if errors.Is(err, client.CodeNotFound) {
		// Not an outcome: a runbook, whose outcomes are listed.
		v, err := cl.Get(ctx, pos[0])
		if err != nil {
			return c.failed(err, nil)
		}
		if c.json() {
			_ = writeJSON(stdout, v.Produced)
			return exitOK
		}
		printProduced(stdout, v.Produced)
		return exitOK
	}
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, o)
		return exitOK
	}
	printOutcome(stdout, o)
	return exitOK
}

// printProduced lists a runbook's outcomes.
func printProduced(w io.Writer, produced []apitype.ProducedView) {
	t := cli.NewTable(w)
	fmt.Fprintln(t, "OUTCOME\tTYPE\tSTATUS\tVERSION\tSTEP\tPREVIEW")
	for _, p := range produced {
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%s\t%s\n", p.OutcomeID, p.Type, p.Status, p.Version, p.Step, oneLine(p.Preview))
	}
	_ = t.Flush()
}

// printOutcome shows one outcome and its provenance.
func printOutcome(w io.Writer, o *apitype.OutcomeView) {
	t := cli.NewTable(w)
	fmt.Fprintf(t, "outcome\t%s\n", o.ID)
	fmt.Fprintf(t, "type\t%s (%s)\n", o.Type, o.Status)
	version := fmt.Sprint(o.Version)
	if o.Previous != nil {
		version += ", after " + o.Previous.String()
	}
	fmt.Fprintf(t, "version\t%s\n", version)
	fmt.Fprintf(t, "runbook\t%s (generation %d)\n", o.RunbookID, o.Generation)
	fmt.Fprintf(t, "step\t%s, attempt %d, %s\n", o.StepKey, o.Attempt, o.Verb)
	if o.Preview != "" {
		fmt.Fprintf(t, "preview\t%s\n", oneLine(o.Preview))
	}
	if o.ArgsHash != "" {
		fmt.Fprintf(t, "arguments\tsha256:%s\n", o.ArgsHash)
	}
	fmt.Fprintf(t, "result\tsha256:%s\n", o.ResultHash)
	if o.Model != "" {
		fmt.Fprintf(t, "model\t%s\n", o.Model)
	}
	if len(o.Parameters) > 0 {
		fmt.Fprintf(t, "parameters\t%s\n", compact(o.Parameters))
	}
	fmt.Fprintf(t, "created\t%s\n", stamp(o.CreatedAt))
	_ = t.Flush()
	section := func(title string, list []apitype.Outcome) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", title)
		t := cli.NewTable(w)
		for _, p := range list {
			fmt.Fprintf(t, "%s\t%s\t%s\tv%d\t%s\t%s\n", p.ID, p.Type, p.Status, p.Version, p.StepKey, oneLine(p.Preview))
		}
		_ = t.Flush()
	}
	section("MADE FROM", o.Provenance)
	section("EARLIER VERSIONS", o.Versions)
}

// oneLine keeps a preview on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
