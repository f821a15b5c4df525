package policy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheReferenceExamplesRead reads docs/reference/policy.md as written:
// each YAML block is a policy that reads, and the problems the page shows
// for a broken file are what Parse says of it.
func TestTheReferenceExamplesRead(t *testing.T) {
	raw, err := os.ReadFile("../../docs/reference/policy.md")
	require.NoError(t, err)
	page := string(raw)
	blocks := regexp.MustCompile("(?s)```(yaml|text)\n(.*?)```").FindAllStringSubmatch(page, -1)
	var yamls, texts []string
	for _, b := range blocks {
		if b[1] == "yaml" {
			yamls = append(yamls, b[2])
		} else {
			texts = append(texts, b[2])
		}
	}
	require.NotEmpty(t, yamls)
	for _, y := range yamls {
		_, err := Parse("policy.yaml", []byte(y), KnownTags(nil))
		require.NoError(t, err, "a policy of policy.md does not read:\n%s", y)
	}

	broken := "default:\n  gate: [external_sned]\n  max_risk: hgh\n  budget: {day: {cost_usd: -3}}\ntenants: {acme: {gates: [pii]}}\n"
	_, err = Parse("policy.yaml", []byte(broken), KnownTags(nil))
	require.Error(t, err)
	var shown string
	for _, text := range texts {
		if strings.HasPrefix(text, "policy.yaml:") {
			shown = text
		}
	}
	require.NotEmpty(t, shown, "policy.md shows no problems of a broken file")
	require.Equal(t, strings.TrimSpace(shown), err.Error())

	// The token line shown is one httpapi reads; its scope here.
	for _, text := range texts {
		if strings.Contains(text, "verbs=") {
			scope := regexp.MustCompile(`verbs=(\S+)`).FindStringSubmatch(text)[1]
			_, err := ParseVerbScope(scope)
			require.NoError(t, err)
		}
	}
}
