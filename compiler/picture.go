package compiler

import (
	"fmt"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// DOT renders the plan's DAG in Graphviz's language. Durable steps are
// drawn with rounded corners, gated steps doubled, sequence edges dashed.
// A step a condition may skip (its own, or one it takes data from) has a
// dashed outline and its condition in its label; the edges its condition
// reads are labelled "when". Failure hooks stand apart, in a cluster "on
// failure", with no edges (docs/design/language.md v1.2).
func (p *Plan) DOT() string {
	var b strings.Builder
	b.WriteString("digraph runbook {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	skippable := p.skippable()
	node := func(indent string, i int, s *Step) {
		var attrs, styles []string
		attrs = append(attrs, fmt.Sprintf("label=%s", dotQuote(s.Key+"\n"+s.Verb+gateNote(s)+whenNote(s, "\n"))))
		if s.Execution.Kind == rbtype.KindDurable {
			styles = append(styles, "rounded")
		}
		if skippable[i] {
			styles = append(styles, "dashed")
		}
		if len(styles) == 1 {
			attrs = append(attrs, "style="+styles[0])
		} else if len(styles) > 1 {
			attrs = append(attrs, "style="+dotQuote(strings.Join(styles, ",")))
		}
		if s.Gate != rbtype.GateNone {
			attrs = append(attrs, "peripheries=2")
		}
		fmt.Fprintf(&b, "%s%s [%s];\n", indent, dotQuote(s.Key), strings.Join(attrs, ", "))
	}
	var hooks []int
	for i, s := range p.Steps {
		if s.Kind == KindHook {
			hooks = append(hooks, i)
			continue
		}
		node("  ", i, s)
	}
	reads := p.conditionReads()
	for _, e := range p.Edges {
		var attrs []string
		if e.Kind == EdgeSequence {
			attrs = append(attrs, "style=dashed")
		}
		if reads[[2]string{e.From, e.To}] {
			attrs = append(attrs, `label="when"`)
		}
		suffix := ""
		if len(attrs) > 0 {
			suffix = " [" + strings.Join(attrs, ", ") + "]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(e.From), dotQuote(e.To), suffix)
	}
	if len(hooks) > 0 {
		b.WriteString("  subgraph cluster_on_failure {\n    label=\"on failure\";\n    style=dashed;\n")
		for _, i := range hooks {
			node("    ", i, p.Steps[i])
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the plan's DAG as a Mermaid flowchart. Durable steps are
// stadiums, gated steps hexagons, sequence edges dotted. A step a
// condition may skip has class "skippable" (a dashed outline) and its
// condition in its label; the edges its condition reads are labelled
// "when"; failure hooks stand in a subgraph "on failure".
func (p *Plan) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	ids := make(map[string]string, len(p.Steps))
	skippable := p.skippable()
	var hooks, skipped []string
	node := func(indent, id string, s *Step) {
		// A condition's < and > would read as HTML; Mermaid's entities
		// draw them.
		when := strings.NewReplacer("<", "#lt;", ">", "#gt;").Replace(whenNote(s, "\n"))
		label := mermaidQuote(s.Key + "<br/>" + s.Verb + gateNote(s) + strings.Replace(when, "\n", "<br/>", 1))
		open, closing := "[", "]"
		switch {
		case s.Gate != rbtype.GateNone:
			open, closing = "{{", "}}"
		case s.Execution.Kind == rbtype.KindDurable:
			open, closing = "([", "])"
		}
		fmt.Fprintf(&b, "%s%s%s%s%s\n", indent, id, open, label, closing)
	}
	for i, s := range p.Steps {
		id := fmt.Sprintf("s%d", i+1)
		ids[s.Key] = id
		if s.Kind == KindHook {
			hooks = append(hooks, s.Key)
			continue
		}
		if skippable[i] {
			skipped = append(skipped, id)
		}
		node("  ", id, s)
	}
	reads := p.conditionReads()
	for _, e := range p.Edges {
		arrow := "-->"
		if e.Kind == EdgeSequence {
			arrow = "-.->"
		}
		if reads[[2]string{e.From, e.To}] {
			arrow = "-- when -->"
			if e.Kind == EdgeSequence {
				arrow = "-. when .->"
			}
		}
		fmt.Fprintf(&b, "  %s %s %s\n", ids[e.From], arrow, ids[e.To])
	}
	if len(hooks) > 0 {
		b.WriteString("  subgraph on_failure [\"on failure\"]\n")
		for _, key := range hooks {
			node("    ", ids[key], p.Step(key))
		}
		b.WriteString("  end\n")
	}
	if len(skipped) > 0 {
		b.WriteString("  classDef skippable stroke-dasharray: 5 5\n")
		fmt.Fprintf(&b, "  class %s skippable\n", strings.Join(skipped, ","))
	}
	return b.String()
}

// conditionReads returns the pairs (from, to) where step to's condition
// reads step from's result.
func (p *Plan) conditionReads() map[[2]string]bool {
	keys := make(map[string]bool, len(p.Steps))
	for _, s := range p.Steps {
		keys[s.Key] = true
	}
	out := map[[2]string]bool{}
	for _, s := range p.Steps {
		if s.When == nil {
			continue
		}
		s.When.refs(func(ref string) {
			if key, _, ok := SplitRef(ref, func(k string) bool { return keys[k] }); ok {
				out[[2]string{key, s.Key}] = true
			}
		})
	}
	return out
}

func gateNote(s *Step) string {
	if s.Gate != rbtype.GateNone {
		return " (gate: " + string(s.Gate) + ")"
	}
	return ""
}

// whenNote is a step's condition for its label, after a line break.
func whenNote(s *Step, br string) string {
	if s.When == nil {
		return ""
	}
	return br + "when " + s.When.String()
}

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func mermaidQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"`
}
