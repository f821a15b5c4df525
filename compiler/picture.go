package compiler

import (
	"fmt"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// DOT renders the plan's DAG in Graphviz's language. Durable steps are
// drawn with rounded corners, gated steps doubled, sequence edges dashed.
func (p *Plan) DOT() string {
	var b strings.Builder
	b.WriteString("digraph runbook {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	for _, s := range p.Steps {
		var attrs []string
		attrs = append(attrs, fmt.Sprintf("label=%s", dotQuote(s.Key+"\n"+s.Verb+gateNote(s))))
		if s.Execution.Kind == rbtype.KindDurable {
			attrs = append(attrs, `style=rounded`)
		}
		if s.Gate != rbtype.GateNone {
			attrs = append(attrs, "peripheries=2")
		}
		fmt.Fprintf(&b, "  %s [%s];\n", dotQuote(s.Key), strings.Join(attrs, ", "))
	}
	for _, e := range p.Edges {
		style := ""
		if e.Kind == EdgeSequence {
			style = " [style=dashed]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(e.From), dotQuote(e.To), style)
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the plan's DAG as a Mermaid flowchart. Durable steps are
// stadiums, gated steps hexagons, sequence edges dotted.
func (p *Plan) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	ids := make(map[string]string, len(p.Steps))
	for i, s := range p.Steps {
		id := fmt.Sprintf("s%d", i+1)
		ids[s.Key] = id
		label := mermaidQuote(s.Key + "<br/>" + s.Verb + gateNote(s))
		open, closing := "[", "]"
		switch {
		case s.Gate != rbtype.GateNone:
			open, closing = "{{", "}}"
		case s.Execution.Kind == rbtype.KindDurable:
			open, closing = "([", "])"
		}
		fmt.Fprintf(&b, "  %s%s%s%s\n", id, open, label, closing)
	}
	for _, e := range p.Edges {
		arrow := "-->"
		if e.Kind == EdgeSequence {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s %s\n", ids[e.From], arrow, ids[e.To])
	}
	return b.String()
}

func gateNote(s *Step) string {
	if s.Gate != rbtype.GateNone {
		return " (gate: " + string(s.Gate) + ")"
	}
	return ""
}

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func mermaidQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"`
}
