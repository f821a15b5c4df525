package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/rbtype"
)

const whoamiUsage = `Usage: rbd whoami [flags]

Shows who the token speaks for on the daemon: its tenant, its actor, its
roles, the verbs it may use and the riskiest step it may submit or decide,
whether gates may be decided through MCP there, and the groups whose
gates (a step's :approvers) it decides.
`

func runWhoami(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("whoami", whoamiUsage, stdout, stderr)
	if _, status, ok := c.parse(args, 0, "no arguments"); !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	me, err := c.client().Whoami(ctx)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, me)
		return exitOK
	}
	t := cli.NewTable(stdout)
	fmt.Fprintf(t, "tenant\t%s\n", me.Tenant)
	actor := me.Actor
	if !me.ActorNamed {
		actor += " (the token names no actor: a request's by is recorded)"
	}
	fmt.Fprintf(t, "actor\t%s\n", actor)
	fmt.Fprintf(t, "roles\t%s\n", joinRoles(me.Roles))
	fmt.Fprintf(t, "verbs\t%s\n", strings.Join(me.Verbs, ", "))
	fmt.Fprintf(t, "max risk\t%s\n", me.MaxRisk)
	fmt.Fprintf(t, "mcp approvals\t%s\n", onOff(me.MCPApprovals))
	if len(me.Groups) > 0 {
		// The gates of steps naming these :approvers are this token's to
		// decide (docs/design/language.md v1.4).
		fmt.Fprintf(t, "groups\t%s\n", strings.Join(me.Groups, ", "))
	}
	_ = t.Flush()
	return exitOK
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

const verbsUsage = `Usage: rbd verbs [NAME] [flags]

Lists the verbs this token may use in runbooks submitted to the daemon:
what each does to the world (side effects, risk, level, gate), its policy
tags, and what the tenant's policy does with it (gate: waits for a person,
deny: refused, auto_exec: runs unattended). With NAME, one verb and its
arguments and result.
`

func runVerbs(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("verbs", verbsUsage, stdout, stderr)
	names, err := c.fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitCantRun
	}
	if len(names) > 1 {
		return cantRun(stderr, "verbs takes at most one NAME, got %d arguments (rbd verbs -h for help)", len(names))
	}
	name := ""
	if len(names) == 1 {
		name = names[0]
	}
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Verbs(ctx, name)
	if err != nil {
		return c.failed(err, nil)
	}
	switch {
	case c.json():
		_ = writeJSON(stdout, res)
	case name != "":
		describeVerb(stdout, res.Verbs[0])
	default:
		t := cli.NewTable(stdout)
		fmt.Fprintln(t, "VERB\tKIND\tSIDE EFFECTS\tRISK\tLEVEL\tGATE\tTAGS\tPOLICY")
		for _, v := range res.Verbs {
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Kind, v.SideEffects, v.Risk, v.Level, v.Gate,
				tagsText(v.PolicyTags), policyText(v.Policy))
		}
		_ = t.Flush()
	}
	return exitOK
}

// describeVerb shows one verb: its description, then what it does.
func describeVerb(w io.Writer, v apitype.VerbInfo) {
	fmt.Fprintf(w, "%s (%s)\n", v.Name, v.Kind)
	for _, line := range strings.Split(v.Description, "\n") {
		if line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	t := cli.NewTable(w)
	fmt.Fprintf(t, "side effects\t%s\n", v.SideEffects)
	fmt.Fprintf(t, "risk\t%s\n", v.Risk)
	fmt.Fprintf(t, "level\t%s\n", v.Level)
	fmt.Fprintf(t, "determinism\t%s\n", v.Determinism)
	fmt.Fprintf(t, "gate\t%s\n", v.Gate)
	fmt.Fprintf(t, "policy tags\t%s\n", tagsText(v.PolicyTags))
	fmt.Fprintf(t, "policy\t%s\n", policyText(v.Policy))
	if v.Trust.After > 0 {
		// Earned trust (docs/reference/policy.md): how far the verb is
		// from running unattended in this tenant.
		earned := "to auto-execute"
		if v.Trust.Earned {
			earned = "earned: runs unattended"
		}
		fmt.Fprintf(t, "trust\t%d of %d approvals %s (%s)\n", v.Trust.Approvals, v.Trust.After, earned, v.Trust.Rule)
	}
	if v.Returns != "" {
		fmt.Fprintf(t, "returns\t%s\n", v.Returns)
	}
	_ = t.Flush()
	describeFields(w, "Arguments", ":", v.InputSchema)
	describeFields(w, "Result", "", v.OutputSchema)
}

// describeFields lists an object schema's properties, one a line, with
// type, whether required, and description.
func describeFields(w io.Writer, title, prefix string, raw json.RawMessage) {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Format      string `json:"format"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	t := cli.NewTable(w)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		typ := "any"
		if p.Type != nil {
			typ = fmt.Sprint(p.Type)
		}
		if p.Format != "" {
			typ += " (" + p.Format + ")"
		}
		req := ""
		if slices.Contains(s.Required, name) {
			req = "required"
		}
		fmt.Fprintf(t, "  %s%s\t%s\t%s\t%s\n", prefix, name, typ, req, p.Description)
	}
	_ = t.Flush()
}

func tagsText(tags []string) string {
	if len(tags) == 0 {
		return "-"
	}
	return strings.Join(tags, ",")
}

// policyText is a verb's policy decision and the rule that makes it.
func policyText(p apitype.PolicyVerdict) string {
	if p.Rule == "" {
		return p.Action
	}
	return p.Action + " (" + p.Rule + ")"
}

// joinRoles lists roles for a person.
func joinRoles(roles []rbtype.Role) string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}
	return strings.Join(out, ", ")
}
