package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// OutcomeView is an outcome with its provenance (docs/design/semantics.md section
// 13): the record, the arguments of the attempt that made it, the
// outcomes it was made from (and theirs, as far as they go), and its
// earlier versions across regenerations, newest first.
type OutcomeView struct {
	driver.Outcome
	// Arguments are the resolved arguments of the attempt that produced
	// it, found by their hash; absent when they are not kept (a runbook
	// from before outcomes).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Provenance lists the outcomes it consumed, then theirs, breadth
	// first, each once, at most MaxProvenance.
	Provenance []driver.Outcome `json:"provenance"`
	// Versions lists its earlier versions, newest first.
	Versions []driver.Outcome `json:"versions"`
}

// MaxProvenance bounds the outcomes a provenance chain lists.
const MaxProvenance = 100

// Outcome returns an outcome with its provenance. Another tenant's
// outcome is ErrNotFound, as if it did not exist.
func (e *Engine) Outcome(ctx context.Context, id uuid.UUID) (*OutcomeView, error) {
	found, err := e.store.OutcomesByID(ctx, []uuid.UUID{id})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 || !sees(ctx, found[0].Tenant) {
		return nil, fmt.Errorf("%w: no outcome %s", rbtype.ErrNotFound, id)
	}
	v := &OutcomeView{Outcome: found[0], Provenance: []driver.Outcome{}, Versions: []driver.Outcome{}}
	if v.ArgsHash != "" {
		if v.Arguments, err = e.store.StepArguments(ctx, v.RunbookID, v.StepKey, v.ArgsHash); err != nil {
			return nil, err
		}
		if canon, err := machine.ReencodeJSON(v.Arguments); err != nil || machine.HashJSON(canon) != v.ArgsHash {
			v.Arguments = nil // the step's row holds another attempt's
		}
	}
	// The chain: what it consumed, level by level, each outcome once.
	seen := map[uuid.UUID]bool{id: true}
	next := v.Consumed
	for len(next) > 0 && len(v.Provenance) < MaxProvenance {
		var ask []uuid.UUID
		for _, c := range next {
			if !seen[c] {
				seen[c] = true
				ask = append(ask, c)
			}
		}
		if len(ask) == 0 {
			break
		}
		level, err := e.store.OutcomesByID(ctx, ask)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(level, func(a, b driver.Outcome) int { return slices.Index(ask, a.ID) - slices.Index(ask, b.ID) })
		next = nil
		for _, o := range level {
			if !sees(ctx, o.Tenant) || len(v.Provenance) == MaxProvenance {
				continue
			}
			v.Provenance = append(v.Provenance, o)
			next = append(next, o.Consumed...)
		}
	}
	// The versions before it.
	for prev := v.Previous; prev != nil && len(v.Versions) < MaxProvenance && !seen[*prev]; {
		seen[*prev] = true
		older, err := e.store.OutcomesByID(ctx, []uuid.UUID{*prev})
		if err != nil {
			return nil, err
		}
		if len(older) == 0 || !sees(ctx, older[0].Tenant) {
			break // pruned
		}
		v.Versions = append(v.Versions, older[0])
		prev = older[0].Previous
	}
	return v, nil
}
