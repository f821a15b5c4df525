package lsp

import (
	"context"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// definition goes from a reference to the :as that binds it, and from a
// verb name to its definition in the catalogue's YAML.
func (s *Server) definition(ctx context.Context, p *protocol.DefinitionParams) ([]protocol.Location, error) {
	_, o, i := s.tokenAt(p.TextDocumentPositionParams)
	if i < 0 {
		return nil, nil
	}
	switch t := o.toks[i]; t.Kind {
	case lang.TokenRef:
		if producer, ok := o.bindings[refName(t.Text)]; ok {
			return []protocol.Location{s.location(o.toks[producer.binding].Range)}, nil
		}
	case lang.TokenName:
		if def, ok := s.cat.definition(t.Text); ok {
			return []protocol.Location{s.location(def.FieldRange("name"))}, nil
		}
	}
	return nil, nil
}
