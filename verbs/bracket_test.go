package verbs

import (
	"strings"
	"testing"
)

func TestBracketForm(t *testing.T) {
	for path, want := range map[string]string{
		"$.case-id":              "$['case-id']",
		"$.case.first-name":      "$.case['first-name']",
		"$.items[0].due-date":    "$.items[0]['due-date']",
		"$.subject":              "",
		"$.a b":                  "$['a b']",
		"$.it's":                 `$['it\'s']`,
		"case-id":                "",
		"$['already-bracketed']": "",
	} {
		got, ok := BracketForm(path)
		if ok != (want != "") || got != want {
			t.Errorf("BracketForm(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}

// The verb fields of docs/design/language.md v1.4: a reminder before the
// park's timeout, sent by the escalation; approvers a group's name.
func TestReminderAndApprovers(t *testing.T) {
	wait := "- name: wait\n  domain: kyc\n  execution:\n    kind: durable\n    handler: await.notification\n    side_effects: none\n"
	for src, want := range map[string]string{
		"    approvers: compliance\n    timeouts:\n      park_timeout: P14D\n      on_timeout: escalate\n      escalation: {verb: ops.page}\n      remind_after: P7D\n": "",
		"    timeouts:\n      park_timeout: P14D\n      on_timeout: fail\n      escalation: {verb: ops.page}\n      remind_after: P7D\n":                                "",
		"    timeouts:\n      park_timeout: P14D\n      escalation: {verb: ops.page}\n      on_timeout: escalate\n      remind_after: P15D\n":                           "V004 timeouts.remind_after P15D is not before timeouts.park_timeout P14D",
		"    timeouts:\n      park_timeout: P14D\n      remind_after: P7D\n":                                                                                            "V004 timeouts.remind_after runs timeouts.escalation",
		"    approvers: not a group\n    timeouts: {park_timeout: P1D}\n":                                                                                               `V004 approvers "not a group" is not a group's name`,
	} {
		defs, diags := Parse("v.yaml", []byte(wait+src))
		if want == "" {
			if len(diags) != 0 {
				t.Errorf("%s: %v", src, diags)
			} else if defs[0].Execution.Timeouts.RemindAfter == nil {
				t.Errorf("%s: no remind_after", src)
			}
			continue
		}
		if len(diags) != 1 || !strings.Contains(diagLines(diags)[0], want) {
			t.Errorf("%s: got %v, want %s", src, diagLines(diags), want)
		}
	}
}
