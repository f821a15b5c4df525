package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/verbs"
)

// The state machine's tests run it as the advance does, phase by phase,
// over rows held in memory instead of PostgreSQL: a fixture is the tables
// of one runbook, an advance loads what LoadForAdvance would, runs a round,
// and applies the write back as WriteAdvance would. The PostgreSQL tests
// (paths_test.go, workers_test.go) prove the transactions; these prove the
// transitions, one state change at a time.

// machineVerbs is the catalogue the state machine's tests compile against:
// only built-in handlers, so that no handler need run.
const machineVerbs = `
- name: echo
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: pure
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure}
- name: pure-cached
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure, cache: {policy: reuse}}
- name: send
  domain: m
  execution:
    kind: sync
    handler: core.echo
    side_effects: external_call
    on_failure: isolate
    retry: {max_attempts: 3, backoff: exponential, base_delay: PT1S, max_delay: PT10S}
- name: send-once
  domain: m
  execution:
    kind: sync
    handler: core.echo
    side_effects: external_call
    idempotency: {scope: global}
- name: wait
  domain: m
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H}
- name: wait-escalate
  domain: m
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H, on_timeout: escalate}
- name: wait-remind
  domain: m
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts:
      park_timeout: PT1H
      on_timeout: escalate
      escalation: {verb: m.page, args: {who: "@args.who"}}
      remind_after: PT20M
- name: page
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: sleep
  domain: m
  execution:
    kind: durable
    handler: timer.sleep
    side_effects: none
    params: {duration: PT10M}
    timeouts: {park_timeout: PT1H}
- name: approve
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
- name: undo
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: reserve
  domain: m
  execution:
    kind: sync
    handler: core.echo
    side_effects: external_call
    compensation: {verb: m.undo, args: {what: "@args.what"}}
  input_schema:
    properties:
      what: {type: string}
- name: call
  domain: m
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: keyless
  domain: m
  execution: {kind: sync, handler: keyless.call, side_effects: external_call}
- name: wire
  domain: m
  risk: high
  execution: {kind: sync, handler: core.echo, side_effects: external_call, level: guarded}
- name: peek
  domain: m
  policy_tags: [read_only]
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: hold
  domain: m
  execution:
    kind: sync
    handler: core.echo
    side_effects: internal_db
    compensation: {verb: m.undo, args: {what: "@args.what"}}
  input_schema:
    properties:
      what: {type: string}
- name: draft
  domain: m
  outcome: {type: Draft.Note, status: draft}
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: remind
  domain: m
  cost: {usd: 0.07}
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: ghost
  domain: m
  execution:
    kind: sync
    handler: gone.handler
    side_effects: none
    retry: {max_attempts: 2, backoff: fixed, base_delay: PT1S, max_delay: PT1S}
`

// machineCatalogue compiles machineVerbs against the built-in handlers and
// one handler (gone.handler) that the machine under test will not have.
func machineCatalogue(t *testing.T) *registry.Catalogue {
	t.Helper()
	handlers := machineHandlers(t)
	require.NoError(t, handlers.Register(registry.HandlerSpec{Name: "gone.handler", Kind: rbtype.KindSync}, handler.HandlerFunc(nil)))
	defs, diags := verbs.Parse("machine.yaml", []byte(TagUnattended(machineVerbs)))
	require.Empty(t, diags)
	cat, diags := registry.New(defs, handlers.Specs())
	require.Empty(t, diags)
	return cat
}

// machineHandlers are the built-in handlers and keyless.call, whose
// outside system ignores idempotency keys.
func machineHandlers(t *testing.T) *Handlers {
	t.Helper()
	h := NewHandlers(builtin.Deps{})
	require.NoError(t, h.Register(registry.HandlerSpec{Name: "keyless.call", Kind: rbtype.KindSync}, keylessHandler{}))
	return h
}

// keylessHandler is a handler whose outside system takes no idempotency
// key.
type keylessHandler struct{}

func (keylessHandler) Call(context.Context, *handler.Call) (handler.Result, error) {
	return handler.Complete(nil), nil
}
func (keylessHandler) IgnoresIdempotencyKey() bool { return true }

// fixture is one runbook's rows, held in memory.
type fixture struct {
	t        *testing.T
	cat      *registry.Catalogue
	m        *machine.Machine
	now      time.Time
	plan     *machine.PlanInfo
	rb       *driver.Runbook
	steps    []*driver.Step // all of them, in plan order
	invs     map[uuid.UUID]driver.Invocation
	leases   map[int64]driver.Lease
	notes    []driver.Notification
	receipts map[driver.ReceiptKey]driver.Receipt
	events   []string // "TYPE step" of every event written, in order
	mode     rbtype.Mode
	// fetched are the step data the last advance read from the table
	// (wantedData's answer).
	fetched []string
	// mutations are the mutation rows written, and signalled counts the
	// runbooks held rounds left due for the workers.
	mutations []driver.Mutation
	signalled int
	// pol is the policy in force; budgets the tenants' budgets set and
	// spend, as the load reads them, kept as WriteAdvance keeps them.
	pol     *policy.Policy
	budgets map[string]driver.TenantBudget
}

// newFixture compiles source and stores it as a new runbook, every step
// pending, at a fixed time.
func newFixture(t *testing.T, source string, inputs map[string]any) *fixture {
	t.Helper()
	return newFixtureIn(t, machineCatalogue(t), source, inputs)
}

// newFixtureIn is newFixture compiling against cat.
func newFixtureIn(t *testing.T, cat *registry.Catalogue, source string, inputs map[string]any) *fixture {
	t.Helper()
	handlers := machineHandlers(t)
	plan, diags := compiler.CompileSource("case.rbk", []byte(source), cat)
	require.False(t, diags.HasErrors(), "%v", diags)
	raw, err := json.Marshal(orEmpty(inputs))
	require.NoError(t, err)
	f := &fixture{
		t: t, cat: cat, now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), plan: machine.NewPlanInfo(plan),
		rb: &driver.Runbook{ID: uuid.MustParse("00000000-0000-5000-8000-000000000001"), PlanHash: plan.PlanHash,
			Inputs: raw, Status: rbtype.RunbookExecuting, Mode: rbtype.ModeExecute},
		invs: map[uuid.UUID]driver.Invocation{}, leases: map[int64]driver.Lease{},
		receipts: map[driver.ReceiptKey]driver.Receipt{},
	}
	f.m = &machine.Machine{Worker: "w1", LeaseTTL: 30 * time.Second, CallbackURL: "http://rbd.test/v1/notifications",
		Handler: handlers.lookup, Observe: machine.NoObserver{}, Policy: func() *policy.Policy { return f.pol },
		Keys: &machine.Derivation{Key: []byte("machine-fixture-derivation-key-32")}}
	f.pol, f.budgets = UnattendedPolicy(""), map[string]driver.TenantBudget{}
	f.rb.Tenant = DefaultTenant
	f.m.Limits.Defaults()
	rows, err := machine.NewSteps(plan.Steps, 0)
	require.NoError(t, err)
	for i, r := range rows {
		f.steps = append(f.steps, &driver.Step{ID: int64(i + 1), RunbookID: f.rb.ID, Key: r.Key, Position: r.Position,
			Verb: r.Verb, Gate: r.Gate, StepState: driver.StepState{Status: rbtype.StepPending}})
	}
	return f
}

// dryRun makes the runbook a dry run.
func (f *fixture) dryRun() *fixture {
	f.rb.Mode = rbtype.ModeDryRun
	return f
}

// step returns a step's row by key.
func (f *fixture) step(key string) *driver.Step {
	f.t.Helper()
	for _, s := range f.steps {
		if s.Key == key {
			return s
		}
	}
	f.t.Fatalf("no step %q", key)
	return nil
}

// live is what LoadForAdvance reads of a step: all but the plainly
// completed ones.
func live(s *driver.Step) bool {
	return s.Status != rbtype.StepComplete || s.Simulated || s.CompensationStatus.Due()
}

// advance runs one advance at the fixture's clock: it loads as
// LoadForAdvance does (copies, as a query would return), runs the round
// with the outcomes, answers its requests for data and receipts from the
// rows, and applies the write. It returns the write and the calls leased.
func (f *fixture) advance(outcomes ...*machine.Outcome) (driver.AdvanceWrite, []*machine.PendingCall) {
	f.t.Helper()
	w, calls, err := f.run(machine.Inputs{Outcomes: outcomes}, false)
	require.NoError(f.t, err)
	return w, calls
}

// command runs a command's round as the engine does where a worker runs
// (the steps it readies start in it), loading every step, and applies the
// write; a refused command writes nothing.
func (f *fixture) command(c machine.Command) (driver.AdvanceWrite, []*machine.PendingCall, error) {
	f.t.Helper()
	return f.run(machine.Inputs{Commands: map[uuid.UUID]machine.Command{f.rb.ID: c}}, true)
}

// heldCommand is command where no worker runs: the round starts nothing
// and signals the workers.
func (f *fixture) heldCommand(c machine.Command) (driver.AdvanceWrite, error) {
	f.t.Helper()
	w, _, err := f.run(machine.Inputs{Commands: map[uuid.UUID]machine.Command{f.rb.ID: c}, Hold: true}, true)
	return w, err
}

// accepts reports whether the machine accepts a command now, changing
// nothing: the round is built over copies of the rows and never written.
func (f *fixture) accepts(c machine.Command) error {
	_, _, err := machine.NewRound(f.m, f.now, f.load(true), map[string]*machine.PlanInfo{f.rb.PlanHash: f.plan},
		machine.Inputs{Commands: map[uuid.UUID]machine.Command{f.rb.ID: c}})
	return err
}

// load is what LoadForAdvance reads, as copies: the runbook, its live
// steps (every step with allSteps) with their leases, and its active
// invocations; the notifications are run's.
func (f *fixture) load(allSteps bool) *driver.AdvanceState {
	loaded := &driver.AdvanceState{Budgets: maps.Clone(f.budgets)}
	rb := *f.rb
	loaded.Runbooks = []*driver.Runbook{&rb}
	for _, s := range f.steps {
		if allSteps || live(s) {
			c := *s
			c.ResolvedArgs, c.Result = nil, nil // stepStateColumns leaves them out
			if l, ok := f.leases[s.ID]; ok {
				c.Lease = &l
			}
			loaded.Steps = append(loaded.Steps, &c)
		}
	}
	for _, inv := range f.invs {
		if inv.Status == rbtype.InvocationActive {
			loaded.Invocations = append(loaded.Invocations, inv)
		}
	}
	return loaded
}

// run loads, runs one round with in, and applies its write.
func (f *fixture) run(in machine.Inputs, allSteps bool) (driver.AdvanceWrite, []*machine.PendingCall, error) {
	f.t.Helper()
	loaded := f.load(allSteps)
	for _, n := range f.notes {
		if inv, ok := f.invByKey(n.CorrelationKey); ok && inv.Status == rbtype.InvocationActive && n.Status == rbtype.NotificationReceived {
			loaded.Notifications = append(loaded.Notifications, n)
		}
	}
	r, _, err := machine.NewRound(f.m, f.now, loaded, map[string]*machine.PlanInfo{f.rb.PlanHash: f.plan}, in)
	if err != nil {
		return driver.AdvanceWrite{}, nil, err
	}
	missing := r.WantedData(func(driver.StepKey) (driver.StepData, bool) { return driver.StepData{}, false })
	data := map[driver.StepKey]driver.StepData{}
	f.fetched = nil
	for _, k := range missing {
		f.fetched = append(f.fetched, k.Key)
		s := f.step(k.Key)
		data[k] = driver.StepData{ResolvedArgs: s.ResolvedArgs, Result: s.Result}
	}
	r.SupplyData(data)
	found := map[driver.ReceiptKey]driver.Receipt{}
	for _, k := range r.ReceiptKeys() {
		if rc, ok := f.receipts[k]; ok {
			found[k] = rc
		}
	}
	r.SupplyReceipts(found)
	w, calls, err := r.Write()
	require.NoError(f.t, err)
	f.apply(w)
	f.signalled += len(r.Due)
	return w, calls, nil
}

func (f *fixture) invByKey(key string) (driver.Invocation, bool) {
	for _, inv := range f.invs {
		if inv.CorrelationKey == key {
			return inv, true
		}
	}
	return driver.Invocation{}, false
}

// apply writes w into the rows, as WriteAdvance does.
func (f *fixture) apply(w driver.AdvanceWrite) {
	for _, inv := range w.NewInvocations {
		if _, ok := f.invs[inv.InvocationID]; !ok {
			f.invs[inv.InvocationID] = inv
		}
	}
	for _, u := range w.InvocationUpdates {
		inv := f.invs[u.ID]
		if u.TimeoutAt != nil {
			inv.TimeoutAt = *u.TimeoutAt
		}
		if u.Context != nil {
			inv.Context = u.Context
		}
		inv.ExternalID = u.ExternalID
		f.invs[u.ID] = inv
	}
	for status, ids := range w.Finished {
		for _, id := range ids {
			if inv := f.invs[id]; inv.Status == rbtype.InvocationActive {
				inv.Status = status
				f.invs[id] = inv
			}
		}
	}
	for _, c := range w.Steps {
		s := f.stepByID(c.ID)
		resolved, result := s.ResolvedArgs, s.Result
		s.StepState = c.StepState
		if s.ResolvedArgs == nil {
			s.ResolvedArgs = resolved
		}
		if s.Result == nil {
			s.Result = result
		}
		if c.Completed {
			seq := int64(len(f.events) + 1)
			s.CompletionSeq = &seq
		}
	}
	for _, id := range w.EndLeases {
		delete(f.leases, id)
	}
	for _, l := range w.Leases {
		f.leases[l.StepID] = driver.Lease{StepID: l.StepID, RunbookID: l.RunbookID, WorkerID: w.Worker, Attempt: l.Attempt,
			Status: "active", ExpiresAt: w.LeaseUntil}
	}
	for i, n := range f.notes {
		if slices.Contains(w.Processed, n.ID) {
			f.notes[i].Status = rbtype.NotificationProcessed
		}
	}
	for _, rc := range w.Receipts {
		k := driver.ReceiptKey{Handler: rc.Handler, IdempotencyKey: rc.IdempotencyKey}
		if _, ok := f.receipts[k]; !ok {
			f.receipts[k] = rc
		}
	}
	for _, e := range w.Events {
		f.events = append(f.events, eventName(e))
	}
	for _, r := range w.Reservations { // reservations, as queueSpend adds them
		f.rb.Spent.CostUSD = rbtype.Money(f.rb.Spent.CostUSD + r.CostUSD)
		tb := f.budgets[r.Tenant]
		tb.Day.CostUSD, tb.Month.CostUSD = rbtype.Money(tb.Day.CostUSD+r.CostUSD), rbtype.Money(tb.Month.CostUSD+r.CostUSD)
		f.budgets[r.Tenant] = tb
	}
	for _, a := range w.Attempts { // spend, as queueSpend adds it
		sp := machine.SpendOf(a.Usage)
		f.rb.Spent = f.rb.Spent.Add(sp)
		tb := f.budgets[a.Tenant]
		tb.Day, tb.Month = tb.Day.Add(sp), tb.Month.Add(sp)
		f.budgets[a.Tenant] = tb
	}
	f.mutations = append(f.mutations, w.Mutations...)
	for _, n := range w.NewSteps[f.rb.ID] {
		f.steps = append(f.steps, &driver.Step{ID: int64(len(f.steps) + 1), RunbookID: f.rb.ID, Key: n.Key,
			Position: n.Position, Verb: n.Verb, Gate: n.Gate, StepState: driver.StepState{Status: rbtype.StepPending}})
	}
	for _, c := range w.Runbooks {
		if c.Status != nil {
			f.rb.Status = *c.Status
		}
		if c.ErrorCode != nil {
			f.rb.ErrorCode, f.rb.ErrorMessage = *c.ErrorCode, *c.ErrorMessage
		}
		if c.Reopen { // before Finished, as durable's CASE has it: reopened and ended in one round is finished
			f.rb.FinishedAt = nil
		}
		if c.Finished && f.rb.FinishedAt == nil {
			at := f.now
			f.rb.FinishedAt = &at
		}
		if c.SetWake {
			f.rb.WakeAt = c.WakeAt
		}
		if c.Mode != nil {
			f.rb.Mode = *c.Mode
		}
		if c.Plan != nil {
			f.rb.Version, f.rb.Inputs = c.Version, c.Inputs
			f.rb.PlanHash = c.PlanHash
			plan, err := compiler.DecodePlan(c.Plan)
			require.NoError(f.t, err)
			require.Equal(f.t, c.PlanHash, plan.Hash(), "the plan written is the one its hash names")
			f.plan = machine.NewPlanInfo(plan)
		}
	}
	for _, keys := range w.Compensate {
		for _, k := range keys {
			if s := f.step(k); s.Status == rbtype.StepComplete && !s.Simulated {
				s.CompensationStatus = rbtype.CompensationPending
			}
		}
	}
}

func (f *fixture) stepByID(id int64) *driver.Step {
	for _, s := range f.steps {
		if s.ID == id {
			return s
		}
	}
	f.t.Fatalf("no step %d", id)
	return nil
}

// eventName names an event as "TYPE step".
func eventName(e driver.Event) string {
	if e.StepKey == "" {
		return string(e.Type)
	}
	return string(e.Type) + " " + e.StepKey
}

// eventNames are the names of a write's events.
func eventNames(evs []driver.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = eventName(e)
	}
	return out
}

// eventData decodes the data of a write's event by name.
func eventData[T any](t *testing.T, evs []driver.Event, name string) T {
	t.Helper()
	var out T
	for _, e := range evs {
		if eventName(e) == name {
			require.NoError(t, json.Unmarshal(e.Data, &out))
			return out
		}
	}
	t.Fatalf("no event %q in %v", name, eventNames(evs))
	return out
}

// succeed is the outcome of a call that returned value.
func succeed(c *machine.PendingCall, value any) *machine.Outcome {
	b, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	return &machine.Outcome{RunbookID: c.RunbookID, StepID: c.StepID, Attempt: c.Attempt, Purpose: c.Purpose,
		Result: handler.Complete(value), Value: b, IdemKey: c.Call.IdempotencyKey, DryRun: c.DryRun, ArgsHash: c.ArgsHash}
}

// failWith is the outcome of a call that failed with code.
func failWith(c *machine.PendingCall, code rbtype.ErrorCode) *machine.Outcome {
	return &machine.Outcome{RunbookID: c.RunbookID, StepID: c.StepID, Attempt: c.Attempt, Purpose: c.Purpose,
		Err: handler.Errorf(code, "failed with %s", code), IdemKey: c.Call.IdempotencyKey, ArgsHash: c.ArgsHash}
}

// parked is the outcome of a durable call that started its work.
func parked(c *machine.PendingCall, externalID string) *machine.Outcome {
	return &machine.Outcome{RunbookID: c.RunbookID, StepID: c.StepID, Attempt: c.Attempt, Result: handler.Parked(externalID), ArgsHash: c.ArgsHash,
		IdemKey: c.Call.IdempotencyKey}
}

// callFor finds the leased call of a step.
func callFor(t *testing.T, calls []*machine.PendingCall, key string) *machine.PendingCall {
	t.Helper()
	for _, c := range calls {
		if c.Call.StepKey == key {
			return c
		}
	}
	t.Fatalf("no call for %q among %d", key, len(calls))
	return nil
}

// notify puts a notification for a step's active invocation in the inbox.
func (f *fixture) notify(key string, outcome rbtype.NotificationOutcome, result string, code rbtype.ErrorCode) {
	f.t.Helper()
	s := f.step(key)
	require.NotNil(f.t, s.InvocationID, "step %q has no invocation", key)
	inv := f.invs[*s.InvocationID]
	f.notes = append(f.notes, driver.Notification{ID: int64(len(f.notes) + 1), CorrelationKey: inv.CorrelationKey,
		Outcome: outcome, Result: json.RawMessage(result), ErrorCode: code, Status: rbtype.NotificationReceived,
		ReceivedAt: f.now})
}

// statuses are the steps' statuses by key.
func (f *fixture) statuses() map[string]rbtype.StepStatus {
	out := map[string]rbtype.StepStatus{}
	for _, s := range f.steps {
		out[s.Key] = s.Status
	}
	return out
}

// leasedKeys are the keys of the steps a write leased, sorted.
func (f *fixture) leasedKeys(w driver.AdvanceWrite) []string {
	var keys []string
	for _, l := range w.Leases {
		keys = append(keys, f.stepByID(l.StepID).Key)
	}
	slices.Sort(keys)
	return keys
}

func (f *fixture) String() string {
	return fmt.Sprintf("%s %v", f.rb.Status, f.statuses())
}
