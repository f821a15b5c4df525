package machine

import (
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Round is the state machine of one transaction over a batch of runbooks:
// from what the transaction loaded and the inputs it brings (the outcomes
// of this worker's calls, a command someone gave, and the clock), to the
// writes the transaction makes and the calls it leases. Every change to a
// runbook goes through a round and leaves through its write. It reads
// nothing itself. Between its phases the caller fetches what the next
// phase asks for (step data, receipts, cache entries); a test hands it the
// same from maps.
//
//	r, err := newRound(m, now, loaded, plans, in) // leases, outcomes, the command; notifications, timeouts, retries, readiness, gates, reclaims
//	r.supplyData(fetch(r.wantedData(cached)))      // predecessors' results, compensations' inputs
//	r.supplyReceipts(fetch(r.receiptKeys()))       // effects that already happened
//	r.supplyCache(fetch(r.cacheKeys()))            // results that may be reused
//	w, calls, err := r.write()                     // start, settle, and everything to write
type Round struct {
	m      *Machine
	now    time.Time
	States []*transition
	byID   map[uuid.UUID]*transition
	// hold leaves ready steps for the workers instead of starting them
	// here: a command given where no worker runs.
	hold bool
	// endLeases are the leases that end with the write: released by the
	// outcomes, or expired.
	endLeases []int64
	// Due are the runbooks a held round leaves due now: once it has
	// committed, the workers are told (Engine.wakeUp).
	Due []uuid.UUID

	ready         []*prepared
	compensations map[uuid.UUID]*prepared
	escalations   map[uuid.UUID]*prepared
	receipts      map[rbtype.ReceiptKey]rbtype.Receipt
	cached        map[string]rbtype.CacheEntry
}

// Inputs are what moves the runbooks of a round besides the clock.
type Inputs struct {
	// Outcomes are what this worker's calls came back with.
	Outcomes []*Outcome
	// Commands are what people and programs asked of runbooks, at most
	// one each (command.go).
	Commands map[uuid.UUID]Command
	// Hold: see round.hold.
	Hold bool
	// DeferExpansion: see Machine.DeferExpansion.
	DeferExpansion bool
}

// NewRound builds each runbook's transition from what was loaded (plans
// gives each plan by hash), sorts the loaded leases into those that end
// and those still held, records the outcomes this worker still held
// leases for, applies the commands, and runs the first phase:
// notifications, timeouts, retries, readiness and gates, and the reclaim
// of abandoned steps. It returns the outcomes it dropped, whose leases
// were reclaimed meanwhile, and the first command's refusal, which
// abandons the whole round.
func NewRound(m *Machine, now time.Time, loaded *rbtype.AdvanceState, plans map[string]*PlanInfo, in Inputs) (*Round, []*Outcome, error) {
	r := &Round{m: m, now: now, byID: map[uuid.UUID]*transition{}, compensations: map[uuid.UUID]*prepared{},
		escalations: map[uuid.UUID]*prepared{}, hold: in.Hold}
	stepsOf := map[uuid.UUID][]*rbtype.Step{}
	for _, s := range loaded.Steps {
		stepsOf[s.RunbookID] = append(stepsOf[s.RunbookID], s)
	}
	book := &BudgetBook{Pol: m.Policy(), Loaded: loaded.Budgets}
	for _, rb := range loaded.Runbooks {
		t := newTransition(m, now, rb, plans[rb.PlanHash], stepsOf[rb.ID])
		t.book = book
		r.States = append(r.States, t)
		r.byID[rb.ID] = t
	}
	book.states = r.States
	byKey := map[string]*transition{}
	for i := range loaded.Invocations {
		inv := loaded.Invocations[i]
		if t := r.byID[inv.RunbookID]; t != nil {
			t.invocations[inv.StepID] = &inv
			byKey[inv.CorrelationKey] = t
		}
	}
	for _, n := range loaded.Notifications {
		// A key's notifications are kept per tenant (migration 019):
		// the runbook's tenant's and no tenant's resolve its wait, the
		// first to arrive (they are loaded in order) before the other;
		// another tenant's never.
		t := byKey[n.CorrelationKey]
		if t == nil || (n.Tenant != "" && n.Tenant != t.Rb.Tenant) {
			continue
		}
		if _, first := t.notes[n.CorrelationKey]; !first {
			t.notes[n.CorrelationKey] = n
		}
	}
	released := r.sortLeases(loaded.Steps, in.Outcomes)
	dropped := r.recordOutcomes(in.Outcomes, released)
	for _, t := range r.States {
		if c := in.Commands[t.Rb.ID]; c != nil {
			if err := c.apply(t); err != nil {
				return nil, dropped, err
			}
		}
		if t.executing() {
			t.consumeNotifications()
			t.timeouts()
			t.retries()
			t.propagate()
			t.gates()
		}
		t.reclaim()
	}
	return r, dropped, nil
}

// sortLeases splits the loaded steps' leases into those the outcomes
// release (held by this worker for the attempt each outcome is for,
// expired or not: no one has taken the step since), which it returns by
// step with their attempts; those that expired; and those still held,
// which the transitions keep. The first two end with the write. Under the
// runbooks' locks, an expired lease is seen once: its step is reclaimed
// exactly once.
func (r *Round) sortLeases(steps []*rbtype.Step, outcomes []*Outcome) (released map[int64]int) {
	releasing := make(map[int64]int, len(outcomes))
	for _, o := range outcomes {
		releasing[o.StepID] = o.Attempt
	}
	released = map[int64]int{}
	for _, s := range steps {
		l := s.Lease
		if l == nil {
			continue
		}
		if attempt, ok := releasing[s.ID]; ok && l.WorkerID == r.m.Worker && l.Attempt == attempt {
			released[s.ID] = attempt
			r.endLeases = append(r.endLeases, s.ID)
			continue
		}
		if l.ExpiresAt.Before(r.now) {
			r.endLeases = append(r.endLeases, s.ID)
			if t := r.byID[s.RunbookID]; t != nil && s.Status == rbtype.StepCancelled {
				// A cancelled step's call whose worker died: no outcome
				// will give its reservation back (recordOutcomes), so its
				// lease's end does (budget_reserve.go).
				t.release(s)
			}
			continue
		}
		if t := r.byID[s.RunbookID]; t != nil {
			t.leases[s.ID] = *l
		}
	}
	return released
}

// recordOutcomes applies the outcomes this worker still held leases for
// (held maps a released lease's step to its attempt). An outcome whose
// lease was reclaimed meanwhile is dropped and returned: another attempt
// owns the step now.
func (r *Round) recordOutcomes(outcomes []*Outcome, held map[int64]int) (dropped []*Outcome) {
	for _, o := range outcomes {
		t := r.byID[o.RunbookID]
		attempt, ok := held[o.StepID]
		if t == nil || !ok || attempt != o.Attempt {
			dropped = append(dropped, o)
			continue
		}
		delete(t.leases, o.StepID)
		if o.Purpose == callStep {
			if s := t.byID[o.StepID]; s != nil {
				t.release(s) // its lease ends with its outcome
			}
		}
		t.applyOutcome(o)
	}
	return dropped
}

// WantedData lists the steps whose resolved arguments and results the next
// phase needs and the loaded rows leave out: the results of the completed
// predecessors of ready steps (for their references), and everything of
// steps whose compensation is due. cached answers what it can; the rest is
// returned, to be fetched and handed to supplyData.
func (r *Round) WantedData(cached func(rbtype.StepKey) (rbtype.StepData, bool)) []rbtype.StepKey {
	var missing []rbtype.StepKey
	for _, t := range r.States {
		want := func(key string, whole bool) {
			if _, have := t.data[key]; have {
				return
			}
			k := rbtype.StepKey{RunbookID: t.Rb.ID, Key: key}
			if d, ok := cached(k); ok && d.Result != nil && (!whole || d.ResolvedArgs != nil) {
				t.data[key] = d
				return
			}
			t.data[key] = rbtype.StepData{} // asked for; filled by supplyData
			missing = append(missing, k)
		}
		executing := t.executing()
		predsOf := func(s *rbtype.Step) {
			for _, p := range t.plan.preds[s.Key] {
				switch ps := t.byKey[p]; {
				case ps != nil && ps.Status == rbtype.StepComplete && ps.Result != nil:
					// Completed in this round (a loaded step's result is
					// not read otherwise): prepare takes its result from
					// the step, and the table does not have it yet.
				case ps == nil || ps.Status == rbtype.StepComplete:
					want(p, false)
				}
			}
			if t.isHookStep(s) {
				for _, k := range t.hookRefs(s) {
					want(k, false)
				}
			}
		}
		for _, s := range t.Steps {
			switch {
			case s.Status == rbtype.StepReady && executing:
				if s.Attempt > 0 {
					// Starting again: the arguments it held, to keep them
					// if its new ones differ (outcome.go).
					want(s.Key, true)
				}
				predsOf(s)
			case s.CompensationStatus.Due(), s.EscalationStatus.Due():
				want(s.Key, true)
			}
		}
		for _, s := range t.condDue {
			predsOf(s)
		}
		// The lists of loops to expand, and the results of templates'
		// instances, once they have all ended (loops.go).
		for _, k := range t.loopsDue() {
			want(k, false)
		}
		for _, k := range t.templatesDue() {
			want(k, false)
		}
	}
	return missing
}

// SupplyData hands over the step data wantedData asked for, then prepares
// the ready steps and the next compensation: their arguments resolved,
// their idempotency keys derived.
func (r *Round) SupplyData(data map[rbtype.StepKey]rbtype.StepData) {
	for k, d := range data {
		if t := r.byID[k.RunbookID]; t != nil {
			t.data[k.Key] = d
		}
	}
	for _, t := range r.States {
		// Loaded steps get theirs: a compensation reads the step's own.
		for _, s := range t.Steps {
			if d, ok := t.data[s.Key]; ok {
				if s.ResolvedArgs == nil {
					s.ResolvedArgs = d.ResolvedArgs
				}
				if s.Result == nil {
					s.Result = d.Result
				}
			}
		}
		// With their data in hand: loops expand, templates end, and
		// conditions are decided, before anything starts.
		t.later = t.expandLoops()
		t.later = t.endTemplates() || t.later
		t.decideConditions()
		if t.executing() {
			t.gates()
		}
		if r.hold {
			continue // the workers start what is ready
		}
		r.ready = append(r.ready, t.prepare()...)
		if c := t.prepareCompensation(); c != nil {
			r.compensations[t.Rb.ID] = c
		}
		if e := t.prepareEscalation(); e != nil {
			r.escalations[t.Rb.ID] = e
		}
	}
}

// ReceiptKeys lists the receipts that could complete prepared steps,
// escalations and compensations without a call, and those that settle
// steps in doubt (in_doubt.go): every key of a call with an effect, by key
// whatever happened to the runbook that wrote it (receipt_lookup.go).
func (r *Round) ReceiptKeys() []rbtype.ReceiptKey {
	var keys []rbtype.ReceiptKey
	for _, p := range r.ready {
		if looksUpReceipt(&p.exec) {
			keys = append(keys, p.receipt)
		}
	}
	return append(keys, r.verbCallReceiptKeys()...)
}

// SupplyReceipts hands over the receipts found for receiptKeys.
func (r *Round) SupplyReceipts(receipts map[rbtype.ReceiptKey]rbtype.Receipt) { r.receipts = receipts }

// CacheKeys lists the result cache keys of prepared steps to look up, by
// tenant: two tenants never share an entry.
func (r *Round) CacheKeys() map[string][]string {
	keys := map[string][]string{}
	for _, p := range r.ready {
		if p.cacheKey != "" && p.cacheLookup {
			tenant := r.byID[p.step.RunbookID].Rb.Tenant
			keys[tenant] = append(keys[tenant], p.cacheKey)
		}
	}
	return keys
}

// SupplyCache hands over the cache entries found for cacheKeys.
func (r *Round) SupplyCache(entries map[string]rbtype.CacheEntry) {
	if r.cached == nil {
		r.cached = map[string]rbtype.CacheEntry{}
	}
	maps.Copy(r.cached, entries)
}

// Write starts the prepared steps (completing those with receipts, leasing
// the rest), settles finished runbooks, and returns everything the
// transaction writes and the calls to make once it commits.
func (r *Round) Write() (rbtype.AdvanceWrite, []*PendingCall, error) {
	byRunbook := map[uuid.UUID][]*prepared{}
	for _, p := range r.ready {
		byRunbook[p.step.RunbookID] = append(byRunbook[p.step.RunbookID], p)
	}
	w := rbtype.AdvanceWrite{Worker: r.m.Worker, LeaseUntil: r.now.Add(r.m.LeaseTTL), Finished: map[rbtype.InvocationStatus][]uuid.UUID{},
		EndLeases: r.endLeases}
	var calls []*PendingCall
	for _, t := range r.States {
		t.settleDoubts(r.receipts)
		t.settleTwins(r.receipts)
		t.start(byRunbook[t.Rb.ID], r.receipts, r.cached)
		t.releaseUnstartedReclaims()
		t.startCompensation(r.compensations[t.Rb.ID], r.receipts)
		t.startEscalation(r.escalations[t.Rb.ID], r.receipts)
		// Steps that completed inline may have readied others, which start
		// here too when they need nothing read (inline.go).
		for depth := 0; t.inlined > 0 && depth < inlineDepth; depth++ {
			t.inlined = 0
			t.propagate()
			t.gates()
			t.start(t.prepareReadied(), nil, nil)
		}
		// Steps that completed from receipts or inline may be lists to
		// expand or a template's last instances, and may have readied
		// others; those start on the next round, which their wake-up
		// schedules.
		t.later = t.expandLoops() || t.later
		t.later = t.endTemplates() || t.later
		t.propagateAll()
		t.grow()
		t.settle()
		t.settleHooks()
		if t.err != nil {
			return rbtype.AdvanceWrite{}, nil, t.err
		}
		if t.writeTo(&w) && r.hold {
			r.Due = append(r.Due, t.Rb.ID)
		}
		calls = append(calls, t.calls...)
	}
	return w, calls, nil
}

// writeTo adds what the transition changed to w, and says whether it
// leaves the runbook due now.
func (t *transition) writeTo(w *rbtype.AdvanceWrite) (due bool) {
	for _, s := range t.Steps {
		if t.Dirty[s.ID] {
			c := s.Change()
			c.Completed = t.completed[s.ID]
			c.Ledger = t.implicitAttempt(s) // ledger_implicit.go
			w.Steps = append(w.Steps, c)
		}
	}
	w.NewInvocations = append(w.NewInvocations, t.newInvocations...)
	w.InvocationUpdates = append(w.InvocationUpdates, t.invocationUpdates...)
	for status, ids := range t.finishInvocations {
		w.Finished[status] = append(w.Finished[status], ids...)
	}
	w.Events = append(w.Events, t.ledger()...)
	w.Mutations = append(w.Mutations, t.mutations...)
	w.Trust = append(w.Trust, t.trust...)
	w.Receipts = append(w.Receipts, t.receipts...)
	w.Cache = append(w.Cache, t.cacheWrites...)
	w.Attempts = t.appendStoredAttempts(w.Attempts)
	w.Reservations = append(w.Reservations, t.reservations...)
	w.Unreserved = append(w.Unreserved, t.unreserved...)
	w.Outcomes = append(w.Outcomes, t.outcomes...)
	w.Arguments = append(w.Arguments, t.arguments...)
	w.Leases = append(w.Leases, t.leaseRequests...)
	w.Processed = append(w.Processed, t.processed...)
	if len(t.compensate) > 0 {
		if w.Compensate == nil {
			w.Compensate = map[uuid.UUID][]string{}
		}
		w.Compensate[t.Rb.ID] = t.compensate
	}
	if len(t.newSteps) > 0 {
		if w.NewSteps == nil {
			w.NewSteps, w.NewEdges = map[uuid.UUID][]rbtype.NewStep{}, map[uuid.UUID][]rbtype.Edge{}
		}
		w.NewSteps[t.Rb.ID], w.NewEdges[t.Rb.ID] = t.newSteps, t.newEdges
	}
	// The runbook row is written only when something about it changed:
	// most transactions of a running runbook change only steps.
	next := t.boundByLeases(t.nextWake())
	if t.Runbook != nil || t.wakeChanged(next) {
		c := t.runbookChange()
		c.SetWake, c.WakeAt = true, next
		w.Runbooks = append(w.Runbooks, *c)
	}
	return next != nil && !next.After(t.Now)
}

// CompareUUID orders runbook ids as their advisory locks are taken.
func CompareUUID(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) }
