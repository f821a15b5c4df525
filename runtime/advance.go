package runtime

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/durable"
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
//     notifications;
//   - record outcomes, consume notifications, time out parks, reclaim
//     abandoned steps, make due retries, dependents and approvals ready,
//     hold gated steps, lease what can start, settle finished runbooks and
//     run compensations;
//   - write it all with its events and receipts, set each runbook's next
//     wake-up, and commit.
//
// It returns the calls leased, to run after the commit.
func (e *Engine) advance(ctx context.Context, ids []uuid.UUID, outcomes []*outcome) ([]*pendingCall, error) {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	var calls []*pendingCall
	err := e.store.InTx(ctx, func(tx *durable.Tx) error {
		calls = nil
		now := time.Now()
		if err := tx.LockRunbooks(ctx, ids); err != nil {
			return err
		}
		states, err := e.load(ctx, tx, ids, now)
		if err != nil {
			return err
		}
		if err := e.recordOutcomes(ctx, tx, states, outcomes); err != nil {
			return err
		}
		var ready, compensations []*prepared
		var keys []durable.ReceiptKey
		for _, t := range states {
			if t.executing() {
				t.consumeNotifications()
				t.timeouts()
				t.retries()
				t.propagate()
				t.gates()
			}
			t.reclaim()
			steps := t.prepare()
			ready = append(ready, steps...)
			for _, p := range steps {
				keys = append(keys, p.receipt)
			}
			if c := t.prepareCompensation(); c != nil {
				compensations = append(compensations, c)
				keys = append(keys, c.receipt)
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
		if err := e.write(ctx, tx, states); err != nil {
			return err
		}
		for _, t := range states {
			calls = append(calls, t.calls...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return calls, nil
}

// load reads the runbooks' state under their locks.
func (e *Engine) load(ctx context.Context, tx *durable.Tx, ids []uuid.UUID, now time.Time) ([]*transition, error) {
	rbs, err := tx.Runbooks(ctx, ids)
	if err != nil {
		return nil, err
	}
	plans := map[uuid.UUID]*planInfo{}
	var missing []uuid.UUID
	for _, rb := range rbs {
		if info, ok := e.plans.lookup(rb.ID, rb.Version); ok {
			plans[rb.ID] = info
		} else {
			missing = append(missing, rb.ID)
		}
	}
	if len(missing) > 0 {
		raw, err := tx.Plans(ctx, missing)
		if err != nil {
			return nil, err
		}
		for _, rb := range rbs {
			if b, ok := raw[rb.ID]; ok {
				if plans[rb.ID], err = e.plans.decode(rb.ID, rb.Version, b); err != nil {
					return nil, err
				}
			}
		}
	}
	steps, err := tx.Steps(ctx, ids)
	if err != nil {
		return nil, err
	}
	stepsOf := map[uuid.UUID][]*durable.Step{}
	for _, s := range steps {
		stepsOf[s.RunbookID] = append(stepsOf[s.RunbookID], s)
	}
	invocations, err := tx.ActiveInvocations(ctx, ids)
	if err != nil {
		return nil, err
	}
	leases, err := tx.ActiveLeases(ctx, ids)
	if err != nil {
		return nil, err
	}
	states := make([]*transition, 0, len(rbs))
	byID := map[uuid.UUID]*transition{}
	for _, rb := range rbs {
		t := newTransition(e, now, rb, plans[rb.ID], stepsOf[rb.ID])
		states = append(states, t)
		byID[rb.ID] = t
	}
	var keys []string
	byKey := map[string]*transition{}
	for i := range invocations {
		inv := invocations[i]
		if t := byID[inv.RunbookID]; t != nil {
			t.invocations[inv.StepID] = &inv
			keys = append(keys, inv.CorrelationKey)
			byKey[inv.CorrelationKey] = t
		}
	}
	for _, l := range leases {
		if t := byID[l.RunbookID]; t != nil {
			if l.ExpiresAt.After(now) {
				t.leases[l.StepID] = l
			}
		}
	}
	// Expired leases are reclaimed: exactly once, even against another
	// worker doing the same.
	if _, err := tx.ReclaimExpiredLeases(ctx, ids, now); err != nil {
		return nil, err
	}
	notes, err := tx.ReceivedNotifications(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		byKey[n.CorrelationKey].notes[n.CorrelationKey] = n
	}
	return states, nil
}

// recordOutcomes releases this worker's leases for the finished calls and
// applies the outcomes it still held leases for. An outcome whose lease
// was reclaimed meanwhile is dropped: another attempt owns the step now.
func (e *Engine) recordOutcomes(ctx context.Context, tx *durable.Tx, states []*transition, outcomes []*outcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	stepIDs := make([]int64, len(outcomes))
	for i, o := range outcomes {
		stepIDs[i] = o.stepID
	}
	held, err := tx.ReleaseLeases(ctx, e.workerID, stepIDs)
	if err != nil {
		return err
	}
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
	return nil
}

// write persists everything the transitions changed.
func (e *Engine) write(ctx context.Context, tx *durable.Tx, states []*transition) error {
	var (
		changes   []durable.StepChange
		events    []durable.Event
		receipts  []durable.Receipt
		leaseReqs []durable.LeaseRequest
		processed []int64
		finishes  = map[string][]uuid.UUID{}
	)
	for _, t := range states {
		for _, s := range t.steps {
			if t.dirty[s.ID] {
				c := durable.ChangeOf(s)
				c.Completed = t.completed[s.ID]
				changes = append(changes, c)
			}
		}
		events = append(events, t.events...)
		receipts = append(receipts, t.receipts...)
		leaseReqs = append(leaseReqs, t.leaseRequests...)
		processed = append(processed, t.processed...)
		for status, ids := range t.finishInvocations {
			finishes[status] = append(finishes[status], ids...)
		}
	}
	// Invocations first: the steps that park refer to them, and the
	// correlation lock they take orders the park against a notification.
	for _, t := range states {
		for _, inv := range t.newInvocations {
			if _, _, err := tx.InsertInvocation(ctx, inv); err != nil {
				return err
			}
		}
		for _, u := range t.invocationUpdates {
			if err := tx.UpdateInvocation(ctx, u.id, u.externalID, u.timeoutAt, u.context); err != nil {
				return err
			}
		}
	}
	for status, ids := range finishes {
		if err := tx.FinishInvocations(ctx, ids, status); err != nil {
			return err
		}
	}
	if err := tx.UpdateSteps(ctx, changes); err != nil {
		return err
	}
	if len(leaseReqs) > 0 {
		got, err := tx.AcquireLeases(ctx, e.workerID, time.Now().Add(e.cfg.LeaseTTL), leaseReqs)
		if err != nil {
			return err
		}
		if len(got) != len(leaseReqs) {
			// Under the runbook locks no one else can lease these steps;
			// a refusal means the state is not what this worker believes.
			return errLeaseRefused
		}
	}
	if len(processed) > 0 {
		if err := tx.MarkNotifications(ctx, processed, "processed"); err != nil {
			return err
		}
	}
	if err := tx.WriteReceipts(ctx, receipts); err != nil {
		return err
	}
	if err := tx.AppendEvents(ctx, events); err != nil {
		return err
	}
	for _, t := range states {
		c := t.runbookChange()
		c.SetWake, c.WakeAt = true, t.nextWake()
		if err := tx.UpdateRunbook(ctx, *c); err != nil {
			return err
		}
	}
	return nil
}
