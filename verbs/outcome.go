package verbs

import (
	"encoding/json"
	"regexp"
	"unicode/utf8"

	"github.com/theory/jsonpath"
	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// Outcome is what a verb's successful step produces, as a person would
// name it (docs/design/semantics.md section 13): a type such as Draft.Email, whether
// it is a draft or final, and where in the result a preview is read.
type Outcome struct {
	Type   string               `json:"type"`
	Status rbtype.OutcomeStatus `json:"status"`
	// Preview is an RFC 9535 JSONPath into the result ($.subject); empty
	// for no preview.
	Preview string `json:"preview,omitempty"`
}

// MaxPreview is the most characters a preview keeps.
const MaxPreview = 200

// outcomeType is a dotted name of capitalized or plain identifiers:
// Draft.Email, Sent.Email, Report.
var outcomeType = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$`)

// PreviewOf reads the preview of a result: the first value the path
// selects, a string as it is and anything else as JSON, cut to
// MaxPreview characters. A path that selects nothing, or a result that is
// not JSON, gives no preview: a preview is a convenience, never a reason
// for a step to fail.
func (o *Outcome) PreviewOf(result json.RawMessage) string {
	if o == nil || o.Preview == "" {
		return ""
	}
	path, err := jsonpath.Parse(o.Preview)
	if err != nil {
		return ""
	}
	var v any
	if json.Unmarshal(result, &v) != nil {
		return ""
	}
	found := path.Select(v)
	if len(found) == 0 {
		return ""
	}
	text, ok := found[0].(string)
	if !ok {
		b, err := json.Marshal(found[0])
		if err != nil {
			return ""
		}
		text = string(b)
	}
	return truncate(text, MaxPreview)
}

// truncate cuts s to at most n characters (not bytes).
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n])
}

// outcome reads a verb's outcome: {type, status, preview}. type is
// required; status defaults to final; preview must be a JSONPath.
func (d *decoder) outcome(n *yaml.Node, path string, def *Definition) *Outcome {
	o := &Outcome{}
	ok := d.mapping(n, path, def, map[string]field{
		"type": {true, func(p string, v *yaml.Node) {
			s, ok := d.scalar(v, p)
			if ok && !outcomeType.MatchString(s) {
				d.diags.Errorf(lang.VBadValue, d.src.rangeOf(v), "%s %q is not a dotted name such as Draft.Email", p, s)
			}
			o.Type = s
		}},
		"status": {false, func(p string, v *yaml.Node) {
			o.Status = enum(d, v, p, "outcome status", rbtype.OutcomeStatuses)
		}},
		"preview": {false, func(p string, v *yaml.Node) {
			s, ok := d.scalar(v, p)
			if !ok {
				return
			}
			if _, err := jsonpath.Parse(s); err != nil {
				d.diags.Errorf(lang.VBadValue, d.src.rangeOf(v), "%s %q is not a JSONPath (RFC 9535) such as $.subject: %v", p, s, err)
				return
			}
			o.Preview = s
		}},
	})
	if !ok {
		return nil
	}
	if o.Status == "" {
		o.Status = rbtype.OutcomeFinal
	}
	return o
}
