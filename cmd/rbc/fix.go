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

// maxFixRounds bounds how often rbc fix checks a file again and applies
// what the new check offers. A round can reveal mistakes the last one hid
// (a verb's arguments are checked only once the verb is known), so one
// round is not enough; fixes only shorten the distance to known names, so
// a handful is.
const maxFixRounds = 8

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

// fixSource applies fixes to src round by round. It returns the fixed
// source, the diagnostics whose fixes it applied (each with the position
// it had in the text of its round), and the diagnostics of the fixed
// source.
func fixSource(opts compiler.Options, cat *registry.Catalogue, path string, src []byte) (fixed []byte, applied, left lang.Diagnostics) {
	_, left = opts.CompileSource(path, src, cat)
	for range maxFixRounds {
		next, done := lang.ApplyFixes(path, src, left)
		if len(done) == 0 {
			break
		}
		applied = append(applied, done...)
		src = next
		_, left = opts.CompileSource(path, src, cat)
	}
	return src, applied, left
}
