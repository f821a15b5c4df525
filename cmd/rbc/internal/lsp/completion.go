package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// stepOptions are the reserved keywords of docs/design/language.md and docs/language.md,
// offered after a verb's own arguments.
var stepOptions = []struct{ name, doc string }{
	{"as", "binds the step's result to a name (`:as @name`) and names the step"},
	{"after", "runs the step after others, passing no data (`:after @x` or `:after [@x @y]`)"},
	{"gate", "requires approval before the step runs (`:gate \"human_confirm\"`)"},
	{"on-failure", "what a failure of this step does to the runbook: \"abort\", \"isolate\" or \"continue\", or a map by error code (`{\"BUDGET_EXCEEDED\" \"abort\" \"default\" \"continue\"}`)"},
	{"when", "runs the step only if a condition holds, else skips it (`:when (< @lag.seconds 5)`)"},
	{"gate-when", "the step waits for an approval only when a condition holds (`:gate-when (= @env.name \"production\")`)"},
	{"approvers", "only tokens of this group (and admin) may decide the step's gate (`:approvers \"compliance\"`)"},
	{"timeout-result", "the result a durable step succeeds with when its wait times out (`:timeout-result {:decision \"revoke\"}`)"},
	{"remind-after", "runs the verb's escalation once after this long, and the wait goes on (`:remind-after \"P7D\"`)"},
	{"parallel", "in a for-each body: at most this many of the call's iterations at once (`:parallel 5`)"},
}

// completion offers what may be typed at the cursor: verb names right
// after "(", a call's argument keywords and step options, @bindings and
// their result fields, and $inputs. Each item replaces the word being
// typed, so that clients agree on what "@ca" or ":cas" is completed from.
func (s *Server) completion(ctx context.Context, p *protocol.CompletionParams) (*protocol.CompletionList, error) {
	list := &protocol.CompletionList{Items: []protocol.CompletionItem{}}
	d := s.runbook(p.TextDocument.URI)
	if d == nil {
		return list, nil
	}
	c := newCursor(d, d.text.offset(p.Position))
	if c.quiet() {
		return list, nil
	}
	add := func(item protocol.CompletionItem) {
		item.TextEdit = &protocol.TextEdit{Range: c.wordRange(), NewText: item.InsertText}
		if item.FilterText == "" {
			item.FilterText = item.InsertText
		}
		list.Items = append(list.Items, item)
	}
	switch {
	case c.atOperator():
		completeOperators(add)
		completeFuncs(add, true)
	case c.atFunc():
		completeFuncs(add, false)
	case c.call != nil && c.prev == c.call.open:
		s.completeVerbs(add)
	case strings.HasPrefix(c.word, "@"):
		s.completeRef(c, add)
	case strings.HasPrefix(c.word, "$"):
		completeInputs(c, add)
	case c.atArgument():
		s.completeArguments(c, add)
	case c.atValue():
		s.completeLiterals(c, add)
		s.completeRef(c, add)
		completeInputs(c, add)
	}
	return list, nil
}

func (s *Server) completeVerbs(add func(protocol.CompletionItem)) {
	if s.cat.reg == nil {
		return
	}
	for _, def := range s.cat.reg.Definitions() {
		add(protocol.CompletionItem{
			Label:         def.FullName(),
			Kind:          protocol.CompletionItemKindFunction,
			Detail:        firstLine(def.Description),
			Documentation: markdown(verbDoc(def)),
			InsertText:    def.FullName(),
		})
	}
}

// completeArguments offers the call's verb's arguments not given yet,
// required ones first, then the step options.
func (s *Server) completeArguments(c *cursor, add func(protocol.CompletionItem)) {
	given := map[string]bool{}
	for _, k := range c.call.keywords {
		if tok := c.o.toks[k]; tok.Range.Start.Byte != c.start {
			given[strings.TrimPrefix(tok.Text, ":")] = true
		}
	}
	if def, ok := s.cat.definition(c.o.verbName(c.call)); ok && def.InputSchema != nil {
		required := def.InputSchema.Required()
		for i, name := range argumentOrder(def.InputSchema) {
			if given[name] {
				continue
			}
			sub, _ := def.InputSchema.Property(name)
			detail, rank := typeOf(sub), "1"
			if slices.Contains(required, name) {
				detail, rank = detail+", required", "0"
			}
			desc, _ := sub["description"].(string)
			add(protocol.CompletionItem{
				Label:         ":" + name,
				Kind:          protocol.CompletionItemKindField,
				Detail:        detail,
				Documentation: desc,
				InsertText:    ":" + name + " ",
				FilterText:    ":" + name,
				SortText:      fmt.Sprintf("%s%03d", rank, i),
			})
		}
	}
	for i, opt := range stepOptions {
		if given[opt.name] {
			continue
		}
		add(protocol.CompletionItem{
			Label:         ":" + opt.name,
			Kind:          protocol.CompletionItemKindKeyword,
			Detail:        "step option",
			Documentation: opt.doc,
			InsertText:    ":" + opt.name + " ",
			FilterText:    ":" + opt.name,
			SortText:      fmt.Sprintf("2%03d", i),
		})
	}
}

// completeRef offers the bindings, or, once the word is "@name." or
// deeper, the fields the producing verb's output schema gives at that path.
func (s *Server) completeRef(c *cursor, add func(protocol.CompletionItem)) {
	dot := strings.LastIndexByte(c.word, '.')
	hook := c.call != nil && c.call.hook
	if dot < 0 {
		for _, b := range slices.Sorted(maps.Keys(c.o.bindings)) {
			if producer := c.o.bindings[b]; producer != c.call && !producer.hook {
				add(protocol.CompletionItem{
					Label:      "@" + b,
					Kind:       protocol.CompletionItemKindVariable,
					Detail:     c.o.verbName(producer),
					InsertText: "@" + b,
				})
			}
		}
		for _, l := range c.o.loopsAround(c.prev + 1) {
			if l.item != "" {
				add(protocol.CompletionItem{
					Label:      "@" + l.item,
					Kind:       protocol.CompletionItemKindVariable,
					Detail:     "an element of the for-each's list",
					InsertText: "@" + l.item,
				})
			}
		}
		if hook {
			add(protocol.CompletionItem{
				Label:         "@failure",
				Kind:          protocol.CompletionItemKindVariable,
				Detail:        "the failure the hooks run after",
				Documentation: failureDoc,
				InsertText:    "@failure",
			})
		}
		return
	}
	// The fields after the last '.': "@docs.files[0]." is the start of a
	// field of docs' files[0].
	base := c.word[:dot+1]
	name, path := parseRef(c.word[:dot])
	var sub map[string]any
	if producer, ok := c.o.bindings[name]; ok {
		def, ok := s.cat.definition(c.o.verbName(producer))
		if !ok {
			return
		}
		sub = schemaAt(def.OutputSchema, path)
	} else if name == "failure" && hook {
		sub = rawSchemaAt(compiler.FailureSchema(), path)
	} else if elem, ok := s.elementSchema(c.o, c.prev+1, name); ok {
		sub = rawSchemaAt(elem, path)
	} else {
		return
	}
	for _, f := range fields(sub) {
		field, _ := verbs.Field(sub, f)
		add(protocol.CompletionItem{
			Label:      f,
			Kind:       protocol.CompletionItemKindField,
			Detail:     typeOf(field),
			InsertText: base + f,
		})
	}
}

// completeInputs offers the $inputs the runbook already uses.
func completeInputs(c *cursor, add func(protocol.CompletionItem)) {
	seen := map[string]bool{}
	for _, t := range c.o.toks {
		if t.Kind == lang.TokenInput && !seen[t.Text] && t.Range.Start.Byte != c.start {
			seen[t.Text] = true
			add(protocol.CompletionItem{
				Label:      t.Text,
				Kind:       protocol.CompletionItemKindVariable,
				Detail:     "input, supplied when the runbook is submitted",
				InsertText: t.Text,
			})
		}
	}
}

func markdown(s string) protocol.MarkupContent {
	return protocol.MarkupContent{Kind: protocol.Markdown, Value: s}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// completeLiterals offers the values a keyword right before the cursor
// admits when there are few: the gates, the failure modes, an argument's
// enum or a boolean's true and false.
func (s *Server) completeLiterals(c *cursor, add func(protocol.CompletionItem)) {
	kw := c.o.toks[c.prev]
	if kw.Kind != lang.TokenKeyword {
		return
	}
	var values []any
	switch name := strings.TrimPrefix(kw.Text, ":"); name {
	case "gate":
		for _, g := range rbtype.Gates {
			values = append(values, string(g))
		}
	case "on-failure":
		for _, f := range rbtype.OnFailures {
			values = append(values, string(f))
		}
	default:
		def, ok := s.cat.definition(c.o.verbName(c.call))
		if !ok || def.InputSchema == nil {
			return
		}
		sub, _ := def.InputSchema.Property(name)
		if enum, ok := sub["enum"].([]any); ok {
			values = enum
		} else if sub["type"] == "boolean" {
			values = []any{true, false}
		}
	}
	for i, v := range values {
		// A runbook's strings, numbers and booleans are written as JSON's;
		// a '<' stays a '<'.
		var literal strings.Builder
		enc := json.NewEncoder(&literal)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			continue
		}
		text := strings.TrimSuffix(literal.String(), "\n")
		add(protocol.CompletionItem{
			Label:      text,
			Kind:       protocol.CompletionItemKindValue,
			InsertText: text,
			SortText:   fmt.Sprintf("0%03d", i),
		})
	}
}
