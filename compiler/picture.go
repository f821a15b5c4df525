package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// picture is what DOT and Mermaid draw: the plan's steps as nodes and its
// edges, with the elements of each for-each drawn as one node.
type picture struct {
	nodes []*pictureNode
	edges []pictureEdge
}

// pictureNode is one node: a step, or the steps a for-each makes of one
// template ("upload[0]", "upload[1]"), drawn once with their count.
type pictureNode struct {
	id    string // the step's key, or the template's for the elements
	step  *Step  // the first step it stands for
	count int    // how many steps it stands for
	// skippable marks a step a condition may skip (docs/design/language.md v1.2).
	skippable bool
}

type pictureEdge struct {
	from, to string
	kind     string
	when     bool // the target's condition reads the source
}

// Stem is a step's key without the indexes a for-each gave it: the key of
// its template ("upload[2]" and "check[0][1]" are "upload" and "check").
func Stem(key string) string {
	for strings.HasSuffix(key, "]") {
		i := strings.LastIndexByte(key, '[')
		if i < 0 {
			break
		}
		if _, err := strconv.Atoi(key[i+1 : len(key)-1]); err != nil {
			break
		}
		key = key[:i]
	}
	return key
}

func (p *Plan) picture() *picture {
	pic := &picture{}
	skippable := p.skippable()
	byID := map[string]*pictureNode{}
	for i, s := range p.Steps {
		id := Stem(s.Key)
		if n := byID[id]; n != nil {
			n.count++
			n.skippable = n.skippable || skippable[i]
			continue
		}
		n := &pictureNode{id: id, step: s, count: 1, skippable: skippable[i]}
		byID[id] = n
		pic.nodes = append(pic.nodes, n)
	}
	reads := p.conditionReads()
	seen := map[[2]string]int{}
	for _, e := range p.Edges {
		from, to := Stem(e.From), Stem(e.To)
		if from == to {
			continue // between two steps of one element, drawn as one node
		}
		k := [2]string{from, to}
		when := reads[[2]string{e.From, e.To}]
		if at, ok := seen[k]; ok {
			pe := &pic.edges[at]
			pe.when = pe.when || when
			if edgeStrength(e.Kind) > edgeStrength(pe.kind) {
				pe.kind = e.Kind
			}
			continue
		}
		seen[k] = len(pic.edges)
		pic.edges = append(pic.edges, pictureEdge{from: from, to: to, kind: e.Kind, when: when})
	}
	return pic
}

// label is a node's text, its lines joined with br.
func (p *Plan) label(n *pictureNode, br string) string {
	s := n.step
	name := n.id
	if s.Loop != "" || n.count > 1 || name != s.Key {
		name += "[*]"
		if s.Loop == "" {
			name += " ×" + strconv.Itoa(n.count)
		}
	}
	lines := []string{name, s.Verb + gateNote(s)}
	if s.Loop != "" {
		if l := p.loop(s.Loop); l != nil {
			lines = append(lines, "for each @"+l.Item+" of "+valueSource(l.List))
		}
	}
	if s.When != nil {
		lines = append(lines, "when "+s.When.String())
	}
	return strings.Join(lines, br)
}

// DOT renders the plan's DAG in Graphviz's language. Durable steps are
// drawn with rounded corners, gated steps doubled, sequence edges dashed.
// A step a condition may skip (its own, or one it takes data from) has a
// dashed outline and its condition in its label; the edges its condition
// reads are labelled "when". Failure hooks stand apart, in a cluster "on
// failure", with no edges (docs/design/language.md v1.2). The steps of a for-each's
// body are drawn once each, as a stack (box3d) labelled "key[*]": with
// the loop it runs in when the list is known at run time, with the count
// of its elements when the compiler expanded it (docs/design/language.md v1.3).
func (p *Plan) DOT() string {
	var b strings.Builder
	b.WriteString("digraph runbook {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	pic := p.picture()
	node := func(indent string, n *pictureNode) {
		s := n.step
		var attrs, styles []string
		attrs = append(attrs, fmt.Sprintf("label=%s", dotQuote(p.label(n, "\n"))))
		if s.Loop != "" || n.count > 1 {
			attrs = append(attrs, "shape=box3d")
		}
		if s.Execution.Kind == rbtype.KindDurable {
			styles = append(styles, "rounded")
		}
		if n.skippable {
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
		fmt.Fprintf(&b, "%s%s [%s];\n", indent, dotQuote(n.id), strings.Join(attrs, ", "))
	}
	var hooks []*pictureNode
	for _, n := range pic.nodes {
		if n.step.Kind == KindHook {
			hooks = append(hooks, n)
			continue
		}
		node("  ", n)
	}
	for _, e := range pic.edges {
		var attrs []string
		switch e.kind {
		case EdgeSequence:
			attrs = append(attrs, "style=dashed")
		case EdgeSettle:
			// A status test waits for the step to settle, whatever it
			// settled with (docs/design/language.md v1.4).
			attrs = append(attrs, "style=dotted", `label="status"`)
		}
		if e.when && e.kind != EdgeSettle {
			attrs = append(attrs, `label="when"`)
		}
		suffix := ""
		if len(attrs) > 0 {
			suffix = " [" + strings.Join(attrs, ", ") + "]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(e.from), dotQuote(e.to), suffix)
	}
	if len(hooks) > 0 {
		b.WriteString("  subgraph cluster_on_failure {\n    label=\"on failure\";\n    style=dashed;\n")
		for _, n := range hooks {
			node("    ", n)
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the plan's DAG as a Mermaid flowchart. Durable steps are
// stadiums, gated steps hexagons, the steps of a for-each's body
// subroutines ("[[ ]]", labelled as in DOT), sequence edges dotted. A step
// a condition may skip has class "skippable" (a dashed outline) and its
// condition in its label; the edges its condition reads are labelled
// "when"; failure hooks stand in a subgraph "on failure".
func (p *Plan) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	pic := p.picture()
	ids := make(map[string]string, len(pic.nodes))
	var hooks []*pictureNode
	var skipped []string
	node := func(indent string, n *pictureNode) {
		s := n.step
		// A condition's < and > would read as HTML; Mermaid's entities
		// draw them.
		text := strings.NewReplacer("<", "#lt;", ">", "#gt;").Replace(p.label(n, "\n"))
		label := mermaidQuote(strings.ReplaceAll(text, "\n", "<br/>"))
		open, closing := "[", "]"
		switch {
		case s.Gate != rbtype.GateNone:
			open, closing = "{{", "}}"
		case s.Loop != "" || n.count > 1:
			open, closing = "[[", "]]"
		case s.Execution.Kind == rbtype.KindDurable:
			open, closing = "([", "])"
		}
		fmt.Fprintf(&b, "%s%s%s%s%s\n", indent, ids[n.id], open, label, closing)
	}
	for i, n := range pic.nodes {
		ids[n.id] = fmt.Sprintf("s%d", i+1)
		if n.step.Kind == KindHook {
			hooks = append(hooks, n)
			continue
		}
		if n.skippable {
			skipped = append(skipped, ids[n.id])
		}
		node("  ", n)
	}
	for _, e := range pic.edges {
		arrow := "-->"
		if e.kind == EdgeSequence {
			arrow = "-.->"
		}
		if e.when {
			arrow = "-- when -->"
			if e.kind == EdgeSequence {
				arrow = "-. when .->"
			}
		}
		if e.kind == EdgeSettle {
			arrow = "-. status .->"
		}
		fmt.Fprintf(&b, "  %s %s %s\n", ids[e.from], arrow, ids[e.to])
	}
	if len(hooks) > 0 {
		b.WriteString("  subgraph on_failure [\"on failure\"]\n")
		for _, n := range hooks {
			node("    ", n)
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
		s.When.Refs(func(ref string) {
			if key, _, ok := SplitRef(ref, func(k string) bool { return keys[k] }); ok {
				out[[2]string{key, s.Key}] = true
			}
		})
	}
	return out
}

func gateNote(s *Step) string {
	note := ""
	switch {
	case s.GateWhen != nil:
		note = " (gate: " + string(s.Gate) + " when " + s.GateWhen.String() + ")"
	case s.Gate != rbtype.GateNone:
		note = " (gate: " + string(s.Gate) + ")"
	}
	if s.Approvers != "" {
		note += " (approvers: " + s.Approvers + ")"
	}
	return note
}

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func mermaidQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"`
}
