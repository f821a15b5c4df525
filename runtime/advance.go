package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// errLeaseRefused means a lease this worker asked for under the runbook's
// lock was held by someone else: the transaction is abandoned and retried.
var errLeaseRefused = errors.New("runtime: a step's lease was refused under its runbook's lock")

// advance is one transaction over a batch of runbooks, as RUNTIME.md's
// "advancing a runbook" describes, fused so that one transaction both
// records the outcomes of the calls that finished (step 3) and leases the
// steps that became ready (step 1):
//
//   - take the runbooks' advisory locks, in key order;
//   - load their steps, active invocations, leases and waiting
//     notifications, releasing this worker's leases on the finished calls
//     and reclaiming expired leases;
//   - record outcomes, consume notifications, time out parks, reclaim
//     abandoned steps, make due retries, dependents and approvals ready,
//     hold gated steps, lease what can start, settle finished runbooks and
//     run compensations;
//   - write it all with its events and receipts, set each runbook's next
//     wake-up, and commit.
//
// Loading and writing are one pipelined round trip each (durable's
// LoadForAdvance and WriteAdvance). It returns the calls leased, to run
// after the commit.
func (e *Engine) advance(ctx context.Context, ids []uuid.UUID, outcomes []*outcome) ([]*pendingCall, error) {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	var calls []*pendingCall
	var settled []*transition
	err := e.store.InTx(ctx, func(tx *durable.Tx) error {
		calls, settled = nil, nil
		now := time.Now()
		if err := tx.LockRunbooks(ctx, ids); err != nil {
			return err
		}
		release := make([]int64, len(outcomes))
		for i, o := range outcomes {
			release[i] = o.stepID
		}
		loaded, err := tx.LoadForAdvance(ctx, ids, e.workerID, release, now)
		if err != nil {
			return err
		}
		states, err := e.states(ctx, tx, loaded, now)
		if err != nil {
			return err
		}
		e.recordOutcomes(states, outcomes, loaded.Released)
		for _, t := range states {
			if t.executing() {
				t.consumeNotifications()
				t.timeouts()
				t.retries()
				t.propagate()
				t.gates()
			}
			t.reclaim()
		}
		if err := e.fillData(ctx, tx, states); err != nil {
			return err
		}
		var ready, compensations []*prepared
		var keys []durable.ReceiptKey
		for _, t := range states {
			steps := t.prepare()
			ready = append(ready, steps...)
			for _, p := range steps {
				if p.exec.Idempotency.Scope != rbtype.ScopeRunbookStep {
					// A step-scoped key is the step's own: its receipt is
					// written with its completion, so a step that is ready
					// has none. Other scopes share keys across steps.
					keys = append(keys, p.receipt)
				}
			}
			if c := t.prepareCompensation(); c != nil {
				compensations = append(compensations, c)
			}
		}
		receipts, err := tx.Receipts(ctx, keys)
		if err != nil {
			return err
		}
		byRunbook := map[uuid.UUID][]*prepared{}
		for _, p := range ready {
			byRunbook[p.step.RunbookID] = append(byRunbook[p.step.RunbookID], p)
		}
		compensationOf := map[uuid.UUID]*prepared{}
		for _, c := range compensations {
			compensationOf[c.step.RunbookID] = c
		}
		for _, t := range states {
			t.start(byRunbook[t.rb.ID], receipts)
			t.startCompensation(compensationOf[t.rb.ID], receipts)
			// Steps that completed from receipts may have readied others;
			// those start on the next round, which their wake-up schedules.
			t.propagate()
			t.settle()
		}
		if err := e.write(ctx, tx, states, now); err != nil {
			return err
		}
		for _, t := range states {
			calls = append(calls, t.calls...)
		}
		settled = states
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Committed: what these steps resolved and returned is final.
	for _, t := range settled {
		for _, s := range t.steps {
			if t.dirty[s.ID] && (s.Result != nil || s.ResolvedArgs != nil) {
				e.data.remember(durable.StepKey{RunbookID: s.RunbookID, Key: s.Key}, durable.StepData{ResolvedArgs: s.ResolvedArgs, Result: s.Result})
			}
		}
	}
	return calls, nil
}

// fillData fetches the resolved arguments and results the transitions will
// need and the loaded rows leave out: the results of the predecessors of
// ready steps (for their references), and everything of steps whose
// compensation is due. The cache answers most; the rest is one query.
func (e *Engine) fillData(ctx context.Context, tx *durable.Tx, states []*transition) error {
	var missing []durable.StepKey
	want := func(t *transition, key string) {
		k := durable.StepKey{RunbookID: t.rb.ID, Key: key}
		if _, have := t.data[key]; have {
			return
		}
		if d, ok := e.data.lru.Get(k); ok && d.Result != nil {
			t.data[key] = d
			return
		}
		t.data[key] = durable.StepData{} // asked for; filled below
		missing = append(missing, k)
	}
	for _, t := range states {
		for _, s := range t.steps {
			switch {
			case s.Status == StepReady && t.executing():
				for _, p := range t.plan.preds[s.Key] {
					if ps := t.byKey[p]; ps == nil || ps.Status == StepComplete {
						want(t, p)
					}
				}
			case s.CompensationStatus == compensationPending || s.CompensationStatus == compensationRunning:
				if d, ok := e.data.lru.Get(durable.StepKey{RunbookID: t.rb.ID, Key: s.Key}); ok && d.Result != nil && d.ResolvedArgs != nil {
					t.data[s.Key] = d
				} else {
					missing = append(missing, durable.StepKey{RunbookID: t.rb.ID, Key: s.Key})
				}
			}
		}
	}
	if len(missing) > 0 {
		data, err := tx.StepDataByKey(ctx, missing)
		if err != nil {
			return err
		}
		byID := map[uuid.UUID]*transition{}
		for _, t := range states {
			byID[t.rb.ID] = t
		}
		for _, k := range missing {
			d := data[k]
			byID[k.RunbookID].data[k.Key] = d
			e.data.remember(k, d)
		}
	}
	// Loaded steps get theirs: a compensation reads the step's own.
	for _, t := range states {
		for _, s := range t.steps {
			if d, ok := t.data[s.Key]; ok {
				if s.ResolvedArgs == nil {
					s.ResolvedArgs = d.ResolvedArgs
				}
				if s.Result == nil {
					s.Result = d.Result
				}
			}
		}
	}
	return nil
}

// states builds each runbook's transition from what was loaded, decoding
// the plans the cache lacks.
func (e *Engine) states(ctx context.Context, tx *durable.Tx, loaded *durable.AdvanceState, now time.Time) ([]*transition, error) {
	plans := map[string]*planInfo{}
	fetch := map[uuid.UUID]string{} // one runbook for each plan to fetch
	for _, rb := range loaded.Runbooks {
		if _, ok := plans[rb.PlanHash]; ok {
			continue
		}
		if info, ok := e.plans.lookup(rb.PlanHash); ok {
			plans[rb.PlanHash] = info
			continue
		}
		plans[rb.PlanHash] = nil
		fetch[rb.ID] = rb.PlanHash
	}
	if len(fetch) > 0 {
		raw, err := tx.Plans(ctx, slices.Collect(maps.Keys(fetch)))
		if err != nil {
			return nil, err
		}
		for id, hash := range fetch {
			b, ok := raw[id]
			if !ok {
				return nil, fmt.Errorf("runbook %s: its plan was not found", id)
			}
			if plans[hash], err = e.plans.decode(hash, b); err != nil {
				return nil, fmt.Errorf("runbook %s: %w", id, err)
			}
		}
	}
	stepsOf := map[uuid.UUID][]*durable.Step{}
	for _, s := range loaded.Steps {
		stepsOf[s.RunbookID] = append(stepsOf[s.RunbookID], s)
	}
	states := make([]*transition, 0, len(loaded.Runbooks))
	byID := map[uuid.UUID]*transition{}
	for _, rb := range loaded.Runbooks {
		t := newTransition(e, now, rb, plans[rb.PlanHash], stepsOf[rb.ID])
		states = append(states, t)
		byID[rb.ID] = t
	}
	byKey := map[string]*transition{}
	for i := range loaded.Invocations {
		inv := loaded.Invocations[i]
		if t := byID[inv.RunbookID]; t != nil {
			t.invocations[inv.StepID] = &inv
			byKey[inv.CorrelationKey] = t
		}
	}
	for _, l := range loaded.Leases {
		if t := byID[l.RunbookID]; t != nil {
			t.leases[l.StepID] = l
		}
	}
	for _, n := range loaded.Notifications {
		if t := byKey[n.CorrelationKey]; t != nil {
			t.notes[n.CorrelationKey] = n
		}
	}
	return states, nil
}

// recordOutcomes applies the outcomes this worker still held leases for.
// An outcome whose lease was reclaimed meanwhile is dropped: another
// attempt owns the step now.
func (e *Engine) recordOutcomes(states []*transition, outcomes []*outcome, held map[int64]int) {
	byID := map[uuid.UUID]*transition{}
	for _, t := range states {
		byID[t.rb.ID] = t
	}
	for _, o := range outcomes {
		t := byID[o.runbookID]
		attempt, ok := held[o.stepID]
		if t == nil || !ok || attempt != o.attempt {
			e.metrics.outcomeDropped()
			continue
		}
		delete(t.leases, o.stepID)
		t.applyOutcome(o)
	}
}

// write persists everything the transitions changed.
func (e *Engine) write(ctx context.Context, tx *durable.Tx, states []*transition, now time.Time) error {
	w := durable.AdvanceWrite{Worker: e.workerID, LeaseUntil: now.Add(e.cfg.LeaseTTL), Finished: map[string][]uuid.UUID{}}
	for _, t := range states {
		for _, s := range t.steps {
			if t.dirty[s.ID] {
				c := durable.ChangeOf(s)
				c.Completed = t.completed[s.ID]
				w.Steps = append(w.Steps, c)
			}
		}
		w.NewInvocations = append(w.NewInvocations, t.newInvocations...)
		w.InvocationUpdates = append(w.InvocationUpdates, t.invocationUpdates...)
		for status, ids := range t.finishInvocations {
			w.Finished[status] = append(w.Finished[status], ids...)
		}
		w.Events = append(w.Events, t.ledger()...)
		w.Receipts = append(w.Receipts, t.receipts...)
		w.Leases = append(w.Leases, t.leaseRequests...)
		w.Processed = append(w.Processed, t.processed...)
		if len(t.compensate) > 0 {
			if w.Compensate == nil {
				w.Compensate = map[uuid.UUID][]string{}
			}
			w.Compensate[t.rb.ID] = t.compensate
		}
		// The runbook row is written only when something about it changed:
		// most transactions of a running runbook change only steps.
		if next := t.nextWake(); t.runbook != nil || t.wakeChanged(next) {
			c := t.runbookChange()
			c.SetWake, c.WakeAt = true, next
			w.Runbooks = append(w.Runbooks, *c)
		}
	}
	leased, err := tx.WriteAdvance(ctx, w)
	if err != nil {
		return err
	}
	if len(leased) != len(w.Leases) {
		// Under the runbook locks no one else can lease these steps; a
		// refusal means the state is not what this worker believes.
		return errLeaseRefused
	}
	return nil
}
