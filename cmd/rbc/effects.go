package main

import (
	"fmt"
	"io"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// runEffects prints what a runbook can do to the world outside it, and the
// gate in front of each effect (docs/design/language.md v1.1): for a person deciding
// whether to let an agent's runbook run. It compiles the runbook and reads
// the plan's effects, so it shows exactly what rbd would be given.
//
// It shows what rbd serve would decide at admission
// (docs/design/semantics.md sections 10 and 17) under --policy (and
// --tenant, default "default"), or the built-in policy without one: the
// effects with the gates the policy adds, then every step the policy
// gates, denies or lets run unattended, and the rule that says so.
func runEffects(args []string, stdout, stderr io.Writer) int {
	c := newCatalogueCommand("effects", stderr).compiles().judges()
	format := cli.Choice("text", "text", "json")
	c.fs.Var(format, "format", "output format: text or json")
	tenant := c.fs.String("tenant", "default", "with --policy: the tenant whose rules judge the runbook")
	plan, status := c.compileOne(args, stderr)
	if plan == nil {
		return status
	}
	if c.policy == nil && *tenant != "default" {
		return cantRun(stderr, "--tenant needs --policy: without a policy file there are no tenants' rules to judge by")
	}
	// Without --policy the daemon judges by the built-in policy (only
	// read_only runs unattended; docs/design/semantics.md section 17), so
	// the effects are shown under it: what rbd serve will gate.
	pol := c.policy
	if pol == nil {
		pol = policy.Builtin()
	}
	judged := judge(plan, pol, *tenant)
	plan = judged.plan
	if format.Value == "json" {
		if c.policy == nil {
			// The effects alone, as before there was a built-in policy to
			// judge by, but with the gates it adds.
			_ = cli.WriteJSON(stdout, plan.Effects)
			return status
		}
		_ = cli.WriteJSON(stdout, judged.report())
		if len(judged.denied()) > 0 {
			return exitErrors
		}
		return status
	}
	var steps, hooks []compiler.Effect
	for _, e := range plan.Effects {
		if e.Hook {
			hooks = append(hooks, e)
		} else {
			steps = append(steps, e)
		}
	}
	writeEffects(stdout, plan.Sources[0]+": ", steps, judged.gated())
	if len(hooks) > 0 {
		// Failure hooks run only after the runbook has failed, ended
		// partial or been cancelled: a reviewer weighs them apart.
		fmt.Fprintln(stdout, "\nOn failure (once the runbook has failed, ended partial or been cancelled, after compensation):")
		writeEffects(stdout, "", hooks, judged.gated())
	}
	writeReaches(stdout, plan)
	judged.write(stdout)
	if len(judged.denied()) > 0 {
		return exitErrors // the daemon would refuse it
	}
	return status
}

// writeEffects prints one effect a line, ungated ones marked, under a
// count a reviewer reads first.
func writeEffects(out io.Writer, prefix string, effects []compiler.Effect, policyGated map[string]bool) {
	ungated := 0
	for _, e := range effects {
		if e.GatedBy == "" {
			ungated++
		}
	}
	fmt.Fprintf(out, "%s%s, %d ungated\n", prefix, plural(len(effects), "effect"), ungated)
	if len(effects) == 0 {
		return
	}
	tw := cli.NewTable(out)
	fmt.Fprintln(tw, "STEP\tVERB\tSIDE EFFECTS\tRISK\tGATE\tTARGET")
	var rows []effectRow
	for _, e := range effects {
		r := effectRow{step: e.Step, cells: effectCells(e, policyGated), count: 1, perElement: e.PerElement}
		if e.PerElement {
			r.step = compiler.Stem(e.Step)
		}
		// The elements of one for-each (docs/design/language.md v1.3) are one line.
		if n := len(rows); n > 0 && e.PerElement && rows[n-1].perElement && rows[n-1].step == r.step && rows[n-1].cells == r.cells {
			rows[n-1].count++
			continue
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		step := r.step
		if r.perElement {
			step += "[*]"
			if r.count > 1 {
				step += fmt.Sprintf(" ×%d", r.count)
			}
			step += " (per element)"
		}
		fmt.Fprintf(tw, "%s\t%s\n", step, r.cells)
	}
	_ = tw.Flush()
}

// effectRow is one line of the table: one effect, or the elements of a
// for-each that do the same.
type effectRow struct {
	step       string
	cells      string // the columns after STEP, tab-separated
	count      int
	perElement bool
}

// effectCells renders an effect's columns after STEP. A gate of the
// step's own, or of another element of its for-each, reads the same for
// every element; one the policy adds (policyGated) says so.
func effectCells(e compiler.Effect, policyGated map[string]bool) string {
	gate := "UNGATED"
	switch {
	case e.GatedBy != "" && policyGated[e.GatedBy] && e.GatedBy == e.Step:
		gate = string(e.Gate) + " (policy)"
	case e.GatedBy != "" && policyGated[e.GatedBy]:
		gate = fmt.Sprintf("%s at @%s (policy)", e.Gate, e.GatedBy)
	case e.GatedBy == e.Step:
		gate = string(e.Gate) + " (its own)"
	case e.GatedBy != "" && e.PerElement && compiler.Stem(e.GatedBy) == compiler.Stem(e.Step):
		gate = string(e.Gate) + " (its own)"
	case e.GatedBy != "":
		gate = fmt.Sprintf("%s at @%s", e.Gate, e.GatedBy)
	}
	if e.GateWhen != "" {
		// A gate of its own that holds only when its condition does
		// (docs/reference/language.md, ":gate-when").
		when := "human_confirm when " + e.GateWhen
		if e.GatedBy == "" {
			gate = when + " (its own; UNGATED otherwise)"
		} else {
			gate += "; " + when
		}
	}
	if e.Approvers != "" {
		gate += " by " + e.Approvers
	}
	target := e.Target
	if target == "" {
		target = "-"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", e.Verb, e.SideEffects, e.Risk, gate, target)
}

// writeReaches lists, after the effects, the steps that declare no side
// effects but whose handler still names a target: a model call that
// changes nothing still sends its arguments out, which a reviewer wants to
// see. They are not effects (docs/design/language.md v1.1 lists only side effects), so
// only the text shows them, and the plan does not carry them.
func writeReaches(out io.Writer, plan *compiler.Plan) {
	tw := cli.NewTable(out)
	n := 0
	for _, s := range plan.Steps {
		target := compiler.Target(s)
		if s.Execution.SideEffects != rbtype.SideEffectsNone || target == "" {
			continue
		}
		if n == 0 {
			fmt.Fprintln(out, "\nDeclared without side effects, but reaching out:")
			fmt.Fprintln(tw, "STEP\tVERB\tTARGET")
		}
		n++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, s.Verb, target)
	}
	_ = tw.Flush()
}
