package lsp

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// catalogue is the verb catalogue runbooks are checked against, and what
// was read to build it.
type catalogue struct {
	// paths are the catalogue's directories and files, absolute, and
	// from says where they were named ("--verbs", WorkspaceFile,
	// "RBC_VERBS"); both are empty when nothing named a catalogue.
	paths []string
	from  string
	// reg is nil when there is no catalogue or it could not be read.
	reg     *registry.Catalogue
	sources lang.Sources
	texts   map[string]*text
	diags   lang.Diagnostics // the V-series, for the verb files
	// published are the verb files the client was last sent diagnostics
	// for, so that a fixed file is cleared.
	published map[string]bool
}

// holds reports whether a file is one of the catalogue's verb files, or
// would be if it were saved: a YAML file under one of its paths.
func (c *catalogue) holds(name string) bool {
	if _, ok := c.sources[name]; ok {
		return true
	}
	if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
		return false
	}
	for _, p := range c.paths {
		if rel, err := filepath.Rel(p, name); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// text is a verb file's text as the catalogue read it; empty for a file
// it did not read.
func (c *catalogue) text(name string) *text {
	if t, ok := c.texts[name]; ok {
		return t
	}
	t := newText(string(c.sources[name]))
	if c.texts == nil {
		c.texts = map[string]*text{}
	}
	c.texts[name] = t
	return t
}

// definition finds a verb by its full name.
func (c *catalogue) definition(name string) (*verbs.Definition, bool) {
	if c.reg == nil {
		return nil, false
	}
	return c.reg.Lookup(name)
}

// loadCatalogue finds the catalogue's paths, the way rbc does and from
// the workspace's WorkspaceFile, and reads it.
func (s *Server) loadCatalogue(ctx context.Context, root string) {
	paths, from := s.opts.Verbs, "--verbs"
	if len(paths) == 0 && root != "" {
		var err error
		if paths, err = readWorkspaceFile(root); err != nil {
			s.showMessage(ctx, protocol.MessageTypeError, "rbc lsp: %v", err)
		}
		from = WorkspaceFile
	}
	if len(paths) == 0 {
		paths, from = s.opts.EnvVerbs, "RBC_VERBS"
	}
	paths = slices.Clone(paths)
	for i, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			paths[i] = abs
		}
	}
	s.cat.paths = paths
	s.cat.from = from
	if len(paths) == 0 {
		s.showMessage(ctx, protocol.MessageTypeWarning,
			"rbc lsp: no verb catalogue (pass --verbs, set RBC_VERBS, or name it in %s at the workspace root); only syntax is checked", WorkspaceFile)
	}
	s.reloadCatalogue(ctx)
}

// reloadCatalogue reads the catalogue again, open verb files as the
// editor has them, publishes the verb files' diagnostics, and checks every
// open runbook against the new catalogue.
func (s *Server) reloadCatalogue(ctx context.Context) {
	c := s.cat
	c.reg, c.sources, c.texts, c.diags = nil, nil, nil, nil
	if len(c.paths) > 0 {
		loaded, diags, err := verbs.LoadPathsWith(c.paths, s.read)
		if err != nil {
			s.showMessage(ctx, protocol.MessageTypeError, "rbc lsp: verb catalogue (from %s): %v", c.from, err)
		} else {
			reg, more := registry.New(loaded.Definitions, registry.NewHandlers())
			diags.Append(more)
			c.reg, c.sources, c.diags = reg, loaded.Sources, diags.Sorted()
		}
	}
	s.publishCatalogue(ctx)
	for _, d := range s.docs {
		if d.file != nil {
			s.check(ctx, d)
		}
	}
}

// read is the catalogue's file reader: an open document's text, else the
// file on disk.
func (s *Server) read(name string) ([]byte, error) {
	for _, d := range s.docs {
		if d.name == name {
			return []byte(d.text.src), nil
		}
	}
	return os.ReadFile(name)
}

// publishCatalogue sends each verb file's diagnostics, and clears those
// of files that have none left.
func (s *Server) publishCatalogue(ctx context.Context) {
	c := s.cat
	byFile := map[string]lang.Diagnostics{}
	for _, d := range c.diags {
		byFile[d.Range.Filename] = append(byFile[d.Range.Filename], d)
	}
	for name := range c.published {
		if _, ok := byFile[name]; !ok {
			byFile[name] = nil
		}
	}
	c.published = map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(byFile)) {
		if len(byFile[name]) > 0 {
			c.published[name] = true
		}
		version := int32(0)
		if d, ok := s.docs[s.uriOf(name)]; ok {
			version = d.version
		}
		s.publish(ctx, s.uriOf(name), version, byFile[name])
	}
}

// didChangeWatchedFiles follows changes on disk the editor saw (a
// checkout, another program): the workspace's WorkspaceFile changing
// finds the catalogue again, and a verb file changing reloads it.
func (s *Server) didChangeWatchedFiles(ctx context.Context, p *protocol.DidChangeWatchedFilesParams) error {
	reload := false
	for _, ch := range p.Changes {
		name := nameOf(ch.URI)
		if s.root != "" && name == filepath.Join(s.root, WorkspaceFile) {
			s.loadCatalogue(ctx, s.root)
			return nil
		}
		reload = reload || s.cat.holds(name)
	}
	if reload {
		s.reloadCatalogue(ctx)
	}
	return nil
}
