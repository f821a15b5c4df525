package lang

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a diagnostic stops compilation.
type Severity int

const (
	// SeverityError makes the input unusable; rbc exits 1.
	SeverityError Severity = iota
	// SeverityWarning is reported but does not stop compilation.
	SeverityWarning
)

// String returns "error" or "warning", the words used in every output format.
func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// MarshalText encodes the severity as its word.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes "error" or "warning".
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "error":
		*s = SeverityError
	case "warning":
		*s = SeverityWarning
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Related points at a second place that explains a diagnostic, such as the
// first definition of a binding defined twice.
type Related struct {
	Range   Range  `json:"range"`
	Message string `json:"message"`
}

// Diagnostic is one problem found in a source or verb file.
type Diagnostic struct {
	Severity    Severity  `json:"severity"`
	Code        Code      `json:"code"`
	Message     string    `json:"message"`
	Range       Range     `json:"range"`
	Related     []Related `json:"related,omitempty"`
	Suggestions []string  `json:"suggestions,omitempty"`
	// Notes explain the diagnostic without pointing at a place of their
	// own ("it names a step the runbook already has"); a note with a place
	// is a Related range. Renderers decide how to show them: the text
	// format prints "= note:" lines, one-line outputs use Text.
	Notes []string `json:"notes,omitempty"`
	// Fixes are machine-applicable repairs (fix.go): one per close name of
	// a did-you-mean, or the one obvious edit.
	Fixes []Fix `json:"fixes,omitempty"`
}

// WithRelated adds a related range and returns d, for chaining.
func (d *Diagnostic) WithRelated(r Range, format string, args ...any) *Diagnostic {
	d.Related = append(d.Related, Related{Range: r, Message: fmt.Sprintf(format, args...)})
	return d
}

// WithSuggestions records close names, for a renderer to offer ("did you
// mean ...?") and a client to pick from. The message is left alone.
func (d *Diagnostic) WithSuggestions(names ...string) *Diagnostic {
	d.Suggestions = append(d.Suggestions, names...)
	return d
}

// WithNote adds a note and returns d, for chaining.
func (d *Diagnostic) WithNote(format string, args ...any) *Diagnostic {
	d.Notes = append(d.Notes, fmt.Sprintf(format, args...))
	return d
}

// Headline is the message followed, when there are suggestions, by
// "(did you mean ...?)": the header line of the text format.
func (d *Diagnostic) Headline() string {
	if len(d.Suggestions) == 0 {
		return d.Message
	}
	quoted := make([]string, len(d.Suggestions))
	for i, n := range d.Suggestions {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf("%s (did you mean %s?)", d.Message, joinOr(quoted))
}

// Text is the headline and then each note, joined by "; ": the whole
// diagnostic on one line, for outputs with no place of their own for notes
// (Error, SARIF's message, the language server's).
func (d *Diagnostic) Text() string {
	return strings.Join(append([]string{d.Headline()}, d.Notes...), "; ")
}

// Error renders the diagnostic on one line, without source.
func (d *Diagnostic) Error() string {
	return fmt.Sprintf("%s: %s[%s]: %s", d.Range, d.Severity, d.Code, d.Text())
}

// Diagnostics accumulates diagnostics from every pass. It implements error
// so a pass can return it directly; a nil or empty Diagnostics is no error
// only when checked with HasErrors.
type Diagnostics []*Diagnostic

// Errorf appends an error and returns it so the caller can add related
// ranges or suggestions.
func (ds *Diagnostics) Errorf(code Code, r Range, format string, args ...any) *Diagnostic {
	return ds.add(SeverityError, code, r, format, args...)
}

// Warnf appends a warning and returns it.
func (ds *Diagnostics) Warnf(code Code, r Range, format string, args ...any) *Diagnostic {
	return ds.add(SeverityWarning, code, r, format, args...)
}

func (ds *Diagnostics) add(sev Severity, code Code, r Range, format string, args ...any) *Diagnostic {
	d := &Diagnostic{Severity: sev, Code: code, Range: r, Message: fmt.Sprintf(format, args...)}
	*ds = append(*ds, d)
	return d
}

// Append adds all of other.
func (ds *Diagnostics) Append(other Diagnostics) { *ds = append(*ds, other...) }

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Count returns the number of errors and warnings.
func (ds Diagnostics) Count() (errors, warnings int) {
	for _, d := range ds {
		if d.Severity == SeverityError {
			errors++
		} else {
			warnings++
		}
	}
	return errors, warnings
}

// Sorted returns the diagnostics ordered by file, position, code and message,
// with exact repeats removed. Passes may report the same problem from two
// directions (a cycle seen from each of its steps); the reader sees it once.
func (ds Diagnostics) Sorted() Diagnostics {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, compareDiagnostics)
	return slices.CompactFunc(out, func(a, b *Diagnostic) bool {
		return a.Range == b.Range && a.Code == b.Code && a.Message == b.Message && a.Severity == b.Severity
	})
}

func compareDiagnostics(a, b *Diagnostic) int {
	return cmp.Or(
		cmp.Compare(a.Range.Filename, b.Range.Filename),
		cmp.Compare(a.Range.Start.Byte, b.Range.Start.Byte),
		cmp.Compare(a.Range.End.Byte, b.Range.End.Byte),
		cmp.Compare(a.Code, b.Code),
		cmp.Compare(a.Message, b.Message),
	)
}

// Error lists the diagnostics one per line, without source.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.Error()
	}
	return strings.Join(lines, "\n")
}

// joinOr renders ["a" "b" "c"] as `"a", "b" or "c"`.
func joinOr(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
