package lsp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// WorkspaceFile is the name of the file at a workspace's root that names
// its verb catalogue for the language server:
//
//	verbs:
//	  - verbs
//	  - ../shared/verbs
//
// Each entry is a directory (read recursively) or a file of verb
// definitions, relative to the workspace root. It is not itself read as a
// verb file, but a catalogue directory should not hold it: the loader
// would read it as one.
const WorkspaceFile = "runbook.yaml"

// workspaceConfig is WorkspaceFile's contents.
type workspaceConfig struct {
	Verbs []string `yaml:"verbs"`
}

// readWorkspaceFile returns the catalogue paths root's WorkspaceFile
// names, made absolute; none, without error, when there is no such file.
func readWorkspaceFile(root string) ([]string, error) {
	path := filepath.Join(root, WorkspaceFile)
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading %q: %w", path, err)
	}
	var cfg workspaceConfig
	dec := yaml.NewDecoder(bytes.NewReader(src))
	// A misspelt key must not silently mean "no catalogue"; an empty file
	// (io.EOF) names none.
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("error reading %q: %w", path, err)
	}
	paths := make([]string, len(cfg.Verbs))
	for i, p := range cfg.Verbs {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		paths[i] = p
	}
	return paths, nil
}
