package durable_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/rbtype"
)

// Prune deletes a runbook that finished before the cutoff with every row
// it owns, and says how many of each; it leaves a running runbook, a
// runbook that finished after the cutoff, a receipt still inside its
// window, a receipt whose lineage lives on in a regeneration, a global
// receipt, and ledger rows inside the ledger's window.
func TestPruneDeletesAFinishedRunbookWithAllItsRows(t *testing.T) {
	b := setup(t)
	old := b.create(t, newRunbook(2))
	running := b.create(t, newRunbook(1))
	recent := b.create(t, newRunbook(1))
	inv := b.park(t, old, "ck-old")
	_, err := b.insert(notification("ck-old", `{"ok":true}`))
	require.NoError(t, err)
	b.park(t, running, "ck-running")

	now := time.Now()
	receipt := func(rb uuid.UUID, key string, scope rbtype.Scope) driver.Receipt {
		return driver.Receipt{Handler: "http.call", IdempotencyKey: key, RunbookID: rb, StepKey: "s1", Scope: scope,
			Result: json.RawMessage(`{}`), ResultHash: "h"}
	}
	attempt := func(rb uuid.UUID, step string, finished time.Time) driver.Attempt {
		return driver.Attempt{ID: uuid.New(), RunbookID: rb, Tenant: "default", StepKey: step, Verb: "t.step", Attempt: 1,
			FinishedAt: finished, Outcome: "succeeded", Cache: "off"}
	}
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{
			Finished: map[rbtype.InvocationStatus][]uuid.UUID{rbtype.InvocationCompleted: {inv.InvocationID}},
			Receipts: []driver.Receipt{receipt(old.ID, "step", rbtype.ScopeRunbookStep), receipt(old.ID, "global", rbtype.ScopeGlobal),
				receipt(recent.ID, "recent", rbtype.ScopeRunbookStep)},
			Attempts:  []driver.Attempt{attempt(old.ID, "s1", now.Add(-72*time.Hour)), attempt(old.ID, "s2", now)},
			Mutations: []driver.Mutation{{RunbookID: old.ID, Actor: "ops", Kind: rbtype.MutationRetry, Payload: json.RawMessage(`{}`)}},
		})
		return err
	}))
	finish := func(id uuid.UUID, at time.Time) {
		require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
			return tx.ExecForTest(b.ctx, `UPDATE runbooks SET status = 'complete', finished_at = $2 WHERE id = $1`, id, at)
		}))
	}
	finish(old.ID, now.Add(-48*time.Hour))
	finish(recent.ID, now)
	backdate := func(key string, at time.Time) {
		require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
			return tx.ExecForTest(b.ctx, `UPDATE action_receipts SET created_at = $2 WHERE idempotency_key = $1`, key, at)
		}))
	}
	backdate("step", now.Add(-48*time.Hour))
	backdate("global", now.Add(-48*time.Hour))

	opts := driver.PruneOptions{FinishedBefore: now.Add(-24 * time.Hour), ReceiptsBefore: now.Add(-72 * time.Hour),
		LedgerBefore: now.Add(-24 * time.Hour), Limit: 10}
	p, err := b.store.Prune(b.ctx, opts)
	require.NoError(t, err)
	require.Equal(t, driver.Pruned{Runbooks: 1, Steps: 2, Edges: 1, Events: 1, Invocations: 1, Notifications: 1, Mutations: 1,
		Attempts: 1}, p, "the old runbook with its rows, and the ledger row past the ledger's window; no receipt yet")
	_, err = b.store.Runbook(b.ctx, old.ID)
	require.ErrorIs(t, err, driver.ErrNotFound)
	for _, id := range []uuid.UUID{running.ID, recent.ID} {
		_, err = b.store.Runbook(b.ctx, id)
		require.NoError(t, err, "a running runbook, and one that finished after the cutoff, stay")
	}
	_, err = b.store.Notification(b.ctx, "ck-running")
	require.ErrorIs(t, err, driver.ErrNotFound, "(none was sent)")
	invs, err := b.store.InvocationsOf(b.ctx, running.ID)
	require.NoError(t, err)
	require.Len(t, invs, 1)

	receipts := func() []string {
		var keys []string
		require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
			found, err := tx.Receipts(b.ctx, []driver.ReceiptKey{{Handler: "http.call", IdempotencyKey: "step"},
				{Handler: "http.call", IdempotencyKey: "global"}, {Handler: "http.call", IdempotencyKey: "recent"}})
			for k := range found {
				keys = append(keys, k.IdempotencyKey)
			}
			return err
		}))
		return keys
	}
	require.ElementsMatch(t, []string{"step", "global", "recent"}, receipts(), "inside its window, a pruned runbook's receipt stays")

	opts.ReceiptsBefore = now.Add(-24 * time.Hour)
	p, err = b.store.Prune(b.ctx, opts)
	require.NoError(t, err)
	require.Equal(t, driver.Pruned{Receipts: 1}, p)
	require.ElementsMatch(t, []string{"global", "recent"}, receipts(),
		"past its window the runbook-step receipt goes; a global one stays for ever, and a live runbook's stays")
	p, err = b.store.Prune(b.ctx, opts)
	require.NoError(t, err)
	require.True(t, p.Done())
}

// A receipt whose runbook was pruned stays while a regeneration of its
// lineage lives: the regeneration inherits the keys of its effects.
func TestPruneKeepsReceiptsALineageStillNeeds(t *testing.T) {
	b := setup(t)
	root := b.create(t, newRunbook(1))
	child := newRunbook(1)
	child.Lineage = driver.Lineage{Root: root.ID, Parent: root.ID, Generation: 1}
	b.create(t, child)
	require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
		_, err := tx.WriteAdvance(b.ctx, driver.AdvanceWrite{Receipts: []driver.Receipt{{Handler: "http.call",
			IdempotencyKey: "sent", RunbookID: root.ID, StepKey: "s1", Scope: rbtype.ScopeRunbookStep, Result: json.RawMessage(`{}`), ResultHash: "h"}}})
		return err
	}))
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(b.ctx, `UPDATE runbooks SET status = 'complete', finished_at = now() - interval '2 days' WHERE id = $1`, root.ID)
	}))
	p, err := b.store.Prune(b.ctx, driver.PruneOptions{FinishedBefore: time.Now().Add(-24 * time.Hour),
		ReceiptsBefore: time.Now().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, int64(1), p.Runbooks)
	require.Zero(t, p.Receipts, "the regeneration still needs the root's receipt")
}

// A prune that picks a finished runbook while a command holds its lock
// and reopens it (a retry) leaves it whole: the batch is read again under
// the locks. Before, its steps and events were deleted and the runbook
// row kept, and it then "completed" with no steps.
func TestPruneLeavesARunbookACommandReopened(t *testing.T) {
	b := setup(t)
	rb := b.create(t, newRunbook(2))
	now := time.Now()
	require.NoError(t, b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
		return tx.ExecForTest(b.ctx, `UPDATE runbooks SET status = 'failed', finished_at = $2 WHERE id = $1`, rb.ID, now.Add(-48*time.Hour))
	}))
	locked, reopen := make(chan struct{}), make(chan struct{})
	retried := make(chan error, 1)
	go func() {
		// The retry: under the runbook's lock, it reopens the runbook.
		retried <- b.store.InTestTx(b.ctx, func(tx *durable.Tx) error {
			if err := tx.LockRunbooks(b.ctx, []uuid.UUID{rb.ID}); err != nil {
				return err
			}
			close(locked)
			<-reopen
			return tx.ExecForTest(b.ctx, `UPDATE runbooks SET status = 'executing', finished_at = NULL WHERE id = $1`, rb.ID)
		})
	}()
	<-locked
	pruned := make(chan driver.Pruned, 1)
	pruneErr := make(chan error, 1)
	go func() {
		p, err := b.store.Prune(b.ctx, driver.PruneOptions{FinishedBefore: now.Add(-24 * time.Hour), Limit: 10})
		pruneErr <- err
		pruned <- p
	}()
	time.Sleep(300 * time.Millisecond) // the prune has picked the runbook and waits for its lock
	close(reopen)
	require.NoError(t, <-retried)
	require.NoError(t, <-pruneErr)
	require.Equal(t, driver.Pruned{}, <-pruned, "the reopened runbook was pruned")
	steps, err := b.store.Steps(b.ctx, rb.ID, driver.StepPage{Limit: 100})
	require.NoError(t, err)
	require.Len(t, steps, 2, "the reopened runbook's steps are gone")
}
