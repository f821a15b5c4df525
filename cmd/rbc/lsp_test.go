package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/runbookdev/runbook/cmd/rbc/internal/lsp/lsptest"
	"github.com/runbookdev/runbook/lang"
)

// A runbook with three mistakes, one on a line with characters outside
// ASCII (two UTF-16 units for the emoji), so that the ranges prove the
// conversion from code points to UTF-16: an unknown argument, a field the
// producer's output schema lacks, and a misspelt verb.
const threeErrors = `;; three mistakes
(kyc.open-case :client-name "Zoë 😀 Ltd" :jurisdiction "LU" :bogus 1 :as @case)
(kyc.request-documents
  :case-id @case.caseid
  :document-types ["passport"]
  :contact-email $contact_email)
(kyc.opne-case :client-name "x" :jurisdiction "LU")
`

// lspSession is rbc lsp started as a subprocess in a workspace whose
// runbook.yaml names a copy of the KYC example's verbs.
type lspSession struct {
	client  *lsptest.Client
	root    string
	rbc     string // the rbc binary: this test binary, under that name
	runbook string // path of the runbook file
	doc     protocol.DocumentURI
	verbs   string // path of kyc.yaml
}

func startLSP(t *testing.T, ctx context.Context) *lspSession {
	t.Helper()
	root := t.TempDir()
	s := &lspSession{root: root, rbc: filepath.Join(root, "bin", "rbc"), runbook: filepath.Join(root, "onboard.rbk")}
	// TestMain runs main when the test binary is called rbc.
	require.NoError(t, os.MkdirAll(filepath.Dir(s.rbc), 0o755))
	require.NoError(t, os.Symlink(os.Args[0], s.rbc))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "verbs"), 0o755))
	for _, f := range []string{"kyc.yaml", "screening.yaml"} {
		src, err := os.ReadFile(filepath.Join("../../examples/runbooks/kyc-onboarding/verbs", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "verbs", f), src, 0o644))
	}
	s.verbs = filepath.Join(root, "verbs", "kyc.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(root, "runbook.yaml"), []byte("verbs: [verbs]\n"), 0o644))
	require.NoError(t, os.WriteFile(s.runbook, []byte(threeErrors), 0o644))
	s.doc = uri.File(s.runbook)

	cmd := exec.Command(s.rbc, "lsp")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "RBC_VERBS=") // the workspace file must be what names the catalogue
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// The connection outlives the test's context, for the cleanup's shutdown.
	s.client = lsptest.New(context.Background(), pipes{stdout, stdin})
	t.Cleanup(func() {
		// shutdown, exit, and the process ends by itself with status 0.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, s.client.Call(ctx, protocol.MethodShutdown, nil, nil))
		require.NoError(t, s.client.Notify(ctx, protocol.MethodExit, nil))
		require.NoError(t, cmd.Wait()) // which closes the pipes
	})

	var init protocol.InitializeResult
	require.NoError(t, s.client.Call(ctx, protocol.MethodInitialize, &protocol.InitializeParams{
		RootURI:          uri.File(root),
		WorkspaceFolders: []protocol.WorkspaceFolder{{URI: string(uri.File(root)), Name: "ws"}},
	}, &init))
	require.Equal(t, "rbc", init.ServerInfo.Name)
	require.NoError(t, s.client.Notify(ctx, protocol.MethodInitialized, &protocol.InitializedParams{}))
	return s
}

// pipes joins a subprocess's stdout and stdin into one stream.
type pipes struct {
	r interface{ Read([]byte) (int, error) }
	w interface {
		Write([]byte) (int, error)
		Close() error
	}
}

func (p pipes) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipes) Close() error                { return p.w.Close() }

func (s *lspSession) open(t *testing.T, ctx context.Context, text string) protocol.PublishDiagnosticsParams {
	t.Helper()
	require.NoError(t, s.client.Notify(ctx, protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
		TextDocument: protocol.TextDocumentItem{URI: s.doc, LanguageID: "runbook", Version: 1, Text: text},
	}))
	diags, err := s.client.Diagnostics(ctx, s.doc)
	require.NoError(t, err)
	return diags
}

func (s *lspSession) change(t *testing.T, ctx context.Context, version int32, text string) protocol.PublishDiagnosticsParams {
	t.Helper()
	require.NoError(t, s.client.Notify(ctx, protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: s.doc}, Version: version},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: text}},
	}))
	diags, err := s.client.Diagnostics(ctx, s.doc)
	require.NoError(t, err)
	require.EqualValues(t, version, diags.Version)
	return diags
}

// at is the position of the n-th (0-based) occurrence of sub in text,
// plus shift bytes, with the character counted in UTF-16 units.
func at(t *testing.T, text, sub string, n, shift int) protocol.Position {
	t.Helper()
	off := -1
	for i := 0; i <= n; i++ {
		next := strings.Index(text[off+1:], sub)
		require.GreaterOrEqual(t, next, 0, "%q occurs fewer than %d times", sub, n+1)
		off += 1 + next
	}
	off += shift
	line := strings.Count(text[:off], "\n")
	lineStart := strings.LastIndexByte(text[:off], '\n') + 1
	return protocol.Position{Line: uint32(line), Character: uint32(len(utf16.Encode([]rune(text[lineStart:off]))))}
}

func params(doc protocol.DocumentURI, pos protocol.Position) protocol.TextDocumentPositionParams {
	return protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: doc}, Position: pos}
}

func TestLSPDiagnosticsMatchLint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)

	got := s.open(t, ctx, threeErrors)
	require.Len(t, got.Diagnostics, 3)

	// rbc lint on the same file, read as JSON, with its positions in code
	// points converted to UTF-16 here, independently of the server.
	out, err := exec.Command(s.rbc, "lint", "--verbs", filepath.Join(s.root, "verbs"), "--format", "json", s.runbook).Output()
	require.Error(t, err, "lint exits 1 on errors")
	var want []lang.Diagnostic
	require.NoError(t, json.Unmarshal(out, &want))
	require.Len(t, want, 3)
	lines := strings.Split(threeErrors, "\n")
	utf16Col := func(p lang.Pos) uint32 {
		runes := []rune(lines[p.Line-1])
		return uint32(len(utf16.Encode(runes[:p.Column-1])))
	}
	for i, w := range want {
		g := got.Diagnostics[i]
		require.Equal(t, string(w.Code), g.Code)
		require.Equal(t, w.Text(), g.Message, "the editor shows the message with its suggestions and notes")
		require.Equal(t, protocol.Range{
			Start: protocol.Position{Line: uint32(w.Range.Start.Line - 1), Character: utf16Col(w.Range.Start)},
			End:   protocol.Position{Line: uint32(w.Range.End.Line - 1), Character: utf16Col(w.Range.End)},
		}, g.Range, "%s", w.Code)
	}

	// And the ranges are where the mistakes are, the first after the emoji.
	require.Equal(t, []string{"E021", "E032", "E010"}, []string{got.Diagnostics[0].Code.(string), got.Diagnostics[1].Code.(string), got.Diagnostics[2].Code.(string)})
	require.Equal(t, protocol.Range{Start: at(t, threeErrors, ":bogus", 0, 0), End: at(t, threeErrors, ":bogus", 0, len(":bogus"))}, got.Diagnostics[0].Range)
	require.Equal(t, protocol.Range{Start: at(t, threeErrors, ".caseid", 0, 0), End: at(t, threeErrors, ".caseid", 0, len(".caseid"))}, got.Diagnostics[1].Range)
	require.Equal(t, protocol.Range{Start: at(t, threeErrors, "kyc.opne-case", 0, 0), End: at(t, threeErrors, "kyc.opne-case", 0, len("kyc.opne-case"))}, got.Diagnostics[2].Range)
	var suggested []any
	for _, name := range want[2].Suggestions {
		suggested = append(suggested, name)
	}
	require.Contains(t, suggested, "kyc.open-case")
	require.Equal(t, map[string]any{"suggestions": suggested}, got.Diagnostics[2].Data)

	// Fixing all three clears them.
	fixed := strings.NewReplacer(" :bogus 1", "", "caseid", "case_id", "opne", "open").Replace(threeErrors)
	fixed = strings.Replace(fixed, `"LU")`, `"LU" :after @case)`, 1)
	cleared := s.change(t, ctx, 2, fixed)
	require.NotNil(t, cleared.Diagnostics)
	require.Empty(t, cleared.Diagnostics)
}

// A valid runbook for the requests other than diagnostics.
const kycRunbook = `(kyc.open-case :client-name "Zoë 😀" :jurisdiction "LU" :as @case)
(kyc.request-documents :case-id @case.case_id :document-types ["passport"] :contact-email $email :as @docs)
(kyc.review :case-id @case.case_id :documents @docs.documents :hits [])
`

func TestLSPCompletionOffersTheVerbsArguments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	// A call being typed: it does not parse yet.
	text := kycRunbook + "(kyc.request-documents :case-id @case.case_id :"
	s.open(t, ctx, text)

	var list protocol.CompletionList
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{
		TextDocumentPositionParams: params(s.doc, at(t, text, ":case-id @case.case_id :", 2, len(":case-id @case.case_id :"))),
	}, &list))
	items := sortedLabels(list.Items)
	// Required arguments first (in the schema's order), then the others,
	// then the step options; :case-id is given already.
	require.Equal(t, []string{":document-types", ":contact-email", ":message", ":as", ":after", ":gate", ":on-failure", ":when", ":gate-when", ":approvers", ":timeout-result", ":remind-after", ":parallel"}, items)
	byLabel := map[string]protocol.CompletionItem{}
	for _, it := range list.Items {
		byLabel[it.Label] = it
	}
	require.Equal(t, "array of string, required", byLabel[":document-types"].Detail)
	require.Equal(t, "string (email), required", byLabel[":contact-email"].Detail)
	require.Equal(t, "string", byLabel[":message"].Detail)

	// A reference's fields come from the producer's output schema.
	text2 := kycRunbook + "(kyc.close-case :case-id @case."
	s.change(t, ctx, 2, text2)
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{
		TextDocumentPositionParams: params(s.doc, at(t, text2, "@case.", 2, len("@case."))),
	}, &list))
	require.Equal(t, []string{"case_id", "client-name", "jurisdiction", "status"}, sortedLabels(list.Items))
	require.Equal(t, "@case.case_id", list.Items[0].TextEdit.NewText)
	require.Equal(t, "uuid", list.Items[0].Detail)

	// Verb names after "(".
	text3 := kycRunbook + "(kyc."
	s.change(t, ctx, 3, text3)
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentCompletion, &protocol.CompletionParams{
		TextDocumentPositionParams: params(s.doc, at(t, text3, "(kyc.", 3, len("(kyc."))),
	}, &list))
	require.Contains(t, sortedLabels(list.Items), "kyc.open-case")
	require.Contains(t, sortedLabels(list.Items), "screening.run")
}

// sortedLabels lists completion labels in the order the client shows
// them: by sort text, then label.
func sortedLabels(items []protocol.CompletionItem) []string {
	items = append([]protocol.CompletionItem(nil), items...)
	key := func(it protocol.CompletionItem) string {
		if it.SortText != "" {
			return it.SortText
		}
		return it.Label
	}
	for i := range items {
		for j := i + 1; j < len(items); j++ {
			if key(items[j]) < key(items[i]) {
				items[i], items[j] = items[j], items[i]
			}
		}
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Label
	}
	return out
}

func TestLSPHoverDescribesAVerbAndAReference(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	require.Empty(t, s.open(t, ctx, kycRunbook).Diagnostics)

	var hover protocol.Hover
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "kyc.request-documents", 0, 4)),
	}, &hover))
	require.Equal(t, protocol.Markdown, hover.Contents.Kind)
	for _, want := range []string{
		"**kyc.request-documents** · durable · handler `await.notification`",
		"Ask the client for documents and wait until they are uploaded.",
		"- `:case-id` uuid, required",
		"- `:message` string",
		"- `.documents` array of object, required",
		"- side effects: `human_process`",
		"- determinism: `",
		"- compensation: `kyc.cancel-request`",
		"Defined in kyc.yaml:30",
	} {
		require.Contains(t, hover.Contents.Value, want)
	}
	require.Equal(t, &protocol.Range{Start: at(t, kycRunbook, "kyc.request-documents", 0, 0), End: at(t, kycRunbook, "kyc.request-documents", 0, len("kyc.request-documents"))}, hover.Range)

	// A reference: its producing step and the type of its field.
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "@docs.documents", 0, 2)),
	}, &hover))
	require.Equal(t, "`@docs.documents`: the result of step `docs` (`kyc.request-documents`, line 2)\n\ntype: `array of object`", hover.Contents.Value)

	// An argument keyword: its schema.
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, ":contact-email", 0, 3)),
	}, &hover))
	require.Equal(t, "`:contact-email` string (email), required\n\nargument of `kyc.request-documents`", hover.Contents.Value)

	// An input: the type the compiler inferred from :contact-email.
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "$email", 0, 1)),
	}, &hover))
	require.Equal(t, "`$email`: an input, supplied when the runbook is submitted\n\ntype: `string`", hover.Contents.Value)
}

func TestLSPDefinitionGoesToTheBindingAndTheYAML(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	s.open(t, ctx, kycRunbook)

	// From a verb name to its definition in kyc.yaml.
	var locs []protocol.Location
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "kyc.review", 0, 5)),
	}, &locs))
	require.Len(t, locs, 1)
	require.Equal(t, uri.File(s.verbs), locs[0].URI)
	yaml, err := os.ReadFile(s.verbs)
	require.NoError(t, err)
	require.Equal(t, protocol.Range{Start: at(t, string(yaml), "- name: review", 0, len("- name: ")), End: at(t, string(yaml), "- name: review", 0, len("- name: review"))}, locs[0].Range)

	// From a reference to the :as that binds it.
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "@case.case_id", 1, 3)),
	}, &locs))
	require.Equal(t, []protocol.Location{{URI: s.doc, Range: protocol.Range{Start: at(t, kycRunbook, "@case)", 0, 0), End: at(t, kycRunbook, "@case)", 0, len("@case"))}}}, locs)
}

func TestLSPRenameABinding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	s.open(t, ctx, kycRunbook)

	var prepared protocol.Range
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentPrepareRename, &protocol.PrepareRenameParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "@case.case_id", 0, 2)),
	}, &prepared))
	require.Equal(t, protocol.Range{Start: at(t, kycRunbook, "@case.case_id", 0, 1), End: at(t, kycRunbook, "@case.case_id", 0, len("@case"))}, prepared)

	var edit protocol.WorkspaceEdit
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentRename, &protocol.RenameParams{
		TextDocumentPositionParams: params(s.doc, at(t, kycRunbook, "@case.case_id", 0, 2)),
		NewName:                    "@kase",
	}, &edit))
	renamed := applyEdits(t, kycRunbook, edit.Changes[s.doc])
	require.Equal(t, strings.ReplaceAll(kycRunbook, "@case", "@kase"), renamed)
	// The renamed runbook is still clean.
	require.Empty(t, s.change(t, ctx, 2, renamed).Diagnostics)

	// The references to it, declaration included, are the places renamed.
	var refs []protocol.Location
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentReferences, &protocol.ReferenceParams{
		TextDocumentPositionParams: params(s.doc, at(t, renamed, "@kase", 1, 2)),
		Context:                    protocol.ReferenceContext{IncludeDeclaration: true},
	}, &refs))
	require.Len(t, refs, strings.Count(renamed, "@kase"))
	require.Equal(t, at(t, renamed, "@kase", 0, 0), refs[0].Range.Start)
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentReferences, &protocol.ReferenceParams{
		TextDocumentPositionParams: params(s.doc, at(t, renamed, "@kase", 1, 2)),
	}, &refs))
	require.Len(t, refs, strings.Count(renamed, "@kase")-1)
	require.Equal(t, at(t, renamed, "@kase", 1, 0), refs[0].Range.Start)

	// A name already bound is refused.
	err := s.client.Call(ctx, protocol.MethodTextDocumentRename, &protocol.RenameParams{
		TextDocumentPositionParams: params(s.doc, at(t, renamed, "@kase", 0, 2)),
		NewName:                    "docs",
	}, &edit)
	require.ErrorContains(t, err, "@docs is already bound")
}

// applyEdits applies non-overlapping edits to text, converting their
// UTF-16 positions here rather than trusting the server's conversion.
func applyEdits(t *testing.T, text string, edits []protocol.TextEdit) string {
	t.Helper()
	offset := func(p protocol.Position) int {
		lines := strings.SplitAfter(text, "\n")
		off := 0
		for _, l := range lines[:p.Line] {
			off += len(l)
		}
		units := utf16.Encode([]rune(lines[p.Line]))
		return off + len(string(utf16.Decode(units[:p.Character])))
	}
	type span struct {
		start, end int
		text       string
	}
	var spans []span
	for _, e := range edits {
		spans = append(spans, span{offset(e.Range.Start), offset(e.Range.End), e.NewText})
	}
	for i := range spans { // last first, so earlier offsets stay valid
		for j := i + 1; j < len(spans); j++ {
			if spans[j].start > spans[i].start {
				spans[i], spans[j] = spans[j], spans[i]
			}
		}
	}
	for _, sp := range spans {
		text = text[:sp.start] + sp.text + text[sp.end:]
	}
	return text
}

func TestLSPSymbolsAndFormatting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	messy := "(kyc.open-case   :client-name \"Zoë\"\n :jurisdiction \"LU\" :as @case)\n\n\n(kyc.close-case :case-id @case.case_id)\n"
	s.open(t, ctx, messy)

	var symbols []protocol.DocumentSymbol
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: s.doc},
	}, &symbols))
	require.Len(t, symbols, 2)
	require.Equal(t, []string{"case", "kyc.close-case#2"}, []string{symbols[0].Name, symbols[1].Name})
	require.Equal(t, []string{"kyc.open-case", "kyc.close-case"}, []string{symbols[0].Detail, symbols[1].Detail})

	var edits []protocol.TextEdit
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentFormatting, &protocol.DocumentFormattingParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: s.doc},
	}, &edits))
	// What rbc fmt prints for the same file.
	require.NoError(t, os.WriteFile(s.runbook, []byte(messy), 0o644))
	want, err := exec.Command(s.rbc, "fmt", s.runbook).Output()
	require.NoError(t, err)
	require.NotEqual(t, messy, string(want))
	require.Equal(t, string(want), applyEdits(t, messy, edits))
}

func TestLSPReportsVerbFileDiagnostics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	yamlURI := uri.File(s.verbs)
	src, err := os.ReadFile(s.verbs)
	require.NoError(t, err)
	// The catalogue was clean when loaded: nothing was published for it.
	// Opening the verb file with a typo in an unsaved buffer reports V002
	// at the field, from the buffer, not the file on disk.
	broken := strings.Replace(string(src), "    handler: core.echo", "    handlr: core.echo", 1)
	require.NoError(t, s.client.Notify(ctx, protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
		TextDocument: protocol.TextDocumentItem{URI: yamlURI, LanguageID: "yaml", Version: 1, Text: broken},
	}))
	diags, err := s.client.Diagnostics(ctx, yamlURI)
	require.NoError(t, err)
	codes := map[string]protocol.Range{}
	for _, d := range diags.Diagnostics {
		codes[d.Code.(string)] = d.Range
	}
	require.Contains(t, codes, "V002") // handlr
	require.Contains(t, codes, "V003") // and so no handler
	require.Equal(t, at(t, broken, "handlr", 0, 0), codes["V002"].Start)

	// Fixing it clears them.
	require.NoError(t, s.client.Notify(ctx, protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: yamlURI}, Version: 2},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: string(src)}},
	}))
	diags, err = s.client.Diagnostics(ctx, yamlURI)
	require.NoError(t, err)
	require.Empty(t, diags.Diagnostics)
}

func TestLSPCodeActionsApplyTheDiagnosticsFixes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLSP(t, ctx)
	// One misspelt argument (one close name: one preferred fix) after an
	// emoji, and a redundant :after.
	text := "(kyc.open-case :client-name \"😀\" :jurisdicton \"LU\" :as @case)\n(kyc.close-case :case-id @case.case_id :after @case)\n"
	diags := s.open(t, ctx, text)
	require.NotEmpty(t, diags.Diagnostics)

	var actions []protocol.CodeAction
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: s.doc},
		Range:        protocol.Range{Start: at(t, text, ":jurisdicton", 0, 3), End: at(t, text, ":jurisdicton", 0, 3)},
		Context:      protocol.CodeActionContext{Only: []protocol.CodeActionKind{protocol.QuickFix}},
	}, &actions))
	require.Len(t, actions, 1)
	fix := actions[0]
	require.Equal(t, protocol.QuickFix, fix.Kind)
	require.True(t, fix.IsPreferred)
	require.Equal(t, `replace ":jurisdicton" with ":jurisdiction"`, fix.Title)
	require.Equal(t, "E021", fix.Diagnostics[0].Code)
	require.Equal(t, strings.Replace(text, "jurisdicton", "jurisdiction", 1), applyEdits(t, text, fix.Edit.Changes[s.doc]))

	// The whole file, as rbc fix repairs it.
	require.NoError(t, s.client.Call(ctx, protocol.MethodTextDocumentCodeAction, &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: s.doc},
		Context:      protocol.CodeActionContext{Only: []protocol.CodeActionKind{"source"}},
	}, &actions))
	require.Len(t, actions, 1)
	require.Equal(t, protocol.CodeActionKind("source.fixAll"), actions[0].Kind)
	require.NoError(t, os.WriteFile(s.runbook, []byte(text), 0o644))
	cmd := exec.Command(s.rbc, "fix", "--verbs", filepath.Join(s.root, "verbs"), s.runbook)
	want, err := cmd.Output()
	require.NoError(t, err)
	require.NotEqual(t, text, string(want))
	require.NotContains(t, string(want), ":after", "the redundant :after is fixed too")
	require.Equal(t, string(want), applyEdits(t, text, actions[0].Edit.Changes[s.doc]))
}
