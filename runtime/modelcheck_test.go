package runtime

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/machine/refmodel"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// The model check (docs/design/semantics.md, "The model check"):
// generated runbooks that combine the forms, driven through random
// inputs, where after every input the state machine must agree with the
// reference interpreter (machine/refmodel) and keep the invariants.
// make test runs modelCases of them; make check-model N=... runs more,
// and a failure prints the seed that replays it (-model.seed).

var (
	modelCases = flag.Int("model.n", 2000, "generated runbooks the model check runs")
	modelSeed  = flag.Uint64("model.seed", 0, "run only this seed (a failure prints it)")
)

func TestModelCheck(t *testing.T) {
	cat := modelCatalogue(t)
	if *modelSeed != 0 {
		require.NoError(t, modelCase(t, cat, *modelSeed, true, &modelRun{}))
		return
	}
	n := *modelCases
	if s := os.Getenv("MODEL_CASES"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	var total modelRun
	for seed := uint64(1); seed <= uint64(n); seed++ {
		if err := modelCase(t, cat, seed, false, &total); err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./runtime -run TestModelCheck -model.seed %d -v", seed, err, seed)
		}
	}
	t.Logf("%d generated runbooks, %d inputs, %d offered next_actions taken: the machine agreed with the reference interpreter", n, total.inputs, total.offered)
	for _, k := range slices.Sorted(maps.Keys(total.seen)) {
		t.Logf("  %6d %s", total.seen[k], k)
	}
}

func modelCatalogue(t *testing.T) *registry.Catalogue {
	t.Helper()
	defs, diags := verbs.Parse("model.yaml", []byte(TagUnattended(refmodel.Catalogue))) // compensations are judged by the policy as they run
	require.Empty(t, diags)
	cat, diags := registry.New(defs, machineHandlers(t).Specs())
	require.Empty(t, diags)
	return cat
}

// modelRun is one case: the machine's fixture, the interpreter, and the
// calls out.
type modelRun struct {
	f    *fixture
	in   *refmodel.Interp
	rb   *refmodel.Runbook
	r    *rand.Rand
	out  map[string]*machine.PendingCall
	keys map[string]string // the idempotency key of each step's first call
	log  []string
	// applied are the inputs given, for a shrink to replay.
	applied []refmodel.Input
	err     error // a broken invariant seen as calls were taken
	// offered counts the next_actions taken on a copy, inputs the inputs
	// given: what the run tried, for its log.
	offered, inputs int
	// seen counts the interpreter's rules applied where forms meet.
	seen map[string]int
}

func modelCase(t *testing.T, cat *registry.Catalogue, seed uint64, verbose bool, total *modelRun) error {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	rb := refmodel.Generate(r)
	mr, err := runModel(t, cat, rb, r, nil, verbose)
	total.inputs += len(mr.log)
	total.offered += mr.offered
	if total.seen == nil {
		total.seen = map[string]int{}
	}
	for k, n := range mr.seenCounts() {
		total.seen[k] += n
	}
	if err == nil {
		return nil
	}
	small, script, serr := shrinkModel(t, cat, rb, mr.applied)
	return fmt.Errorf("%w\nrunbook (draft_only=%v):\n%s\ninputs:\n  %s\n\nshrunk to %d inputs, failing with: %v\nrunbook (draft_only=%v, cap=%v):\n%s\ninputs:\n  %s",
		err, rb.Draft, rb.Source(), strings.Join(mr.log, "\n  "),
		len(script), serr, small.Draft, small.Cap, small.Source(), strings.Join(inputStrings(script), "\n  "))
}

// errNoCompile is runModel's answer for a runbook a shrink made that does
// not compile (a step it removed was read).
var errNoCompile = errors.New("does not compile")

// runModel runs one case: rb, driven by script when given (its inputs
// that cannot happen at their turn skipped), else by up to 40 inputs
// chosen with r.
func runModel(t *testing.T, cat *registry.Catalogue, rb *refmodel.Runbook, r *rand.Rand, script []refmodel.Input, verbose bool) (*modelRun, error) {
	src := rb.Source()
	mr := &modelRun{rb: rb, r: r, out: map[string]*machine.PendingCall{}, keys: map[string]string{}}
	if _, diags := compiler.CompileSource("case.rbk", []byte(src), cat); diags.HasErrors() {
		return mr, errNoCompile
	}
	mr.f = newFixtureIn(t, cat, src, nil)
	if rb.Draft {
		mr.f.rb.Mode = rbtype.ModeDraftOnly
	}
	if rb.Cap > 0 {
		mr.setCap(rb.Cap)
	}
	mr.f.rb.WakeAt = &mr.f.now // a submission makes its runbook due
	mr.in = refmodel.New(rb)
	var order []string
	for _, s := range mr.f.steps {
		order = append(order, s.Key)
	}
	mr.in.Reorder(order) // the plan's order, which is topological, not the source's
	mr.in.Settle()
	if err := mr.quiesce(); err != nil {
		return mr, err
	}
	if err := mr.compare("start"); err != nil {
		return mr, err
	}
	for i := 0; script == nil && i < 40 || i < len(script); i++ {
		var in refmodel.Input
		if script != nil {
			if in = script[i]; !mr.applicable(in) {
				continue
			}
		} else {
			var ok bool
			if in, ok = mr.choose(); !ok {
				return mr, nil
			}
		}
		mr.applied = append(mr.applied, in)
		mr.log = append(mr.log, in.String())
		if verbose {
			t.Log(in.String())
		}
		if err := mr.apply(in); err != nil {
			return mr, err
		}
		if err := mr.compare(in.String()); err != nil {
			return mr, err
		}
	}
	return mr, nil
}

// applicable reports whether a scripted input can happen now, as choose
// would have offered it: a call's answer while it is out, a notification
// while its step is parked, time passing with no call out, a raise of a
// capped runbook, a decision or resolution of a step that exists.
func (m *modelRun) applicable(in refmodel.Input) bool {
	s := m.in.Steps[in.Key]
	switch in.Kind {
	case refmodel.CallReturned:
		return m.out[in.Key] != nil && !s.Verb.Durable()
	case refmodel.CallParked:
		return m.out[in.Key] != nil && s.Verb.Durable()
	case refmodel.UndoReturned:
		return m.out[in.Key+undoSuffix] != nil
	case refmodel.Notified:
		return s != nil && s.Status == refmodel.Parked
	case refmodel.TimePasses:
		return len(m.out) == 0
	case refmodel.Raised:
		return m.in.Cap > 0
	case refmodel.Decided, refmodel.Resolved:
		return s != nil
	}
	return true
}

// shrinkModel makes a failing case smaller: inputs left out one at a time
// while the case still fails, then the runbook's hooks, cap, draft and
// items (a loop's inner loop and later body steps), each kept out when
// it still fails, and the inputs once more. It returns the smallest and
// how it fails.
func shrinkModel(t *testing.T, cat *registry.Catalogue, rb *refmodel.Runbook, script []refmodel.Input) (*refmodel.Runbook, []refmodel.Input, error) {
	fails := func(rb *refmodel.Runbook, script []refmodel.Input) ([]refmodel.Input, error) {
		mr, err := runModel(t, cat, rb, nil, script, false)
		if err == nil || errors.Is(err, errNoCompile) {
			return nil, nil
		}
		return mr.applied, err
	}
	applied, last := fails(rb, script)
	if last == nil {
		return rb, script, errors.New("it did not fail again when replayed")
	}
	script = applied
	inputs := func() {
		for i := 0; i < len(script); {
			cand := slices.Delete(slices.Clone(script), i, i+1)
			if got, err := fails(rb, cand); err != nil {
				script, last = got, err
				continue
			}
			i++
		}
	}
	inputs()
	try := func(cand *refmodel.Runbook) {
		if got, err := fails(cand, script); err != nil {
			rb, script, last = cand, got, err
		}
	}
	if len(rb.Hooks) > 0 {
		c := *rb
		c.Hooks = nil
		try(&c)
	}
	if rb.Cap > 0 {
		c := *rb
		c.Cap = 0
		try(&c)
	}
	if rb.Draft {
		c := *rb
		c.Draft = false
		try(&c)
	}
	for i := len(rb.Items) - 1; i >= 0; i-- {
		c := *rb
		c.Items = slices.Delete(slices.Clone(rb.Items), i, i+1)
		try(&c)
		if i >= len(rb.Items) || rb.Items[i].Loop == nil {
			continue
		}
		l := *rb.Items[i].Loop
		if l.Inner != nil {
			l2 := l
			l2.Inner = nil
			c := *rb
			c.Items = slices.Clone(rb.Items)
			c.Items[i] = refmodel.Item{Loop: &l2}
			try(&c)
		}
		if l := *rb.Items[i].Loop; len(l.Body) > 1 {
			l.Body = l.Body[:1]
			c := *rb
			c.Items = slices.Clone(rb.Items)
			c.Items[i] = refmodel.Item{Loop: &l}
			try(&c)
		}
	}
	inputs()
	return rb, script, last
}

func inputStrings(in []refmodel.Input) []string {
	out := make([]string, len(in))
	for i, x := range in {
		out[i] = x.String()
	}
	return out
}

// choose picks the next input among those that can happen now; a few of
// them are commands the interpreter refuses, which the machine must
// refuse too.
func (m *modelRun) choose() (refmodel.Input, bool) {
	var opts []refmodel.Input
	for _, k := range slices.Sorted(maps.Keys(m.out)) {
		if step, ok := strings.CutSuffix(k, undoSuffix); ok {
			opts = append(opts, refmodel.Input{Kind: refmodel.UndoReturned, Key: step, OK: m.r.IntN(4) > 0})
			continue
		}
		s := m.in.Steps[k]
		if s.Verb.Durable() {
			opts = append(opts, refmodel.Input{Kind: refmodel.CallParked, Key: k})
		} else {
			opts = append(opts, refmodel.Input{Kind: refmodel.CallReturned, Key: k, OK: true, Value: refmodel.Value(m.r, s.Def()), Spend: refmodel.Spend(m.r, s.Def())},
				refmodel.Input{Kind: refmodel.CallReturned, Key: k, OK: m.r.IntN(3) > 0, Value: refmodel.Value(m.r, s.Def()), Spend: refmodel.Spend(m.r, s.Def())})
		}
	}
	parked := false
	for _, k := range m.in.Order {
		s := m.in.Steps[k]
		switch s.Status {
		case refmodel.Parked:
			parked = true
			opts = append(opts, refmodel.Input{Kind: refmodel.Notified, Key: k, OK: m.r.IntN(3) > 0, Value: refmodel.Value(m.r, s.Def())})
		case refmodel.Waiting:
			opts = append(opts, refmodel.Input{Kind: refmodel.Decided, Key: k, Approve: m.r.IntN(3) > 0})
		case refmodel.Held:
			if m.r.IntN(2) == 0 {
				opts = append(opts, refmodel.Input{Kind: refmodel.Raised})
			}
		case refmodel.Escalated, refmodel.InDoubt:
			action := []string{"complete", "retry", "fail"}[m.r.IntN(3)]
			opts = append(opts, refmodel.Input{Kind: refmodel.Resolved, Key: k, Action: action, Value: refmodel.Value(m.r, s.Def())})
		}
	}
	if parked && len(m.out) == 0 {
		opts = append(opts, refmodel.Input{Kind: refmodel.TimePasses})
	}
	if len(m.out) > 0 && m.r.IntN(4) == 0 {
		opts = append(opts, refmodel.Input{Kind: refmodel.Crashed})
	}
	switch m.in.Status {
	case "executing", "escalated":
		if m.r.IntN(6) == 0 {
			opts = append(opts, refmodel.Input{Kind: refmodel.Cancel, Compensate: m.r.IntN(3) > 0})
		}
	}
	switch m.in.Status {
	case "failed", "partial", "escalated":
		opts = append(opts, refmodel.Input{Kind: refmodel.Retried})
		if m.in.Draft {
			opts = append(opts, refmodel.Input{Kind: refmodel.Executed})
		}
	}
	if len(opts) == 0 {
		return refmodel.Input{}, false
	}
	if m.r.IntN(12) == 0 { // a command that may well be refused
		k := m.in.Order[m.r.IntN(len(m.in.Order))]
		return []refmodel.Input{
			{Kind: refmodel.Resolved, Key: k, Action: "complete", Value: map[string]any{"v": 1.0}},
			{Kind: refmodel.Decided, Key: k, Approve: true},
			{Kind: refmodel.Retried},
			{Kind: refmodel.Executed},
			{Kind: refmodel.Cancel, Compensate: true},
		}[m.r.IntN(5)], true
	}
	return opts[m.r.IntN(len(opts))], true
}

// apply gives the machine and the interpreter the same input.
func (m *modelRun) apply(in refmodel.Input) error {
	f := m.f
	var accepted bool
	var err error
	switch in.Kind {
	case refmodel.CallReturned, refmodel.CallParked:
		c := m.out[in.Key]
		delete(m.out, in.Key)
		var o *machine.Outcome
		switch {
		case in.Kind == refmodel.CallParked:
			o = parked(c, "")
		case in.OK:
			o = succeed(c, in.Value)
			o.Result = o.Result.WithUsage(rbtype.Usage{CostUSD: in.Spend})
		default:
			o = failWith(c, rbtype.CodeInvalidInput)
		}
		m.take(f.advance(o))
		accepted = true
	case refmodel.Notified:
		if in.OK {
			b, _ := json.Marshal(in.Value)
			f.notify(in.Key, rbtype.OutcomeCompleted, string(b), "")
		} else {
			f.notify(in.Key, rbtype.OutcomeFailed, `{}`, rbtype.CodeInvalidInput)
		}
		m.take(f.advance())
		accepted = true
	case refmodel.TimePasses:
		f.now = f.now.Add(2 * time.Hour)
		accepted = true
	case refmodel.UndoReturned:
		c := m.out[in.Key+undoSuffix]
		delete(m.out, in.Key+undoSuffix)
		o := succeed(c, map[string]any{})
		if !in.OK {
			o = failWith(c, rbtype.CodeInvalidInput)
		}
		m.take(f.advance(o))
		accepted = true
	case refmodel.Cancel:
		err = m.command(&machine.CancelRunbook{By: "ops", Compensate: in.Compensate})
	case refmodel.Raised:
		m.setCap(m.in.Cap + 2)
		// A held step is looked at again BudgetRecheck later. The clock
		// stays: nothing else the model runs is due that soon, and moving
		// it would land, raise after raise, on a lease's expiry.
		now := f.now
		f.rb.WakeAt = &now
		accepted = true
	case refmodel.Crashed:
		m.out = map[string]*machine.PendingCall{}
		f.now = f.now.Add(f.m.LeaseTTL + time.Second)
		accepted = true
	case refmodel.Decided:
		err = m.command(&machine.DecideGate{Step: in.Key, Approve: in.Approve, By: "ops"})
	case refmodel.Resolved:
		b, _ := json.Marshal(in.Value)
		err = m.command(&machine.ResolveStep{Step: in.Key, R: machine.Resolution{Action: in.Action, Result: b, By: "ops"}})
	case refmodel.Retried:
		err = m.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}})
	case refmodel.Executed:
		err = m.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops", Execute: true}})
	}
	switch in.Kind {
	case refmodel.Decided, refmodel.Resolved, refmodel.Retried, refmodel.Executed, refmodel.Cancel:
		accepted = err == nil
		if err != nil && !isConflict(err) {
			return fmt.Errorf("%s: the machine answered %v", in, err)
		}
	}
	if want := m.in.Apply(in); want != accepted {
		return fmt.Errorf("%s: the interpreter accepts it: %v, the machine: %v (%v)", in, want, accepted, err)
	}
	return m.quiesce()
}

// setCap sets the tenant's runbook cost budget, as rbd budget set does.
func (m *modelRun) setCap(usd float64) {
	m.f.budgets[DefaultTenant] = rbtype.TenantBudget{Set: map[rbtype.BudgetScope]rbtype.Budget{rbtype.BudgetRunbook: {CostUSD: &usd}}}
}

// undoSuffix marks a compensation's call among the calls out.
const undoSuffix = " undo"

func isConflict(err error) bool {
	return strings.Contains(err.Error(), rbtype.ErrConflict.Error()) || strings.Contains(err.Error(), rbtype.ErrNotFound.Error())
}

func (m *modelRun) command(c machine.Command) error {
	_, calls, err := m.f.command(c)
	m.take(struct{}{}, calls)
	return err
}

// take records the calls an advance leased, and checks that a step called
// again with the same arguments (after a crash, a decision, a retry)
// keeps its idempotency key: an effect happens at most once per key.
func (m *modelRun) take(_ any, calls []*machine.PendingCall) {
	for _, c := range calls {
		k := c.Call.StepKey
		if c.Purpose == machine.CallCompensation {
			k += undoSuffix
		}
		m.out[k] = c
		same := k + " " + c.ArgsHash // the same effect asked for again
		if first, ok := m.keys[same]; ok && first != c.Call.IdempotencyKey && m.err == nil {
			m.err = fmt.Errorf("step %s called with the same arguments under idempotency key %q after %q: its effect may happen twice", k, c.Call.IdempotencyKey, first)
		}
		m.keys[same] = c.Call.IdempotencyKey
	}
}

// quiesce advances the machine while it is due, as the engine would: a
// runbook whose wake-up has not come is not advanced, so one that needs a
// round and did not ask for it stays where it is, and the invariants find
// it stuck.
func (m *modelRun) quiesce() error {
	for range 30 {
		if w := m.f.rb.WakeAt; w == nil || w.After(m.f.now) {
			return nil
		}
		w, calls := m.f.advance()
		m.take(w, calls)
	}
	// What keeps it due: each step's status and code, the last events,
	// the leases.
	var codes []string
	for _, s := range m.f.steps {
		codes = append(codes, s.Key+"="+string(s.Status)+"/"+string(s.ErrorCode))
	}
	return fmt.Errorf("the machine did not come to rest in 30 rounds (wake %v, now %v): %v; last events %v; leases %v",
		m.f.rb.WakeAt, m.f.now, codes, m.f.events[max(0, len(m.f.events)-12):], m.f.leases)
}

// compare requires the machine to agree with the interpreter, and the
// invariants to hold.
func (m *modelRun) compare(after string) error {
	f, in := m.f, m.in
	if m.err != nil {
		return fmt.Errorf("after %s: %w", after, m.err)
	}
	got, want := map[string]string{}, map[string]string{}
	for _, s := range f.steps {
		got[s.Key] = modelStatus(s.Status, s.ErrorCode)
		if s.CompensationStatus != rbtype.CompensationNone {
			got[s.Key] += " undo:" + string(s.CompensationStatus)
		}
		if s.CompensationStatus == rbtype.CompensationRunning && m.out[s.Key+undoSuffix] == nil {
			return fmt.Errorf("after %s: step %s's compensation is running with no call out: a lost call", after, s.Key)
		}
		if s.Status == rbtype.StepRunning && m.out[s.Key] == nil {
			return fmt.Errorf("after %s: step %s is running with no call out: a lost call", after, s.Key)
		}
	}
	for _, k := range in.Order {
		s := in.Steps[k]
		want[k] = s.Status
		if s.Status == refmodel.Skipped && s.Reason != "" {
			want[k] += " " + s.Reason
		}
		if s.Code != "" {
			want[k] += " " + s.Code
		}
		if s.Comp != "" {
			want[k] += " undo:" + s.Comp
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("after %s: statuses differ\n machine:     %v\n interpreter: %v", after, got, want)
	}
	if string(f.rb.Status) != in.Status {
		return fmt.Errorf("after %s: the machine's runbook is %s, the interpreter's %s (%v)", after, f.rb.Status, in.Status, got)
	}
	if in.Status != "executing" && in.Status != "escalated" && (f.rb.FinishedAt != nil) != in.Finished {
		return fmt.Errorf("after %s: the machine's %s runbook is finished: %v, the interpreter's: %v (%v)", after, in.Status, f.rb.FinishedAt != nil, in.Finished, got)
	}
	for _, k := range in.Order {
		s := in.Steps[k]
		if s.Status != refmodel.Complete {
			continue
		}
		wantJSON, _ := json.Marshal(s.Value)
		var a, b any
		_ = json.Unmarshal(f.step(k).Result, &a)
		_ = json.Unmarshal(wantJSON, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Errorf("after %s: step %s's result is %s, the interpreter's %s", after, k, f.step(k).Result, wantJSON)
		}
	}
	if err := m.invariants(after); err != nil {
		return err
	}
	return m.offeredIsAccepted(after)
}

// offeredIsAccepted takes every command the runbook's view offers in
// next_actions, as offered, on a copy of the state: each must be
// accepted (docs/design/semantics.md, "Offered means accepted").
func (m *modelRun) offeredIsAccepted(after string) error {
	f := m.f
	for _, a := range f.view().NextActions {
		c := actionCommand(a)
		if c == nil {
			continue
		}
		m.offered++
		if err := f.accepts(c); err != nil {
			return fmt.Errorf("after %s: next_actions offers %q, which is refused: %v", after, a.Command, err)
		}
	}
	return nil
}

// invariants are the rules that hold whatever the interpreter says
// (docs/design/semantics.md, "The forms compose").
func (m *modelRun) invariants(after string) error {
	f := m.f
	if f.rb.Status == rbtype.RunbookComplete {
		for _, s := range f.steps {
			if f.plan.IsHook(s.Key) {
				continue // it ran, or not, after an earlier failure a retry then mended: not the runbook's work
			}
			quiet := s.ErrorCode.SkipsQuietly() || s.ErrorCode == rbtype.CodeNoFailure // a hook with no failure to follow
			if s.Status != rbtype.StepComplete && !(s.Status == rbtype.StepSkipped && quiet) {
				return fmt.Errorf("after %s: complete, with %s %s (%s): completion fabricated", after, s.Key, s.Status, s.ErrorCode)
			}
		}
	}
	if err := m.budgetHeld(after); err != nil {
		return err
	}
	if f.rb.Status == rbtype.RunbookExecuting && len(m.out) == 0 {
		waiting := false
		for _, s := range f.steps {
			switch s.Status {
			case rbtype.StepParked, rbtype.StepWaitingApproval, rbtype.StepEscalated, rbtype.StepInDoubt:
				waiting = true
			case rbtype.StepReady:
				waiting = waiting || s.ErrorCode == rbtype.CodeBudgetExceeded // for a raise, looked at again every BudgetRecheck
			}
		}
		if !waiting {
			return fmt.Errorf("after %s: executing, with no call out and nothing waiting: stuck (%v)", after, f)
		}
	}
	for _, s := range f.steps {
		if !machineTemplate(f, s.Key) || s.Status != rbtype.StepComplete {
			continue
		}
		for i := 0; ; i++ {
			k := machine.InstanceKey(s.Key, i)
			if !slices.ContainsFunc(f.steps, func(o *rbtype.Step) bool { return o.Key == k }) {
				break
			}
			if st := f.step(k).Status; !st.Done() || st == rbtype.StepEscalated {
				return fmt.Errorf("after %s: list %s complete while %s is %s: not whole", after, s.Key, k, st)
			}
		}
	}
	return nil
}

// budgetHeld checks the budget (docs/design/semantics.md, "Budgets hold
// under concurrency"): what the machine recorded as spent, less what its
// running attempts reserved, is what the calls reported, and passes the
// cap by no more than what attempts spent beyond what they reserved.
func (m *modelRun) budgetHeld(after string) error {
	if m.in.Cap <= 0 {
		return nil
	}
	reserved := 0.0 // held by every attempt whose call is out, a cancelled step's among them
	for _, s := range m.f.steps {
		if c := m.out[s.Key]; c != nil && s.Verb == "mc."+string(refmodel.Paid) {
			reserved += refmodel.PaidCost
		}
	}
	spent := m.f.rb.Spent.CostUSD - reserved
	switch {
	case math.Abs(spent-m.in.Spent) > 1e-9:
		return fmt.Errorf("after %s: the machine counts %v spent (%v with %v reserved), the calls reported %v", after, spent, m.f.rb.Spent.CostUSD, reserved, m.in.Spent)
	case spent+reserved > m.in.Cap+m.in.Over+1e-9:
		return fmt.Errorf("after %s: spent %v and reserved %v under a cap of %v: passed by more than the %v attempts spent beyond what they reserved", after, spent, reserved, m.in.Cap, m.in.Over)
	}
	return nil
}

func machineTemplate(f *fixture, key string) bool { return f.plan.IsTemplate(key) }

// modelStatus is a machine status as the model names it.
func modelStatus(st rbtype.StepStatus, code rbtype.ErrorCode) string {
	switch st {
	case rbtype.StepReady:
		if code == rbtype.CodeBudgetExceeded {
			return refmodel.Held
		}
		return refmodel.Running
	case rbtype.StepRunning:
		return refmodel.Running
	case rbtype.StepFailed:
		if code == rbtype.CodeBudgetExceeded {
			return "failed " + string(code)
		}
	case rbtype.StepSkipped:
		switch code {
		case rbtype.CodeConditionFalse, rbtype.CodeUpstreamSkipped, rbtype.CodeDraftOnly, rbtype.CodeNoFailure:
			return "skipped " + string(code)
		}
	}
	return string(st)
}

// seenCounts is what the case's interpreter counted, none before it was made.
func (m *modelRun) seenCounts() map[string]int {
	if m == nil || m.in == nil {
		return nil
	}
	return m.in.Seen
}
