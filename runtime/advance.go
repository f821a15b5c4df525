package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// errLeaseRefused means a lease this worker asked for under the runbook's
// lock was held by someone else: the transaction is abandoned and retried.
var errLeaseRefused = errors.New("runtime: a step's lease was refused under its runbook's lock")

// advance is one transaction over a batch of runbooks, as
// docs/design/runtime.md's "Advancing a runbook" describes, fused so that
// one transaction both records the outcomes of the calls that finished
// and leases the steps that became ready:
//
//   - take the runbooks' advisory locks, in key order;
//   - load their live steps (with their leases), active invocations and
//     waiting notifications; the leases of this worker's finished calls,
//     and expired ones, end with the write, and the expired leases' steps
//     are reclaimed;
//   - run the state machine (round.go), fetching between its phases the
//     step data, receipts and cache entries it asks for;
//   - write it all with its events and receipts, set each runbook's next
//     wake-up, and commit.
//
// Loading and writing are one pipelined round trip each. It returns the
// calls leased, to run after the commit.
func (e *Engine) advance(ctx context.Context, ids []uuid.UUID, outcomes []*machine.Outcome) ([]*machine.PendingCall, error) {
	slices.SortFunc(ids, machine.CompareUUID)
	var done advanced
	err := inTx(ctx, e.store, func(tx driver.Tx) (err error) {
		done, err = e.advanceIn(ctx, tx, ids, machine.Inputs{Outcomes: outcomes}, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.committed(ctx, done)
	return done.calls, nil
}

// wakeUp hands the runbooks a committed transaction made due to a worker:
// straight to this engine's advancers when its worker runs here (no
// NOTIFY, no claim: the work is local); to the other daemons' listeners
// otherwise, with one NOTIFY for any number of wake-ups at a time
// (notifier), and their claims. Nothing is lost if the telling is: the
// runbooks are due in the table, and polling finds them within
// PollInterval. A runbook handed over here and claimed by another worker
// too is advanced twice, under its lock, the second time to no effect.
func (e *Engine) wakeUp(ids ...uuid.UUID) {
	if e.working.Load() != nil {
		items := make([]workItem, len(ids))
		for i, id := range ids {
			items[i] = workItem{runbookID: id}
		}
		e.queue.push(items...)
		return
	}
	e.notifier.poke()
}

// inTx runs fn in a transaction of store, committing when fn returns nil
// and rolling back otherwise. fn must not keep the Tx.
func inTx(ctx context.Context, store driver.Store, fn func(driver.Tx) error) error {
	tx, err := store.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// advanced is what an advance's transaction leaves to do once it commits:
// the calls it leased, and the round whose settled data is now final.
type advanced struct {
	calls   []*machine.PendingCall
	settled *machine.Round
}

// advanceIn is the body of an advance, in a transaction the caller owns:
// the advancers' own, a command's, or a notification's (resumeInPlace).
// ids must be sorted. loaded, when not nil, is the runbooks' state the
// caller read already under their locks (a notification's insert reads
// it with the insert); otherwise it is loaded here, every step with
// allSteps. Nothing it returns may be used unless the transaction
// commits.
func (e *Engine) advanceIn(ctx context.Context, tx driver.Tx, ids []uuid.UUID, in machine.Inputs, loaded *driver.AdvanceState) (advanced, error) {
	now := e.cfg.Clock()
	if err := tx.LockRunbooks(ctx, ids); err != nil {
		return advanced{}, err
	}
	if loaded == nil {
		var err error
		if loaded, err = tx.LoadForAdvance(ctx, ids, driver.LoadOptions{AllSteps: len(in.Commands) > 0, Day: now, AllSpend: e.machine.Policy().CapsTenantSpend()}); err != nil {
			return advanced{}, err
		}
	}
	if len(in.Commands) > 0 {
		// A command names its runbook; another tenant's is as if it were
		// not there. The caller words the not-found once the transaction
		// has ended (runCommand).
		if len(loaded.Runbooks) != len(ids) {
			return advanced{}, driver.ErrNotFound
		}
		for _, rb := range loaded.Runbooks {
			if in.Commands[rb.ID] != nil && !sees(ctx, rb.Tenant) {
				return advanced{}, driver.ErrNotFound
			}
		}
	}
	plans, err := e.plansOf(ctx, tx, loaded.Runbooks)
	if err != nil {
		return advanced{}, err
	}
	keys, err := e.derivationIn(ctx, tx)
	if err != nil {
		return advanced{}, err
	}
	m := e.machine
	m.Keys = keys
	m.DeferExpansion = in.DeferExpansion
	r, dropped, err := machine.NewRound(&m, now, loaded, plans, in)
	for range dropped {
		e.metrics.outcomeDropped()
	}
	if err != nil {
		return advanced{}, err
	}
	var data map[driver.StepKey]driver.StepData
	if missing := r.WantedData(e.data.lru.Get); len(missing) > 0 {
		if data, err = tx.StepDataByKey(ctx, missing); err != nil {
			return advanced{}, err
		}
		for _, k := range missing {
			e.data.remember(k, data[k])
		}
	}
	r.SupplyData(data)
	// Open waits under shared keys are read before receipts: a twin that
	// finds neither knows its first wait ended without one (machine's
	// twins.go).
	if keys := r.TwinKeys(); len(keys) > 0 {
		open, err := tx.OpenWaitsByKey(ctx, keys)
		if err != nil {
			return advanced{}, err
		}
		r.SupplyTwins(open)
	}
	if keys := r.ReceiptKeys(); len(keys) > 0 {
		receipts, err := tx.Receipts(ctx, keys)
		if err != nil {
			return advanced{}, err
		}
		r.SupplyReceipts(receipts)
	}
	for tenant, keys := range r.CacheKeys() {
		cached, err := tx.CacheEntries(ctx, tenant, keys)
		if err != nil {
			return advanced{}, err
		}
		r.SupplyCache(cached)
	}
	w, leasedCalls, err := r.Write()
	if err != nil {
		return advanced{}, err
	}
	// Written even when the round changed nothing: the leases found
	// released or expired end with the write (an outcome that a
	// cancelled step ignores still gives its lease up).
	leased, err := tx.WriteAdvance(ctx, w)
	if err != nil {
		return advanced{}, err
	}
	if len(leased) != len(w.Leases) {
		// Under the runbook locks no one else can lease these steps; a
		// refusal means the state is not what this worker believes.
		return advanced{}, errLeaseRefused
	}
	return advanced{calls: leasedCalls, settled: r}, nil
}

// committed keeps, once an advance has committed, what its steps resolved
// and returned: it is final; and it traces what finished.
func (e *Engine) committed(ctx context.Context, done advanced) {
	if len(done.settled.Due) > 0 {
		e.wakeUp(done.settled.Due...)
	}
	e.emitSpans(ctx, done.settled)
	for _, t := range done.settled.States {
		e.askToStopAborted(ctx, t.Rb, t.Plan(), t.Steps, t.AbortedWaits)
		if t.Grown != nil && t.Runbook != nil {
			// The plan an expansion grew is stored now; the next round
			// finds it here rather than fetching and decoding it again.
			e.plans.keep(t.Grown.Plan.PlanHash, t.Grown, len(t.Runbook.Plan))
		}
		for _, s := range t.Steps {
			if t.Dirty[s.ID] && (s.Result != nil || s.ResolvedArgs != nil) {
				e.data.remember(driver.StepKey{RunbookID: s.RunbookID, Key: s.Key}, driver.StepData{ResolvedArgs: s.ResolvedArgs, Result: s.Result})
			}
		}
	}
}

// plansOf returns the decoded plans of the loaded runbooks, by plan hash,
// fetching and decoding those the cache lacks.
func (e *Engine) plansOf(ctx context.Context, tx driver.Tx, runbooks []*driver.Runbook) (map[string]*machine.PlanInfo, error) {
	plans := map[string]*machine.PlanInfo{}
	fetch := map[uuid.UUID]string{} // one runbook for each plan to fetch
	for _, rb := range runbooks {
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
	if len(fetch) == 0 {
		return plans, nil
	}
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
	return plans, nil
}
