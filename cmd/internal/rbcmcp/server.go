// Package rbcmcp is rbc's Model Context Protocol server: the compiler's
// commands as tools an agent calls with a runbook's text (lint, fix,
// compile, effects, graph, verbs, fmt), each answering the JSON the
// command gives with --format json, and the language and verb references
// and each verb's contract as resources (docs/reference/mcp.md). It
// reads verb files and nothing else, writes nothing, and calls no daemon.
package rbcmcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/docs"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
)

// Options shape rbc's MCP server.
type Options struct {
	// Verbs are the verb directories or files a tool uses when its
	// arguments name none: rbc mcp's --verbs, else RBC_VERBS.
	Verbs []string
	// Version is reported to clients as the server's.
	Version string
}

// instructions tell an agent how the tools fit together.
const instructions = `These tools check runbooks (.rbk text) against verb definitions, without
running anything. Write a runbook, lint it, apply the fixes the fix tool
makes, read effects to see what it would do to the world and which gate
stands in front of each effect, then submit it with rbd's tools. Read the
resource runbook://reference/language for the language, and
runbook://verbs/{name} for what a verb takes and does.`

// NewServer returns rbc's MCP server.
func NewServer(opts Options) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rbc", Title: "Runbook compiler", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{opts: opts}
	pure := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}
	add := func(name, desc string, h mcp.ToolHandlerFor[sourceArgs, any]) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: desc, Annotations: pure}, h)
	}
	add("lint", "Checks a runbook's text against the verb definitions and answers every diagnostic (errors and warnings, "+
		"each with its code, range, suggestions and machine-applicable fixes), as rbc lint --format json. Runs nothing and "+
		"changes nothing; a runbook with errors is an error result holding its diagnostics.", t.lint)
	add("fix", "Applies to a runbook's text every fix that is the only one offered for its diagnostic, checks again and "+
		"repeats, as rbc fix: answers the fixed text, the diagnostics it fixed and those left. Writes no file: the fixed "+
		"text is in the answer. An error result when errors are left.", t.fix)
	add("compile", "Compiles a runbook's text into its frozen plan (steps, their execution blocks, edges, effects), as rbc "+
		"compile: the plan rbd's submit tool accepts. Runs nothing; a runbook with errors is an error result holding its "+
		"diagnostics.", t.compile)
	add("effects", "Lists what a runbook would do to the world outside it: each step with side effects, its verb, its risk, "+
		"its target and the gate (if any) in front of it, the built-in policy's included, as rbc effects --format json. Runs nothing.", t.effects)
	mcp.AddTool(srv, &mcp.Tool{Name: "graph", Annotations: pure, Description: "Draws a runbook's steps and the edges " +
		"between them, in Graphviz DOT or Mermaid, as rbc graph. Runs nothing."}, t.graph)
	mcp.AddTool(srv, &mcp.Tool{Name: "verbs", Annotations: pure, Description: "Lists the verb definitions (or the one " +
		"named): each verb's arguments and result schemas, handler, side effects, risk, level, gate, retries and timeouts, " +
		"as rbc verbs --format json. Changes nothing."}, t.verbs)
	mcp.AddTool(srv, &mcp.Tool{Name: "fmt", Annotations: pure, Description: "Formats a runbook's text in the one layout " +
		"rbc fmt gives every runbook, and says whether it changed. Writes no file."}, t.format)

	for _, page := range []string{"language", "verbs"} {
		uri := "runbook://reference/" + page
		srv.AddResource(&mcp.Resource{URI: uri, Name: page + "-reference", MIMEType: "text/markdown",
			Description: "The reference of the runbook " + map[string]string{"language": "language (.rbk)", "verbs": "verb files (YAML)"}[page]},
			reference(uri, "reference/"+page+".md"))
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "runbook://verbs/{name}", Name: "verb", MIMEType: "application/json",
		Description: "One verb's contract, as rbc verbs NAME --format json: what it takes, gives and does to the world"}, t.verbResource)
	return srv
}

// reference serves an embedded page of docs/reference.
func reference(uri, path string) mcp.ResourceHandler {
	return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		text, err := fs.ReadFile(docs.Reference, path)
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: string(text)}}}, nil
	}
}

// verbResource is runbook://verbs/{name}.
func (t *tools) verbResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	name, err := url.PathUnescape(strings.TrimPrefix(req.Params.URI, "runbook://verbs/"))
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	cat, _, err := t.catalogue(nil)
	if err != nil {
		return nil, err
	}
	def, ok := cat.Lookup(name)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	text, err := jsonText(def)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: text}}}, nil
}

// errNoVerbs is a tool's answer when nothing says where the verbs are.
var errNoVerbs = errors.New(`no verb definitions: pass "verbs" (directories or files of verb YAML), or start rbc mcp with --verbs DIR or RBC_VERBS`)

// catalogue loads the verbs a call names, or the configured ones.
func (t *tools) catalogue(paths []string) (*registry.Catalogue, lang.Diagnostics, error) {
	if len(paths) == 0 {
		paths = t.opts.Verbs
	}
	if len(paths) == 0 {
		return nil, nil, errNoVerbs
	}
	cat, _, diags, err := registry.Load(paths, registry.NewHandlers())
	if err != nil {
		return nil, nil, fmt.Errorf("the verbs: %w", err)
	}
	return cat, diags, nil
}

// compile checks a source as rbc's commands do: the verb files'
// diagnostics and the source's, sorted; the plan only when there is no
// error.
func (t *tools) compileSource(in sourceArgs) (*compiler.Plan, *registry.Catalogue, lang.Diagnostics, error) {
	cat, diags, err := t.catalogue(in.Verbs)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, more := compiler.CompileSource(in.name(), []byte(in.Source), cat)
	diags.Append(more)
	diags = diags.Sorted()
	if diags.HasErrors() {
		plan = nil
	}
	return plan, cat, diags, nil
}
