package lsp

import (
	"context"

	"go.lsp.dev/protocol"
)

// documentSymbols lists the runbook's steps, each named by its step key
// (its binding, or <verb>#<n>) with its verb as detail, in file order.
func (s *Server) documentSymbols(ctx context.Context, p *protocol.DocumentSymbolParams) ([]protocol.DocumentSymbol, error) {
	d := s.runbook(p.TextDocument.URI)
	if d == nil {
		return nil, nil
	}
	o := d.tokens()
	out := make([]protocol.DocumentSymbol, 0, len(o.calls))
	for _, c := range o.calls {
		sel := o.toks[c.open].Range
		switch {
		case c.binding >= 0:
			sel = o.toks[c.binding].Range
		case c.verb >= 0:
			sel = o.toks[c.verb].Range
		}
		out = append(out, protocol.DocumentSymbol{
			Name:           o.key(c),
			Detail:         o.verbName(c),
			Kind:           protocol.SymbolKindFunction,
			Range:          d.text.lspRange(o.span(c)),
			SelectionRange: d.text.lspRange(sel),
		})
	}
	return out, nil
}
