package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/runtime"
)

// policyVerbs adds tagged verbs to the test catalogue.
const policyVerbs = `
- name: send
  domain: t
  policy_tags: [external_send]
  execution: {kind: sync, handler: test.count, side_effects: external_call}
- name: wipe
  domain: t
  policy_tags: [destructive]
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
`

// withPolicy runs the bundle's engine under the policy p holds.
func withPolicy(p *atomic.Pointer[policy.Policy]) option {
	return func(c *runtime.Config) { c.Policy = p.Load }
}

func mustParse(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(src), policy.WellKnownTags)
	require.NoError(t, err)
	return p
}

// TestExtensionsAndRegenerationsAreAdmitted: an extension's new steps are
// judged by the policy of that moment (gated, or refused with nothing
// added); a regeneration by the policy of its day, under the scope of
// whoever asks.
func TestExtensionsAndRegenerationsAreAdmitted(t *testing.T) {
	var pol atomic.Pointer[policy.Policy]
	pol.Store(runtime.UnattendedPolicy("")) // t.wait parks unattended
	b := setup(t, withPolicy(&pol))
	b.extendCatalogue(t, policyVerbs)
	b.run(t)
	ctx := b.ctx

	sub, err := b.engine.SubmitSource(ctx, "open.rbk", []byte("(t.wait :as @w)\n"), runtime.Submission{HoldOpen: true})
	require.NoError(t, err)
	b.waitState(t, sub.ID, "parked")
	ext, err := b.engine.Extend(ctx, sub.ID, runtime.Extension{Filename: "more.rbk", Source: []byte("(t.send :to \"x\" :as @s)\n")})
	require.NoError(t, err)
	require.Equal(t, []string{"s"}, ext.Steps)
	v := b.waitFor(t, sub.ID, "the send waiting", func(v *apitype.RunbookView) bool {
		return len(v.Steps) == 2 && v.Steps[1].Status == rbtype.StepWaitingApproval
	})
	require.Equal(t, rbtype.GateHumanConfirm, v.Steps[1].Gate, "the policy's gate, frozen on the new step")
	require.Contains(t, b.eventTypes(t, sub.ID), "POLICY_GATED s")
	require.Zero(t, b.rec.callsOf(sub.ID, "s"))

	pol.Store(mustParse(t, "default: {deny: [destructive]}\n"))
	_, err = b.engine.Extend(ctx, sub.ID, runtime.Extension{Filename: "wipe.rbk", Source: []byte("(t.wipe :all true :as @gone)\n")})
	require.ErrorIs(t, err, rbtype.ErrPolicyDenied)
	require.ErrorContains(t, err, `step "gone" (verb t.wipe)`)
	v, err = b.engine.Get(ctx, sub.ID)
	require.NoError(t, err)
	require.Len(t, v.Steps, 2, "nothing added")
	require.Equal(t, 2, v.Version, "the refused extension did not count")

	// A finished runbook regenerated under a policy that lets its tenant
	// send: the new runbook's send runs unattended; the parent's stays
	// as it was.
	done := b.submit(t, "(t.send :to \"y\" :as @s)\n", nil)
	b.waitState(t, done, "awaiting_approval")
	require.NoError(t, b.engine.Cancel(ctx, done, "test"))
	b.waitStatus(t, done, rbtype.RunbookCancelled)
	pol.Store(mustParse(t, "default: {auto_exec: [external_send]}\n"))
	regen, err := b.engine.Regenerate(ctx, done, runtime.Regeneration{})
	require.NoError(t, err)
	r := b.waitStatus(t, regen.ID, rbtype.RunbookComplete)
	require.Equal(t, rbtype.GateNone, r.Steps[0].Gate)
	parent, err := b.engine.Get(ctx, done)
	require.NoError(t, err)
	require.NotEqual(t, parent.PolicyHash, r.PolicyHash)

	// Whoever regenerates needs the scope its verbs take.
	scoped := runtime.WithScope(context.Background(), runtime.Scope{Tenant: runtime.DefaultTenant, Verbs: policy.VerbScope{"t.echo"}})
	_, err = b.engine.Regenerate(scoped, done, runtime.Regeneration{IdempotencyKey: "again"})
	require.ErrorIs(t, err, rbtype.ErrForbidden)
	require.ErrorContains(t, err, `step "s" calls verb t.send, which this token's scope (verbs=t.echo) does not allow`)
}

// TestARetryOutsideTheScopeIsRefused: a token may not run again a step
// whose verb it could not have submitted.
func TestARetryOutsideTheScopeIsRefused(t *testing.T) {
	b := setup(t)
	b.extendCatalogue(t, policyVerbs)
	b.run(t)
	id := b.submit(t, "(t.send :to \"y\" :as @s)\n", nil)
	b.waitState(t, id, "awaiting_approval")
	require.NoError(t, b.engine.Decide(b.ctx, id, "s", false, "ops", "no"))
	b.waitStatus(t, id, rbtype.RunbookFailed)
	scoped := runtime.WithScope(context.Background(), runtime.Scope{Tenant: runtime.DefaultTenant, Verbs: policy.VerbScope{"t.e*"}})
	// The token's view does not offer it, and says why (docs/reference/http-api.md,
	// next_actions); the unscoped view does.
	const why = `step "s" calls verb t.send, which this token's scope (verbs=t.e*) does not allow`
	v, err := b.engine.Get(scoped, id)
	require.NoError(t, err)
	require.Empty(t, v.NextActions)
	require.Len(t, v.UnavailableActions, 1)
	require.Equal(t, apitype.ActionRetry, v.UnavailableActions[0].Kind)
	require.Equal(t, why, v.UnavailableActions[0].Reason)
	list, err := b.engine.List(scoped, runtime.ListQuery{})
	require.NoError(t, err)
	require.Len(t, list.Runbooks, 1)
	require.Empty(t, list.Runbooks[0].NextActions)
	require.Equal(t, why, list.Runbooks[0].UnavailableActions[0].Reason)
	require.True(t, list.Runbooks[0].NeedsPerson)
	v, err = b.engine.Get(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, v.NextActions, 1)
	require.Equal(t, apitype.ActionRetry, v.NextActions[0].Kind)
	_, err = b.engine.Retry(scoped, id, machine.RetryOptions{})
	require.ErrorIs(t, err, rbtype.ErrForbidden)
	require.ErrorContains(t, err, why)
	_, err = b.engine.Retry(b.ctx, id, machine.RetryOptions{})
	require.NoError(t, err)
}

// TestATickIsJudgedByThePolicyOfItsMoment: each tick is admitted under
// the scope of the token that made the schedule and the policy in force
// then: a step the policy now denies makes no runbook, and the schedule
// says why; a send the policy gates waits for a person.
func TestATickIsJudgedByThePolicyOfItsMoment(t *testing.T) {
	c := newFixedClock(time.Date(2026, 6, 1, 9, 10, 0, 0, time.UTC))
	var pol atomic.Pointer[policy.Policy]
	pol.Store(policy.Builtin())
	b := setup(t, withPolicy(&pol), func(cfg *runtime.Config) {
		cfg.Clock, cfg.SweepInterval, cfg.ScheduleGrace = c.now, time.Hour, time.Minute
	})
	b.extendCatalogue(t, policyVerbs)
	ops := runtime.WithScope(context.Background(), runtime.Scope{Tenant: "acme", Actor: "ops", Verbs: policy.VerbScope{"t.*"}})
	s, err := b.engine.CreateSchedule(ops, runtime.ScheduleSpec{Name: "h", Cron: "@hourly", Overlap: driver.OverlapAllow,
		Source: "(t.send :to \"x\" :as @s)\n(t.wipe :all true)\n"})
	require.NoError(t, err)
	c.set(*s.NextFireAt)
	made, err := b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, made)
	v, err := b.engine.Schedule(ops, s.ID)
	require.NoError(t, err)
	rb, err := b.engine.Get(ops, v.LastRunbook.ID)
	require.NoError(t, err)
	require.Equal(t, rbtype.GateHumanConfirm, rb.Steps[0].Gate, "the send waits for a person")
	require.NotEmpty(t, rb.PolicyHash)

	pol.Store(mustParse(t, "default: {deny: [destructive]}\n"))
	c.advance(time.Hour)
	made, err = b.engine.FireSchedules(b.ctx)
	require.NoError(t, err)
	require.Zero(t, made)
	v, err = b.engine.Schedule(ops, s.ID)
	require.NoError(t, err)
	require.Contains(t, v.LastError, "verb t.wipe is tagged destructive, which default.deny refuses")
}
