package compiler

import (
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
)

// maxFixRounds bounds how often FixSource checks a source again and
// applies what the new check offers. A round can reveal mistakes the last
// one hid (a verb's arguments are checked only once the verb is known),
// so one round is not enough; fixes only shorten the distance to known
// names, so a handful is.
const maxFixRounds = 8

// FixSource applies to src every fix that is the only one offered for its
// diagnostic (docs/design/language.md, v1.1), checks the result, and repeats while
// that offers more: rbc fix, its language server's "fix all" and its MCP
// fix tool. It returns the fixed source, the diagnostics whose fixes it
// applied (each with the position it had in the text of its round), and
// the diagnostics of the fixed source.
func FixSource(path string, src []byte, cat *registry.Catalogue) (fixed []byte, applied, left lang.Diagnostics) {
	return Options{}.FixSource(path, src, cat)
}

// FixSource is the package's FixSource, checking with these options (a
// --max-fanout).
func (o Options) FixSource(path string, src []byte, cat *registry.Catalogue) (fixed []byte, applied, left lang.Diagnostics) {
	_, left = o.CompileSource(path, src, cat)
	for range maxFixRounds {
		next, done := lang.ApplyFixes(path, src, left)
		if len(done) == 0 {
			break
		}
		applied = append(applied, done...)
		src = next
		_, left = o.CompileSource(path, src, cat)
	}
	return src, applied, left
}
