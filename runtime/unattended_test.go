package runtime

import (
	"regexp"
	"strings"

	"github.com/runbookdev/runbook/registry/policy"
)

// The test fixtures' verbs that reach outside (external_call,
// human_process) run unattended only when the policy auto-executes one of
// their tags (docs/design/semantics.md section 17). Tests of other rules
// want them to run as a verb without a gate does, so the fixtures do what
// an operator would: tag them (TagUnattended) and run under a policy that
// auto-executes the tag (UnattendedPolicy). Tests of the policy itself
// use untagged verbs and policies of their own.

// UnattendedTag is the tag the fixtures give their verbs that reach
// outside and carry no tags of their own.
const UnattendedTag = "test_unattended"

var (
	verbItem    = regexp.MustCompile(`(?m)^- name: .*$`)
	reachesOut  = regexp.MustCompile(`side_effects: (external_call|human_process)`)
	hasTagsLine = regexp.MustCompile(`(?m)^  policy_tags:`)
)

// TagUnattended gives each verb of a verbs file (top-level items written
// "- name: ...") that reaches outside and has no policy_tags the tag
// UnattendedTag.
func TagUnattended(src string) string {
	locs := verbItem.FindAllStringIndex(src, -1)
	if len(locs) == 0 {
		return src
	}
	var b strings.Builder
	b.WriteString(src[:locs[0][0]])
	for i, loc := range locs {
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		item := src[loc[0]:end]
		if reachesOut.MatchString(item) && !hasTagsLine.MatchString(item) {
			item = src[loc[0]:loc[1]] + "\n  policy_tags: [" + UnattendedTag + "]" + src[loc[1]:end]
		}
		b.WriteString(item)
	}
	return b.String()
}

// UnattendedPolicy is the fixtures' policy: the built-in one, with
// UnattendedTag auto-executed besides read_only. src adds rules of a test's
// own (a YAML mapping's lines under default:, indented two spaces), "" for
// none.
func UnattendedPolicy(src string) *policy.Policy {
	p, err := policy.Parse("test-policy.yaml", []byte("default:\n  auto_exec: [read_only, draft_only, "+UnattendedTag+"]\n"+src),
		policy.KnownTags([]string{UnattendedTag}))
	if err != nil {
		panic(err)
	}
	return p
}
