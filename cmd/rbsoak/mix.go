package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// soakVerbs are the verbs the runbooks call; SERVICE is the test
// service's address. Retries are generous and fast: a fault window of a
// few seconds must be outlived by retrying, never turn into a failure.
const soakVerbs = `
- name: effect
  domain: soak
  description: One side effect at the test service, by idempotency key.
  execution:
    kind: sync
    handler: http.call
    params: {url: "SERVICE/effect", method: POST}
    side_effects: external_call
    timeouts: {run_timeout: PT2S}
    retry: &retry {max_attempts: 40, backoff: exponential, base_delay: PT0.2S, max_delay: PT2S}
  input_schema:
    required: [run, step]
    properties:
      run: {type: string}
      step: {type: string}
      prev: {type: string}
      mode: {type: string}
  output_schema:
    required: [effect_id]
    properties:
      effect_id: {type: string}
- name: task
  domain: soak
  description: Work the test service completes later, by signed webhook.
  execution:
    kind: durable
    handler: http.start
    params: {url: "SERVICE/task", method: POST, cancel_url: "SERVICE/cancel"}
    side_effects: external_call
    timeouts: {run_timeout: PT2S, park_timeout: PT30M}
    retry: *retry
  input_schema:
    required: [run, step]
    properties:
      run: {type: string}
      step: {type: string}
      prev: {type: string}
      hold: {type: boolean}
  output_schema:
    required: [effect_id]
    properties:
      effect_id: {type: string}
- name: approve
  domain: soak
  description: A decision the driver approves (the gate is the script's).
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      run: {type: string}
- name: list
  domain: soak
  description: A list made by a step, for the generated runbooks' loops.
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: pause
  domain: soak
  description: A durable timer.
  execution:
    kind: durable
    handler: timer.sleep
    params: {duration: PT1S}
    side_effects: none
    timeouts: {park_timeout: PT30M}
`

// kind is a shape of runbook in the mix, with the state its script
// implies.
type kind struct {
	name   string
	weight int
	want   rbtype.RunbookStatus
	// race: the driver cancels it at a random moment, racing its
	// completion, so cancelled is as right as want.
	race bool
	// source writes a runbook of this kind; rng picks its size.
	source func(rng *rand.Rand) string
}

// kinds is the mix. Every runbook passes $run to its steps, so the
// service can tell which step of which runbook an effect is for.
var kinds = []kind{
	{name: "chain", weight: 30, want: rbtype.RunbookComplete, source: chainSource},
	{name: "fanout", weight: 20, want: rbtype.RunbookComplete, source: fanSource},
	{name: "durable", weight: 20, want: rbtype.RunbookComplete, source: durableSource},
	// Generated: loops, :parallel, conditions and durable tasks combined
	// (generated.go).
	{name: "generated", weight: 15, want: rbtype.RunbookComplete, source: generatedSource},
	// A durable runbook cancelled while its notification is on its way:
	// the notification must still be consumed (processed, or ignored once
	// its wait was cancelled), never left waiting.
	{name: "cancel-race", weight: 5, want: rbtype.RunbookComplete, race: true, source: durableSource},
	{name: "gate", weight: 10, want: rbtype.RunbookComplete, source: func(*rand.Rand) string {
		return `(soak.effect :run $run :step "a" :as @a)
(soak.approve :run $run :gate "human_confirm" :after @a :as @ok)
(soak.effect :run $run :step "b" :prev @a.effect_id :after @ok :as @b)
`
	}},
	{name: "timer", weight: 10, want: rbtype.RunbookComplete, source: func(*rand.Rand) string {
		return `(soak.effect :run $run :step "a" :as @a)
(soak.pause :after @a :as @p)
(soak.effect :run $run :step "b" :prev @a.effect_id :after @p :as @b)
`
	}},
	// The second step is refused (a final 422): the runbook fails and its
	// third step never runs, so it must have no effect.
	{name: "refused", weight: 5, want: rbtype.RunbookFailed, source: func(*rand.Rand) string {
		return `(soak.effect :run $run :step "a" :as @a)
(soak.effect :run $run :step "r" :mode "reject" :prev @a.effect_id :as @r)
(soak.effect :run $run :step "b" :prev @r.effect_id :as @b)
`
	}},
	// A task that is never completed; the driver cancels the runbook.
	{name: "cancel", weight: 5, want: rbtype.RunbookCancelled, source: func(*rand.Rand) string {
		return `(soak.effect :run $run :step "a" :as @a)
(soak.task :run $run :step "t" :hold true :prev @a.effect_id :as @t)
(soak.effect :run $run :step "b" :prev @t.effect_id :as @b)
`
	}},
}

func durableSource(*rand.Rand) string {
	return `(soak.effect :run $run :step "a" :as @a)
(soak.task :run $run :step "t" :prev @a.effect_id :as @t)
(soak.effect :run $run :step "b" :prev @t.effect_id :as @b)
`
}

func chainSource(rng *rand.Rand) string {
	n := 3 + rng.IntN(4)
	var b strings.Builder
	b.WriteString("(soak.effect :run $run :step \"s1\" :as @s1)\n")
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, "(soak.effect :run $run :step \"s%d\" :prev @s%d.effect_id :as @s%d)\n", i, i-1, i)
	}
	return b.String()
}

func fanSource(rng *rand.Rand) string {
	n := 3 + rng.IntN(6)
	var b strings.Builder
	b.WriteString("(soak.effect :run $run :step \"root\" :as @root)\n")
	leaves := make([]string, n)
	for i := range n {
		fmt.Fprintf(&b, "(soak.effect :run $run :step \"l%d\" :prev @root.effect_id :as @l%d)\n", i+1, i+1)
		leaves[i] = fmt.Sprintf("@l%d", i+1)
	}
	fmt.Fprintf(&b, "(soak.effect :run $run :step \"join\" :after [%s] :as @join)\n", strings.Join(leaves, " "))
	return b.String()
}

// pickKind draws a kind by weight.
func pickKind(rng *rand.Rand) *kind {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	r := rng.IntN(total)
	for i := range kinds {
		if r < kinds[i].weight {
			return &kinds[i]
		}
		r -= kinds[i].weight
	}
	return &kinds[len(kinds)-1]
}

// verbsFor is the verbs file for a service address.
func verbsFor(serviceURL string) string {
	return strings.ReplaceAll(soakVerbs, "SERVICE", serviceURL)
}

// planCompiler compiles runbook sources against the soak verbs, as rbc
// would, so the daemons are sent frozen plans.
type planCompiler struct{ cat *registry.Catalogue }

func newPlanCompiler(verbsText string) (*planCompiler, error) {
	defs, diags := verbs.Parse("soak.yaml", []byte(verbsText))
	if diags.HasErrors() {
		return nil, diags
	}
	cat, diags := registry.New(defs, runtime.NewHandlers(builtin.Deps{}).Specs())
	if diags.HasErrors() {
		return nil, diags
	}
	return &planCompiler{cat: cat}, nil
}

func (p *planCompiler) compile(src string) ([]byte, error) {
	plan, diags := compiler.CompileSource("soak.rbk", []byte(src), p.cat)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%v\n%s", diags, src)
	}
	return plan.JSON(), nil
}
