package machine

import (
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Outcomes with provenance (docs/design/semantics.md section 13): a step whose verb
// declares an outcome records one each time it succeeds, in the
// transaction that completes it, with the hashes of the attempt's
// arguments and result, the model and parameters its usage reported, and
// the outcomes it was made from. A dry run produces nothing: it rehearses.

// namespaceOutcome names outcome ids: UUIDv5 of runbook, step and
// generation.
var namespaceOutcome = uuid.MustParse("2b7f4d1e-8c3a-5e96-a0b4-6d1f9e2c7a58")

// OutcomeID is the id of the outcome a step of a runbook of a generation
// produces: the same however often it is recorded.
func OutcomeID(runbookID uuid.UUID, stepKey string, generation int) uuid.UUID {
	return uuid.NewSHA1(namespaceOutcome, []byte(runbookID.String()+"\x00"+stepKey+"\x00"+strconv.Itoa(generation)))
}

// OutcomeRecordedData is the data of OUTCOME_RECORDED.
type OutcomeRecordedData struct {
	OutcomeID uuid.UUID            `json:"outcome_id"`
	Type      string               `json:"type"`
	Status    rbtype.OutcomeStatus `json:"status"`
}

// outcomeOf is the outcome a step's verb declares, if any.
func (t *transition) outcomeOf(verb string) *verbs.Outcome {
	if info, ok := t.plan.Plan.Verbs[verb]; ok {
		return info.Outcome
	}
	return nil
}

// produce records the outcome of a step that just completed with result,
// if its verb declares one.
func (t *transition) produce(s *rbtype.Step, result json.RawMessage) {
	decl := t.outcomeOf(s.Verb)
	if decl == nil || t.Rb.Mode == rbtype.ModeDryRun {
		return
	}
	u := t.usage[s.ID]
	o := rbtype.Outcome{
		ID: OutcomeID(t.Rb.ID, s.Key, t.Rb.Lineage.Generation), Tenant: t.Rb.Tenant, RunbookID: t.Rb.ID,
		LineageRoot: t.Rb.Lineage.RootOf(t.Rb.ID), Generation: t.Rb.Lineage.Generation, StepKey: s.Key, Attempt: s.Attempt,
		Verb: s.Verb, Type: decl.Type, Status: decl.Status, Preview: decl.PreviewOf(result),
		ArgsHash: t.argsHash[s.ID], ResultHash: HashJSON(result), Model: u.Model, Parameters: u.Parameters,
		Consumed: t.consumed(s.Key),
	}
	t.outcomes = append(t.outcomes, o)
	t.event(rbtype.EventOutcomeRecorded, s, OutcomeRecordedData{OutcomeID: o.ID, Type: o.Type, Status: o.Status})
}

// consumed lists the outcomes a step was made from: those of the steps
// whose results it reads, and, through a step that declares no outcome
// (a review that passes a draft on), those that step read. Each once, in
// plan order of discovery.
func (t *transition) consumed(key string) []uuid.UUID {
	out := []uuid.UUID{}
	seen := map[string]bool{}
	var walk func(key string)
	walk = func(key string) {
		for _, p := range t.plan.preds[key] {
			if seen[p] || !t.plan.readsResult(key, p) {
				continue
			}
			seen[p] = true
			ps, ok := t.plan.Steps[p]
			if !ok {
				continue
			}
			if n := t.plan.Instances[p]; n > 0 {
				// A template's result is its instances': what they made.
				for i := range n {
					k := InstanceKey(p, i)
					if seen[k] {
						continue
					}
					seen[k] = true
					if t.outcomeOf(ps.Verb) != nil {
						out = append(out, OutcomeID(t.Rb.ID, k, t.Rb.Lineage.Generation))
					} else {
						walk(k)
					}
				}
				continue
			}
			if t.outcomeOf(ps.Verb) != nil {
				out = append(out, OutcomeID(t.Rb.ID, p, t.Rb.Lineage.Generation))
				continue
			}
			walk(p)
		}
	}
	walk(key)
	return out
}

// keepArguments notes the hash of the arguments a step starts with, and,
// when it held others before (a retry whose inputs changed), keeps those
// by their hash first: every attempt's arguments stay readable through
// the hash in its ledger row.
func (t *transition) keepArguments(s *rbtype.Step, old json.RawMessage) {
	hash := HashJSON(s.ResolvedArgs)
	t.argsHash[s.ID] = hash
	if len(old) == 0 {
		return
	}
	canon, err := ReencodeJSON(old)
	if err != nil {
		return
	}
	if oldHash := HashJSON(canon); oldHash != hash {
		t.arguments = append(t.arguments, rbtype.Arguments{RunbookID: t.Rb.ID, Hash: oldHash, Args: canon})
	}
}

// ReencodeJSON re-encodes JSON as encoding/json writes it (keys sorted,
// numbers as written): the form hashes are taken of, whatever the
// database did to its spacing and key order.
func ReencodeJSON(b json.RawMessage) (json.RawMessage, error) {
	v, err := CanonicalJSON(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
