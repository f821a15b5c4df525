package design_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDesignLinksResolve checks every relative link of these pages: the
// file exists and, when the link names a heading, the heading does.
func TestDesignLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(withoutCode(string(text)), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = page
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(t, file)[anchor] {
				t.Errorf("%s links to %s: %s has no heading with anchor #%s", page, target, file, anchor)
			}
		}
	}
}

// TestCitationsOfTheDesignResolve checks what the rest of the repository
// cites of these pages, in code comments and docs alike: every
// docs/design/PAGE.md names a page that exists and every
// docs/design/PAGE.md#anchor a heading that does, so renaming a heading
// cannot leave a comment pointing nowhere.
func TestCitationsOfTheDesignResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out, err := exec.Command("git", "-C", root, "grep", "-n", "-I", "-o", "-E", `docs/design/[a-z]+\.md(#[a-z0-9_-]+)?`).Output()
	var exit *exec.ExitError
	if errAs(err, &exit) && exit.ExitCode() == 1 {
		return // no citation at all
	}
	if errAs(err, &exit) && exit.ExitCode() == 128 {
		t.Skipf("not a git checkout: %s", exit.Stderr)
	}
	require.NoError(t, err)
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		// file:line:citation
		parts := strings.SplitN(line, ":", 3)
		require.Len(t, parts, 3, line)
		page, anchor, _ := strings.Cut(strings.TrimPrefix(parts[2], "docs/design/"), "#")
		if _, err := os.Stat(page); err != nil {
			t.Errorf("%s:%s cites docs/design/%s, which does not exist", parts[0], parts[1], page)
			continue
		}
		if anchor != "" && !anchorsOf(t, page)[anchor] {
			t.Errorf("%s:%s cites docs/design/%s#%s: no such heading", parts[0], parts[1], page, anchor)
		}
	}
}

// TestNothingCitesAPageOutsideTheRepository: the design pages were once
// kept outside the repository, in upper case (SEMANTICS.md and its
// siblings); a comment citing one of those names points at nothing a
// reader of this repository can open. Only this test names them.
func TestNothingCitesAPageOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	pages := strings.Join([]string{"ARCHITECTURE", "LANGUAGE", "VERBS", "RUNTIME", "DAEMON", "SEMANTICS", "STYLE"}, "|")
	out, err := exec.Command("git", "-C", root, "grep", "-n", "-I", "-E", `(^|[^/A-Za-z_])(`+pages+`)\.md`,
		"--", ":!docs/design/links_test.go").Output()
	var exit *exec.ExitError
	if errAs(err, &exit) && exit.ExitCode() == 1 {
		return // none
	}
	if errAs(err, &exit) && exit.ExitCode() == 128 {
		t.Skipf("not a git checkout: %s", exit.Stderr)
	}
	require.NoError(t, err)
	t.Errorf("cited outside the repository (cite docs/design/PAGE.md instead):\n%s", out)
}

func TestAnchorsAreGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"## 1. Principals and tenants":                  "1-principals-and-tenants",
		"## v1.1: nested calls, fixes, effects":         "v11-nested-calls-fixes-effects",
		"## rbc, the compiler's command line":           "rbc-the-compilers-command-line",
		"## HTTP API (JSON)":                            "http-api-json",
		"### `rbc compile`":                             "rbc-compile",
		"## Tenants and roles (semantics.md section 1)": "tenants-and-roles-semanticsmd-section-1",
	} {
		require.Equal(t, want, anchor(strings.TrimLeft(heading, "# ")), heading)
	}
}

var headingLine = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)

// anchorsOf lists the anchors GitHub gives a page's headings.
func anchorsOf(t *testing.T, path string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, m := range headingLine.FindAllStringSubmatch(withoutCode(string(text)), -1) {
		a := anchor(m[1])
		for n := 1; out[a]; n++ { // a repeated heading gets -1, -2, …
			a = anchor(m[1]) + "-" + string(rune('0'+n))
		}
		out[a] = true
	}
	return out
}

// anchor is GitHub's anchor for a heading: lower case, punctuation other
// than hyphens and underscores dropped, spaces made hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var fence = regexp.MustCompile("(?ms)^```.*?^```$")

// withoutCode drops fenced blocks, whose lines are neither headings nor
// links.
func withoutCode(text string) string { return fence.ReplaceAllString(text, "") }

func errAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}
