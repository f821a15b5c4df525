package verbs

import (
	"encoding/json"
	"regexp"
	"strings"
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
				diag := d.diags.Errorf(lang.VBadValue, d.src.rangeOf(v), "%s %q is not a JSONPath (RFC 9535) such as $.subject: %v", p, s, err)
				if fixed, ok := BracketForm(s); ok {
					diag.WithNote("a name holding a dash or another character outside letters, digits and _ is written in the bracket form: %s", fixed).
						WithSuggestions(fixed)
				}
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

// BracketForm rewrites the dotted names of a JSONPath that RFC 9535's
// shorthand cannot hold ($.case-id) in the bracket form ($['case-id']),
// which holds any name (docs/reference/verbs.md, "JSONPath"). ok is false
// when nothing needed it, or the path is still no JSONPath.
func BracketForm(path string) (string, bool) {
	if !strings.HasPrefix(path, "$") {
		return "", false
	}
	var b strings.Builder
	b.WriteString("$")
	changed := false
	rest := path[1:]
	for rest != "" {
		if rest[0] != '.' || strings.HasPrefix(rest, "..") {
			// A bracket, a wildcard or a descendant segment: kept as it is.
			end := strings.IndexByte(rest[1:], '.')
			if end < 0 {
				b.WriteString(rest)
				break
			}
			b.WriteString(rest[:end+1])
			rest = rest[end+1:]
			continue
		}
		end := strings.IndexAny(rest[1:], ".[")
		name := rest[1:]
		if end >= 0 {
			name = rest[1 : end+1]
		}
		rest = rest[1+len(name):]
		if name != "*" && strings.ContainsFunc(name, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f)
		}) {
			b.WriteString("['" + strings.ReplaceAll(strings.ReplaceAll(name, `\`, `\\`), "'", `\'`) + "']")
			changed = true
			continue
		}
		b.WriteString("." + name)
	}
	if !changed {
		return "", false
	}
	if _, err := jsonpath.Parse(b.String()); err != nil {
		return "", false
	}
	return b.String(), true
}
