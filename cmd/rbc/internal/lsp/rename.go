package lsp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// bindingName is what a binding's name must be (docs/design/language.md v1.2): an
// identifier, or a name that starts with a digit and holds a letter.
var bindingName = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*|[0-9][A-Za-z0-9_-]*[A-Za-z][A-Za-z0-9_-]*)$`)

var errNotABinding = errors.New("only a binding (@name) can be renamed")

// prepareRename says whether the cursor is on a binding, and which part
// of the reference a rename replaces: the name, without '@' or path.
func (s *Server) prepareRename(ctx context.Context, p *protocol.PrepareRenameParams) (*protocol.Range, error) {
	d, o, i := s.bindingAt(p.TextDocumentPositionParams)
	if i < 0 {
		return nil, errNotABinding
	}
	r := d.text.lspRange(refNameRange(o.toks[i]))
	return &r, nil
}

// rename renames a binding: its :as and every reference to it.
func (s *Server) rename(ctx context.Context, p *protocol.RenameParams) (*protocol.WorkspaceEdit, error) {
	d, o, i := s.bindingAt(p.TextDocumentPositionParams)
	if i < 0 {
		return nil, errNotABinding
	}
	old := refName(o.toks[i].Text)
	name := strings.TrimPrefix(p.NewName, "@")
	if !bindingName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a binding name: letters, digits, '_' or '-', holding a letter, not starting with '-'", name)
	}
	if name == "failure" {
		return nil, errors.New("@failure is reserved: it names the failure inside (on-failure ...)")
	}
	if _, taken := o.bindings[name]; taken && name != old {
		return nil, fmt.Errorf("@%s is already bound", name)
	}
	var edits []protocol.TextEdit
	for _, ref := range o.refsTo(old) {
		edits = append(edits, protocol.TextEdit{Range: d.text.lspRange(refNameRange(o.toks[ref])), NewText: name})
	}
	return &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{d.uri: edits}}, nil
}

// bindingAt finds the reference token at a position, or -1.
func (s *Server) bindingAt(p protocol.TextDocumentPositionParams) (*document, *outline, int) {
	d, o, i := s.tokenAt(p)
	if i < 0 || o.toks[i].Kind != lang.TokenRef {
		return d, o, -1
	}
	return d, o, i
}
