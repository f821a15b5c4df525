package lsp

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/verbs"
)

// verbDoc is a verb's hover text, in Markdown: what `rbc verbs NAME`
// prints, laid out for a hover card.
func verbDoc(d *verbs.Definition) string {
	var b strings.Builder
	e := d.Execution
	fmt.Fprintf(&b, "**%s** · %s · handler `%s`\n\n", d.FullName(), e.Kind, e.Handler)
	if desc := strings.TrimSpace(d.Description); desc != "" {
		b.WriteString(desc + "\n\n")
	}
	b.WriteString("**Arguments**\n\n")
	if d.InputSchema == nil {
		b.WriteString("any (no `input_schema`)\n\n")
	} else {
		writeFields(&b, d.InputSchema.Raw(), ":", argumentOrder(d.InputSchema))
	}
	if d.OutputSchema != nil {
		b.WriteString("**Result**\n\n")
		writeFields(&b, d.OutputSchema.Raw(), ".", fields(d.OutputSchema.Raw()))
	}
	b.WriteString("**Execution**\n\n")
	fmt.Fprintf(&b, "- side effects: `%s`\n", e.SideEffects)
	fmt.Fprintf(&b, "- determinism: `%s`\n", e.Determinism.Effective())
	if c := e.Cache; c.Reuses() {
		fmt.Fprintf(&b, "- cache: `%s`", c.Policy)
		if c.TTL != nil {
			fmt.Fprintf(&b, " for %s", c.TTL)
		}
		b.WriteString("\n")
	}
	idem := "`" + string(e.Idempotency.Scope) + "`"
	if len(e.Idempotency.KeyFields) > 0 {
		idem += " on " + strings.Join(e.Idempotency.KeyFields, ", ")
	}
	fmt.Fprintf(&b, "- idempotency: %s\n", idem)
	fmt.Fprintf(&b, "- run timeout: %s", e.Timeouts.RunTimeout)
	if e.Timeouts.ParkTimeout != nil {
		fmt.Fprintf(&b, "; parks up to %s, then %s", e.Timeouts.ParkTimeout, e.Timeouts.OnTimeout)
	}
	if esc := e.Timeouts.Escalation; esc != nil {
		fmt.Fprintf(&b, "; escalates to `%s`", esc.Verb)
	}
	if r := e.Timeouts.RemindAfter; r != nil {
		fmt.Fprintf(&b, "; reminds after %s", r)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- retry: %s\n", e.Retry.Describe())
	fmt.Fprintf(&b, "- gate: `%s`; on failure: `%s`\n", e.Gate, e.OnFailure)
	if e.Approvers != "" {
		fmt.Fprintf(&b, "- approvers: `%s`\n", e.Approvers)
	}
	if e.Compensation != nil {
		fmt.Fprintf(&b, "- compensation: `%s`\n", e.Compensation.Verb)
	}
	fmt.Fprintf(&b, "\nDefined in %s:%d\n", filepath.Base(d.Range.Filename), d.Range.Start.Line)
	return b.String()
}

// argumentOrder lists a verb's arguments required first, in the order
// the schema requires them, then the others by name: the order
// completion offers them in.
func argumentOrder(s *verbs.Schema) []string {
	order := slices.Clone(s.Required())
	for _, p := range s.Properties() {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	return order
}

// writeFields writes one line per property: its name, type, whether it
// is required, and its description.
func writeFields(b *strings.Builder, schema map[string]any, prefix string, names []string) {
	if len(names) == 0 {
		b.WriteString("any\n\n")
		return
	}
	required, _ := schema["required"].([]any)
	for _, name := range names {
		b.WriteString("- " + fieldLine(schema, prefix, name, slices.Contains(required, any(name))) + "\n")
	}
	b.WriteString("\n")
}

// fieldLine describes one property in Markdown: its name, type, whether
// it is required, and its description.
func fieldLine(schema map[string]any, prefix, name string, required bool) string {
	sub, _ := verbs.Field(schema, name)
	line := fmt.Sprintf("`%s%s` %s", prefix, name, typeOf(sub))
	if required {
		line += ", required"
	}
	if desc, ok := sub["description"].(string); ok && desc != "" {
		line += " — " + desc
	}
	return line
}
