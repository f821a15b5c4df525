package verbs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// LoadPathsWith finds the files as LoadPaths does, on disk, but reads
// them with its reader: the language server's unsaved buffers.
func TestLoadPathsWithReadsThroughTheReader(t *testing.T) {
	dir := t.TempDir()
	onDisk := "- name: go\n  domain: a\n  execution: {kind: sync, handler: core.echo, side_effects: none}\n"
	file := filepath.Join(dir, "a.yaml")
	require.NoError(t, os.WriteFile(file, []byte(onDisk), 0o644))
	edited := "- name: go\n  domain: a\n  executon: {}\n"
	read := func(path string) ([]byte, error) {
		if path == file {
			return []byte(edited), nil
		}
		return os.ReadFile(path)
	}

	loaded, diags, err := LoadPathsWith([]string{dir}, read)
	require.NoError(t, err)
	require.Equal(t, edited, string(loaded.Sources[file]))
	require.Empty(t, loaded.Definitions)
	var codes []string
	for _, d := range diags {
		codes = append(codes, string(d.Code))
	}
	require.Contains(t, codes, "V002") // executon

	loaded, diags, err = LoadPaths([]string{dir})
	require.NoError(t, err)
	require.Empty(t, diags)
	require.Len(t, loaded.Definitions, 1)
}
