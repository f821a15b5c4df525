package lsp

import (
	"context"

	"go.lsp.dev/protocol"
)

// references lists the references to the binding under the cursor, and
// its :as when the client asks for the declaration too: the places a
// rename would change.
func (s *Server) references(ctx context.Context, p *protocol.ReferenceParams) ([]protocol.Location, error) {
	d, o, i := s.bindingAt(p.TextDocumentPositionParams)
	if i < 0 {
		return nil, nil
	}
	name := refName(o.toks[i].Text)
	decl := -1
	if producer, ok := o.bindings[name]; ok {
		decl = producer.binding
	}
	out := []protocol.Location{}
	for _, ref := range o.refsTo(name) {
		if ref == decl && !p.Context.IncludeDeclaration {
			continue
		}
		out = append(out, protocol.Location{URI: d.uri, Range: d.text.lspRange(o.toks[ref].Range)})
	}
	return out, nil
}
