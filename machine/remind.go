package machine

import (
	"encoding/json"
	"time"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// A reminder that keeps waiting (docs/design/language.md v1.4,
// :remind-after and the verb's timeouts.remind_after): once a parked
// step has waited that long, its verb's escalation verb runs once
// (STEP_REMINDED, then the escalation's own ESCALATION_STARTED and
// ESCALATION_SUCCEEDED or ESCALATION_FAILED), and the wait goes on: the
// step stays parked until its notification or its own timeout. "Remind
// the DPO at 7 days, keep waiting until 14."
//
// Once means once per wait: the invocation's context records when the
// reminder was sent (reminded_at), in the same transaction that schedules
// its call, so a restart, a second worker or a later round never sends it
// again. The call itself is an escalation call, leased and reclaimed like
// one, under an idempotency key of its own (escalationPurpose), so the page at
// the wait's timeout, if its verb escalates, is not taken for the
// reminder's receipt.

// StepRemindedData is the data of STEP_REMINDED.
type StepRemindedData struct {
	CorrelationKey string `json:"correlation_key"`
	// RemindAfter is the duration the step waited (ISO 8601).
	RemindAfter string `json:"remind_after"`
	// Verb is the escalation verb the reminder runs; empty when the plan's
	// block has none, and then nothing is called.
	Verb string `json:"verb,omitempty"`
	// TimeoutAt is when the wait still times out.
	TimeoutAt time.Time `json:"timeout_at"`
}

// reminderContext is what a reminded wait's invocation context holds,
// beside what its handler put there.
const remindedAtField = "reminded_at"

// reminderAt is when a parked step's reminder is due, and whether it has
// one still to send: a step with a :remind-after (the call's, else its
// verb's, as the plan froze it) whose wait has not been reminded.
func (t *transition) reminderAt(s *rbtype.Step, inv *rbtype.Invocation) (time.Time, bool) {
	ps := t.plan.Steps[s.Key]
	if ps == nil || ps.RemindAfter == "" || reminded(inv) {
		return time.Time{}, false
	}
	d, err := verbs.ParseDuration(ps.RemindAfter)
	if err != nil || d.D <= 0 {
		return time.Time{}, false // a plan from outside that does not parse: no reminder
	}
	return inv.ParkedAt.Add(d.D), true
}

// reminded reports whether a wait's reminder was sent.
func reminded(inv *rbtype.Invocation) bool {
	var c map[string]json.RawMessage
	if json.Unmarshal(inv.Context, &c) != nil {
		return false
	}
	_, ok := c[remindedAtField]
	return ok
}

// remindIfDue sends a parked step's reminder when it is due and its wait
// has not timed out: it records the reminder in the invocation's context,
// writes STEP_REMINDED, and schedules its escalation verb's call (unless
// one is still running for this step, which then stands for it). A dry
// run previews and reminds no one.
func (t *transition) remindIfDue(s *rbtype.Step, inv *rbtype.Invocation) {
	at, ok := t.reminderAt(s, inv)
	if !ok || at.After(t.Now) || !inv.TimeoutAt.After(t.Now) || t.Rb.Mode == rbtype.ModeDryRun {
		return
	}
	ctx := map[string]any{}
	if len(inv.Context) > 0 {
		if v, err := rbtype.DecodeJSON(inv.Context); err == nil {
			if m, ok := v.(map[string]any); ok {
				ctx = m
			}
		}
	}
	ctx[remindedAtField] = t.Now.UTC().Format(time.RFC3339Nano)
	raw, err := json.Marshal(ctx)
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return
	}
	inv.Context = raw
	t.invocationUpdates = append(t.invocationUpdates, rbtype.InvocationUpdate{ID: inv.InvocationID, Context: raw})
	exec := t.execution(s)
	data := StepRemindedData{CorrelationKey: inv.CorrelationKey, RemindAfter: t.plan.Steps[s.Key].RemindAfter, TimeoutAt: inv.TimeoutAt}
	if exec.Timeouts.Escalation != nil {
		data.Verb = exec.Timeouts.Escalation.Verb
		t.scheduleEscalation(s, &exec)
	}
	t.touch(s)
	t.event(rbtype.EventStepReminded, s, data)
}

// escalationPurpose is what an escalation verb's call is for, which its
// idempotency key derives from (VerbCallKey): a parked step's is its
// reminder, an escalated step's its timeout's page, so that each is sent
// once however often the step times out or is retried.
func escalationPurpose(s *rbtype.Step) string {
	if s.Status == rbtype.StepParked {
		return PurposeRemind
	}
	return PurposeEscalate
}
