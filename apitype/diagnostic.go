package apitype

import (
	"fmt"
	"strconv"
	"strings"
)

// Diagnostic is one problem in a source or a plan, as `rbc lint --format
// json` and the daemon's 422 answers give it (docs/reference/language.md,
// "Diagnostics"): the language's diagnostic (package lang) in its JSON
// form, so that a client decodes it without linking the language.
type Diagnostic struct {
	Severity string    `json:"severity"`
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Range    Range     `json:"range"`
	Related  []Related `json:"related,omitempty"`
	// Suggestions are the close names of a did-you-mean.
	Suggestions []string `json:"suggestions,omitempty"`
	// Notes explain the diagnostic without a place of their own.
	Notes []string `json:"notes,omitempty"`
	// Fixes are machine-applicable repairs: edits that, applied together,
	// make the change the fix's message describes.
	Fixes []Fix `json:"fixes,omitempty"`
}

// Headline is the message and, when there are suggestions, "(did you
// mean ...?)", as rbc prints a diagnostic's first line.
func (d Diagnostic) Headline() string {
	if len(d.Suggestions) == 0 {
		return d.Message
	}
	quoted := make([]string, len(d.Suggestions))
	for i, n := range d.Suggestions {
		quoted[i] = strconv.Quote(n)
	}
	last := len(quoted) - 1
	names := quoted[last]
	if last > 0 {
		names = strings.Join(quoted[:last], ", ") + " or " + names
	}
	return d.Message + " (did you mean " + names + "?)"
}

// Text is the headline and each note, joined by "; ": the whole
// diagnostic on one line.
func (d Diagnostic) Text() string {
	return strings.Join(append([]string{d.Headline()}, d.Notes...), "; ")
}

// String renders the diagnostic as file:line:column: severity[code]: text.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s[%s]: %s", d.Range.File, d.Range.Start.Line, d.Range.Start.Column, d.Severity, d.Code, d.Text())
}

// Range is a span of a source: where it starts and where it ends.
type Range struct {
	File  string `json:"file"`
	Start Pos    `json:"start"`
	End   Pos    `json:"end"`
}

// Pos is a place in a source: its line and column (from 1) and its byte
// offset (from 0), which is what edits are applied at.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// Related is another place that explains a diagnostic.
type Related struct {
	Range   Range  `json:"range"`
	Message string `json:"message"`
}

// Fix is a machine-applicable repair of a diagnostic.
type Fix struct {
	Message string `json:"message"`
	Edits   []Edit `json:"edits"`
}

// Edit replaces a range of the source with text.
type Edit struct {
	Range Range  `json:"range"`
	Text  string `json:"text"`
}
