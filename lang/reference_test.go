package lang_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
)

// The reference pages these tests hold to the code.
const (
	languageReference = "../docs/reference/language.md"
	verbsReference    = "../docs/reference/verbs.md"
	// exampleVerbs are the verbs the language reference's examples call
	// unless a section shows its own.
	exampleVerbs = "../examples/runbooks/kyc-onboarding/verbs"
)

var codeHeading = regexp.MustCompile(`(?m)^### ([EWV][0-9]{3})$`)

// codeSections splits a reference page into the sections headed by a
// diagnostic code (`### E001`), each up to the next heading.
func codeSections(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(raw)
	out := map[string]string{}
	locs := codeHeading.FindAllStringSubmatchIndex(text, -1)
	for _, loc := range locs {
		code := text[loc[2]:loc[3]]
		body := text[loc[1]:]
		if next := regexp.MustCompile(`(?m)^#{1,3} `).FindStringIndex(body); next != nil {
			body = body[:next[0]]
		}
		require.NotContains(t, out, code, "%s: %s has two sections", path, code)
		out[code] = body
	}
	return out
}

// fenced returns the contents of the code blocks of a section whose info
// string is lang.
func fenced(section, lang string) []string {
	var out []string
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	for _, m := range re.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

// shownDiagnostics are the diagnostic lines of a section's text blocks.
func shownDiagnostics(section string) []string {
	header := regexp.MustCompile(`^\S+:[0-9]+:[0-9]+: (error|warning)\[[A-Z][0-9]{3}\]: .*$`)
	note := regexp.MustCompile(`^\s+= note: .*$`)
	var out []string
	for _, block := range fenced(section, "text") {
		current := -1
		for _, line := range strings.Split(block, "\n") {
			switch {
			case header.MatchString(line):
				out = append(out, line)
				current = len(out) - 1
			case note.MatchString(line) && current >= 0:
				out[current] += "\n" + strings.TrimSpace(line)
			}
		}
	}
	return out
}

// shownAs is a diagnostic as a reference page shows it: the header line
// of the text format, then its notes, one "= note:" line each (source
// excerpts and help lines left out).
func shownAs(d *lang.Diagnostic) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s[%s]: %s", d.Range, d.Severity, d.Code, d.Headline())
	for _, n := range d.Notes {
		b.WriteString("\n= note: " + n)
	}
	return b.String()
}

func TestReferenceCoversEveryCode(t *testing.T) {
	language := codeSections(t, languageReference)
	verbs := codeSections(t, verbsReference)
	languageText, err := os.ReadFile(languageReference)
	require.NoError(t, err)
	known := map[string]bool{}
	for _, info := range lang.Codes {
		code := string(info.Code)
		known[code] = true
		if code[0] == 'V' {
			_, ok := verbs[code]
			require.True(t, ok, "verbs.md has no section for %s (%s)", code, info.Summary)
			require.NotEmpty(t, fenced(verbs[code], "yaml"), "verbs.md: %s has no example", code)
			require.Contains(t, string(languageText), "["+code+"](verbs.md#"+strings.ToLower(code)+")",
				"language.md does not list %s", code)
			continue
		}
		_, ok := language[code]
		require.True(t, ok, "language.md has no section for %s (%s)", code, info.Summary)
		require.NotEmpty(t, shownDiagnostics(language[code]), "language.md: %s shows no diagnostic", code)
	}
	for code := range language {
		require.True(t, known[code], "language.md has a section for %s, which is not in lang.Codes", code)
	}
	for code := range verbs {
		require.True(t, known[code], "verbs.md has a section for %s, which is not in lang.Codes", code)
	}
}

// TestReferenceExamples compiles each code's example and checks that it
// reports that code, with the lines the reference shows.
func TestReferenceExamples(t *testing.T) {
	for code, section := range codeSections(t, languageReference) {
		t.Run(code, func(t *testing.T) {
			shown := shownDiagnostics(section)
			var got lang.Diagnostics
			switch {
			case len(fenced(section, "clojure")) > 0:
				cat := catalogue(t, exampleVerbs)
				var o compiler.Options
				if defs := fenced(section, "yaml"); len(defs) > 0 {
					cat = catalogue(t, writeVerbs(t, defs[0]))
					if len(defs) > 1 { // a policy, as rbc lint --policy reads it
						pol, err := policy.Parse("policy.yaml", []byte(defs[1]), policy.KnownTags(cat.PolicyTags()))
						require.NoError(t, err)
						o.Policy = pol
					}
				}
				src := fenced(section, "clojure")[0]
				_, got = o.CompileSource("example.rbk", []byte(src), cat)
			case len(fenced(section, "json")) > 0:
				_, got = compiler.ReadPlan("plan.json", []byte(fenced(section, "json")[0]), catalogue(t, exampleVerbs))
			default:
				// E071 and E072 need a whole plan, edited; their
				// examples are shown, and compiler's tests make them.
				require.Contains(t, []string{"E071", "E072"}, code, "%s has no example to compile", code)
				return
			}
			requireShown(t, code, shown, got)
		})
	}
	for code, section := range codeSections(t, verbsReference) {
		t.Run(code, func(t *testing.T) {
			dir := writeVerbs(t, fenced(section, "yaml")[0])
			t.Chdir(dir)
			cat, _, got, err := registry.Load([]string{"verbs.yaml"}, registry.NewHandlers())
			require.NoError(t, err)
			if src := fenced(section, "clojure"); len(src) > 0 {
				// A warning of rbc lint about the verbs a runbook calls
				// (V032): the example's runbook, linted.
				_, got = compiler.Options{Lint: true}.CompileSource("example.rbk", []byte(src[0]), cat)
			}
			requireShown(t, code, shownDiagnostics(section), got)
		})
	}
}

func requireShown(t *testing.T, code string, shown []string, got lang.Diagnostics) {
	t.Helper()
	var lines []string
	for _, d := range got.Sorted() {
		lines = append(lines, shownAs(d))
	}
	require.True(t, slices.ContainsFunc(got, func(d *lang.Diagnostic) bool { return string(d.Code) == code }),
		"the example of %s reports:\n%s", code, strings.Join(lines, "\n"))
	for _, s := range shown {
		require.Contains(t, lines, s, "the reference shows a diagnostic the example does not give")
	}
}

func catalogue(t *testing.T, dir string) *registry.Catalogue {
	t.Helper()
	cat, _, diags, err := registry.Load([]string{dir}, registry.NewHandlers())
	require.NoError(t, err)
	require.False(t, diags.HasErrors(), "%v", diags)
	return cat
}

func writeVerbs(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "verbs.yaml"), []byte(yaml), 0o644))
	return dir
}

// TestVerbsReferenceCoversEveryField asks the verb loader which fields it
// accepts, at each level, by giving it one it does not, and checks that
// verbs.md has a section for each.
func TestVerbsReferenceCoversEveryField(t *testing.T) {
	const unknownEverywhere = `
- name: a
  domain: d
  zz: 1
  execution:
    kind: durable
    handler: await.notification
    side_effects: none
    zz: 1
    cache: {policy: never, zz: 1}
    idempotency: {zz: 1}
    timeouts: {park_timeout: P1D, on_timeout: escalate, zz: 1, escalation: {verb: d.b, zz: 1}}
    retry: {zz: 1}
    compensation: {verb: d.b, zz: 1}
`
	dir := writeVerbs(t, unknownEverywhere)
	_, _, diags, err := registry.Load([]string{dir}, registry.NewHandlers())
	require.NoError(t, err)
	valid := regexp.MustCompile(`^unknown field "zz" in (the definition|\S+) \(valid fields: ([^)]*)\)`)
	levels := map[string]bool{}
	var fields []string
	for _, d := range diags {
		m := valid.FindStringSubmatch(d.Message)
		if d.Code != lang.VUnknownField || m == nil {
			continue
		}
		level := strings.TrimPrefix(m[1], "the definition")
		levels[level] = true
		for f := range strings.SplitSeq(m[2], ", ") {
			if level != "" {
				f = level + "." + f
			}
			fields = append(fields, f)
		}
	}
	require.Len(t, levels, 8, "the unknown field was not reported at every level: %v", diags)
	raw, err := os.ReadFile(verbsReference)
	require.NoError(t, err)
	for _, f := range fields {
		require.Contains(t, string(raw), "\n### `"+f+"`\n", "verbs.md has no section for the field %s", f)
	}
}
