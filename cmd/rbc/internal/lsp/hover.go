package lsp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// hover describes what is under the cursor: a verb (its description,
// arguments, result and execution), an argument keyword (its schema), or
// a reference (the step producing it and the type of the field it reaches).
func (s *Server) hover(ctx context.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
	d, o, i := s.tokenAt(p.TextDocumentPositionParams)
	if i < 0 {
		return nil, nil
	}
	var text string
	switch t := o.toks[i]; t.Kind {
	case lang.TokenName, lang.TokenOp:
		if _, form := o.forms[i-1]; form && i > 0 {
			text = formDoc(t.Text)
		} else if def, ok := s.cat.definition(t.Text); ok && i > 0 && o.toks[i-1].Text == "(" {
			text = verbDoc(def)
		}
	case lang.TokenKeyword:
		text = s.argumentDoc(o, i)
	case lang.TokenRef:
		text = s.refDoc(o, i)
	case lang.TokenInput:
		text = inputDoc(d, o.toks[i].Text)
	}
	if text == "" {
		return nil, nil
	}
	r := d.text.lspRange(o.toks[i].Range)
	return &protocol.Hover{Contents: markdown(text), Range: &r}, nil
}

// argumentDoc describes the argument a keyword names, from its verb's
// input schema.
func (s *Server) argumentDoc(o *outline, i int) string {
	call := o.callAt(i)
	if call == nil {
		return ""
	}
	name := strings.TrimPrefix(o.toks[i].Text, ":")
	for _, opt := range stepOptions {
		if opt.name == name {
			return fmt.Sprintf("`:%s` step option: %s", name, opt.doc)
		}
	}
	def, ok := s.cat.definition(o.verbName(call))
	if !ok || def.InputSchema == nil {
		return ""
	}
	if _, ok := def.InputSchema.Property(name); !ok {
		return ""
	}
	required := slices.Contains(def.InputSchema.Required(), name)
	return fieldLine(def.InputSchema.Raw(), ":", name, required) + "\n\nargument of `" + def.FullName() + "`"
}

// refDoc describes a reference: the step whose result it reads, and the
// type of what its path reaches in that verb's output schema.
func (s *Server) refDoc(o *outline, i int) string {
	tok := o.toks[i]
	name, path := parseRef(tok.Text)
	producer, ok := o.bindings[name]
	if call := o.callAt(i); !ok && name == "failure" && call != nil && call.hook {
		return failureDoc + "\n\ntype: `" + typeOf(rawSchemaAt(compiler.FailureSchema(), path)) + "`"
	}
	if open := elemOf(o, i, name); open >= 0 {
		return fmt.Sprintf("`%s`: an element of the list of the `(%s ... :as @%s ...)` around it, bound in its condition only\n\ntype: `%s`",
			tok.Text, o.forms[open], name, typeOf(rawSchemaAt(s.listItems(o, open+2), path)))
	}
	if elem, isItem := s.elementSchema(o, i, name); !ok && isItem {
		return fmt.Sprintf("`%s`: an element of the list of the `(for-each ... :as @%s)` around it\n\ntype: `%s`", tok.Text, name, typeOf(rawSchemaAt(elem, path)))
	}
	if !ok {
		return fmt.Sprintf("`@%s` is not bound by any step's `:as`", name)
	}
	verb := o.verbName(producer)
	line := o.toks[producer.open].Range.Start.Line
	if producer.binding == i {
		return fmt.Sprintf("`@%s` binds the result of step `%s` (`%s`, line %d)", name, name, verb, line)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "`%s`: the result of step `%s` (`%s`, line %d)", tok.Text, name, verb, line)
	if def, ok := s.cat.definition(verb); ok && def.OutputSchema != nil {
		fmt.Fprintf(&b, "\n\ntype: `%s`", typeOf(schemaAt(def.OutputSchema, path)))
	}
	return b.String()
}

// inputDoc describes an input: its type as the compiler inferred it from
// the parameters it is passed to, when the runbook compiles.
func inputDoc(d *document, input string) string {
	doc := fmt.Sprintf("`%s`: an input, supplied when the runbook is submitted", input)
	in, ok := d.inputs[strings.TrimPrefix(input, "$")]
	if !ok {
		return doc + "\n\ntype: known once the runbook compiles"
	}
	typ := in.Type
	if in.Format != "" {
		typ += " (" + in.Format + ")"
	}
	return doc + "\n\ntype: `" + typ + "`"
}

// elemOf finds the (filter|any|all LIST :as @name COND) whose condition
// holds token i: the index of its "(", or -1 (docs/design/language.md
// v1.4).
func elemOf(o *outline, i int, name string) int {
	depth := 0
	for j := i - 1; j >= 0; j-- {
		switch o.toks[j].Text {
		case ")", "]", "}":
			depth++
			continue
		case "(", "[", "{":
			if depth > 0 {
				depth--
				continue
			}
		default:
			continue
		}
		if head := o.forms[j]; lang.TakesElement(head) {
			// Its :as, among its own items before i.
			level := 0 // inside the form itself
			for k := j + 1; k < i && k+1 < len(o.toks); k++ {
				switch t := o.toks[k]; {
				case t.Text == "(" || t.Text == "[" || t.Text == "{":
					level++
				case t.Text == ")" || t.Text == "]" || t.Text == "}":
					level--
				case level == 0 && t.Kind == lang.TokenKeyword && t.Text == ":as" && o.toks[k+1].Text == "@"+name:
					return j
				}
			}
		}
	}
	return -1
}

// listItems is the schema of the items of the list whose first token is
// i, when it is a reference to a step's result and the schemas say.
func (s *Server) listItems(o *outline, i int) map[string]any {
	if i >= len(o.toks) || o.toks[i].Kind != lang.TokenRef {
		return nil
	}
	name, path := parseRef(o.toks[i].Text)
	producer, ok := o.bindings[name]
	if !ok {
		return nil
	}
	def, ok := s.cat.definition(o.verbName(producer))
	if !ok {
		return nil
	}
	return verbs.Items(schemaAt(def.OutputSchema, path), 0)
}
