package lang

import (
	"encoding/json"
	"io"

	"github.com/owenrumney/go-sarif/v2/sarif"
)

// WriteJSON renders diagnostics as one JSON array, [] when there are none.
func WriteJSON(w io.Writer, ds Diagnostics) error {
	if ds == nil {
		ds = Diagnostics{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ds)
}

// WriteSARIF renders diagnostics as a SARIF 2.1.0 log for code-scanning
// tools. Every code is listed as a rule, so a viewer can explain codes that
// did not occur in this run too.
func WriteSARIF(w io.Writer, ds Diagnostics, toolName, version string) error {
	report, err := sarif.New(sarif.Version210)
	if err != nil {
		return err
	}
	run := sarif.NewRunWithInformationURI(toolName, "https://github.com/runbookdev/runbook")
	run.Tool.Driver.Version = &version
	// Our columns count code points; SARIF's default is UTF-16 units.
	run.ColumnKind = "unicodeCodePoints"
	for _, info := range Codes {
		run.AddRule(string(info.Code)).WithDescription(info.Summary)
	}
	for _, d := range ds {
		result := run.CreateResultForRule(string(d.Code)).
			WithLevel(d.Severity.String()).
			WithMessage(sarif.NewTextMessage(d.Text()))
		result.AddLocation(sarifLocation(d.Range))
		for _, rel := range d.Related {
			loc := sarifLocation(rel.Range)
			loc.Message = sarif.NewTextMessage(rel.Message)
			result.AddRelatedLocation(loc)
		}
		for _, f := range d.Fixes {
			result.AddFix(sarifFix(f))
		}
	}
	report.AddRun(run)
	return report.PrettyWrite(w)
}

func sarifLocation(r Range) *sarif.Location {
	return sarif.NewLocationWithPhysicalLocation(
		sarif.NewPhysicalLocation().
			WithArtifactLocation(sarif.NewSimpleArtifactLocation(r.Filename)).
			WithRegion(sarifRegion(r)))
}

func sarifRegion(r Range) *sarif.Region {
	return sarif.NewRegion().
		WithStartLine(r.Start.Line).WithStartColumn(r.Start.Column).
		WithEndLine(r.End.Line).WithEndColumn(r.End.Column).
		WithByteOffset(r.Start.Byte).WithByteLength(r.Len())
}

// sarifFix renders a fix as SARIF's: one artifact change per file, each
// edit a replacement of its region (its byte offset and length, which
// SARIF prefers for replacements, and its lines and columns).
func sarifFix(f Fix) *sarif.Fix {
	fix := sarif.NewFix().WithDescriptionText(f.Message)
	changes := map[string]*sarif.ArtifactChange{}
	for _, e := range f.Edits {
		change, ok := changes[e.Range.Filename]
		if !ok {
			change = sarif.NewArtifactChange(sarif.NewSimpleArtifactLocation(e.Range.Filename))
			changes[e.Range.Filename] = change
			fix.AddArtifactChanges(change)
		}
		change.WithReplacement(sarif.NewReplacement(sarifRegion(e.Range)).
			WithInsertedContent(sarif.NewArtifactContent().WithText(e.Text)))
	}
	return fix
}
