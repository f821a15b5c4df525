package lsp

import (
	"context"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
)

// check analyses a runbook as `rbc lint` does, parsing it and compiling it
// against the catalogue, and publishes its diagnostics.
func (s *Server) check(ctx context.Context, d *document) {
	s.analyse(d)
	s.publish(ctx, d.uri, d.version, d.diags)
}

// analyse parses and compiles a runbook's current text. Without a
// catalogue only syntax is checked: every call would otherwise be an
// unknown verb.
func (s *Server) analyse(d *document) {
	file, diags := lang.Parse(d.name, []byte(d.text.src))
	d.inputs = nil
	if s.cat.reg != nil {
		plan, more := compiler.Compile([]*lang.File{file}, s.cat.reg)
		diags.Append(more)
		if plan != nil {
			d.inputs = map[string]compiler.Input{}
			for _, in := range plan.Inputs {
				d.inputs[in.Name] = in
			}
		}
	}
	d.file, d.diags = file, diags.Sorted()
}

// publish sends a file's diagnostics; none clears them.
func (s *Server) publish(ctx context.Context, u protocol.DocumentURI, version int32, ds lang.Diagnostics) {
	_ = s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, &protocol.PublishDiagnosticsParams{
		URI:         u,
		Version:     uint32(max(version, 0)),
		Diagnostics: s.lspDiagnostics(ds),
	})
}

// lspDiagnostics converts diagnostics, keeping their codes, and their
// ranges to the character; suggestions travel in data for a client that
// wants to offer them.
func (s *Server) lspDiagnostics(ds lang.Diagnostics) []protocol.Diagnostic {
	out := make([]protocol.Diagnostic, 0, len(ds)) // never null: [] clears
	for _, d := range ds {
		pd := protocol.Diagnostic{
			Range:    s.textOf(d.Range.Filename).lspRange(d.Range),
			Severity: protocol.DiagnosticSeverityError,
			Code:     string(d.Code),
			Source:   "rbc",
			Message:  d.Text(),
		}
		if d.Severity == lang.SeverityWarning {
			pd.Severity = protocol.DiagnosticSeverityWarning
		}
		if d.Code == lang.WUnusedBinding {
			pd.Tags = []protocol.DiagnosticTag{protocol.DiagnosticTagUnnecessary}
		}
		for _, r := range d.Related {
			pd.RelatedInformation = append(pd.RelatedInformation, protocol.DiagnosticRelatedInformation{
				Location: s.location(r.Range),
				Message:  r.Message,
			})
		}
		if len(d.Suggestions) > 0 {
			pd.Data = map[string]any{"suggestions": d.Suggestions}
		}
		out = append(out, pd)
	}
	return out
}

// location converts a range in any file the server knows.
func (s *Server) location(r lang.Range) protocol.Location {
	return protocol.Location{URI: s.uriOf(r.Filename), Range: s.textOf(r.Filename).lspRange(r)}
}
