package clitest

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// CLIReference is docs/reference/cli.md, from cmd/rbc and cmd/rbd.
const CLIReference = "../../docs/reference/cli.md"

// RequireDocumented fails t unless the CLI reference has a section for
// each command the binary's usage lists (a heading "`binary command`"),
// and each flag the command's -h lists appears in that section or, for
// flags every client command shares, in common (a section's text). run is
// the binary's run function.
func RequireDocumented(t *testing.T, binary, usage, common string, run func(args []string, stdout, stderr io.Writer) int) {
	t.Helper()
	raw, err := os.ReadFile(CLIReference)
	require.NoError(t, err)
	page := string(raw)

	commands := regexp.MustCompile(`(?m)^\s+`+binary+` ([a-z]+)\b`).FindAllStringSubmatch(usage, -1)
	require.NotEmpty(t, commands, "no commands found in %s's usage", binary)
	flagLine := regexp.MustCompile(`(?m)^\s+--?([a-z][a-z0-9-]*)\b`)
	for _, m := range commands {
		command := m[1]
		section := Section(page, "`"+binary+" "+command+"`")
		require.NotEmpty(t, section, "cli.md has no section for %s %s", binary, command)
		var out bytes.Buffer
		run([]string{command, "-h"}, &out, &out)
		for _, f := range flagLine.FindAllStringSubmatch(out.String(), -1) {
			flag := f[1]
			mention := regexp.MustCompile("(?m)(^|[\\s`\\[|])--?" + regexp.QuoteMeta(flag) + `\b`)
			documented := mention.MatchString
			require.True(t, documented(section) || documented(common),
				"cli.md's section on %s %s does not mention its flag --%s", binary, command, flag)
		}
	}
}

// Section returns the text under the heading of page whose title is
// title, up to the next heading of the same level or higher; empty when
// there is none.
func Section(page, title string) string {
	heading := regexp.MustCompile(`(?m)^(#+) ` + regexp.QuoteMeta(title) + `$`)
	loc := heading.FindStringSubmatchIndex(page)
	if loc == nil {
		return ""
	}
	level := loc[3] - loc[2]
	body := page[loc[1]:]
	next := regexp.MustCompile(`(?m)^#{1,` + strconv.Itoa(level) + `} `)
	if n := next.FindStringIndex(body); n != nil {
		body = body[:n[0]]
	}
	return page[loc[0]:loc[1]] + body
}
