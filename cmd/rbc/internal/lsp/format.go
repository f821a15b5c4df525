package lsp

import (
	"context"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// formatting lays the runbook out as `rbc fmt` does, as one edit of the
// whole text. A runbook with syntax errors is left alone, as rbc fmt
// leaves it: formatting it would guess at its meaning, and the errors are
// already in the editor's diagnostics.
func (s *Server) formatting(ctx context.Context, p *protocol.DocumentFormattingParams) ([]protocol.TextEdit, error) {
	d := s.runbook(p.TextDocument.URI)
	if d == nil {
		return nil, nil
	}
	file, diags := lang.Parse(d.name, []byte(d.text.src))
	if diags.HasErrors() {
		return nil, nil
	}
	out := string(lang.Format(file))
	if out == d.text.src {
		return []protocol.TextEdit{}, nil
	}
	return []protocol.TextEdit{{Range: d.text.whole(), NewText: out}}, nil
}
