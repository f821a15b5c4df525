package main

import (
	"fmt"
	"io"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/registry/policy"
)

// judgement is a runbook judged by a tenant's policy, as rbd serve
// --policy judges it at admission.
type judgement struct {
	source    string
	tenant    *policy.Tenant
	decisions []compiler.StepDecision
	// plan is the plan with the gates the policy adds, whose effects
	// show them; added names the steps that had no gate before.
	plan  *compiler.Plan
	added map[string]bool
}

func judge(plan *compiler.Plan, pol *policy.Policy, tenant string) *judgement {
	t := pol.Tenant(tenant)
	ds := plan.PolicyDecisions(t)
	j := &judgement{source: pol.Source, tenant: t, decisions: ds, plan: plan.WithPolicyGates(ds), added: map[string]bool{}}
	for i, s := range plan.Steps {
		if j.plan.Steps[i].Gate != s.Gate {
			j.added[s.Key] = true
		}
	}
	return j
}

// denied is the decisions that refuse the plan.
func (j *judgement) denied() []compiler.StepDecision {
	var out []compiler.StepDecision
	for _, d := range j.decisions {
		if d.Action == policy.Deny {
			out = append(out, d)
		}
	}
	return out
}

// judgementReport is --format json with --policy.
type judgementReport struct {
	Policy     string                  `json:"policy"`
	Tenant     string                  `json:"tenant"`
	PolicyHash string                  `json:"policy_hash"`
	Admitted   bool                    `json:"admitted"`
	Effects    []compiler.Effect       `json:"effects"`
	Decisions  []compiler.StepDecision `json:"decisions"`
}

func (j *judgement) report() judgementReport {
	source := j.source
	if source == "" {
		source = "builtin"
	}
	return judgementReport{Policy: source, Tenant: j.tenant.Name, PolicyHash: j.tenant.Hash(), Admitted: len(j.denied()) == 0,
		Effects: orNone(j.plan.Effects), Decisions: j.decisions}
}

func orNone[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// write prints the steps the policy speaks of, and whether rbd would
// admit the runbook.
func (j *judgement) write(out io.Writer) {
	source := j.source
	if source == "" {
		source = "built-in (no --policy: only read_only runs unattended)"
	}
	fmt.Fprintf(out, "\nPolicy %s, tenant %s (policy_hash %s):\n", source, j.tenant.Name, j.tenant.Hash())
	tw := cli.NewTable(out)
	n := 0
	for _, d := range j.decisions {
		if d.Action == policy.None {
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "STEP\tVERB\tDECISION\tRULE\tTAG")
		}
		n++
		tag := d.Tag
		if tag == "" {
			tag = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Step, d.Verb, d.Action, d.Rule, tag)
	}
	_ = tw.Flush()
	if n == 0 {
		fmt.Fprintln(out, "no rule speaks of any step")
	}
	if denied := j.denied(); len(denied) > 0 {
		fmt.Fprintf(out, "refused: rbd would answer 403 POLICY_DENIED (%s)\n", denied[0].Reason)
		return
	}
	fmt.Fprintln(out, "admitted")
}

// gated is the steps whose gate the policy adds (none without a policy).
func (j *judgement) gated() map[string]bool {
	if j == nil {
		return nil
	}
	return j.added
}
