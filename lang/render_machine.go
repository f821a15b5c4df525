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
			WithMessage(sarif.NewTextMessage(d.Message))
		result.AddLocation(sarifLocation(d.Range))
		for _, rel := range d.Related {
			loc := sarifLocation(rel.Range)
			loc.Message = sarif.NewTextMessage(rel.Message)
			result.AddRelatedLocation(loc)
		}
	}
	report.AddRun(run)
	return report.PrettyWrite(w)
}

func sarifLocation(r Range) *sarif.Location {
	region := sarif.NewRegion().
		WithStartLine(r.Start.Line).WithStartColumn(r.Start.Column).
		WithEndLine(r.End.Line).WithEndColumn(r.End.Column).
		WithByteOffset(r.Start.Byte).WithByteLength(r.Len())
	return sarif.NewLocationWithPhysicalLocation(
		sarif.NewPhysicalLocation().
			WithArtifactLocation(sarif.NewSimpleArtifactLocation(r.Filename)).
			WithRegion(region))
}
