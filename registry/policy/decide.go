package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Step is what a policy judges of a step: its verb, its policy tags and
// its risk, as the frozen plan has them.
type Step struct {
	Key  string
	Verb string
	Tags []string
	// Risk is the verb's risk (low when it declares none). Anything else,
	// an empty risk included, is a risk the policy cannot judge.
	Risk rbtype.Risk
	// SideEffects is the verb's: a step that reaches outside
	// (external_call, human_process) runs unattended only when a tag of
	// it is auto-executed, or its verb has earned trust.
	SideEffects rbtype.SideEffects
	// Approvals is how many attempts of the verb the tenant has approved
	// with no rejection or failure since (its trust count); 0 when not
	// known.
	Approvals int
}

// reachesOut reports whether a step's side effects reach outside the
// daemon: only then does the effect rule gate it.
func (s Step) reachesOut() bool {
	return s.SideEffects == rbtype.SideEffectsExternalCall || s.SideEffects == rbtype.SideEffectsHuman
}

// VerbStep is what a policy judges of any step of a verb: for listing the
// verbs a caller may use, and for rbc.
func VerbStep(d *verbs.Definition) Step {
	return Step{Verb: d.FullName(), Tags: d.Execution.PolicyTags, Risk: d.RiskOrDefault(), SideEffects: d.Execution.SideEffects}
}

// Action is what a policy does with a step.
type Action string

// The actions, from the most to the least restrictive.
const (
	// Deny refuses the whole plan: 403 POLICY_DENIED, nothing stored.
	Deny Action = "deny"
	// Gate freezes a human_confirm gate on the step: it waits for a
	// person.
	Gate Action = "gate"
	// AutoExec lets the step run unattended as far as the policy goes (a
	// gate of the verb's own, or of its risk, still holds).
	AutoExec Action = "auto_exec"
	// None: no rule speaks of the step; it runs as its verb says.
	None Action = "none"
)

// The rules a decision may name besides a block's lists.
const (
	// RuleNeverAutoSend is the rule built into every policy: a step
	// tagged external_send waits for a person unless the tenant's
	// auto_exec lets it run.
	RuleNeverAutoSend = "builtin.never_auto_send"
	// RuleUndecidable refuses a step the policy cannot judge (a risk it
	// does not know), unless it is read_only: writes fail closed.
	RuleUndecidable = "builtin.fail_closed"
	// RuleGateByEffect is the rule built into every policy that follows
	// the effect, not the tag (docs/design/semantics.md section 17): a
	// step whose side effects are external_call or human_process waits for
	// a person unless auto_exec lets one of its tags run, or its verb has
	// earned the tenant's trust.
	RuleGateByEffect = "builtin.gate_by_effect"
)

// Decision is what a tenant's policy does with one step, and why.
type Decision struct {
	Action Action `json:"action"`
	// Rule names the rule that decided: "tenants.acme.gate",
	// "default.deny", "default.max_risk", or a built-in rule; empty for
	// None.
	Rule string `json:"rule,omitempty"`
	// Pattern is the rule's pattern that matched, and Tag the step's tag
	// it matched; empty for rules that are not about tags.
	Pattern string `json:"pattern,omitempty"`
	Tag     string `json:"tag,omitempty"`
	// Reason says it in a sentence, for refusals and events.
	Reason string `json:"reason,omitempty"`
}

// Decide judges one step. A denial comes first, then the risk ceiling,
// then earned trust (the verb runs unattended); a tag both gated and let
// run unattended is decided by the more specific level (a tenant's own
// list over the default's), and gated when both are the same level's; the
// built-in rules gate external_send unless auto_exec lets it run, and a
// step reaching outside (external_call, human_process) unless auto_exec
// lets one of its tags run (read_only only, when no block sets
// auto_exec). A step whose risk is not known is refused, unless
// it is read_only (docs/design/semantics.md section 10: fail closed).
func (t *Tenant) Decide(s Step) Decision {
	if s.Risk.Rank() == 0 {
		if slices.Contains(s.Tags, TagReadOnly) {
			return Decision{Action: None, Reason: fmt.Sprintf("verb %s's risk %q is unknown, but it is read_only", s.Verb, s.Risk)}
		}
		return Decision{Action: Deny, Rule: RuleUndecidable,
			Reason: fmt.Sprintf("the policy cannot judge verb %s: its risk %q is unknown, and a step that is not read_only fails closed", s.Verb, s.Risk)}
	}
	deny := t.denyBlock()
	if p, tag, ok := firstMatch(deny.deny.list, s.Tags); ok {
		return Decision{Action: Deny, Rule: deny.where + ".deny", Pattern: p, Tag: tag,
			Reason: fmt.Sprintf("verb %s is tagged %s, which %s.deny refuses%s", s.Verb, tag, deny.where, by(p, tag))}
	}
	if ceiling, rule := t.MaxRisk(); !s.Risk.Within(ceiling) {
		return Decision{Action: Deny, Rule: rule,
			Reason: fmt.Sprintf("verb %s is risk %s, above %s %s", s.Verb, s.Risk, rule, ceiling)}
	}
	if rule, where, ok := t.Trust(s.Verb); ok && s.Approvals >= rule.After {
		return Decision{Action: AutoExec, Rule: where, Pattern: rule.Verb,
			Reason: fmt.Sprintf("verb %s has earned trust: %d approved attempts with no rejection or failure since, and %s asks %d%s",
				s.Verb, s.Approvals, where, rule.After, by(rule.Verb, s.Verb))}
	}
	gateB := t.gateBlock()
	autoList, autoB := t.autoExec()
	gp, gtag, gated := firstMatch(gateB.gate.list, s.Tags)
	ap, atag, auto := firstMatch(autoList, s.Tags)
	if gated && auto && autoB == t.own && gateB != t.own {
		gated = false // the tenant's own auto_exec over a gate it inherits
	}
	switch {
	case gated:
		return Decision{Action: Gate, Rule: gateB.where + ".gate", Pattern: gp, Tag: gtag,
			Reason: fmt.Sprintf("verb %s is tagged %s, which %s.gate holds for a person%s", s.Verb, gtag, gateB.where, by(gp, gtag))}
	case slices.Contains(s.Tags, TagExternalSend) && !matchesAny(autoList, TagExternalSend):
		return Decision{Action: Gate, Rule: RuleNeverAutoSend, Tag: TagExternalSend,
			Reason: fmt.Sprintf("verb %s is tagged external_send, which never runs unattended unless auto_exec lists it", s.Verb)}
	case auto:
		return Decision{Action: AutoExec, Rule: autoRule(autoB), Pattern: ap, Tag: atag,
			Reason: fmt.Sprintf("verb %s is tagged %s, which %s lets run unattended%s", s.Verb, atag, autoRule(autoB), by(ap, atag))}
	case s.reachesOut():
		tags := "it has no policy_tags"
		if len(s.Tags) > 0 {
			tags = "auto_exec lets none of its tags (" + strings.Join(s.Tags, ", ") + ") run"
		}
		return Decision{Action: Gate, Rule: RuleGateByEffect,
			Reason: fmt.Sprintf("verb %s's side effects are %s, which wait for a person unless the policy auto-executes one of the step's tags, and %s", s.Verb, s.SideEffects, tags)}
	}
	return Decision{Action: None}
}

func matchesAny(patterns []string, tag string) bool {
	_, _, ok := firstMatch(patterns, []string{tag})
	return ok
}

// by names the pattern that matched a tag, when it is not the tag itself.
func by(pattern, tag string) string {
	if pattern == tag {
		return ""
	}
	return " (by " + pattern + ")"
}

// autoRule names the auto_exec a decision comes from: a block's, or the
// built-in one when no block sets it.
func autoRule(b *block) string {
	if !b.autoExec.set {
		return "builtin.auto_exec"
	}
	return b.where + ".auto_exec"
}
