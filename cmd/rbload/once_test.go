package main

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

func started(step, worker string) apitype.Event {
	return apitype.Event{Type: rbtype.EventStepStarted, Step: step, Worker: worker}
}

func TestStepsOnceCountsEachWorkersSteps(t *testing.T) {
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	ledgers := [][]apitype.Event{
		{started("a", "w1"), {Type: rbtype.EventStepSucceeded, Step: "a"}, started("b", "w2")},
		{started("a", "w2"), started("b", "w2")},
	}
	byWorker, err := stepsOnce(ids, ledgers, 2)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"w1": 1, "w2": 3}, byWorker)
	require.Equal(t, "w1 1, w2 3", shares(byWorker))
}

func TestStepsOnceFailsOnAStepStartedTwice(t *testing.T) {
	_, err := stepsOnce([]uuid.UUID{uuid.New()}, [][]apitype.Event{{started("a", "w1"), started("a", "w2")}}, 1)
	require.ErrorContains(t, err, "step a started 2 times")
}

func TestStepsOnceFailsOnAStepNeverStarted(t *testing.T) {
	_, err := stepsOnce([]uuid.UUID{uuid.New()}, [][]apitype.Event{{started("a", "w1")}}, 2)
	require.ErrorContains(t, err, "1 of its 2 steps started")
}
