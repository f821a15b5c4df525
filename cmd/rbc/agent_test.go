package main

import (
	"encoding/json"
	"slices"

	"github.com/rogpeppe/go-internal/testscript"
)

// applyFixes is the script command `applyfixes FILE`: it plays an agent
// that reads `rbc lint --format json` (the last command's standard output)
// and applies, to FILE, the fix of every diagnostic about FILE that offers
// exactly one, using nothing but the JSON: byte offsets and replacement
// text. It decodes into its own types rather than package lang's, so the
// test holds the JSON to being enough on its own. Overlapping edits are
// left for the next round, as an agent would.
func applyFixes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: applyfixes FILE")
	}
	type edit struct {
		Range struct {
			File  string `json:"file"`
			Start struct {
				Byte int `json:"byte"`
			} `json:"start"`
			End struct {
				Byte int `json:"byte"`
			} `json:"end"`
		} `json:"range"`
		Text string `json:"text"`
	}
	var diags []struct {
		Fixes []struct {
			Edits []edit `json:"edits"`
		} `json:"fixes"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &diags); err != nil {
		ts.Fatalf("applyfixes: stdout is not rbc's JSON: %v", err)
	}
	path := args[0]
	src := []byte(ts.ReadFile(path))
	var edits []edit
	for _, d := range diags {
		if len(d.Fixes) != 1 {
			continue
		}
		fix := d.Fixes[0].Edits
		if slices.ContainsFunc(fix, func(e edit) bool {
			return e.Range.File != path || slices.ContainsFunc(edits, func(t edit) bool {
				return e.Range.Start.Byte < t.Range.End.Byte && t.Range.Start.Byte < e.Range.End.Byte || e.Range.Start.Byte == t.Range.Start.Byte
			})
		}) {
			continue
		}
		edits = append(edits, fix...)
	}
	if len(edits) == 0 {
		ts.Fatalf("applyfixes: no fix to apply")
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.Range.Start.Byte - a.Range.Start.Byte })
	for _, e := range edits {
		src = slices.Concat(src[:e.Range.Start.Byte], []byte(e.Text), src[e.Range.End.Byte:])
	}
	ts.Logf("applyfixes: %d edits", len(edits))
	if err := writeFileAtomic(ts.MkAbs(path), writeBytes(src)); err != nil {
		ts.Fatalf("applyfixes: %v", err)
	}
}
