package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The VS Code extension in editors/ declares the language the server
// recognises, for .rbk files, with a grammar file that exists and names
// the scope the extension says, and hands that language to rbc lsp.
func TestTheVSCodeExtensionMatchesTheServer(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "editors", "vscode")
	var pkg struct {
		Main        string `json:"main"`
		Contributes struct {
			Languages []struct {
				ID            string   `json:"id"`
				Extensions    []string `json:"extensions"`
				Configuration string   `json:"configuration"`
			} `json:"languages"`
			Grammars []struct {
				Language  string `json:"language"`
				ScopeName string `json:"scopeName"`
				Path      string `json:"path"`
			} `json:"grammars"`
		} `json:"contributes"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pkg)
	require.Len(t, pkg.Contributes.Languages, 1)
	lang := pkg.Contributes.Languages[0]
	require.Equal(t, LanguageID, lang.ID)
	require.Equal(t, []string{".rbk"}, lang.Extensions)
	var config map[string]any
	readJSON(t, filepath.Join(dir, lang.Configuration), &config)
	require.Contains(t, config, "comments")

	require.Len(t, pkg.Contributes.Grammars, 1)
	g := pkg.Contributes.Grammars[0]
	require.Equal(t, LanguageID, g.Language)
	var grammar struct {
		ScopeName  string         `json:"scopeName"`
		Patterns   []any          `json:"patterns"`
		Repository map[string]any `json:"repository"`
	}
	readJSON(t, filepath.Join(dir, g.Path), &grammar)
	require.Equal(t, g.ScopeName, grammar.ScopeName)
	require.NotEmpty(t, grammar.Patterns)

	ext, err := os.ReadFile(filepath.Join(dir, pkg.Main))
	require.NoError(t, err)
	require.Contains(t, string(ext), "language: '"+LanguageID+"'")
	require.Contains(t, string(ext), "['lsp']")
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(src, v), path)
}
