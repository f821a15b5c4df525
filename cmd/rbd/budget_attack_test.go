package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/rbtype"
)

// billingService stands for a paid provider: each call takes a while (so
// that parallel attempts overlap), reports cost_usd 1 in its usage
// header, and is counted by the runbook its "rb" argument names.
type billingService struct {
	*httptest.Server
	mu               sync.Mutex
	calls            map[string]int
	inFlight, maxFly int
}

func newBillingService(t *testing.T, takes time.Duration) *billingService {
	s := &billingService{calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args struct {
			RB string `json:"rb"`
		}
		_ = json.NewDecoder(r.Body).Decode(&args)
		s.mu.Lock()
		s.calls[args.RB]++
		s.inFlight++
		s.maxFly = max(s.maxFly, s.inFlight)
		s.mu.Unlock()
		time.Sleep(takes)
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
		w.Header().Set(builtin.UsageHeader, `{"cost_usd": 1}`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"billed": 1}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// counts is how many calls each runbook made, their sum, and the most that
// were in flight at once.
func (s *billingService) counts() (per map[string]int, total, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	per = map[string]int{}
	for k, n := range s.calls {
		per[k] = n
		total += n
	}
	return per, total, s.maxFly
}

// Under attack (docs/reliability.md), issue 45's row 10: parallel
// attempts do not overspend budgets. A tenant with a runbook budget of $3
// and a day budget of $10 submits four runbooks at once, each a for-each
// of eight calls with :parallel 8 to a verb declaring cost: {usd: 1}
// (whose provider reports $1 a call): 32 attempts that could start
// together. Each attempt reserves its cost as it starts
// (machine/budget_reserve.go), so no runbook makes more than 3 calls and
// the tenant no more than 10, however they race; the other 22 steps stay
// ready, blocked on BUDGET_EXCEEDED, and the runbooks keep executing.
// rbd status, the view and rbd budget show say what was spent and left.
func TestParallelAttemptsDoNotOverspendBudgets(t *testing.T) {
	t.Parallel()
	const runbooks, elements, runbookCap, dayCap = 4, 8, 3, 10
	bill := newBillingService(t, 400*time.Millisecond)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", `
- name: bill
  domain: t
  description: A paid call, a dollar each.
  cost: {usd: 1}
  input_schema: {properties: {rb: {type: string}, n: {type: integer}}}
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {method: POST, url: "`+bill.URL+`"}
`)
	d := e.start(t, "--verbs", verbs,
		"--policy", e.file(t, "policy.yaml", fmt.Sprintf("default: {budget: {runbook: {cost_usd: %d}, day: {cost_usd: %d}}, auto_exec: [read_only, routine]}\n", runbookCap, dayCap)),
		"--api-token-file", e.file(t, "tokens", "tok-ops tenant=default actor=ops roles=admin\n"))
	ctx := policyCtx(t)
	ops := d.client("tok-ops")

	list := make([]string, elements)
	for i := range list {
		list[i] = fmt.Sprint(i + 1)
	}
	ids := make([]string, runbooks)
	var wg sync.WaitGroup
	errs := make(chan error, runbooks)
	for i := range runbooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := fmt.Sprintf("(for-each [%s] :as @x :parallel %d\n  (t.bill :rb \"r%d\" :n @x :as @p))\n", strings.Join(list, " "), elements, i)
			sub, err := ops.Submit(ctx, apitype.SubmitRequest{Source: src, Filename: "t.rbk"})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = sub.ID.String()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// Settled: every step either paid or held by a budget.
	held := func(v *apitype.RunbookView) (paid, waiting int) {
		for _, s := range v.Steps {
			if s.Verb != "t.bill" || s.Key == "p" { // the template, not a call
				continue
			}
			switch {
			case s.Status == rbtype.StepComplete:
				paid++
			case s.Status == rbtype.StepReady && s.Error != nil && s.Error.Code == rbtype.CodeBudgetExceeded:
				waiting++
			}
		}
		return paid, waiting
	}
	views := make([]*apitype.RunbookView, runbooks)
	waitUntil(t, "every step paid or held by a budget", func() (bool, error) {
		for i, id := range ids {
			v, err := ops.Get(ctx, id)
			if err != nil {
				return false, err
			}
			views[i] = v
			if paid, waiting := held(v); paid+waiting != elements {
				return false, nil
			}
		}
		return true, nil
	})
	// Nothing more starts: the held steps are looked at again only every
	// BudgetRecheck, and then find the budget spent. The views are read
	// again, settled: a view reads a runbook's spend and its steps in
	// separate queries, so one read as a step completes may show the step
	// complete and its spend not yet.
	time.Sleep(time.Second)
	for i, id := range ids {
		v, err := ops.Get(ctx, id)
		require.NoError(t, err)
		views[i] = v
	}
	per, total, most := bill.counts()
	t.Logf("calls per runbook %v, %d in all, at most %d in flight at once", per, total, most)
	require.Equal(t, dayCap, total, "the tenant's calls stop at the day budget, exactly")
	require.Greater(t, most, 1, "attempts ran side by side")
	var paidAll, heldAll, blockedAll int
	for i, v := range views {
		require.LessOrEqual(t, per[fmt.Sprintf("r%d", i)], runbookCap, "a runbook's calls stop at its budget")
		require.Equal(t, rbtype.RunbookExecuting, v.Status, "waiting for budget, not failed")
		paid, waiting := held(v)
		require.Equal(t, per[fmt.Sprintf("r%d", i)], paid, "each call the service saw is a step complete")
		paidAll += paid
		heldAll += waiting
		for _, bo := range v.BlockedOn {
			if bo.Reason == string(rbtype.CodeBudgetExceeded) {
				blockedAll++
			}
		}
		// The view's figures: what was spent, and what is left of each
		// budget.
		require.NotNil(t, v.Cost)
		require.Equal(t, float64(paid), v.Cost.CostUSD, "the runbook's spend is its calls'")
		for _, b := range v.Cost.Budgets {
			require.NotNil(t, b.Limit.CostUSD)
			require.NotNil(t, b.Left.CostUSD)
			switch b.Budget {
			case rbtype.BudgetRunbook:
				require.Equal(t, float64(runbookCap), *b.Limit.CostUSD)
				require.Equal(t, float64(runbookCap-paid), *b.Left.CostUSD, "runbook %d: %+v", i, b)
			case rbtype.BudgetDay:
				require.Equal(t, float64(dayCap), *b.Limit.CostUSD)
				require.Equal(t, 0.0, *b.Left.CostUSD, "the day's budget is spent: %+v", b)
				require.True(t, b.Exceeded)
			}
		}
	}
	require.Equal(t, dayCap, paidAll)
	require.Equal(t, runbooks*elements-dayCap, heldAll)
	require.Equal(t, heldAll, blockedAll, "blocked_on names each held step")

	rbd := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--server", d.server, "--token", "tok-ops")
		require.Equal(t, exitOK, run(args, &out, &errOut), "rbd %v: %s", args, errOut.String())
		return out.String()
	}
	for i, id := range ids {
		paid, _ := held(views[i])
		status := rbd("status", id)
		require.Regexp(t, fmt.Sprintf(`(?m)^budget +runbook: cost_usd=%d left of cost_usd=%d \(default.budget.runbook\)`, runbookCap-paid, runbookCap), status)
		require.Regexp(t, fmt.Sprintf(`(?m)^budget +day: cost_usd=0 left of cost_usd=%d \(default.budget.day\): spent$`, dayCap), status)
	}
	show := rbd("budget", "show")
	require.Regexp(t, fmt.Sprintf(`(?m)^day +cost_usd=%d +cost_usd=%d,tokens=0,credits=0 +cost_usd=0 +default.budget.day$`, dayCap, dayCap), show)
	_, total, _ = bill.counts()
	require.Equal(t, dayCap, total, "nothing started while the figures were read")
}

// Finding 10 with the verbs the trial had, which declare no cost (cost:
// did not exist then). A step of such a verb reserves nothing, so under a
// cost cap such steps run one at a time (docs/design/semantics.md section
// 15): within the runbook under its own cap, and among all the tenant's
// runbooks under its day or month cap (a durable count of such attempts
// by runbook, read under the tenant's budget lock). A single runbook with
// :parallel 8 under a $5 day budget (and no runbook budget) made 8 calls,
// $8, at 4b10231; now 5. Four runbooks under a $3 runbook budget and a $10
// day budget made 32 at 4b10231, and 12 while only the runbooks one round
// advanced were counted; now 10, one at a time.
func TestParallelAttemptsOfUndeclaredCostsStayWithinTheDayBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                         string
		runbookCap, runbooks, dayCap int
	}{
		{name: "one runbook, a day budget only", runbooks: 1, dayCap: 5},
		{name: "four runbooks, a runbook and a day budget", runbookCap: 3, runbooks: 4, dayCap: 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			bill := newBillingService(t, 400*time.Millisecond)
			e := newDaemonEnv(t)
			verbs := e.file(t, "verbs/t.yaml", `
- name: bill
  domain: t
  description: A paid call, a dollar each, its cost not declared.
  input_schema: {properties: {rb: {type: string}, n: {type: integer}}}
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {method: POST, url: "`+bill.URL+`"}
`)
			budget := fmt.Sprintf("day: {cost_usd: %d}", c.dayCap)
			if c.runbookCap > 0 {
				budget = fmt.Sprintf("runbook: {cost_usd: %d}, %s", c.runbookCap, budget)
			}
			d := e.start(t, "--verbs", verbs, "--policy", e.file(t, "policy.yaml", "default: {budget: {"+budget+"}, auto_exec: [read_only, routine]}\n"))
			ctx := policyCtx(t)
			cl := d.client("")
			ids := make([]string, c.runbooks)
			for i := range c.runbooks {
				src := fmt.Sprintf("(for-each [1 2 3 4 5 6 7 8] :as @x :parallel 8\n  (t.bill :rb \"r%d\" :n @x :as @p))\n", i)
				sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: src, Filename: "t.rbk"})
				require.NoError(t, err)
				ids[i] = sub.ID.String()
			}
			for _, id := range ids {
				_, err := cl.Wait(ctx, id)
				require.NoError(t, err)
			}
			per, total, most := bill.counts()
			t.Logf("calls per runbook %v, %d in all, at most %d in flight at once", per, total, most)
			require.LessOrEqual(t, total, c.dayCap+1, "the day's budget passed by one attempt at most")
			require.Equal(t, 1, most, "under a day budget, attempts that reserved nothing run one at a time among all the tenant's runbooks")
			if c.runbookCap > 0 {
				for r, n := range per {
					require.LessOrEqual(t, n, c.runbookCap+1, "runbook %s passed its budget by one attempt at most", r)
				}
			}
		})
	}
}
