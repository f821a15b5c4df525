package lang

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Edit replaces the text in Range with Text. An empty Text deletes; an
// empty Range inserts.
type Edit struct {
	Range Range  `json:"range"`
	Text  string `json:"text"`
}

// Fix is a machine-applicable repair of a diagnostic (docs/design/language.md v1.1):
// edits that, applied together, make the change its message describes.
// A diagnostic offering one fix can be repaired without judgement (rbc
// fix does); one offering several asks someone to choose.
type Fix struct {
	Message string `json:"message"`
	Edits   []Edit `json:"edits"`
}

// WithFix adds a fix and returns d, for chaining.
func (d *Diagnostic) WithFix(message string, edits ...Edit) *Diagnostic {
	d.Fixes = append(d.Fixes, Fix{Message: message, Edits: edits})
	return d
}

// WithReplacements records close names as suggestions (see
// WithSuggestions) and offers, for each, the fix that writes it at r in
// place of old. text renders a name as it is written there (":count" for
// an argument, `"human_confirm"` for a string); nil writes it as it is.
func (d *Diagnostic) WithReplacements(r Range, old string, names []string, text func(string) string) *Diagnostic {
	d.WithSuggestions(names...)
	for _, n := range names {
		if text != nil {
			n = text(n)
		}
		d.WithFix(fmt.Sprintf("replace %s with %s", quoteCode(old), quoteCode(n)), Edit{Range: r, Text: n})
	}
	return d
}

// quoteCode quotes source text for a fix's message, unless it is a string
// literal, which carries its own quotes.
func quoteCode(s string) string {
	if strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(s)
}

// ApplyFixes applies to src, the contents of file filename, the fix of
// every diagnostic that offers exactly one, and returns the result and the
// diagnostics whose fix it applied. A fix is skipped when any of its edits
// is outside src or in another file, or overlaps an edit already taken
// (the earlier diagnostic wins); its diagnostic will be reported again
// when the result is checked, and its fix applied then if it still holds.
func ApplyFixes(filename string, src []byte, ds Diagnostics) ([]byte, Diagnostics) {
	var taken []Edit
	var applied Diagnostics
	for _, d := range ds {
		if len(d.Fixes) != 1 || !fitsFix(filename, src, d.Fixes[0].Edits, taken) {
			continue
		}
		taken = append(taken, d.Fixes[0].Edits...)
		applied = append(applied, d)
	}
	// Apply from the end, so that earlier offsets stay valid.
	slices.SortFunc(taken, func(a, b Edit) int {
		return cmp.Or(cmp.Compare(b.Range.Start.Byte, a.Range.Start.Byte), cmp.Compare(b.Range.End.Byte, a.Range.End.Byte))
	})
	out := slices.Clone(src)
	for _, e := range taken {
		out = slices.Concat(out[:e.Range.Start.Byte], []byte(e.Text), out[e.Range.End.Byte:])
	}
	return out, applied
}

// fitsFix reports whether edits all lie in src and overlap none of taken
// nor each other. Two insertions at one place overlap, since their order
// would be a guess; an edit ending where another starts does not.
func fitsFix(filename string, src []byte, edits, taken []Edit) bool {
	for i, e := range edits {
		r := e.Range
		if r.Filename != filename || r.Start.Byte < 0 || r.Start.Byte > r.End.Byte || r.End.Byte > len(src) {
			return false
		}
		for _, t := range append(slices.Clone(taken), edits[:i]...) {
			if overlaps(r, t.Range) {
				return false
			}
		}
	}
	return true
}

func overlaps(a, b Range) bool {
	if a.Start.Byte == b.Start.Byte {
		return true
	}
	return a.Start.Byte < b.End.Byte && b.Start.Byte < a.End.Byte
}
