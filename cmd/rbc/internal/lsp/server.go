package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/registry"
)

// Options says where the verb catalogue is when the workspace does not:
// the catalogue paths given as --verbs, which win over everything, and
// those of RBC_VERBS, which the workspace's WorkspaceFile overrides.
type Options struct {
	Verbs    []string
	EnvVerbs []string
	// Version is reported to the client as the server's version.
	Version string
	// FixAll is `rbc fix`: it applies, round after round, every fix that
	// is the only one offered for its diagnostic, and returns the fixed
	// source. The server offers it as a source.fixAll code action; nil
	// offers none.
	FixAll func(cat *registry.Catalogue, name string, src []byte) []byte
	// Log receives what the server has to say outside the protocol: the
	// stack of a request that panicked. Editors show a server's standard
	// error in their logs; nil means os.Stderr.
	Log io.Writer
}

// Server is one language server session: the documents the client has
// open and the catalogue they are checked against.
type Server struct {
	conn     jsonrpc2.Conn
	opts     Options
	docs     map[protocol.DocumentURI]*document
	cat      *catalogue
	root     string // the workspace's directory, "" without one
	shutdown bool   // the client asked for shutdown
	exited   bool   // and then said exit
	// done is closed on exit. Serve waits for it as well as for the
	// connection: closing standard input does not wake a blocked read.
	done    chan struct{}
	methods map[string]jsonrpc2.Handler
}

// Serve runs a server on rw, a stream of LSP messages with their
// Content-Length headers, until the client says exit or closes the
// stream. It returns nil after a shutdown and exit, as the protocol asks.
func Serve(ctx context.Context, rw io.ReadWriteCloser, opts Options) error {
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(rw))
	s := &Server{conn: conn, opts: opts, docs: map[protocol.DocumentURI]*document{}, cat: &catalogue{}, done: make(chan struct{})}
	s.methods = s.methodTable()
	conn.Go(ctx, s.handle)
	select {
	case <-conn.Done():
	case <-s.done:
		_ = conn.Close()
	}
	switch {
	case s.exited && s.shutdown:
		return nil
	case s.exited:
		return errors.New("the client said exit without shutdown")
	}
	if err := conn.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return errors.New("the client closed the connection without exit")
}

// handle dispatches one message. A method the server does not know is
// answered with MethodNotFound when it is a request and ignored when it is
// a notification ($/cancelRequest, $/setTrace and the like).
func (s *Server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) (err error) {
	defer func() {
		// A bug met by one request must not end the session (and with it
		// the diagnostics of every open file): answer it with an error,
		// and leave the stack where the editor logs the server's stderr.
		if p := recover(); p != nil {
			fmt.Fprintf(s.log(), "rbc lsp: %s: panic: %v\n%s", req.Method(), p, debug.Stack())
			err = reply(ctx, nil, fmt.Errorf("%w: rbc lsp: %s: %v", jsonrpc2.ErrInternal, req.Method(), p))
		}
	}()
	if h, ok := s.methods[req.Method()]; ok {
		return h(ctx, reply, req)
	}
	if _, isCall := req.(*jsonrpc2.Call); isCall {
		return jsonrpc2.MethodNotFoundHandler(ctx, reply, req)
	}
	return reply(ctx, nil, nil)
}

func (s *Server) log() io.Writer {
	if s.opts.Log != nil {
		return s.opts.Log
	}
	return os.Stderr
}

// methodTable is every method the server answers.
func (s *Server) methodTable() map[string]jsonrpc2.Handler {
	return map[string]jsonrpc2.Handler{
		protocol.MethodInitialize:                     answer(s.initialize),
		protocol.MethodInitialized:                    notified(s.initialized),
		protocol.MethodShutdown:                       answer(s.shutdownRequest),
		protocol.MethodExit:                           notified(s.exit),
		protocol.MethodTextDocumentDidOpen:            notified(s.didOpen),
		protocol.MethodTextDocumentDidChange:          notified(s.didChange),
		protocol.MethodTextDocumentDidSave:            notified(s.didSave),
		protocol.MethodTextDocumentDidClose:           notified(s.didClose),
		protocol.MethodWorkspaceDidChangeWatchedFiles: notified(s.didChangeWatchedFiles),
		protocol.MethodTextDocumentCompletion:         answer(s.completion),
		protocol.MethodTextDocumentHover:              answer(s.hover),
		protocol.MethodTextDocumentReferences:         answer(s.references),
		protocol.MethodTextDocumentDefinition:         answer(s.definition),
		protocol.MethodTextDocumentDocumentSymbol:     answer(s.documentSymbols),
		protocol.MethodTextDocumentCodeAction:         answer(s.codeAction),
		protocol.MethodTextDocumentFormatting:         answer(s.formatting),
		protocol.MethodTextDocumentPrepareRename:      answer(s.prepareRename),
		protocol.MethodTextDocumentRename:             answer(s.rename),
	}
}

// answer makes a handler of fn: it decodes the request's params, runs fn
// and replies with its result. fn's error goes to the client; only a
// failure to write the reply ends the connection.
func answer[P, R any](fn func(context.Context, *P) (R, error)) jsonrpc2.Handler {
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		var params P
		if raw := req.Params(); len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &params); err != nil {
				return reply(ctx, nil, fmt.Errorf("%w: %v", jsonrpc2.ErrInvalidParams, err))
			}
		}
		result, err := fn(ctx, &params)
		return reply(ctx, result, err)
	}
}

// notified is answer for notifications, which have no result.
func notified[P any](fn func(context.Context, *P) error) jsonrpc2.Handler {
	return answer(func(ctx context.Context, p *P) (any, error) { return nil, fn(ctx, p) })
}

// initialized reads the catalogue. It is not read in initialize: reading
// it publishes the verb files' diagnostics, and the protocol lets a server
// send those only once initialize has been answered.
func (s *Server) initialized(ctx context.Context, _ *protocol.InitializedParams) error {
	s.loadCatalogue(ctx, s.root)
	return nil
}

func (s *Server) shutdownRequest(context.Context, *struct{}) (any, error) {
	s.shutdown = true
	return nil, nil
}

// exit ends Serve; it returns an error unless shutdown came first.
func (s *Server) exit(context.Context, *struct{}) error {
	if !s.exited {
		s.exited = true
		close(s.done)
	}
	return nil
}

func (s *Server) initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	s.root = workspaceRoot(p)
	return &protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: &protocol.TextDocumentSyncOptions{
				OpenClose: true,
				// Whole texts: a 1,000-step runbook is 70 kB, and
				// re-analysing it costs more than receiving it.
				Change: protocol.TextDocumentSyncKindFull,
				Save:   &protocol.SaveOptions{},
			},
			CompletionProvider:         &protocol.CompletionOptions{TriggerCharacters: []string{"(", ":", "@", "$", "."}},
			HoverProvider:              true,
			DefinitionProvider:         true,
			ReferencesProvider:         true,
			DocumentSymbolProvider:     true,
			DocumentFormattingProvider: true,
			CodeActionProvider: &protocol.CodeActionOptions{
				CodeActionKinds: []protocol.CodeActionKind{protocol.QuickFix, sourceFixAll},
			},
			RenameProvider: &protocol.RenameOptions{PrepareProvider: true},
		},
		ServerInfo: &protocol.ServerInfo{Name: "rbc", Version: s.opts.Version},
	}, nil
}

// workspaceRoot is the directory of the client's first workspace folder,
// or its root, or "" when it opened a single file.
func workspaceRoot(p *protocol.InitializeParams) string {
	for _, f := range p.WorkspaceFolders {
		if name, ok := fileName(protocol.DocumentURI(f.URI)); ok {
			return name
		}
	}
	if name, ok := fileName(p.RootURI); ok {
		return name
	}
	return p.RootPath
}

// showMessage tells the person at the editor something they must act on,
// such as a catalogue that could not be read.
func (s *Server) showMessage(ctx context.Context, typ protocol.MessageType, format string, args ...any) {
	_ = s.conn.Notify(ctx, protocol.MethodWindowShowMessage, &protocol.ShowMessageParams{Type: typ, Message: fmt.Sprintf(format, args...)})
}
