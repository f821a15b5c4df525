package verbs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

func TestOutcomeDeclaration(t *testing.T) {
	defs, diags := Parse("v.yaml", []byte(minimal+"  outcome: {type: Draft.Email, status: draft, preview: $.subject}\n"))
	require.Empty(t, diags)
	require.Equal(t, &Outcome{Type: "Draft.Email", Status: rbtype.OutcomeDraft, Preview: "$.subject"}, defs[0].Outcome)
	plain, _ := Parse("v.yaml", []byte(minimal))
	require.NotEqual(t, plain[0].Hash, defs[0].Hash, "the outcome is part of the definition")

	defs, diags = Parse("v.yaml", []byte(minimal+"  outcome: {type: Report}\n"))
	require.Empty(t, diags)
	require.Equal(t, rbtype.OutcomeFinal, defs[0].Outcome.Status, "final unless it says draft")

	for src, want := range map[string]string{
		"  outcome: {type: draft email}\n":                    `V004 outcome.type "draft email" is not a dotted name such as Draft.Email`,
		"  outcome: {type: Draft.Email, status: sent}\n":      `V004 unknown outcome status "sent" (expected draft, final)`,
		"  outcome: {type: Draft.Email, preview: subject}\n":  `V004 outcome.preview "subject" is not a JSONPath (RFC 9535) such as $.subject`,
		"  outcome: {status: draft}\n":                        `V003 missing required field "type" in outcome`,
		"  outcome: {type: Draft.Email, previw: $.subject}\n": `V002 unknown field "previw" in outcome`,
	} {
		_, diags := Parse("v.yaml", []byte(minimal+src))
		require.Len(t, diags, 1, src)
		require.Contains(t, diagLines(diags)[0], want, src)
	}
}

// A preview naming a field with a dash gets the bracket form
// (docs/reference/verbs.md, "JSONPath"), which then reads it.
func TestOutcomePreviewBracketForm(t *testing.T) {
	_, diags := Parse("v.yaml", []byte(minimal+"  outcome: {type: Case.Note, preview: $.case-id}\n"))
	require.Len(t, diags, 1)
	require.Contains(t, diagLines(diags)[0], `V004 outcome.preview "$.case-id" is not a JSONPath`)
	require.Contains(t, diags[0].Notes[0], `bracket form: $['case-id']`)
	require.Equal(t, []string{"$['case-id']"}, diags[0].Suggestions)
	o := &Outcome{Type: "Case.Note", Preview: "$['case-id']"}
	require.Equal(t, "c-1", o.PreviewOf(json.RawMessage(`{"case-id":"c-1"}`)))
}

// A preview is read from the result; a path that matches nothing gives
// none, never an error.
func TestOutcomePreview(t *testing.T) {
	o := &Outcome{Type: "Draft.Email", Preview: "$.subject"}
	require.Equal(t, "Hello", o.PreviewOf(json.RawMessage(`{"subject":"Hello","body":"..."}`)))
	require.Empty(t, o.PreviewOf(json.RawMessage(`{"body":"..."}`)))
	require.Empty(t, o.PreviewOf(json.RawMessage(`[1,2]`)))
	require.Empty(t, o.PreviewOf(json.RawMessage(`not json`)))
	require.Empty(t, (&Outcome{Type: "X"}).PreviewOf(json.RawMessage(`{"a":1}`)))
	require.Equal(t, `{"n":1}`, (&Outcome{Preview: "$.meta"}).PreviewOf(json.RawMessage(`{"meta":{"n":1}}`)))
	require.Equal(t, "b", (&Outcome{Preview: "$.items[1].t"}).PreviewOf(json.RawMessage(`{"items":[{"t":"a"},{"t":"b"}]}`)))
	long := strings.Repeat("é", 300)
	got := o.PreviewOf(json.RawMessage(`{"subject":"` + long + `"}`))
	require.Equal(t, strings.Repeat("é", MaxPreview), got, "200 characters, not bytes")
}
