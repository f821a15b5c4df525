package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Outcome returns an outcome with its provenance. Another tenant's
// outcome is ErrNotFound, as if it did not exist.
func (e *Engine) Outcome(ctx context.Context, id uuid.UUID) (*apitype.OutcomeView, error) {
	found, err := e.reader(ctx).OutcomesByID(ctx, []uuid.UUID{id})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 || !sees(ctx, found[0].Tenant) {
		return nil, fmt.Errorf("%w: no outcome %s", rbtype.ErrNotFound, id)
	}
	v := &apitype.OutcomeView{Outcome: apiOutcome(found[0]), Provenance: []apitype.Outcome{}, Versions: []apitype.Outcome{}}
	if v.ArgsHash != "" {
		if v.Arguments, err = e.reader(ctx).StepArguments(ctx, v.RunbookID, v.StepKey, v.ArgsHash); err != nil {
			return nil, err
		}
		if canon, err := machine.ReencodeJSON(v.Arguments); err != nil || machine.HashJSON(canon) != v.ArgsHash {
			v.Arguments = nil // the step's row holds another attempt's
		}
	}
	// The chain: what it consumed, level by level, each outcome once.
	seen := map[uuid.UUID]bool{id: true}
	next := v.Consumed
	for len(next) > 0 && len(v.Provenance) < apitype.MaxProvenance {
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
		level, err := e.reader(ctx).OutcomesByID(ctx, ask)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(level, func(a, b driver.Outcome) int { return slices.Index(ask, a.ID) - slices.Index(ask, b.ID) })
		next = nil
		for _, o := range level {
			if !sees(ctx, o.Tenant) || len(v.Provenance) == apitype.MaxProvenance {
				continue
			}
			v.Provenance = append(v.Provenance, apiOutcome(o))
			next = append(next, o.Consumed...)
		}
	}
	// The versions before it.
	for prev := v.Previous; prev != nil && len(v.Versions) < apitype.MaxProvenance && !seen[*prev]; {
		seen[*prev] = true
		older, err := e.reader(ctx).OutcomesByID(ctx, []uuid.UUID{*prev})
		if err != nil {
			return nil, err
		}
		if len(older) == 0 || !sees(ctx, older[0].Tenant) {
			break // pruned
		}
		v.Versions = append(v.Versions, apiOutcome(older[0]))
		prev = older[0].Previous
	}
	return v, nil
}
