package machine

import (
	"encoding/json"
	"fmt"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// NewSteps turns plan steps into rows, numbered after offset. Steps of
// one verb mostly carry one execution block (a for-each's instances
// always do): it is encoded once, and again only for a step whose block
// differs.
func NewSteps(steps []*compiler.Step, offset int) ([]rbtype.NewStep, error) {
	out := make([]rbtype.NewStep, len(steps))
	type encoded struct {
		exec *verbs.Execution
		json []byte
	}
	last := map[string]encoded{}
	for i, s := range steps {
		if len(s.Key) > MaxKeyLength {
			return nil, fmt.Errorf("step key %s is %d bytes long; at most %d are allowed", ShortKey(s.Key), len(s.Key), MaxKeyLength)
		}
		args, err := json.Marshal(s.Args)
		if err != nil {
			return nil, fmt.Errorf("step %q: its arguments do not encode: %w", s.Key, err)
		}
		exec := last[s.Verb].json
		if prev := last[s.Verb].exec; prev == nil || !prev.Equal(&s.Execution) {
			if exec, err = json.Marshal(s.Execution); err != nil {
				return nil, fmt.Errorf("step %q: its execution block does not encode: %w", s.Key, err)
			}
			last[s.Verb] = encoded{exec: &s.Execution, json: exec}
		}
		out[i] = rbtype.NewStep{Key: s.Key, Position: offset + i + 1, Verb: s.Verb, Args: args, Execution: exec, Gate: rowGate(s)}
	}
	return out, nil
}

// EdgesOf converts plan edges, keeping only those into steps keep accepts
// (all when keep is nil).
func EdgesOf(edges []compiler.Edge, keep func(to string) bool) []rbtype.Edge {
	var out []rbtype.Edge
	for _, e := range edges {
		if keep == nil || keep(e.To) {
			out = append(out, rbtype.Edge{From: e.From, To: e.To, Kind: e.Kind})
		}
	}
	return out
}
