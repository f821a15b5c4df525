package rbcmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/verbs"
)

// defaultFilename names a source whose call names none, in diagnostics.
const defaultFilename = "runbook.rbk"

// tools are rbc's tools.
type tools struct {
	opts Options
}

// sourceArgs are what every tool that checks a runbook takes.
type sourceArgs struct {
	Source   string   `json:"source" jsonschema:"the runbook's text (.rbk)"`
	Filename string   `json:"filename,omitempty" jsonschema:"names the text in diagnostics (default runbook.rbk)"`
	Verbs    []string `json:"verbs,omitempty" jsonschema:"directories or files of verb definitions (default: rbc mcp's --verbs, or RBC_VERBS)"`
}

func (in sourceArgs) name() string {
	if in.Filename == "" {
		return defaultFilename
	}
	return in.Filename
}

// diagnosticsResult is the answer of a runbook that did not compile: its
// diagnostics, as an error result.
func diagnosticsResult(diags lang.Diagnostics) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{IsError: true}, map[string]any{"diagnostics": nonNil(diags)}, nil
}

// nonNil is diags, or an empty list: the JSON says [] rather than null,
// as rbc lint --format json does.
func nonNil(diags lang.Diagnostics) lang.Diagnostics {
	if diags == nil {
		return lang.Diagnostics{}
	}
	return diags
}

// lintResult is the lint tool's answer: rbc lint --format json's list.
type lintResult struct {
	Diagnostics lang.Diagnostics `json:"diagnostics"`
}

func (t *tools) lint(_ context.Context, _ *mcp.CallToolRequest, in sourceArgs) (*mcp.CallToolResult, any, error) {
	_, _, diags, err := t.compileSource(in)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{IsError: diags.HasErrors()}, lintResult{Diagnostics: nonNil(diags)}, nil
}

// fixResult is the fix tool's answer.
type fixResult struct {
	// Source is the fixed text.
	Source string `json:"source"`
	// Changed says whether any fix was applied.
	Changed bool `json:"changed"`
	// Applied are the diagnostics whose fixes were applied, each at the
	// place it had in the text of its round.
	Applied lang.Diagnostics `json:"applied"`
	// Diagnostics are the fixed text's, as rbc fix --format json gives
	// them.
	Diagnostics lang.Diagnostics `json:"diagnostics"`
}

func (t *tools) fix(_ context.Context, _ *mcp.CallToolRequest, in sourceArgs) (*mcp.CallToolResult, any, error) {
	cat, verbDiags, err := t.catalogue(in.Verbs)
	if err != nil {
		return nil, nil, err
	}
	fixed, applied, left := compiler.FixSource(in.name(), []byte(in.Source), cat)
	verbDiags.Append(left)
	left = verbDiags.Sorted()
	out := fixResult{Source: string(fixed), Changed: !bytes.Equal(fixed, []byte(in.Source)), Applied: nonNil(applied), Diagnostics: nonNil(left)}
	return &mcp.CallToolResult{IsError: left.HasErrors()}, out, nil
}

// compileResult is the compile tool's answer: the plan as rbc compile
// writes it, and the warnings.
type compileResult struct {
	Plan        json.RawMessage  `json:"plan"`
	Diagnostics lang.Diagnostics `json:"diagnostics"`
}

func (t *tools) compile(_ context.Context, _ *mcp.CallToolRequest, in sourceArgs) (*mcp.CallToolResult, any, error) {
	plan, _, diags, err := t.compileSource(in)
	if err != nil {
		return nil, nil, err
	}
	if plan == nil {
		return diagnosticsResult(diags)
	}
	return nil, compileResult{Plan: plan.JSON(), Diagnostics: nonNil(diags)}, nil
}

// effectsResult is the effects tool's answer: rbc effects --format
// json's list, and the warnings.
type effectsResult struct {
	Effects     []compiler.Effect `json:"effects"`
	Diagnostics lang.Diagnostics  `json:"diagnostics"`
}

func (t *tools) effects(_ context.Context, _ *mcp.CallToolRequest, in sourceArgs) (*mcp.CallToolResult, any, error) {
	plan, _, diags, err := t.compileSource(in)
	if err != nil {
		return nil, nil, err
	}
	if plan == nil {
		return diagnosticsResult(diags)
	}
	// Judged by the built-in policy, as rbc effects without --policy
	// (docs/design/semantics.md section 17): the gates rbd will add.
	effects := plan.WithPolicyGates(plan.PolicyDecisions(policy.Builtin().Tenant("default"))).Effects
	if effects == nil {
		effects = []compiler.Effect{}
	}
	return nil, effectsResult{Effects: effects, Diagnostics: nonNil(diags)}, nil
}

type graphArgs struct {
	sourceArgs
	Format string `json:"format,omitempty" jsonschema:"dot (the default) or mermaid"`
}

// graphResult is the graph tool's answer.
type graphResult struct {
	Format string `json:"format"`
	Graph  string `json:"graph"`
}

func (t *tools) graph(_ context.Context, _ *mcp.CallToolRequest, in graphArgs) (*mcp.CallToolResult, any, error) {
	if in.Format == "" {
		in.Format = "dot"
	}
	if in.Format != "dot" && in.Format != "mermaid" {
		return nil, nil, fmt.Errorf(`"format" must be dot or mermaid, not %q`, in.Format)
	}
	plan, _, diags, err := t.compileSource(in.sourceArgs)
	if err != nil {
		return nil, nil, err
	}
	if plan == nil {
		return diagnosticsResult(diags)
	}
	out := graphResult{Format: in.Format, Graph: plan.DOT()}
	if in.Format == "mermaid" {
		out.Graph = plan.Mermaid()
	}
	return nil, out, nil
}

type verbsArgs struct {
	Name  string   `json:"name,omitempty" jsonschema:"one verb's name (domain.name); empty: every verb"`
	Verbs []string `json:"verbs,omitempty" jsonschema:"directories or files of verb definitions (default: rbc mcp's --verbs, or RBC_VERBS)"`
}

// verbsResult is the verbs tool's answer: the definitions, as rbc verbs
// --format json gives them, and the verb files' diagnostics.
type verbsResult struct {
	Verbs       []*verbs.Definition `json:"verbs"`
	Diagnostics lang.Diagnostics    `json:"diagnostics"`
}

func (t *tools) verbs(_ context.Context, _ *mcp.CallToolRequest, in verbsArgs) (*mcp.CallToolResult, any, error) {
	cat, diags, err := t.catalogue(in.Verbs)
	if err != nil {
		return nil, nil, err
	}
	out := verbsResult{Verbs: cat.Definitions(), Diagnostics: nonNil(diags)}
	if in.Name != "" {
		def, ok := cat.Lookup(in.Name)
		if !ok {
			d := &lang.Diagnostic{Message: fmt.Sprintf("unknown verb %q", in.Name)}
			d.WithSuggestions(cat.Suggest(in.Name)...)
			return nil, nil, fmt.Errorf("%s", d.Headline())
		}
		out.Verbs = []*verbs.Definition{def}
	}
	if out.Verbs == nil {
		out.Verbs = []*verbs.Definition{}
	}
	return &mcp.CallToolResult{IsError: diags.HasErrors()}, out, nil
}

type fmtArgs struct {
	Source   string `json:"source" jsonschema:"the runbook's text (.rbk)"`
	Filename string `json:"filename,omitempty" jsonschema:"names the text in diagnostics (default runbook.rbk)"`
}

// fmtResult is the fmt tool's answer.
type fmtResult struct {
	Source  string `json:"source"`
	Changed bool   `json:"changed"`
}

func (t *tools) format(_ context.Context, _ *mcp.CallToolRequest, in fmtArgs) (*mcp.CallToolResult, any, error) {
	name := in.Filename
	if name == "" {
		name = defaultFilename
	}
	file, diags := lang.Parse(name, []byte(in.Source))
	if diags.HasErrors() {
		// Formatting a broken text would guess at its meaning.
		return diagnosticsResult(diags.Sorted())
	}
	out := lang.Format(file)
	return nil, fmtResult{Source: string(out), Changed: string(out) != in.Source}, nil
}

// jsonText is v as indented JSON, as rbc prints it.
func jsonText(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}
