package lsp

import (
	"context"
	"net/url"
	"path/filepath"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
)

// document is one file the client has open.
type document struct {
	uri protocol.DocumentURI
	// name is the file name diagnostics carry: the path of a file, or the
	// URI of a buffer that is not one (an unsaved, untitled runbook).
	name    string
	version int32
	text    *text
	// The analysis of the current version, for a runbook: what Parse
	// made of it, and every diagnostic rbc lint would print.
	file  *lang.File
	diags lang.Diagnostics
	// inputs are the plan's inputs with their inferred types, by name;
	// nil when the runbook does not compile.
	inputs map[string]compiler.Input
	// outline is the current version's calls and bindings, built on the
	// first request that needs them.
	outline *outline
}

// LanguageID is the language identifier of runbooks, as editors/vscode
// declares it; a document in it is a runbook whatever its name.
const LanguageID = "runbook"

// isRunbook reports whether the document is a runbook source, by its
// extension or the language the client says it is in.
func (d *document) isRunbook(languageID protocol.LanguageIdentifier) bool {
	return filepath.Ext(d.name) == ".rbk" || languageID == LanguageID
}

// tokens returns the document's outline, building it if need be.
func (d *document) tokens() *outline {
	if d.outline == nil {
		d.outline = newOutline(lang.Lex(d.name, []byte(d.text.src)))
	}
	return d.outline
}

// fileName is the path of a file: URI.
func fileName(u protocol.DocumentURI) (string, bool) {
	parsed, err := url.Parse(string(u))
	if err != nil || parsed.Scheme != uri.FileScheme {
		return "", false
	}
	return u.Filename(), true
}

// nameOf is the name diagnostics of a document at u carry.
func nameOf(u protocol.DocumentURI) string {
	if name, ok := fileName(u); ok {
		return name
	}
	return string(u)
}

// uriOf is the URI of a file name diagnostics carry: an open document's
// own URI (the client's spelling), else a file: URI.
func (s *Server) uriOf(name string) protocol.DocumentURI {
	for _, d := range s.docs {
		if d.name == name {
			return d.uri
		}
	}
	return uri.File(name)
}

// textOf is the text of a file diagnostics point into: an open document,
// or a verb file as the catalogue read it.
func (s *Server) textOf(name string) *text {
	for _, d := range s.docs {
		if d.name == name {
			return d.text
		}
	}
	return s.cat.text(name)
}

func (s *Server) didOpen(ctx context.Context, p *protocol.DidOpenTextDocumentParams) error {
	item := p.TextDocument
	d := &document{uri: item.URI, name: nameOf(item.URI), version: item.Version, text: newText(item.Text)}
	s.docs[item.URI] = d
	switch {
	case s.cat.holds(d.name):
		s.reloadCatalogue(ctx)
	case d.isRunbook(item.LanguageID):
		s.check(ctx, d)
	}
	return nil
}

func (s *Server) didChange(ctx context.Context, p *protocol.DidChangeTextDocumentParams) error {
	d, ok := s.docs[p.TextDocument.URI]
	if !ok || len(p.ContentChanges) == 0 {
		return nil
	}
	// The server asked for whole texts, so the last change is the text.
	d.text = newText(p.ContentChanges[len(p.ContentChanges)-1].Text)
	d.version = p.TextDocument.Version
	d.outline = nil
	switch {
	case s.cat.holds(d.name):
		s.reloadCatalogue(ctx)
	case d.file != nil:
		s.check(ctx, d)
	}
	return nil
}

// didSave reloads the catalogue when a file under a catalogue path is
// saved, which also picks up a verb file that was not open.
func (s *Server) didSave(ctx context.Context, p *protocol.DidSaveTextDocumentParams) error {
	if s.cat.holds(nameOf(p.TextDocument.URI)) {
		s.reloadCatalogue(ctx)
	}
	return nil
}

func (s *Server) didClose(ctx context.Context, p *protocol.DidCloseTextDocumentParams) error {
	d, ok := s.docs[p.TextDocument.URI]
	if !ok {
		return nil
	}
	delete(s.docs, p.TextDocument.URI)
	switch {
	case s.cat.holds(d.name):
		// Back to the file on disk: the unsaved text is gone.
		s.reloadCatalogue(ctx)
	case d.file != nil:
		// A closed runbook's problems leave the editor's list with it.
		s.publish(ctx, d.uri, d.version, nil)
	}
	return nil
}

// runbook finds an open runbook, or nil.
func (s *Server) runbook(u protocol.DocumentURI) *document {
	if d, ok := s.docs[u]; ok && d.file != nil {
		return d
	}
	return nil
}

// tokenAt finds the open runbook of a request and the token at its
// position: i is -1 when there is no such runbook or no token there.
func (s *Server) tokenAt(p protocol.TextDocumentPositionParams) (d *document, o *outline, i int) {
	if d = s.runbook(p.TextDocument.URI); d == nil {
		return nil, nil, -1
	}
	o = d.tokens()
	return d, o, o.at(d.text.offset(p.Position))
}
