package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
)

// workspace is what a checking command loads: the catalogue and every
// source read, for rendering diagnostics.
type workspace struct {
	cat     *registry.Catalogue
	sources lang.Sources
	diags   lang.Diagnostics
	opts    compiler.Options
}

func loadWorkspace(paths []string) (*workspace, error) {
	cat, sources, diags, err := registry.Load(paths, registry.NewHandlers())
	if err != nil {
		return nil, err
	}
	return &workspace{cat: cat, sources: sources, diags: diags}, nil
}

// compileFile parses and compiles one runbook, adding its diagnostics to
// the workspace's.
func (w *workspace) compileFile(path string) (*compiler.Plan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading %q: %w", path, err)
	}
	w.sources[path] = src
	// Compile even after syntax errors: the calls that parsed still get
	// checked, so one run shows every mistake.
	file, diags := lang.Parse(path, src)
	w.diags.Append(diags)
	plan, diags := w.opts.Compile([]*lang.File{file}, w.cat)
	w.diags.Append(diags)
	if w.diags.HasErrors() {
		return nil, nil
	}
	return plan, nil
}

// report writes the workspace's diagnostics in the chosen format and
// returns the exit status they call for.
func (w *workspace) report(out io.Writer, format string) int {
	ds := w.diags.Sorted()
	switch format {
	case "json":
		_ = lang.WriteJSON(out, ds)
	case "sarif":
		_ = lang.WriteSARIF(out, ds, "rbc", version())
	default:
		_ = lang.WriteText(out, ds, w.sources)
		if errs, warns := ds.Count(); errs+warns > 0 {
			fmt.Fprintf(out, "%s, %s\n", plural(errs, "error"), plural(warns, "warning"))
		}
	}
	if ds.HasErrors() {
		return exitErrors
	}
	return exitOK
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func diagFormatFlag() *cli.ChoiceFlag {
	return cli.Choice("text", "text", "json", "sarif")
}

// catalogueCommand is what the commands that read a verb catalogue share:
// a flag set with --verbs, and the loading of the catalogue.
type catalogueCommand struct {
	name  string
	fs    *cli.EnvFlags
	verbs cli.ListFlag
	// status is the exit status when open said the command cannot go on:
	// 0 after -h, which printed the help asked for.
	status int
	// maxFanout is --max-fanout, for the commands that compile.
	maxFanout *int
	// policyFile is --policy, for the commands that judge a runbook by
	// the operator's policy (lint, effects); policy is what it read.
	policyFile *string
	policy     *policy.Policy
}

// judges adds --policy, the operator's policy file (rbd serve --policy),
// to a command that reports what it would decide.
func (c *catalogueCommand) judges() *catalogueCommand {
	c.policyFile = c.fs.String("policy", "", "the policy file rbd serve --policy reads: judge the runbook by it")
	return c
}

// compiles adds the flags of the commands that compile a runbook.
func (c *catalogueCommand) compiles() *catalogueCommand {
	c.maxFanout = c.fs.Int("max-fanout", compiler.DefaultMaxFanout, "the most elements a for-each's list written out may hold")
	return c
}

func newCatalogueCommand(name string, stderr io.Writer) *catalogueCommand {
	c := &catalogueCommand{name: name, fs: newFlagSet(name, stderr)}
	c.fs.Var(&c.verbs, "verbs", "directory or file of verb definitions (repeatable)")
	c.fs.EnvList("verbs", "RBC_VERBS")
	return c
}

// open parses the flags, checks that there are between least and most
// positional arguments (most < 0: no limit; what names them in the error),
// and loads the catalogue. When the command cannot run, it has reported
// why and ok is false.
func (c *catalogueCommand) open(args []string, stderr io.Writer, least, most int, what string) (positional []string, w *workspace, ok bool) {
	c.status = exitCantRun
	positional, err := c.fs.Parse(args)
	if err != nil {
		c.status = parseFailed(err, stderr)
		return nil, nil, false
	}
	if len(positional) < least || (most >= 0 && len(positional) > most) {
		_ = c.fs.UsageErrorf("%s takes %s, got %d", c.name, what, len(positional))
		return nil, nil, false
	}
	paths, err := verbPaths(c.verbs)
	if err == nil {
		w, err = loadWorkspace(paths)
	}
	if err != nil {
		cantRun(stderr, "%v", err)
		return nil, nil, false
	}
	if c.maxFanout != nil {
		if *c.maxFanout < 1 {
			cantRun(stderr, "--max-fanout must be at least 1, got %d", *c.maxFanout)
			return nil, nil, false
		}
		w.opts.MaxFanout = *c.maxFanout
	}
	if c.policyFile != nil && *c.policyFile != "" {
		// Read against the catalogue's tags, as rbd serve reads it: a
		// pattern that matches no tag stops both.
		if c.policy, err = policy.ReadFile(*c.policyFile, policy.KnownTags(w.cat.PolicyTags())); err != nil {
			cantRun(stderr, "%v", err)
			return nil, nil, false
		}
		w.opts.Policy = c.policy
	}
	return positional, w, true
}

func runCompile(args []string, stdout, stderr io.Writer) int {
	c := newCatalogueCommand("compile", stderr).compiles()
	output := c.fs.String("o", "", "write the plan to this file instead of standard output")
	format := diagFormatFlag()
	c.fs.Var(format, "format", "diagnostics format: text, json or sarif")
	files, w, ok := c.open(args, stderr, 1, 1, "one FILE.rbk")
	if !ok {
		return c.status
	}
	plan, err := w.compileFile(files[0])
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	status := w.report(stderr, format.Value)
	if plan == nil {
		return status
	}
	if *output == "" {
		if err := plan.WriteJSON(stdout); err != nil {
			return cantRun(stderr, "error writing the plan: %v", err)
		}
		return status
	}
	if err := writeFileAtomic(*output, plan.WriteJSON); err != nil {
		return cantRun(stderr, "%v", err)
	}
	return status
}

func runLint(args []string, stdout, stderr io.Writer) int {
	c := newCatalogueCommand("lint", stderr).compiles().judges()
	format := diagFormatFlag()
	c.fs.Var(format, "format", "diagnostics format: text, json or sarif")
	quiet := c.fs.Bool("q", false, "print nothing when there are no problems")
	files, w, ok := c.open(args, stderr, 0, -1, "any number of FILE.rbk")
	if !ok {
		return c.status
	}
	w.opts.Lint = true
	// Each file is its own runbook.
	for _, f := range files {
		if _, err := w.compileFile(f); err != nil {
			return cantRun(stderr, "%v", err)
		}
	}
	status := w.report(stdout, format.Value)
	// A clean run says so, so that silence is never mistaken for it
	// (text only: a machine reads the empty list).
	if errs, warns := w.diags.Count(); errs+warns == 0 && format.Value == "text" && !*quiet {
		fmt.Fprintf(stdout, "no problems: %s, %s\n", plural(len(files), "runbook"), plural(len(w.cat.Names()), "verb"))
	}
	return status
}

// compileOne is what the commands that show a plan share: it parses the
// flags, compiles one runbook and reports its diagnostics on stderr. The
// plan is nil when there is nothing to show; status is the exit status
// either way.
func (c *catalogueCommand) compileOne(args []string, stderr io.Writer) (plan *compiler.Plan, status int) {
	files, w, ok := c.open(args, stderr, 1, 1, "one FILE.rbk")
	if !ok {
		return nil, c.status
	}
	plan, err := w.compileFile(files[0])
	if err != nil {
		return nil, cantRun(stderr, "%v", err)
	}
	return plan, w.report(stderr, "text")
}

func runGraph(args []string, stdout, stderr io.Writer) int {
	c := newCatalogueCommand("graph", stderr).compiles()
	format := cli.Choice("dot", "dot", "mermaid")
	c.fs.Var(format, "format", "picture format: dot or mermaid")
	plan, status := c.compileOne(args, stderr)
	if plan == nil {
		return status
	}
	if format.Value == "mermaid" {
		fmt.Fprint(stdout, plan.Mermaid())
	} else {
		fmt.Fprint(stdout, plan.DOT())
	}
	return status
}

func runFmt(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fmt", stderr)
	write := fs.Bool("w", false, "write the result back to each file")
	list := fs.Bool("l", false, "list the files whose layout would change")
	files, err := fs.Parse(args)
	if err != nil {
		return parseFailed(err, stderr)
	}
	if len(files) == 0 {
		_ = fs.UsageErrorf("fmt takes at least one FILE.rbk")
		return exitCantRun
	}
	status := exitOK
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return cantRun(stderr, "error reading %q: %v", path, err)
		}
		file, diags := lang.Parse(path, src)
		if diags.HasErrors() {
			// Formatting a broken file would guess at its meaning.
			_ = lang.WriteText(stderr, diags, lang.Sources{path: src})
			status = exitErrors
			continue
		}
		out := lang.Format(file)
		changed := !bytes.Equal(out, src)
		switch {
		case *list:
			if changed {
				fmt.Fprintln(stdout, path)
			}
			if *write && changed {
				if err := writeFileAtomic(path, writeBytes(out)); err != nil {
					return cantRun(stderr, "%v", err)
				}
			}
		case *write:
			if changed {
				if err := writeFileAtomic(path, writeBytes(out)); err != nil {
					return cantRun(stderr, "%v", err)
				}
			}
		default:
			_, _ = stdout.Write(out)
		}
	}
	return status
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stdout, "rbc %s (plan schema %d)\n", version(), compiler.SchemaVersion)
	return exitOK
}

// version is the version rbc and rbd both report.
func version() string { return cli.Version() }

// writeBytes adapts a byte slice to writeFileAtomic.
func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// writeFileAtomic replaces path with what write writes, through a
// temporary file in the same directory, so a crash never leaves half a
// plan or half a runbook.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("error writing %q: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("error writing %q: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("error writing %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("error writing %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("error writing %q: %w", path, err)
	}
	return nil
}
