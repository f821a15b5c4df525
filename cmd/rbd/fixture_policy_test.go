package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The daemons of these tests run as they did before the policy followed
// the effect (docs/design/semantics.md section 17): a step reaching
// outside runs unattended unless it is tagged external_send. Each verb
// file a test writes has its untagged verbs that reach outside tagged
// routine (tagRoutine), and a daemon started without --policy gets one
// that auto-executes every tag its verbs carry but external_send
// (fixturePolicy). A test of the built-in policy itself sets
// builtinPolicy, and gets neither.

var (
	verbItemLine   = regexp.MustCompile(`(?m)^- name: .*$`)
	reachesOutside = regexp.MustCompile(`side_effects: (external_call|human_process)`)
	policyTagsLine = regexp.MustCompile(`(?m)^  policy_tags: \[([^\]]*)\]`)
)

// tagRoutine tags routine each top-level verb of a verbs file that
// reaches outside and has no policy_tags.
func tagRoutine(src string) string {
	locs := verbItemLine.FindAllStringIndex(src, -1)
	if len(locs) == 0 || !strings.Contains(src, "execution") {
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
		if reachesOutside.MatchString(item) && !policyTagsLine.MatchString(item) {
			item = src[loc[0]:loc[1]] + "\n  policy_tags: [routine]" + src[loc[1]:end]
		}
		b.WriteString(item)
	}
	return b.String()
}

// fixturePolicy writes the policy a daemon without --policy runs under:
// auto_exec every tag of the verb files flags name (files or
// directories), but external_send; "" when they carry none.
func (e *daemonEnv) fixturePolicy(t testing.TB, flags []string) string {
	t.Helper()
	var files []string
	for i, f := range flags {
		if f == "--verbs" && i+1 < len(flags) {
			p := flags[i+1]
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				more, _ := filepath.Glob(filepath.Join(p, "*.yaml"))
				files = append(files, more...)
			} else {
				files = append(files, p)
			}
		}
	}
	tags := []string{"read_only", "draft_only"}
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range policyTagsLine.FindAllStringSubmatch(string(src), -1) {
			for _, tag := range strings.Split(m[1], ",") {
				tag = strings.TrimSpace(tag)
				if tag != "" && tag != "external_send" && !slices.Contains(tags, tag) {
					tags = append(tags, tag)
				}
			}
		}
	}
	return e.file(t, "fixture-policy.yaml", "default:\n  auto_exec: ["+strings.Join(tags, ", ")+"]\n")
}
