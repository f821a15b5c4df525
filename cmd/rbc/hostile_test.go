package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostileInputs feeds rbc inputs that must never crash it: each gets a
// diagnostic (status 1) or a clean refusal (status 2).
func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	verbs := filepath.Join(dir, "verbs.yaml")
	require.NoError(t, os.WriteFile(verbs, []byte(
		"- {name: say, domain: demo, execution: {kind: sync, handler: core.echo, side_effects: none}}\n"), 0o644))

	tests := []struct {
		name    string
		content []byte
		status  int
		stderr  string
	}{
		{"binary", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x03\x00>\x00"), 1, "this is not a text file (NUL byte at offset 7)"},
		{"empty", nil, 0, ""},
		{"10 MB string literal", []byte(`(demo.say :text "` + strings.Repeat("x", 10<<20) + `")`), 0, ""},
		{"deep nesting", []byte("(demo.say :x " + strings.Repeat("[", 1<<20) + ")"), 1, "lists, maps and nested calls nest more than 64 levels deep"},
		{"invalid UTF-8", []byte("(demo.say :x \xc3\x28 :y \"\xa0\xa1\")"), 1, "invalid UTF-8 byte 0xC3"},
		{"a directory", nil, 2, "error reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".rbk")
			if tt.name == "a directory" {
				require.NoError(t, os.Mkdir(path, 0o755))
			} else {
				require.NoError(t, os.WriteFile(path, tt.content, 0o644))
			}
			for _, cmd := range []string{"lint", "compile"} {
				var stdout, stderr bytes.Buffer
				status := run([]string{cmd, "--verbs", verbs, path}, &stdout, &stderr)
				require.Equal(t, tt.status, status, "%s: %s", cmd, stderr.String())
				diagnostics := stderr.String()
				if cmd == "lint" {
					diagnostics += stdout.String() // lint reports on stdout; compile writes the plan there
				}
				require.Contains(t, diagnostics, tt.stderr)
				require.Less(t, len(diagnostics), 64<<10, "diagnostics stay readable, whatever the input")
			}
			if tt.status != 2 {
				var stdout, stderr bytes.Buffer
				status := run([]string{"fmt", path}, &stdout, &stderr)
				require.Equal(t, tt.status, status, "fmt: %s", stderr.String())
			}
		})
	}
}
