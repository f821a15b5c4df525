package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// VerbsResponse is GET /v1/verbs: the verbs a runbook submitted here may
// call, by name.
type VerbsResponse struct {
	Verbs []VerbInfo `json:"verbs"`
}

// VerbInfo is one verb's contract as a caller needs it: what it takes and
// gives, and what it does to the world. The handler's static params are
// the operator's and stay out. Later fields (the verb's policy tags, this
// tenant's decision on it) join it; a client ignores fields it does not
// know.
type VerbInfo struct {
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Kind        rbtype.Kind        `json:"kind"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Risk        rbtype.Risk        `json:"risk"`
	Level       rbtype.Level       `json:"level"`
	Determinism rbtype.Determinism `json:"determinism"`
	// Gate is the gate every call of the verb has at least: its own, or
	// human_confirm for a high-risk verb.
	Gate rbtype.Gate `json:"gate"`
	// Returns names the result's field a nested call stands for.
	Returns      string        `json:"returns,omitempty"`
	InputSchema  *verbs.Schema `json:"input_schema,omitempty"`
	OutputSchema *verbs.Schema `json:"output_schema,omitempty"`
	// Hash is the definition's hash, which plans compiled against it
	// record: a plan compiled elsewhere runs here only if they match.
	Hash string `json:"hash"`
}

// verbInfo describes one definition.
func verbInfo(d *verbs.Definition) VerbInfo {
	return VerbInfo{
		Name: d.FullName(), Description: strings.TrimSpace(d.Description), Kind: d.Execution.Kind,
		SideEffects: d.Execution.SideEffects, Risk: d.RiskOrDefault(), Level: d.Execution.Level.Effective(),
		Determinism: d.Execution.Determinism.Effective(), Gate: d.Gate(), Returns: d.Returns,
		InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Hash: d.Hash,
	}
}

// listVerbs is GET /v1/verbs[?name=]: the catalogue the daemon compiles
// submitted sources with (rbd serve --verbs), or the one verb named.
func (s *Server) listVerbs(w http.ResponseWriter, r *http.Request) error {
	out := VerbsResponse{Verbs: []VerbInfo{}}
	cat := s.cfg.Catalogue
	if name := r.URL.Query().Get("name"); name != "" {
		if cat == nil {
			return errorf(http.StatusNotFound, CodeNotFound, "no verb %q: this daemon has no verbs (rbd serve --verbs)", name)
		}
		d, ok := cat.Lookup(name)
		if !ok {
			msg := fmt.Sprintf("no verb %q", name)
			if near := cat.Suggest(name); len(near) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", near[0])
			}
			return errorf(http.StatusNotFound, CodeNotFound, "%s", msg)
		}
		out.Verbs = append(out.Verbs, verbInfo(d))
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if cat != nil {
		for _, d := range cat.Definitions() {
			out.Verbs = append(out.Verbs, verbInfo(d))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
