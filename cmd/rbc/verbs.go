package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

func runVerbs(args []string, stdout, stderr io.Writer) int {
	c := newCatalogueCommand("verbs", stderr)
	format := cli.Choice("text", "text", "json")
	c.fs.Var(format, "format", "output format: text or json")
	names, w, ok := c.open(args, stderr, 0, 1, "at most one NAME")
	if !ok {
		return c.status
	}
	status := exitOK
	if len(w.diags) > 0 {
		status = w.report(stderr, "text")
	}
	if len(names) == 0 {
		defs := w.cat.Definitions()
		if format.Value == "json" {
			cli.WriteJSON(stdout, defs)
		} else {
			listVerbs(stdout, defs)
		}
		return status
	}
	def, ok := w.cat.Lookup(names[0])
	if broken, invalid := w.cat.Invalid(names[0]); !ok && invalid {
		at := broken.FieldRange("name")
		fmt.Fprintf(stderr, "rbc: verb %q is defined at %s:%d but invalid: its definition has the errors above\n", names[0], at.Filename, at.Start.Line)
		return exitErrors
	}
	if !ok {
		d := &lang.Diagnostic{Message: fmt.Sprintf("unknown verb %q", names[0])}
		d.WithSuggestions(w.cat.Suggest(names[0])...)
		fmt.Fprintf(stderr, "rbc: %s\n", d.Headline())
		return exitErrors
	}
	if format.Value == "json" {
		cli.WriteJSON(stdout, def)
	} else {
		describeVerb(stdout, def)
	}
	return status
}

func listVerbs(out io.Writer, defs []*verbs.Definition) {
	tw := cli.NewTable(out)
	fmt.Fprintln(tw, "VERB\tKIND\tHANDLER\tDESCRIPTION")
	for _, d := range defs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.FullName(), d.Execution.Kind, d.Execution.Handler, firstLine(d.Description))
	}
	_ = tw.Flush()
}

func describeVerb(out io.Writer, d *verbs.Definition) {
	e := d.Execution
	fmt.Fprintf(out, "%s (%s, handler %s)\n", d.FullName(), e.Kind, e.Handler)
	for _, line := range strings.Split(strings.TrimSpace(d.Description), "\n") {
		if line != "" {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	fmt.Fprintln(out, "\nArguments:")
	if d.InputSchema == nil {
		fmt.Fprintln(out, "  any (no input_schema)")
	} else {
		describeFields(out, d.InputSchema, ":")
	}
	if d.OutputSchema != nil {
		fmt.Fprintln(out, "\nResult:")
		describeFields(out, d.OutputSchema, "")
	}
	if d.Returns != "" {
		fmt.Fprintf(out, "\nNested in another call, it stands for its result's %s.\n", d.Returns)
	}
	fmt.Fprintln(out, "\nExecution:")
	fmt.Fprintf(out, "  side effects: %s\n", e.SideEffects)
	fmt.Fprintf(out, "  risk:         %s\n", d.RiskOrDefault())
	fmt.Fprintf(out, "  determinism:  %s\n", e.Determinism.Effective())
	fmt.Fprintf(out, "  level:        %s\n", e.Level.Effective())
	if c := e.Cache; c.Reuses() {
		if c.TTL != nil {
			fmt.Fprintf(out, "  cache:        %s, %s\n", c.Policy, c.TTL)
		} else {
			fmt.Fprintf(out, "  cache:        %s\n", c.Policy)
		}
	}
	idem := string(e.Idempotency.Scope)
	if len(e.Idempotency.KeyFields) > 0 {
		idem += " on " + strings.Join(e.Idempotency.KeyFields, ", ")
	}
	fmt.Fprintf(out, "  idempotency:  %s\n", idem)
	fmt.Fprintf(out, "  run timeout:  %s\n", e.Timeouts.RunTimeout)
	if e.Timeouts.ParkTimeout != nil {
		fmt.Fprintf(out, "  park timeout: %s, then %s\n", e.Timeouts.ParkTimeout, e.Timeouts.OnTimeout)
	}
	if esc := e.Timeouts.Escalation; esc != nil {
		fmt.Fprintf(out, "  escalation:   %s\n", esc.Verb)
	}
	if r := e.Timeouts.RemindAfter; r != nil {
		fmt.Fprintf(out, "  reminder:     %s after parking\n", r)
	}
	fmt.Fprintf(out, "  retry:        %s\n", e.Retry.Describe())
	fmt.Fprintf(out, "  gate:         %s\n", d.Gate())
	fmt.Fprintf(out, "  on failure:   %s\n", e.OnFailure)
	if e.Approvers != "" {
		fmt.Fprintf(out, "  approvers:    %s\n", e.Approvers)
	}
	if e.Compensation != nil {
		fmt.Fprintf(out, "  compensation: %s\n", e.Compensation.Verb)
	}
}

// describeFields prints an object schema's properties, one a line, with
// type, whether required, and description.
func describeFields(out io.Writer, s *verbs.Schema, prefix string) {
	props := s.Properties()
	if len(props) == 0 {
		fmt.Fprintln(out, "  any")
		return
	}
	tw := cli.NewTable(out)
	required := s.Required()
	for _, p := range props {
		sub, _ := s.Property(p)
		typ := "any"
		if t, ok := sub["type"]; ok {
			typ = fmt.Sprint(t)
		}
		if f, ok := sub["format"].(string); ok {
			typ += " (" + f + ")"
		}
		req := ""
		if slices.Contains(required, p) {
			req = "required"
		}
		desc, _ := sub["description"].(string)
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\n", prefix, p, typ, req, desc)
	}
	_ = tw.Flush()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
