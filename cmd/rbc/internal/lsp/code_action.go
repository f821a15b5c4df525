package lsp

import (
	"context"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// sourceFixAll is LSP's kind for an action that applies every safe fix
// of a file; editors run it on save when asked to
// (editor.codeActionsOnSave in VS Code).
const sourceFixAll protocol.CodeActionKind = "source.fixAll"

// codeAction offers, for the diagnostics at the requested range, each of
// their fixes (docs/design/language.md v1.1) as a quick fix, the only fix of a
// diagnostic marked preferred; and, for the whole file, what `rbc fix`
// would do, when it would change anything.
func (s *Server) codeAction(ctx context.Context, p *protocol.CodeActionParams) ([]protocol.CodeAction, error) {
	out := []protocol.CodeAction{}
	d := s.runbook(p.TextDocument.URI)
	if d == nil {
		return out, nil
	}
	if wanted(p.Context.Only, protocol.QuickFix) {
		start, end := d.text.offset(p.Range.Start), d.text.offset(p.Range.End)
		for _, diag := range d.diags {
			if diag.Range.Filename == d.name && diag.Range.Start.Byte <= end && start <= diag.Range.End.Byte {
				out = append(out, s.quickFixes(d, diag)...)
			}
		}
	}
	if wanted(p.Context.Only, sourceFixAll) && s.opts.FixAll != nil && s.cat.reg != nil {
		if fixed := string(s.opts.FixAll(s.cat.reg, d.name, []byte(d.text.src))); fixed != d.text.src {
			out = append(out, protocol.CodeAction{
				Title: "Apply every fix that is the only one offered (rbc fix)",
				Kind:  sourceFixAll,
				Edit:  &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{d.uri: {{Range: d.text.whole(), NewText: fixed}}}},
			})
		}
	}
	return out, nil
}

// quickFixes turns a diagnostic's fixes into code actions.
func (s *Server) quickFixes(d *document, diag *lang.Diagnostic) []protocol.CodeAction {
	var out []protocol.CodeAction
	for _, fix := range diag.Fixes {
		edits := make([]protocol.TextEdit, 0, len(fix.Edits))
		for _, e := range fix.Edits {
			if e.Range.Filename != d.name {
				break // a fix elsewhere is not this document's to offer
			}
			edits = append(edits, protocol.TextEdit{Range: d.text.lspRange(e.Range), NewText: e.Text})
		}
		if len(edits) != len(fix.Edits) {
			continue
		}
		out = append(out, protocol.CodeAction{
			Title:       fix.Message,
			Kind:        protocol.QuickFix,
			Diagnostics: s.lspDiagnostics(lang.Diagnostics{diag}),
			IsPreferred: len(diag.Fixes) == 1,
			Edit:        &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{d.uri: edits}},
		})
	}
	return out
}

// wanted reports whether the client, asking only for kinds only (none:
// every kind), wants actions of kind. Kinds are hierarchical: asking for
// "source" includes "source.fixAll".
func wanted(only []protocol.CodeActionKind, kind protocol.CodeActionKind) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if kind == o || strings.HasPrefix(string(kind), string(o)+".") {
			return true
		}
	}
	return false
}
