package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// A sound end state: one chain runbook whose two steps completed, each
// with its effect, and a durable task whose notification was consumed.
func soundState(t *testing.T) (*stored, []*submitted, *service, *notifier) {
	t.Helper()
	n := newNotifier(context.Background(), nil)
	svc := &service{notifier: n, effects: map[string]*effect{}, byStep: map[string][]string{}, byID: map[string]*effect{},
		tasks: map[string]*task{}, cancels: map[string]int{}}
	id := uuid.New()
	e1 := svc.record("k1", "r1", "s1", "", []byte(`{"run":"r1","step":"s1"}`))
	e2 := svc.record("k2", "r1", "s2", e1.ID, []byte(`{"run":"r1","step":"s2"}`))
	rb := &storedRunbook{id: id, status: rbtype.RunbookComplete, run: "r1", steps: map[string]*storedStep{
		"s1": {key: "s1", verb: "soak.effect", status: "complete", idemKey: "k1", result: json.RawMessage(`{"effect_id":"` + e1.ID + `"}`)},
		"s2": {key: "s2", verb: "soak.effect", status: "complete", idemKey: "k2", result: json.RawMessage(`{"effect_id":"` + e2.ID + `"}`)},
	}, events: []storedEvent{
		{1, rbtype.EventRunbookSubmitted, ""},
		{2, rbtype.EventStepStarted, "s1"}, {3, rbtype.EventStepSucceeded, "s1"},
		{4, rbtype.EventStepStarted, "s2"}, {5, rbtype.EventStepSucceeded, "s2"},
		{6, rbtype.EventRunbookCompleted, ""},
	}}
	n.delivered["ck"] = json.RawMessage(`{"effect_id":"e9"}`)
	st := &stored{runbooks: map[uuid.UUID]*storedRunbook{id: rb}, notifications: map[string]storedNotification{
		"ck": {status: "processed", result: json.RawMessage(`{"effect_id": "e9"}`)},
	}}
	subs := []*submitted{{id: id, kind: &kinds[0], run: "r1"}}
	return st, subs, svc, n
}

func TestSoundStateHasNoViolations(t *testing.T) {
	st, subs, svc, n := soundState(t)
	require.Empty(t, violations(st, subs, svc, n))
}

// Each check fails on the end state it is there to catch.
func TestEveryCheckCanFail(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(st *stored, subs []*submitted, svc *service, n *notifier)
		want  string
	}{
		{"a step succeeded twice", func(st *stored, subs []*submitted, _ *service, _ *notifier) {
			rb := st.runbooks[subs[0].id]
			rb.events = append(rb.events[:3], append([]storedEvent{{10, rbtype.EventStepSucceeded, "s1"}}, rb.events[3:]...)...)
		}, "succeeded 2 times"},
		{"an event after the terminal one", func(st *stored, subs []*submitted, _ *service, _ *notifier) {
			rb := st.runbooks[subs[0].id]
			rb.events = append(rb.events, storedEvent{11, rbtype.EventStepStarted, "s2"})
		}, "comes after the terminal"},
		{"the wrong end state", func(st *stored, subs []*submitted, _ *service, _ *notifier) {
			st.runbooks[subs[0].id].status = rbtype.RunbookFailed
		}, "its script implies complete"},
		{"a second runbook for one submission", func(st *stored, _ []*submitted, _ *service, _ *notifier) {
			id := uuid.New()
			st.runbooks[id] = &storedRunbook{id: id, status: rbtype.RunbookComplete, run: "r1",
				events: []storedEvent{{20, rbtype.EventRunbookSubmitted, ""}, {21, rbtype.EventRunbookCompleted, ""}}}
		}, "1 runbooks submitted, 2 in the database"},
		{"one step, two effects", func(_ *stored, _ []*submitted, svc *service, _ *notifier) {
			svc.record("k1-again", "r1", "s1", "", []byte(`{"run":"r1","step":"s1"}`))
		}, "made 2 effects"},
		{"one key, two requests", func(_ *stored, _ []*submitted, svc *service, _ *notifier) {
			svc.record("k1", "r1", "s1", "", []byte(`{"run":"r1","step":"s1","other":1}`))
		}, "two different requests"},
		{"a completed step without its effect", func(st *stored, subs []*submitted, svc *service, _ *notifier) {
			st.runbooks[subs[0].id].steps["s2"].idemKey = "k-unknown"
		}, "no effect for its key"},
		{"a result naming another effect", func(st *stored, subs []*submitted, _ *service, _ *notifier) {
			st.runbooks[subs[0].id].steps["s2"].result = json.RawMessage(`{"effect_id":"e1"}`)
		}, "the service made effect e2"},
		{"an effect for a step that did not complete", func(st *stored, subs []*submitted, _ *service, _ *notifier) {
			st.runbooks[subs[0].id].steps["s2"].status = "skipped"
		}, "which did not complete"},
		{"an accepted notification left unprocessed", func(st *stored, _ []*submitted, _ *service, _ *notifier) {
			st.notifications["ck"] = storedNotification{status: "received", result: json.RawMessage(`{"effect_id":"e9"}`)}
		}, "not processed"},
		{"an accepted notification ignored, its runbook not cancelled", func(st *stored, _ []*submitted, _ *service, _ *notifier) {
			st.notifications["ck"] = storedNotification{status: "ignored", result: json.RawMessage(`{"effect_id":"e9"}`)}
		}, "is ignored, not processed"},
		{"an accepted notification with another payload", func(st *stored, _ []*submitted, _ *service, _ *notifier) {
			st.notifications["ck"] = storedNotification{status: "processed", result: json.RawMessage(`{"effect_id":"conflicting"}`)}
		}, "the first payload sent was"},
		{"a lease left held", func(st *stored, _ []*submitted, _ *service, _ *notifier) {
			st.activeLeases = 1
		}, "leases are still held"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, subs, svc, n := soundState(t)
			tc.spoil(st, subs, svc, n)
			got := strings.Join(violations(st, subs, svc, n), "\n")
			require.Contains(t, got, tc.want)
		})
	}
}

// A step reclaimed, or (in older ledgers) started again with nothing in
// between, was taken back from its worker; a retry after a failure was not.
func TestReclaimsCountsStepsTakenBack(t *testing.T) {
	st, subs, _, _ := soundState(t)
	require.Zero(t, st.reclaims())
	rb := st.runbooks[subs[0].id]
	rb.events = []storedEvent{
		{1, rbtype.EventRunbookSubmitted, ""},
		{2, rbtype.EventStepStarted, "s1"}, {3, rbtype.EventStepStarted, "s1"}, // taken back at once
		{4, rbtype.EventStepSucceeded, "s1"},
		{5, rbtype.EventStepStarted, "s2"}, {6, rbtype.EventStepFailed, "s2"}, {7, rbtype.EventStepRetryScheduled, "s2"},
		{8, rbtype.EventStepReady, "s2"}, {9, rbtype.EventStepStarted, "s2"}, // a retry
		{10, rbtype.EventStepReady, "s2"}, {11, rbtype.EventStepStarted, "s2"}, // taken back later
		{12, rbtype.EventStepReclaimed, "s2"}, {13, rbtype.EventStepStarted, "s2"}, // as rbd records it now
		{14, rbtype.EventStepSucceeded, "s2"}, {15, rbtype.EventRunbookCompleted, ""},
	}
	require.Equal(t, 3, st.reclaims())
}
