package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
)

// runFix applies every fix that is the only one offered for its diagnostic
// (docs/design/language.md v1.1), checks the result, and repeats while that offers
// more. The fixed source goes to standard output, or back to the file with
// -w. What was fixed, and the diagnostics left, go to standard error.
func runFix(args []string, stdout, stderr io.Writer) int {
	c := newCatalogueCommand("fix", stderr).compiles()
	write := c.fs.Bool("w", false, "write the fixed source back to each file")
	format := diagFormatFlag()
	c.fs.Var(format, "format", "format of the diagnostics left after fixing: text, json or sarif")
	files, w, ok := c.open(args, stderr, 1, -1, "at least one FILE.rbk")
	if !ok {
		return c.status
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return cantRun(stderr, "error reading %q: %v", path, err)
		}
		fixed, applied, left := fixSource(w.opts, w.cat, path, src)
		if format.Value == "text" {
			for _, d := range applied {
				fmt.Fprintf(stderr, "%s: fixed[%s]: %s\n", d.Range, d.Code, d.Fixes[0].Message)
			}
		}
		w.sources[path] = fixed
		w.diags.Append(left)
		switch {
		case !*write:
			_, _ = stdout.Write(fixed)
		case !bytes.Equal(fixed, src):
			if err := writeFileAtomic(path, writeBytes(fixed)); err != nil {
				return cantRun(stderr, "%v", err)
			}
		}
	}
	return w.report(stderr, format.Value)
}

// fixSource is compiler.FixSource with rbc's options, in the argument
// order rbc's servers take it.
func fixSource(opts compiler.Options, cat *registry.Catalogue, path string, src []byte) (fixed []byte, applied, left lang.Diagnostics) {
	return opts.FixSource(path, src, cat)
}
