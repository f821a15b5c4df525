package main

// commandUsage is each command's help, as `rbc COMMAND -h` prints it above
// its flags; its first line is the synopsis a mistake prints.
var commandUsage = map[string]string{
	"compile": `Usage: rbc compile --verbs DIR FILE.rbk [-o plan.json] [--format text|json|sarif]

Compiles a runbook against the verb catalogue into its frozen plan (JSON),
on standard output or in the file -o names. Diagnostics go to standard
error; with errors there is no plan.
`,
	"lint": `Usage: rbc lint --verbs DIR [FILE.rbk...] [--format text|json|sarif] [-q]

Checks the verb catalogue and each runbook, and reports every diagnostic
at once: text with carets for people, JSON for agents, SARIF for code
scanning. With no FILE it checks the catalogue alone.
`,
	"fmt": `Usage: rbc fmt [-w] [-l] FILE.rbk...

Lays runbooks out the canonical way, comments kept: to standard output,
back into each file (-w), or only the names of the files it would change
(-l). A file with syntax errors is left as it is.
`,
	"fix": `Usage: rbc fix --verbs DIR [-w] FILE.rbk... [--format text|json|sarif]

Applies every fix that is the only one offered for its diagnostic, checks
again, and repeats while that offers more. The fixed source goes to
standard output, or back into each file with -w; what was fixed and what
is left go to standard error.
`,
	"graph": `Usage: rbc graph --verbs DIR FILE.rbk [--format dot|mermaid]

Draws the runbook's steps and their dependencies, for Graphviz (dot) or
Mermaid.
`,
	"effects": `Usage: rbc effects --verbs DIR FILE.rbk [--format text|json]

Lists what the runbook can do to the world outside it, and the gate in
front of each effect: its own, one upstream, or none.
`,
	"verbs": `Usage: rbc verbs --verbs DIR [NAME] [--format text|json]

Lists the verb catalogue, or shows one verb: its arguments, its result and
its frozen execution block.
`,
	"lsp": `Usage: rbc lsp [--verbs DIR]

A language server on standard input and output, for any editor: these
diagnostics, completion, hover, definition and rename. Its catalogue is
--verbs, else the workspace's runbook.yaml, else RBC_VERBS.
`,
	"mcp": `Usage: rbc mcp [--verbs DIR]

The Model Context Protocol on standard input and output, for an agent:
the tools lint, fix, compile, effects, graph, verbs and fmt, each taking
a runbook's text, and the language and verb references as resources. A
call may name its own verb directories; without, --verbs, else RBC_VERBS.
`,
	"version": `Usage: rbc version

Prints rbc's version and the plan schema it writes.
`,
}
